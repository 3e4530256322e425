package receiver_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/receiver"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
	"github.com/yachtmemory/sourcecatalog/storeheal"
)

// errBroken poisons a faultyStore.
var errBroken = errors.New("the test broke the store")

// faultyStore is a memstore that fails every transaction with errBroken
// while broken, and whose Source's Open fails meanwhile too: a store
// whose disk is full until the test mends it.
type faultyStore struct {
	*memstore.Store
	broken atomic.Bool
	opens  atomic.Int32
}

func (f *faultyStore) WithVessel(ctx context.Context, v uuid.UUID, fn func(finalize.Tx) error) error {
	if f.broken.Load() {
		return errBroken
	}
	return f.Store.WithVessel(ctx, v, fn)
}

func (f *faultyStore) source() storeheal.Source {
	return storeheal.Source{
		Name: "faulty memory",
		Open: func(context.Context) (finalize.Store, io.Closer, error) {
			f.opens.Add(1)
			if f.broken.Load() {
				return nil, nil, errBroken
			}
			return f, io.NopCloser(nil), nil
		},
		Poisoned: func(err error) bool { return errors.Is(err, errBroken) },
	}
}

func newFaulty() *faultyStore { return &faultyStore{Store: memstore.New()} }

// logTail collects JSON log lines.
type logTail struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logTail) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns the lines so far; a store that heals logs from its own
// goroutine while a test reads them.
func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// find returns the first line with msg whose attributes include attrs.
func (l *logTail) find(msg string, attrs map[string]any) (map[string]any, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
next:
	for _, line := range strings.Split(strings.TrimSpace(l.b.String()), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil || rec["msg"] != msg {
			continue
		}
		for k, v := range attrs {
			if rec[k] != v {
				continue next
			}
		}
		return rec, true
	}
	return nil, false
}

// start returns a Service over src with InsecureNoAuth for the example
// vessel, its log, and the test servers of its two handlers.
func start(t *testing.T, src storeheal.Source, retention receiver.Retention, m receiver.Metrics) (svc *receiver.Service, log *logTail, route, admin string) {
	t.Helper()
	log = &logTail{}
	svc, err := receiver.New(context.Background(), receiver.Config{
		Store: src, Retention: retention, Auth: httpbinding.InsecureNoAuth(examples.VesselID),
		Logger: slog.New(slog.NewJSONHandler(log, nil)), Metrics: m,
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, svc.Close()) })
	r, a := httptest.NewServer(svc.Handler()), httptest.NewServer(svc.Admin())
	t.Cleanup(r.Close)
	t.Cleanup(a.Close)
	return svc, log, r.URL, a.URL
}

// snapshot returns a snapshot of the example vessel at revision and its
// wrapped messages, the manifest first.
func snapshot(t *testing.T, revision int64) (*envelope.Snapshot, [][]byte) {
	t.Helper()
	s, err := envelope.Build(envelope.Input{
		VesselID: examples.VesselID, SnapshotID: uuid.New(), Revision: revision,
		DiscoveredAt: examples.DiscoveredAt, Records: examples.Scaled(40),
	})
	require.NoError(t, err)
	w := envelope.DefaultWrapper{}
	bodies := [][]byte{w.Wrap(nil, sourcecatalog.ManifestEntityType, envelope.ManifestKey(s.Manifest.SnapshotID), s.Manifest.Canonical())}
	for _, c := range s.Chunks {
		bodies = append(bodies, w.Wrap(nil, sourcecatalog.ChunkEntityType, envelope.ChunkKey(c.SnapshotID(), c.Index()), c.Canonical()))
	}
	return s, bodies
}

// post sends body and returns the status and the answer.
func post(t *testing.T, url string, body []byte) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// New refuses a Config without a retention choice, or with one out of
// range, a nil Auth or no Store, and opens nothing then.
func TestNewRefuses(t *testing.T) {
	auth := httpbinding.InsecureNoAuth(examples.VesselID)
	for _, tc := range []struct {
		name  string
		cfg   receiver.Config
		want  string
		field string // the Config field the error names
	}{
		{"no retention", receiver.Config{Auth: auth}, "receiver: no retention: choose Keep(n)", "Retention"},
		{"Keep(-1)", receiver.Config{Retention: receiver.Keep(-1), Auth: auth}, "Keep(-1)", "Retention"},
		{"Keep(33)", receiver.Config{Retention: receiver.Keep(33), Auth: auth}, "Keep(33)", "Retention"},
		{"no Auth", receiver.Config{Retention: receiver.KeepAll()}, "receiver: no Auth", "Auth"},
		{"no Store", receiver.Config{Retention: receiver.Keep(4), Auth: auth, Store: storeheal.Source{Name: "none"}}, "receiver: no Store", "Store"},
		{"TLS without a certificate", receiver.Config{Retention: receiver.Keep(4), Auth: auth, TLS: &tls.Config{}}, "no certificate", "TLS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFaulty()
			if tc.cfg.Store.Name == "" {
				tc.cfg.Store = f.source()
			}
			svc, err := receiver.New(context.Background(), tc.cfg)
			require.ErrorIs(t, err, sourcecatalog.ErrInvalidValue)
			assert.ErrorContains(t, err, tc.want)
			var located *sourcecatalog.Error
			if assert.ErrorAs(t, err, &located) {
				assert.Equal(t, tc.field, located.Field)
			}
			assert.Nil(t, svc)
			assert.Zero(t, f.opens.Load(), "New opened the store")
		})
	}
}

// Retention: Set takes what Keep and KeepAll make, and refuses the rest.
func TestRetentionSet(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want receiver.Retention
	}{{"all", receiver.KeepAll()}, {"0", receiver.Keep(0)}, {"8", receiver.Keep(8)}, {"32", receiver.Keep(32)}} {
		var r receiver.Retention
		require.NoError(t, r.Set(tc.in))
		assert.Equal(t, tc.want, r)
		assert.Equal(t, tc.in, r.String())
	}
	for _, in := range []string{"", "33", "-1", "08", "+1", "All", "some"} {
		var r receiver.Retention
		assert.ErrorIs(t, r.Set(in), sourcecatalog.ErrInvalidValue, "%q", in)
		assert.Equal(t, receiver.Retention{}, r, "%q left r unchanged", in)
	}
	assert.Equal(t, "", receiver.Retention{}.String())
}

// Keep(n) prunes each vessel to its newest n finalized snapshots (and
// the active one) after each activation; KeepAll prunes nothing. Four
// snapshots go through the message route into a SQLite file.
func TestRetention(t *testing.T) {
	for _, tc := range []struct {
		retention receiver.Retention
		retained  int64 // after four activations
	}{{receiver.KeepAll(), 4}, {receiver.Keep(0), 1}, {receiver.Keep(1), 1}, {receiver.Keep(2), 2}, {receiver.Keep(32), 4}} {
		t.Run(tc.retention.String(), func(t *testing.T) {
			path := t.TempDir() + "/receiver.db"
			_, log, route, _ := start(t, sqlitestore.Source(path), tc.retention, nil)
			for rev := int64(1); rev <= 4; rev++ {
				snap, bodies := snapshot(t, rev)
				for _, b := range bodies {
					code, answer := post(t, route, b)
					require.Equal(t, http.StatusOK, code, answer)
				}
				_, ok := log.find("finalize", map[string]any{"snapshot": snap.Manifest.SnapshotID.String(), "outcome": "activated"})
				require.True(t, ok, "revision %d activated", rev)
			}
			st, err := sqlitestore.Open(context.Background(), path)
			require.NoError(t, err)
			defer st.Close()
			u, err := finalize.NewReceiver(st).Usage(context.Background(), examples.VesselID)
			require.NoError(t, err)
			assert.Equal(t, tc.retained, u.RetainedSnapshots.Used)
		})
	}
}

// The message route is one route: a GET answers the declaration with
// chunk references, manifest indexes and gzip bodies, a POST stages a message, and the
// request is logged with its vessel.
func TestMessageRoute(t *testing.T) {
	_, log, route, _ := start(t, newFaulty().source(), receiver.Keep(4), nil)
	code, body := get(t, route)
	require.Equal(t, http.StatusOK, code, body)
	d, err := httpbinding.DecodeDeclaration([]byte(body))
	require.NoError(t, err)
	assert.True(t, d.V2(), "protocol v2: %s", body)
	assert.True(t, d.Has(httpbinding.CapabilityChunkReference), "chunk_reference: %s", body)
	assert.True(t, d.Has(httpbinding.CapabilityManifestIndex), "manifest_index: %s", body)
	assert.True(t, d.Has(httpbinding.CapabilityRequestGzip), "request_gzip: %s", body)

	snap, bodies := snapshot(t, 1)
	code, body = post(t, route, bodies[0])
	require.Equal(t, http.StatusOK, code, body)
	rc, err := envelope.DecodeReceipt([]byte(body))
	require.NoError(t, err)
	assert.Equal(t, envelope.Staged, rc.Status)
	_, ok := log.find("message", map[string]any{"level": "INFO", "vessel": examples.VesselID.String(),
		"snapshot": snap.Manifest.SnapshotID.String(), "entity_type": sourcecatalog.ManifestEntityType, "outcome": "staged", "status": float64(200)})
	assert.True(t, ok, "the message is logged:\n%s", log)
}

// A refusal is logged with the vessel and its status: at INFO below 500,
// at WARN for a 5xx.
func TestLogRefusal(t *testing.T) {
	f := newFaulty()
	_, log, route, _ := start(t, f.source(), receiver.Keep(4), nil)
	_, bodies := snapshot(t, 1)
	for _, tc := range []struct {
		name   string
		body   []byte
		break_ bool
		status int
		level  string
	}{
		{"undecodable", []byte(`{"not":"a request"}`), false, http.StatusUnprocessableEntity, "INFO"},
		{"store broken", bodies[0], true, http.StatusServiceUnavailable, "WARN"},
	} {
		f.broken.Store(tc.break_)
		code, answer := post(t, route, tc.body)
		require.Equal(t, tc.status, code, "%s: %s", tc.name, answer)
		line, ok := log.find("message", map[string]any{"vessel": examples.VesselID.String(), "status": float64(tc.status)})
		require.True(t, ok, "%s: no line:\n%s", tc.name, log)
		assert.Equal(t, tc.level, line["level"], tc.name)
	}
	f.broken.Store(false)
}

// /healthz answers 200 while the store serves, 503 with the store's
// state while a failure has poisoned it, and 200 again once it reopens;
// messages are 503 store_unavailable meanwhile.
func TestHealthWhilePoisoned(t *testing.T) {
	f := newFaulty()
	_, log, route, admin := start(t, f.source(), receiver.Keep(4), nil)
	code, body := get(t, admin+"/healthz")
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok\n", body)

	f.broken.Store(true)
	_, bodies := snapshot(t, 1)
	code, body = post(t, route, bodies[0])
	require.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, `"store_unavailable"`)
	code, body = get(t, admin+"/healthz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, []string{"store poisoned\n", "store reopening\n"}, body)
	_, ok := log.find("store poisoned: refusing requests until it is reopened", map[string]any{"level": "ERROR"})
	assert.True(t, ok, "the poisoning is logged")

	f.broken.Store(false)
	require.Eventually(t, func() bool { c, _ := get(t, admin+"/healthz"); return c == http.StatusOK }, 10*time.Second, 20*time.Millisecond)
	code, body = post(t, route, bodies[0])
	assert.Equal(t, http.StatusOK, code, body)
	_, ok = log.find("store reopened", map[string]any{"level": "INFO"})
	assert.True(t, ok, "the reopen is logged")
}

// fakeMetrics records what the Service gives a Metrics.
type fakeMetrics struct {
	receiver, binding atomic.Int32
	status            func() storeheal.Status
}

func (m *fakeMetrics) ObserveReceiver(finalize.Event)             { m.receiver.Add(1) }
func (m *fakeMetrics) ObserveBinding(httpbinding.Event)           { m.binding.Add(1) }
func (m *fakeMetrics) WatchStore(s func() storeheal.Status) error { m.status = s; return nil }
func (m *fakeMetrics) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "fake_metric 1\n") })
}

// Metrics are optional: without them /metrics is 404 and the rest works;
// with them every event reaches them and /metrics is theirs.
func TestMetricsOptional(t *testing.T) {
	for _, m := range []*fakeMetrics{nil, {}} {
		var metrics receiver.Metrics
		if m != nil {
			metrics = m
		}
		_, _, route, admin := start(t, newFaulty().source(), receiver.KeepAll(), metrics)
		_, bodies := snapshot(t, 1)
		code, body := post(t, route, bodies[0])
		require.Equal(t, http.StatusOK, code, body)
		code, body = get(t, admin+"/metrics")
		if m == nil {
			assert.Equal(t, http.StatusNotFound, code)
			continue
		}
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, "fake_metric 1\n", body)
		assert.Positive(t, m.receiver.Load(), "the Receiver's events")
		assert.Positive(t, m.binding.Load(), "the binding's events")
		require.NotNil(t, m.status, "WatchStore")
		assert.Equal(t, storeheal.Healthy, m.status().State)
	}
}

// The admin routes serve the inventory of an activated snapshot.
func TestAdminInventory(t *testing.T) {
	_, log, route, admin := start(t, newFaulty().source(), receiver.Keep(2), nil)
	snap, bodies := snapshot(t, 1)
	for _, b := range bodies {
		code, answer := post(t, route, b)
		require.Equal(t, http.StatusOK, code, answer)
	}
	_, ok := log.find("finalize", map[string]any{"outcome": "activated"})
	require.True(t, ok)
	code, body := get(t, admin+"/vessels/"+examples.VesselID.String()+"/inventory?limit=5")
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, snap.Manifest.SnapshotID.String())
	code, _ = get(t, admin+"/vessels/"+uuid.NewString()+"/history")
	assert.Equal(t, http.StatusNotFound, code)
	code, _ = get(t, admin+"/")
	assert.Equal(t, http.StatusNotFound, code)
}

// Run reconciles until its ctx is done, then returns nil; Serve serves
// the message route and the admin routes until its ctx is done, then
// returns nil.
func TestRunAndServe(t *testing.T) {
	svc, _, _, _ := start(t, newFaulty().source(), receiver.KeepAll(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	cancel()
	require.NoError(t, <-done)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	adminLn, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel = context.WithCancel(context.Background())
	go func() { done <- svc.Serve(ctx, ln, adminLn) }()
	code, body := get(t, "http://"+ln.Addr().String()+"/v2/messages")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, httpbinding.CapabilityChunkReference)
	code, body = get(t, "http://"+adminLn.Addr().String()+"/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok\n", body)
	cancel()
	require.NoError(t, <-done)
}

// TestServeClosesItsListeners: Serve returns only after every server it
// started has returned, so its listeners are closed by then (whatever the
// scheduling: the loop makes a missed wait show), and it refuses a nil
// listener for the message route.
func TestServeClosesItsListeners(t *testing.T) {
	svc, _, _, _ := start(t, newFaulty().source(), receiver.KeepAll(), nil)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for range 20 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		adminLn, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		require.NoError(t, svc.Serve(done, ln, adminLn))
		for _, l := range []net.Listener{ln, adminLn} {
			if c, err := net.Dial("tcp", l.Addr().String()); err == nil {
				c.Close()
				t.Fatalf("Serve returned with %s still listening", l.Addr())
			}
		}
	}
	adminLn, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	err = svc.Serve(context.Background(), nil, adminLn)
	require.ErrorIs(t, err, sourcecatalog.ErrInvalidValue)
	_, err = net.Dial("tcp", adminLn.Addr().String())
	require.Error(t, err, "the admin listener is closed")
}
