package agent_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"log/slog"
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
	"github.com/yachtmemory/sourcecatalog/agent"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/finalize"
	finalizemem "github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/internal/fakeclock"
	"github.com/yachtmemory/sourcecatalog/outbox"
	outboxmem "github.com/yachtmemory/sourcecatalog/outbox/memstore"
	"github.com/yachtmemory/sourcecatalog/outbox/outboxtest"
)

var (
	vessel   = uuid.MustParse("7c0e2a4b-9d1f-4e3a-8b5c-6d7e8f901a2b")
	start    = time.Date(2026, 7, 1, 6, 0, 0, 0, time.UTC)
	interval = agent.DefaultInterval
)

const token = "agent-test-token"

// ---------------------------------------------------------------------------
// The rig: a scripted Discoverer, a memory outbox, a receiver behind the
// HTTP binding on loopback TLS, a virtual clock and the agent's JSON log.

// A script is a fake Discoverer: answer gives the records or the error of
// each call, numbered from 0; it records when each call came.
type script struct {
	clock  *fakeclock.Clock
	answer func(n int) ([]*catalog.Record, error)
	mu     sync.Mutex
	calls  []time.Time
}

func (s *script) Discover(context.Context) ([]*catalog.Record, error) {
	s.mu.Lock()
	n := len(s.calls)
	s.calls = append(s.calls, s.clock.Now())
	s.mu.Unlock()
	if n > 1000 {
		panic("the agent scans without end")
	}
	return s.answer(n)
}

func (s *script) times() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []time.Duration
	for _, c := range s.calls {
		out = append(out, c.Sub(start))
	}
	return out
}

// notSettled is an incomplete scan that says when to try again, as a
// Signal K server that has not settled since it started does.
type notSettled struct{ after time.Duration }

func (e notSettled) Error() string             { return fmt.Sprintf("not settled: try in %v", e.after) }
func (e notSettled) Unwrap() error             { return sourcecatalog.ErrIncompleteScan }
func (e notSettled) RetryAfter() time.Duration { return e.after }

type rig struct {
	t        *testing.T
	clock    *fakeclock.Clock
	disc     *script
	store    outbox.Store // the outbox the agent uses
	boat     outbox.Store // the memory outbox under it
	shore    *finalize.Receiver
	requests atomic.Int64 // requests that reached the receiver
	fail     atomic.Int64 // while positive, a request is answered 503
	onSend   func()       // when set, called on each request
	client   *httpbinding.Client
	logs     syncBuffer
	ctx      context.Context
	cancel   context.CancelFunc
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func newRig(t *testing.T, answer func(n int) ([]*catalog.Record, error)) *rig {
	t.Helper()
	clock := fakeclock.New(start)
	g := &rig{t: t, clock: clock, disc: &script{clock: clock, answer: answer}, boat: outboxmem.New()}
	g.store = g.boat
	g.shore = finalize.NewReceiver(finalizemem.New())
	tokens, err := httpbinding.ParseTokens(strings.NewReader(httpbinding.TokenHash(token, vessel) + "\n"))
	require.NoError(t, err)
	h := httpbinding.NewHandler(g.shore, tokens)
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.requests.Add(1)
		if g.onSend != nil {
			g.onSend()
		}
		if g.fail.Add(-1) >= 0 {
			http.Error(w, "unavailable (test)", http.StatusServiceUnavailable)
			return
		}
		g.fail.Store(0)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	g.client = g.newClient(ts, token)
	g.ctx, g.cancel = context.WithCancel(context.Background())
	t.Cleanup(g.cancel)
	return g
}

func (g *rig) newClient(ts *httptest.Server, tok string) *httpbinding.Client {
	pool := x509.NewCertPool()
	pool.AddCert(ts.Certificate())
	c, err := httpbinding.NewClient(ts.URL+"/v2/messages",
		httpbinding.WithTLSConfig(httpbinding.ClientTLSConfig(pool, nil)), httpbinding.WithBearerToken(tok))
	require.NoError(g.t, err)
	g.t.Cleanup(c.CloseIdleConnections)
	return c
}

// config is the agent's configuration over the rig, receiver declared v2.
func (g *rig) config() agent.Config {
	return agent.Config{
		Vessel: vessel, Discoverer: g.disc, Store: g.store, Transport: g.client, Gate: agent.GateOn,
		Logger: slog.New(slog.NewJSONHandler(&g.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Clock:  g.clock,
	}
}

// run runs the agent with cfg until the virtual time reaches stop.
func (g *rig) run(cfg agent.Config, stop time.Duration) {
	g.t.Helper()
	a, err := agent.New(cfg)
	require.NoError(g.t, err)
	g.clock.At(start.Add(stop), g.cancel)
	done := make(chan error, 1)
	go func() { done <- a.Run(g.ctx) }()
	select {
	case err := <-done:
		require.NoError(g.t, err)
	case <-time.After(30 * time.Second): // a watchdog, not a timing assertion
		g.t.Fatalf("Run did not return; log:\n%s", g.logs.String())
	}
}

// logged returns the log records with message msg, in order.
func (g *rig) logged(msg string) []map[string]any {
	g.t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(g.logs.String()))
	for sc.Scan() {
		var rec map[string]any
		require.NoError(g.t, json.Unmarshal(sc.Bytes(), &rec), sc.Text())
		if rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// pending returns the outbox's pending entries.
func (g *rig) pending() []outbox.Entry {
	g.t.Helper()
	var out []outbox.Entry
	require.NoError(g.t, g.boat.WithVessel(context.Background(), vessel, func(tx outbox.Tx) error {
		var err error
		out, err = tx.Pending(context.Background(), 1<<20)
		return err
	}))
	return out
}

// active returns the receiver's active catalog of the vessel.
func (g *rig) active() finalize.Catalog {
	g.t.Helper()
	c, err := g.shore.Active(context.Background(), vessel)
	require.NoError(g.t, err)
	return c
}

func boat(int) ([]*catalog.Record, error) { return examples.Boat(), nil }

// kinds counts records by kind as the log does.
func kinds(records []*catalog.Record) (paths, sources, observations float64) {
	for _, r := range records {
		switch r.Kind() {
		case catalog.KindPath:
			paths++
		case catalog.KindSource:
			sources++
		case catalog.KindObservation:
			observations++
		}
	}
	return
}

func minutes(m ...float64) []time.Duration {
	out := make([]time.Duration, len(m))
	for i, x := range m {
		out[i] = time.Duration(x * float64(time.Minute))
	}
	return out
}

// ---------------------------------------------------------------------------
// Scenarios

// At start the agent scans once the server has settled: a scan whose
// error says when to try again is tried again then, not at the next
// interval; the cycle is then committed, published and activated, and the
// log says what it found.
func TestSettleThenCycle(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after time.Duration
		want  time.Duration // when the second scan comes
	}{
		{"retry after 40s", 40 * time.Second, 40 * time.Second},
		{"retry after 0 waits the backoff's minimum", 0, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newRig(t, func(n int) ([]*catalog.Record, error) {
				if n == 0 {
					return nil, fmt.Errorf("signalk: %w", notSettled{tc.after})
				}
				return examples.Boat(), nil
			})
			g.run(g.config(), interval-time.Minute)
			assert.Equal(t, []time.Duration{0, tc.want}, g.disc.times())

			inc := g.logged("scan incomplete: nothing committed")
			require.Len(t, inc, 1)
			assert.Equal(t, tc.want.String(), inc[0]["retry_in"])
			assert.Equal(t, "INFO", inc[0]["level"], "a wait for the server to settle is expected")
			assert.Contains(t, inc[0]["error"], "not settled")

			cycles := g.logged("cycle committed")
			require.Len(t, cycles, 1)
			c := cycles[0]
			paths, sources, observations := kinds(examples.Boat())
			// The revision is floored by the discovery time in ms (SPEC.md §2.4).
			rev := start.Add(tc.want).UnixMilli()
			assert.Equal(t, []any{paths, sources, observations, float64(rev), true},
				[]any{c["paths"], c["sources"], c["observations"], c["revision"], c["changed"]})
			assert.Equal(t, vessel.String(), c["vessel_id"])

			active := g.active()
			assert.Equal(t, c["snapshot_id"], active.SnapshotID.String(), "the logged cycle is the one activated")
			assert.Equal(t, rev, active.Revision)
			assert.Equal(t, start.Add(tc.want), active.DiscoveredAt, "discovered when the scan ran")
			assert.Empty(t, g.pending())
			pub := g.logged("published")
			require.Len(t, pub, 1)
			assert.Equal(t, []any{"delivered", float64(3), float64(0)}, []any{pub[0]["outcome"], pub[0]["delivered"], pub[0]["failed"]})
		})
	}
}

// A scan that fails commits nothing and is tried again at the next
// interval.
func TestFailedScanCommitsNothing(t *testing.T) {
	for _, tc := range []struct {
		name, msg, level string
		err              error
	}{
		{"incomplete", "scan incomplete: nothing committed", "WARN", sourcecatalog.Errorf(sourcecatalog.ErrIncompleteScan, "a body cut short")},
		{"other", "scan failed: nothing committed", "ERROR", sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, "more than 25600 records")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g *rig
			g = newRig(t, func(n int) ([]*catalog.Record, error) {
				if n == 0 {
					return nil, tc.err
				}
				assert.Empty(t, g.pending(), "nothing was committed after the failed scan")
				assert.Empty(t, g.logged("cycle committed"))
				return examples.Boat(), nil
			})
			g.run(g.config(), interval+time.Minute)
			assert.Equal(t, minutes(0, 15), g.disc.times(), "tried again at the next interval")
			failed := g.logged(tc.msg)
			require.Len(t, failed, 1)
			assert.Equal(t, tc.level, failed[0]["level"])
			assert.Equal(t, interval.String(), failed[0]["retry_in"])
			require.Len(t, g.logged("cycle committed"), 1)
			assert.Equal(t, start.Add(interval).UnixMilli(), g.active().Revision)
		})
	}
}

// A commit the store could not serve is tried again with the same cycle —
// the same snapshot id — after a backoff, without scanning again; a commit
// that landed but whose answer was lost is found committed.
func TestCommitRetriedWithTheSameCycle(t *testing.T) {
	for _, tc := range []struct {
		name    string
		inject  func(fs *outboxtest.FaultStore)
		waits   []string // the logged retry waits
		retried bool
	}{
		{"commit fails once", func(fs *outboxtest.FaultStore) { fs.Inject(outboxtest.FailCommit, 1) }, []string{"1s"}, false},
		{"statement fails", func(fs *outboxtest.FaultStore) { fs.Inject(outboxtest.FailOp, 1) }, []string{"1s"}, false},
		{"answer lost", func(fs *outboxtest.FaultStore) { fs.Inject(outboxtest.LoseAck, 1) }, []string{"1s"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newRig(t, boat)
			fs := outboxtest.NewFaultStore(g.boat)
			tc.inject(fs)
			g.store = fs
			g.run(g.config(), interval-time.Minute)
			assert.Equal(t, minutes(0), g.disc.times(), "no scan while the commit is retried")

			failed := g.logged("commit failed: retrying the same cycle")
			require.Len(t, failed, len(tc.waits))
			cycles := g.logged("cycle committed")
			require.Len(t, cycles, 1)
			snapshot := cycles[0]["snapshot_id"]
			for i, f := range failed {
				assert.Equal(t, snapshot, f["snapshot_id"], "the same snapshot id")
				assert.Equal(t, tc.waits[i], f["retry_in"])
				assert.Contains(t, f["error"], "store unavailable")
			}
			assert.Equal(t, tc.retried, cycles[0]["retried"] == true)
			assert.Equal(t, float64(start.UnixMilli()), cycles[0]["revision"], "the scan's, discovered at start")
			assert.Equal(t, snapshot, g.active().SnapshotID.String())
		})
	}

	// Failing commits back off, doubling, until one lands.
	t.Run("backoff", func(t *testing.T) {
		g := newRig(t, boat)
		cfg := g.config()
		cfg.Store = failing{g.boat, g.clock, start.Add(15 * time.Second)}
		g.run(cfg, interval-time.Minute)
		var waits []any
		for _, f := range g.logged("commit failed: retrying the same cycle") {
			waits = append(waits, f["retry_in"])
		}
		assert.Equal(t, []any{"1s", "2s", "4s", "8s"}, waits)
		require.Len(t, g.logged("cycle committed"), 1)
		assert.Equal(t, minutes(0), g.disc.times())
	})

	// A commit refused for its records is dropped; the next scan starts a
	// new cycle.
	t.Run("refused", func(t *testing.T) {
		g := newRig(t, func(n int) ([]*catalog.Record, error) {
			if n == 0 {
				return append(examples.Boat(), examples.Boat()[0]), nil // a duplicate record
			}
			return examples.Boat(), nil
		})
		g.run(g.config(), interval+time.Minute)
		refused := g.logged("commit refused: cycle dropped, the next scan starts a new one")
		require.Len(t, refused, 1)
		assert.Equal(t, "integrity", refused[0]["class"])
		cycles := g.logged("cycle committed")
		require.Len(t, cycles, 1)
		assert.NotEqual(t, refused[0]["snapshot_id"], cycles[0]["snapshot_id"])
		assert.Equal(t, minutes(0, 15), g.disc.times())
	})
}

// failing is a Store that is unavailable until a time on a clock.
type failing struct {
	outbox.Store
	clock *fakeclock.Clock
	until time.Time
}

func (f failing) WithVessel(ctx context.Context, id uuid.UUID, fn func(outbox.Tx) error) error {
	if f.clock.Now().Before(f.until) {
		return sourcecatalog.Errorf(sourcecatalog.ErrStoreUnavailable, "locked (test)")
	}
	return f.Store.WithVessel(ctx, id, fn)
}

// Cycles that find the same records commit the same document: the log
// gives the same hash, unchanged; a cycle that finds others says changed.
func TestCyclesLogTheDocumentHash(t *testing.T) {
	g := newRig(t, func(n int) ([]*catalog.Record, error) {
		if n == 2 {
			return examples.WithChangedUnits(examples.Boat(), 1), nil
		}
		return examples.Boat(), nil
	})
	g.run(g.config(), 2*interval+time.Minute)
	assert.Equal(t, minutes(0, 15, 30), g.disc.times())
	cycles := g.logged("cycle committed")
	require.Len(t, cycles, 3)
	h := func(i int) any { return cycles[i]["document_sha256"] }
	assert.Len(t, h(0), 64)
	assert.Equal(t, h(0), h(1), "nothing changed: the same document")
	assert.NotEqual(t, h(1), h(2))
	assert.Equal(t, []any{true, false, true}, []any{cycles[0]["changed"], cycles[1]["changed"], cycles[2]["changed"]})
	assert.Nil(t, cycles[0]["previous_document_sha256"])
	assert.Equal(t, h(0), cycles[1]["previous_document_sha256"])
	assert.Equal(t, h(1), cycles[2]["previous_document_sha256"])
	ms := func(d time.Duration) any { return float64(start.Add(d).UnixMilli()) }
	assert.Equal(t, []any{ms(0), ms(interval), ms(2 * interval)}, []any{cycles[0]["revision"], cycles[1]["revision"], cycles[2]["revision"]})
	assert.Equal(t, start.Add(2*interval).UnixMilli(), g.active().Revision)
	assert.Equal(t, cycles[2]["snapshot_id"], g.active().SnapshotID.String())
}

// Publishing goes on between cycles while entries are pending, with a
// backoff, and is done before the next scan.
func TestPublishingContinuesWhilePending(t *testing.T) {
	var g *rig
	g = newRig(t, func(n int) ([]*catalog.Record, error) {
		if n == 1 {
			assert.Empty(t, g.pending(), "everything was delivered between the cycles")
			assert.Equal(t, start.UnixMilli(), g.active().Revision)
		}
		return examples.Boat(), nil
	})
	g.fail.Store(5) // the first pass fails in full, the second in part
	g.run(g.config(), interval+time.Minute)
	assert.Equal(t, minutes(0, 15), g.disc.times())
	assert.Equal(t, int64(3+5+3), g.requests.Load())
	pub := g.logged("published")
	require.Len(t, pub, 2)
	assert.Equal(t, []any{"delivered", float64(3), float64(5), float64(4)},
		[]any{pub[0]["outcome"], pub[0]["delivered"], pub[0]["failed"], pub[0]["passes"]})
	assert.Contains(t, pub[0]["last_failure"], "answer 503")
	assert.Equal(t, start.Add(interval).UnixMilli(), g.active().Revision)
	sleeps := g.clock.Sleeps()
	require.GreaterOrEqual(t, len(sleeps), 2)
	assert.Equal(t, []time.Duration{time.Second, time.Second}, sleeps[:2], "the backoff, started again after a pass that delivered")
}

// A receiver that never answers does not hold the next scan: scans come on
// time, cycles are committed and their entries wait.
func TestPublishingNeverBlocksTheNextScan(t *testing.T) {
	g := newRig(t, boat)
	g.fail.Store(1 << 40)
	g.run(g.config(), 2*interval+time.Minute)
	assert.Equal(t, minutes(0, 15, 30), g.disc.times(), "each scan on time")
	require.Len(t, g.logged("cycle committed"), 3)
	assert.Len(t, g.pending(), 9)
	partial := g.logged("published in part: entries pending")
	require.NotEmpty(t, partial)
	assert.Equal(t, "gave_up", partial[0]["outcome"])
	for _, d := range g.clock.Sleeps() {
		assert.LessOrEqual(t, d, 30*time.Second, "publishing waits at most the backoff's maximum")
	}
}

// A failure only an operator can mend stops publishing until the next
// cycle: one request per cycle, an error in the log.
func TestOperatorFailureWaitsForTheNextCycle(t *testing.T) {
	g := newRig(t, boat)
	cfg := g.config()
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		g.requests.Add(1)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(ts.Close)
	cfg.Transport = g.newClient(ts, "wrong-token")
	g.run(cfg, interval+time.Minute)
	assert.Equal(t, minutes(0, 15), g.disc.times())
	assert.Equal(t, int64(2), g.requests.Load(), "one refused request per cycle")
	stopped := g.logged("publishing stopped: an operator must act; retried after the next commit")
	require.Len(t, stopped, 2)
	assert.Equal(t, "ERROR", stopped[0]["level"])
	assert.Contains(t, stopped[0]["error"], "the receiver refused the credentials (401)")
	assert.Len(t, g.pending(), 6)
}

// With the capability gate closed, cycles are committed and nothing is
// sent.
func TestCapabilityGateClosed(t *testing.T) {
	g := newRig(t, boat)
	cfg := g.config()
	cfg.Gate = agent.GateOff
	g.run(cfg, interval+time.Minute)
	require.Len(t, g.logged("cycle committed"), 2)
	assert.Len(t, g.logged("nothing sent: the receiver is not declared v2-capable (SPEC.md §7.5); entries stay pending"), 2)
	assert.Zero(t, g.requests.Load())
	assert.Len(t, g.pending(), 6)
}

// Cancelling stops the agent after the current step: a scan's records are
// not committed, a commit in progress lands, a publishing pass is cut.
func TestCancelStopsAfterTheCurrentStep(t *testing.T) {
	t.Run("during a scan", func(t *testing.T) {
		var g *rig
		g = newRig(t, func(int) ([]*catalog.Record, error) { g.cancel(); return examples.Boat(), nil })
		g.run(g.config(), interval)
		assert.Equal(t, minutes(0), g.disc.times())
		assert.Empty(t, g.pending())
		assert.Empty(t, g.logged("cycle committed"))
		assert.Len(t, g.logged("scan cut by the stop: nothing committed"), 1)
		assert.Len(t, g.logged("agent stopped"), 1)
	})
	t.Run("during a commit", func(t *testing.T) {
		g := newRig(t, boat)
		cfg := g.config()
		cfg.Store = cancelling{g.boat, g.cancel}
		g.run(cfg, interval)
		require.Len(t, g.logged("cycle committed"), 1, "the commit in progress lands")
		assert.Len(t, g.pending(), 3)
		assert.Zero(t, g.requests.Load(), "nothing published after the stop")
		assert.Equal(t, minutes(0), g.disc.times())
	})
	t.Run("while publishing", func(t *testing.T) {
		g := newRig(t, boat)
		g.onSend = g.cancel
		g.run(g.config(), interval)
		assert.Equal(t, int64(1), g.requests.Load(), "the pass is cut at the send in flight")
		assert.Equal(t, minutes(0), g.disc.times())
		assert.NotEmpty(t, g.pending())
		assert.Len(t, g.logged("agent stopped"), 1)
	})
}

// cancelling is a Store that cancels the agent's context as a
// transaction begins.
type cancelling struct {
	outbox.Store
	cancel context.CancelFunc
}

func (c cancelling) WithVessel(ctx context.Context, id uuid.UUID, fn func(outbox.Tx) error) error {
	c.cancel()
	return c.Store.WithVessel(ctx, id, fn)
}

func TestNewRefuses(t *testing.T) {
	g := newRig(t, boat)
	for _, tc := range []struct {
		name string
		edit func(c *agent.Config)
	}{
		{"no vessel", func(c *agent.Config) { c.Vessel = uuid.Nil }},
		{"no discoverer", func(c *agent.Config) { c.Discoverer = nil }},
		{"no store", func(c *agent.Config) { c.Store = nil }},
		{"no transport", func(c *agent.Config) { c.Transport = nil }},
		{"negative interval", func(c *agent.Config) { c.Interval = -time.Second }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := g.config()
			tc.edit(&cfg)
			a, err := agent.New(cfg)
			require.ErrorIs(t, err, sourcecatalog.ErrInvalidValue)
			assert.Nil(t, a)
		})
	}
	a, err := agent.New(g.config())
	require.NoError(t, err)
	assert.NotNil(t, a)
}

// A wake makes the next scan due at once: one pending when the loop is
// about to wait is taken first, and the interval stays the heartbeat
// after the scan it brought; a closed Wake is no trigger.
func TestWakeScansEarly(t *testing.T) {
	wake := make(chan struct{}, 1)
	g := newRig(t, func(n int) ([]*catalog.Record, error) {
		if n == 0 {
			wake <- struct{}{} // the delta stream saw a change during the scan
		}
		return examples.Boat(), nil
	})
	cfg := g.config()
	cfg.Wake = wake
	g.run(cfg, interval+time.Minute)
	assert.Equal(t, minutes(0, 0, 15), g.disc.times())
	require.Len(t, g.logged("scan woken early"), 1)

	closed := make(chan struct{})
	close(closed)
	g = newRig(t, func(int) ([]*catalog.Record, error) { return examples.Boat(), nil })
	cfg = g.config()
	cfg.Wake = closed
	g.run(cfg, interval+time.Minute)
	assert.Equal(t, minutes(0, 15), g.disc.times())
	assert.Empty(t, g.logged("scan woken early"))
}

// A wake that comes while the loop waits cuts the wait short.
func TestWakeCutsTheWait(t *testing.T) {
	wake := make(chan struct{}, 1)
	clock := &signalingClock{sleeping: make(chan time.Duration, 100)}
	var g *rig
	g = newRig(t, func(n int) ([]*catalog.Record, error) {
		if n == 1 {
			g.cancel()
		}
		return examples.Boat(), nil
	})
	go func() {
		for d := range clock.sleeping {
			if d > time.Minute { // the wait for the hour-long interval
				wake <- struct{}{}
				return
			}
		}
	}()
	cfg := g.config()
	cfg.Wake, cfg.Clock, cfg.Interval = wake, clock, time.Hour
	a, err := agent.New(cfg)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- a.Run(g.ctx) }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second): // a watchdog, not a timing assertion
		t.Fatalf("the wake did not cut the hour's wait; log:\n%s", g.logs.String())
	}
	require.Len(t, g.disc.times(), 2)
	require.Len(t, g.logged("scan woken early"), 1)
}

// A signalingClock is the system clock that reports each wait as it starts.
type signalingClock struct {
	outbox.SystemClock
	sleeping chan time.Duration
}

func (c *signalingClock) Sleep(ctx context.Context, d time.Duration) bool {
	select {
	case c.sleeping <- d:
	default:
	}
	return c.SystemClock.Sleep(ctx, d)
}
