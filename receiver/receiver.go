// Package receiver runs the shore side of the source catalog protocol
// (SPEC.md §8, §11) in one call: [New] wires the store under storeheal,
// the finalize policy with its retention, the HTTP binding with chunk
// references, manifest indexes and gzip bodies, the reconciler (§8.6), the admin routes —
// health, metrics, inventory — and the log, as `sourcecatalog serve`
// does. The packages underneath (finalize, httpbinding, storeheal,
// prommetrics) stay for the integrator who needs one piece.
//
//	svc, err := receiver.New(ctx, receiver.Config{
//		Store:     sqlitestore.Source("/var/lib/catalog.db"),
//		Retention: receiver.Keep(8),
//		Auth:      auth,
//	})
//	...
//	defer svc.Close()
//	go svc.Run(ctx)
//	mux.Handle("/v2/messages", svc.Handler()) // GET and POST: no method pattern
//	admin.Handle("/", svc.Admin())
//
// What a default would make dangerous the Config makes the caller
// choose: the retention (a vessel that keeps every snapshot stops
// activating once finalize.DefaultLimits.RetainedSnapshots are kept) and
// the authentication (a trusted proxy off loopback needs its secret,
// which httpbinding.NewTrustedProxy enforces).
package receiver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/httpbinding/inventory"
	"github.com/yachtmemory/sourcecatalog/storeheal"
)

// Config is what New wires. Store, Retention and Auth are required.
type Config struct {
	// Store is the receiver's store, which New opens under storeheal
	// (storeheal.OpenReceiver): a store poisoned by a failure is answered
	// 503 store_unavailable at once and reopened with backoff.
	// sqlitestore.Source names a SQLite file.
	Store storeheal.Source
	// Retention is how many finalized snapshots each vessel keeps:
	// Keep(n) or KeepAll(). The zero Retention is refused.
	Retention Retention
	// Auth authenticates every request before its body is read:
	// httpbinding.MutualTLS, LoadTokens, CertOrToken or NewTrustedProxy.
	Auth httpbinding.Authenticator
	// Logger gets the log lines of Log; slog.Default() when nil.
	Logger *slog.Logger
	// Metrics, when not nil, gets every event and the store's status,
	// and is served at the admin's GET /metrics.
	Metrics Metrics
	// ReconcileInterval is how often Run reconciles;
	// httpbinding.DefaultReconcileInterval when zero or less.
	ReconcileInterval time.Duration
	// TLS, when not nil, makes Serve serve the message route over TLS
	// (httpbinding.NewServer, such as httpbinding.ServerTLSConfig's);
	// when nil, Serve serves plain HTTP, for a listener on loopback or
	// behind a proxy that terminates TLS: with an Auth that needs no TLS
	// (NewTrustedProxy, InsecureNoAuth), since a client certificate needs
	// TLS and a bearer token in clear is answered 401 (SPEC.md §11.2).
	// New checks it as NewServer does.
	TLS *tls.Config
}

// Metrics are a receiver's metrics: *prommetrics.Metrics implements it,
// so that only a program using prommetrics links Prometheus. Its
// methods must be safe for concurrent use and must not block.
type Metrics interface {
	// ObserveReceiver gets the finalize.Receiver's events.
	ObserveReceiver(finalize.Event)
	// ObserveBinding gets the Handler's and the Reconciler's events.
	ObserveBinding(httpbinding.Event)
	// WatchStore reads the store's status at each scrape; New calls it
	// once, and fails with its error. *prommetrics.Metrics registers its
	// store metrics there, so one value serves one Service: a second New
	// with it fails with a duplicate registration.
	WatchStore(status func() storeheal.Status) error
	// Handler serves the metrics at GET /metrics.
	Handler() http.Handler
}

// Retention is a Config's retention policy, made by Keep or KeepAll. It
// is a flag.Value too: Set takes "all" or a number.
type Retention struct {
	set, all bool
	n        int
}

// Keep keeps the newest n finalized snapshots of each vessel after each
// activation, and always the active one, pruning older ones
// (finalize.WithRetention); n is from 0 to
// finalize.DefaultLimits.RetainedSnapshots, else New fails.
func Keep(n int) Retention { return Retention{set: true, n: n} }

// KeepAll prunes nothing: a vessel stops activating, with
// staging_exhausted, once finalize.DefaultLimits.RetainedSnapshots are
// kept, until an operator prunes or discards.
func KeepAll() Retention { return Retention{set: true, all: true} }

// String returns "all", the number kept, or "" for the zero Retention.
func (r Retention) String() string {
	switch {
	case !r.set:
		return ""
	case r.all:
		return "all"
	}
	return strconv.Itoa(r.n)
}

// Set sets r from "all" or a number of snapshots, as KeepAll and Keep;
// anything else is an error wrapping sourcecatalog.ErrInvalidValue, r
// unchanged.
func (r *Retention) Set(s string) error {
	if s == "all" {
		*r = KeepAll()
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || s != strconv.Itoa(n) || checkKeep(n) != nil {
		return sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, fmt.Sprintf("receiver: retention %q: must be all or a number of snapshots from 0 to %d", s, finalize.DefaultLimits.RetainedSnapshots))
	}
	*r = Keep(n)
	return nil
}

func checkKeep(n int) *sourcecatalog.Error {
	if max := finalize.DefaultLimits.RetainedSnapshots; n < 0 || n > max {
		return sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, fmt.Sprintf("receiver: Keep(%d): a vessel keeps from 0 to %d finalized snapshots", n, max))
	}
	return nil
}

// options are the Receiver's options of r.
func (r Retention) options() ([]finalize.Option, error) {
	switch {
	case !r.set:
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, fmt.Sprintf(
			"receiver: no retention: choose Keep(n), the finalized snapshots each vessel keeps (0 to %d), or KeepAll(), under which a vessel stops activating once %d are kept",
			finalize.DefaultLimits.RetainedSnapshots, finalize.DefaultLimits.RetainedSnapshots)).AtField("Retention")
	case r.all:
		return nil, nil
	}
	if err := checkKeep(r.n); err != nil {
		return nil, err.AtField("Retention")
	}
	return []finalize.Option{finalize.WithRetention(r.n)}, nil
}

// A Service is a receiver New has wired: its store open, its routes
// ready. Its methods are safe for concurrent use.
type Service struct {
	cfg     Config
	log     Log
	store   *storeheal.Handle[finalize.Store]
	recv    *finalize.Receiver
	handler *httpbinding.Handler
	admin   http.Handler
	binding httpbinding.Observer
}

// New checks cfg, opens its store and wires the receiver. It returns an
// error wrapping sourcecatalog.ErrInvalidValue, located at the Config
// field at fault (sourcecatalog.Error.Field), having opened nothing, when
// Retention is the zero value or out of range, Auth is nil, Store has
// no Open or TLS is one httpbinding.NewServer refuses; and the store's error when the store does not open, or
// storeheal.OpenReceiver's when it cannot write. The caller must Close the Service.
func New(ctx context.Context, cfg Config) (*Service, error) {
	retain, err := cfg.Retention.options()
	switch {
	case err != nil:
		return nil, err
	case cfg.Auth == nil:
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "receiver: no Auth: every request must be authenticated (httpbinding.MutualTLS, LoadTokens, CertOrToken or NewTrustedProxy)").AtField("Auth")
	case cfg.Store.Open == nil:
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "receiver: no Store: name one, such as sqlitestore.Source(path)").AtField("Store")
	}
	if cfg.TLS != nil {
		if _, err := httpbinding.NewServer("", http.NotFoundHandler(), cfg.TLS, httpbinding.Timeouts{}, nil); err != nil {
			var se *sourcecatalog.Error
			if errors.As(err, &se) {
				err = se.AtField("TLS")
			}
			return nil, err
		}
	}
	s := &Service{cfg: cfg, log: Log{cfg.Logger}}
	if s.log.Logger == nil {
		s.log.Logger = slog.Default()
	}
	h, err := storeheal.OpenReceiver(ctx, cfg.Store, storeheal.WithObserver(s.log.Store))
	if err != nil {
		return nil, err
	}
	s.store = h
	observe, metrics := s.log.Finalize, http.Handler(nil)
	s.binding = s.log.Binding
	if m := cfg.Metrics; m != nil {
		if err := m.WatchStore(h.Status); err != nil {
			return nil, errors.Join(err, h.Close())
		}
		observe = func(e finalize.Event) { m.ObserveReceiver(e); s.log.Finalize(e) }
		s.binding = func(e httpbinding.Event) { m.ObserveBinding(e); s.log.Binding(e) }
		metrics = m.Handler()
	}
	store := storeheal.Receiver(h, func(st finalize.Store) finalize.Store { return st })
	// A message completing a set is finalized in its own transaction: one
	// commit for an identical cycle's manifest index (SPEC.md §8.6).
	s.recv = finalize.NewReceiver(store, append(retain, finalize.WithObserver(observe), finalize.WithFinalizeWhenComplete())...)
	s.handler = httpbinding.NewHandler(s.recv, cfg.Auth, httpbinding.WithChunkReferences(true), httpbinding.WithManifestIndexes(true), httpbinding.WithObserver(s.binding))
	s.admin = adminHandler(h.Status, s.ping, metrics, s.recv, s.log.Logger)
	return s, nil
}

// ping asks the store whether it serves, as finalize.Receiver.Ping.
func (s *Service) ping(ctx context.Context) error {
	return s.store.Do(func(st finalize.Store) error { return finalize.NewReceiver(st).Ping(ctx) })
}

// Handler returns the message route (SPEC.md §11): a POST stages a
// message and answers its receipt or refusal, a GET answers the
// capability declaration (protocol v2, request_gzip, chunk_reference,
// manifest_index, §11.7). Mount it for every method, at one path.
func (s *Service) Handler() http.Handler { return s.handler }

// Admin returns the admin routes, unauthenticated, for the operators'
// network only: GET /healthz (200 "ok"; 503 "store poisoned" or "store
// reopening" while the store heals, "store unavailable" when it does not
// answer), GET /metrics when Config.Metrics is set, and the inventory
// API, GET /vessels/{vessel}/inventory and /vessels/{vessel}/history
// (httpbinding/inventory). Other paths are 404. After Close, /healthz
// answers 503 "store closed".
func (s *Service) Admin() http.Handler { return s.admin }

// Run runs the reconciler (httpbinding.Reconciler, SPEC.md §8.6): a pass
// at once, then every Config.ReconcileInterval, finalizing what a crash
// or a failed Finalize left complete, until ctx is done; it returns nil
// then. Serve runs it itself: call Run only when mounting Handler and
// Admin in servers of your own.
func (s *Service) Run(ctx context.Context) error {
	rc := httpbinding.Reconciler{Receiver: s.recv, Interval: s.cfg.ReconcileInterval, Observer: s.binding}
	return rc.Run(ctx)
}

// Close closes the store; later messages are answered 503 (the
// declaration, which reads no store, is still answered), and a Run still
// going logs each pass's failure until its ctx ends: stop Run first. It
// returns the error of closing it, and is idempotent.
func (s *Service) Close() error { return s.store.Close() }

// adminHandler serves GET /healthz, GET /metrics when metrics is not nil,
// and the inventory of recv.
func adminHandler(status func() storeheal.Status, ping func(context.Context) error, metrics http.Handler, recv *finalize.Receiver, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", health(status, ping, log))
	if metrics != nil {
		mux.Handle("GET /metrics", metrics)
	}
	mux.Handle("/vessels/", inventory.NewHandler(recv, inventory.WithErrorLog(func(err error) {
		log.Warn("inventory: the store failed", "err", err)
	})))
	return mux
}

// healthTimeout bounds a /healthz ping of the store.
const healthTimeout = 5 * time.Second

// health answers 200 "ok" when the store is healthy and ping succeeds
// within healthTimeout, and 503 otherwise: "store poisoned" or "store
// reopening" while the store heals (the transitions are logged by
// Log.Store), "store unavailable" when the ping fails (logged here).
func health(status func() storeheal.Status, ping func(context.Context) error, log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), healthTimeout)
		defer cancel()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if st := status(); st.State != storeheal.Healthy {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("store " + st.State.String() + "\n"))
			return
		}
		if err := ping(ctx); err != nil {
			log.Warn("health check: the store does not answer", "err", err)
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("store unavailable\n"))
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	}
}
