package httpbinding_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/outbox"
	outboxmem "github.com/yachtmemory/sourcecatalog/outbox/memstore"
)

// A rig is a receiver served over TLS on a loopback port.
type rig struct {
	ca     *testCA
	store  *memstore.Store
	recv   *finalize.Receiver
	url    string // https://127.0.0.1:port/v2/messages
	addr   string
	events *eventLog
}

// rigConfig configures a rig; zero values are the test defaults.
type rigConfig struct {
	auth     func(ca *testCA) httpbinding.Authenticator // default MutualTLS
	store    finalize.Store                             // default a memstore
	timeouts httpbinding.Timeouts
	opts     []httpbinding.HandlerOption
	tlsMax   uint16 // the server's MaxVersion, 0 for the default
	// http1 limits the server to HTTP/1.1, for the fault proxy, which
	// takes each TLS record of the sender for a request and HTTP/2's
	// SETTINGS, PING and WINDOW_UPDATE frames are records too.
	http1 bool
	// wrap, when set, wraps the Handler the server serves.
	wrap func(http.Handler) http.Handler
	// clientAuth, when set, replaces ServerTLSConfig's client
	// certificate policy.
	clientAuth *tls.ClientAuthType
}

// An eventLog records what the Handler observed.
type eventLog struct {
	mu     sync.Mutex
	events []httpbinding.Event
}

func (l *eventLog) observe(e httpbinding.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

// of returns the events of one kind.
func (l *eventLog) of(kind httpbinding.EventKind) []httpbinding.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []httpbinding.Event
	for _, e := range l.events {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// outcomes returns the outcomes of the messages answered, in order.
func (l *eventLog) outcomes() []string {
	var out []string
	for _, e := range l.of(httpbinding.EventMessage) {
		out = append(out, e.Outcome)
	}
	return out
}

func startRig(t testing.TB, cfg rigConfig) *rig {
	t.Helper()
	r := &rig{ca: newCA(t, "operator CA"), events: &eventLog{}}
	store := cfg.store
	if store == nil {
		r.store = memstore.New()
		store = r.store
	}
	r.recv = finalize.NewReceiver(store)
	auth := httpbinding.Authenticator(httpbinding.MutualTLS{ClientCAs: r.ca.pool})
	if cfg.auth != nil {
		auth = cfg.auth(r.ca)
	}
	h := httpbinding.NewHandler(r.recv, auth, append([]httpbinding.HandlerOption{httpbinding.WithObserver(r.events.observe)}, cfg.opts...)...)
	tc := httpbinding.ServerTLSConfig(r.ca.server(t), r.ca.pool)
	tc.MaxVersion = cfg.tlsMax
	if cfg.clientAuth != nil {
		tc.ClientAuth = *cfg.clientAuth
	}
	var served http.Handler = h
	if cfg.wrap != nil {
		served = cfg.wrap(h)
	}
	srv, err := httpbinding.NewServer("", served, tc, cfg.timeouts, log.New(io.Discard, "", 0))
	require.NoError(t, err)
	if cfg.http1 {
		srv.Protocols = new(http.Protocols)
		srv.Protocols.SetHTTP1(true)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	r.addr = ln.Addr().String()
	r.url = "https://" + r.addr + "/v2/messages"
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			_ = srv.Close()
		}
		require.ErrorIs(t, <-done, http.ErrServerClosed)
	})
	return r
}

// tlsFor returns a client TLS configuration trusting the rig's CA and
// presenting cert, if any.
func (r *rig) tlsFor(cert *tls.Certificate) *tls.Config {
	return httpbinding.ClientTLSConfig(r.ca.pool, cert)
}

// client returns a Client of the rig presenting cert (nil: none).
func (r *rig) client(t testing.TB, cert *tls.Certificate, opts ...httpbinding.ClientOption) *httpbinding.Client {
	t.Helper()
	c, err := httpbinding.NewClient(r.url, append([]httpbinding.ClientOption{httpbinding.WithTLSConfig(r.tlsFor(cert)), httpbinding.WithTimeout(10 * time.Second)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// An answer is a raw HTTP answer.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// post sends a raw request with a plain net/http client presenting cert.
func (r *rig) post(t *testing.T, cert *tls.Certificate, method string, header map[string]string, body []byte) answer {
	t.Helper()
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: r.tlsFor(cert)}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequest(method, r.url, strings.NewReader(string(body)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	require.NoError(t, err)
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

// refusal decodes a refusal answer strictly.
func (a answer) refusal(t *testing.T) envelope.Refusal {
	t.Helper()
	require.Equal(t, "application/json", a.header.Get("Content-Type"), "status %d body %s", a.status, a.body)
	f, err := envelope.DecodeRefusal(a.body)
	require.NoError(t, err, "status %d body %s", a.status, a.body)
	return f
}

// wrap returns the wrapped request of an entry, as the Client sends it.
func wrap(e outbox.Entry) []byte {
	return envelope.DefaultWrapper{}.Wrap(nil, e.EntityType, e.EntityKey, e.Payload)
}

// records returns n paths, each with an observation from one source:
// 2n+1 records, ceil((2n+1)/100) chunks.
func records(t *testing.T, prefix string, n int) []*catalog.Record {
	t.Helper()
	const source = "can0.0123456789abcdef"
	src, err := catalog.NewSource(catalog.Source{SourceRef: source})
	require.NoError(t, err)
	out := []*catalog.Record{src}
	for i := range n {
		name := fmt.Sprintf("%s.sensor%04d", prefix, i)
		p, err := catalog.NewPath(catalog.Path{Path: name, Unit: catalog.UnitOf("m")})
		require.NoError(t, err)
		o, err := catalog.NewObservation(catalog.Observation{Path: name, SourceRef: source, ValueType: catalog.Number})
		require.NoError(t, err)
		out = append(out, p, o)
	}
	return out
}

// board is a vessel's on-board outbox with one committed cycle.
type board struct {
	vessel  uuid.UUID
	store   *outboxmem.Store
	commit  outbox.Commit
	snapID  uuid.UUID
	entries []outbox.Entry
}

// commitCycle commits a cycle of n paths for vessel to a fresh outbox;
// snapshot is the cycle's id, or uuid.Nil for a fresh one.
func commitCycle(t *testing.T, vessel, snapshot uuid.UUID, prefix string, n int) *board {
	t.Helper()
	return commitRecords(t, vessel, snapshot, records(t, prefix, n))
}

// commitRecords commits a cycle of records for vessel to a fresh outbox;
// snapshot is the cycle's id, or uuid.Nil for a fresh one.
func commitRecords(t testing.TB, vessel, snapshot uuid.UUID, records []*catalog.Record) *board {
	t.Helper()
	c := outbox.NewCycle(vessel, time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), records)
	if snapshot != uuid.Nil {
		c.SnapshotID = snapshot
	}
	store := outboxmem.New()
	commit, err := outbox.NewWriter(store).Commit(context.Background(), c)
	require.NoError(t, err)
	return &board{vessel: vessel, store: store, commit: commit, snapID: c.SnapshotID, entries: commit.Entries}
}

// states returns the delivery state of every entry of the board's cycle.
func (b *board) states(t *testing.T) []outbox.State {
	t.Helper()
	var out []outbox.State
	err := b.store.WithVessel(context.Background(), b.vessel, func(tx outbox.Tx) error {
		es, err := tx.Entries(context.Background(), b.snapID)
		for _, e := range es {
			out = append(out, e.State)
		}
		return err
	})
	require.NoError(t, err)
	return out
}
