package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/prommetrics"
	"github.com/yachtmemory/sourcecatalog/storeheal"
)

var serveCommand = &command{
	name:     "serve",
	synopsis: "--listen ADDR --store STORE --retain N|all --tls-cert FILE --tls-key FILE --client-ca FILE|--tokens FILE|--trusted-proxy CIDR [FLAGS]",
	summary:  "run the receiver as an HTTPS service (SPEC.md §11)",
	help: `Serve runs the shore side of the protocol as an HTTPS service (SPEC.md §11):
each POST carries one wrapped outbox request, a manifest or a chunk, which
the receiver stages in STORE and answers with its receipt or refusal. When
a receipt reports a snapshot's set complete, serve finalizes it before
answering; a reconciler finalizes what a crash or a failed finalize left
complete, at start-up and then every --reconcile-interval (SPEC.md §8.6).

Every request is authenticated before its body is read, by a client
certificate (--client-ca), a bearer token (--tokens), or either when both
are given (a request presenting both must name one vessel with both), or
by the header of a proxy in front of serve (--trusted-proxy). A
vessel's credentials stage only that vessel's messages. Serve has no
fleet registry: the --client-ca and --tokens files (or, with
--trusted-proxy, the proxy's authorities) are its registry, and every
vessel they authenticate is taken as registered (SPEC.md §11.2).

A GET on the same URL, authenticated alike, answers serve's capability
declaration (SPEC.md §11.7): protocol v2, gzip request bodies
(request_gzip, §11.1) and chunk references (chunk_reference, §6.6),
which serve stages from the chunks of that vessel's retained snapshots.

Answers:
  200  the receipt: staged, or already_received for an identical resend
  401  not authenticated (no body)
  403  foreign_vessel: the message names another vessel
  405  not a POST
  409  conflict, revision_conflict
  413  a body over 32768 bytes (refusal limit_exceeded; the rest is not read)
  415  not application/json, or two Content-Types (refusal unsupported)
  422  the request or its message does not decode or is invalid, with the
       location of the first problem
  429  the vessel has 4 requests in flight (Retry-After)
  503  staging_exhausted or store_unavailable (Retry-After)
  400  the body could not be read, such as a sender cut by a timeout

Retention. Each vessel's finalized snapshots (activated, superseded,
rejected) are kept up to a bound of 32 snapshots and 256 MiB; a snapshot
that would exceed it cannot be finalized (staging_exhausted). --retain is
required so that this is decided by the operator, not found out hours
later: --retain N keeps the newest N finalized snapshots after each
activation (and always the active one), pruning older ones and, when the
bound is full, the oldest; --retain all prunes nothing, so that a vessel
stops activating once 32 snapshots are kept — about eight hours of
15-minute cycles — until an operator prunes or discards.

The store heals. When a failure poisons it — an I/O error or a full disk
under sqlite:FILE, a failed commit, the connection to MariaDB lost — serve
answers every message 503 store_unavailable at once, lets the requests
already running on the store finish, closes it and opens it again: at
once, then after a backoff doubling from 0.1 s to 10 s, until the store
opens and a write made and rolled back succeeds. Then it serves again,
without a restart; /healthz, the log and sourcecatalog_store_state say
which state the store is in: healthy, poisoned (requests finishing) or
reopening.

Logs go to standard error with log/slog: the addresses bound, each
request (vessel, snapshot, entity type, outcome, status), each finalize
(vessel, snapshot, outcome, revision, duration), a warning for each
snapshot the active one supersedes (a vessel whose revisions went
backwards, SPEC.md §8.4), reconciliation failures, store retries, the
store poisoned, each reopen that failed and the store reopened, a warning
when a vessel uses 80% of a staging bound, and the shutdown. They never
hold a DSN's password nor a token.

SIGTERM or SIGINT stops serve gracefully: it stops accepting, lets the
requests in flight finish (30 s at most), stops the reconciler and closes
the store, then exits 0. A finalize cut short by the bound leaves its
snapshot complete and staged, and the reconciler activates it when serve
starts again. A second signal ends it at once.

Flags (each at most once):
  --listen ADDR        the host:port of the HTTPS listener, such as
                       :8443 or 127.0.0.1:8443 (port 0 picks one; the log
                       line "listening" has the address bound) (required)
  --store STORE        the receiver's store: memory (lost at exit),
                       sqlite:FILE (created when absent; other processes
                       may use it at the same time), or mysql:DSN, a
                       github.com/go-sql-driver/mysql DSN naming a database,
                       such as 'user:password@tcp(db:3306)/catalog' (required)
  --retain N|all       the retention policy above: N from 0 to 32, or all
                       (required)
  --tls-cert FILE      the server's certificate chain, PEM (required)
  --tls-key FILE       its private key, PEM (required)
  --client-ca FILE     authenticate by client certificate: the CA
                       certificates, PEM, that client certificates must
                       chain to. The vessel is the certificate's one URI SAN
                       urn:uuid:VESSEL; a request whose certificate does
                       not verify (expired, of another CA, not for client
                       authentication) is answered 401
  --tokens FILE        authenticate by bearer token: a file of lines
                       "SHA256HEX VESSEL", the SHA-256 of a token in
                       lowercase hex and the vessel it authenticates (a
                       line starting with '#' is a comment); at least
                       --client-ca or --tokens
  --trusted-proxy CIDR[,CIDR]
                       instead of --client-ca and --tokens: take the vessel
                       from a header set by a proxy in front of serve that
                       authenticates it (an ingress terminating mutual
                       TLS), on connections from these addresses or
                       prefixes only, such as 127.0.0.1 or 10.0.0.0/24.
                       TLS is then optional: --tls-cert and --tls-key, or
                       plain HTTP with --listen on a loopback or private
                       address. Over plain HTTP a request with an
                       Authorization header is 401: the proxy must not
                       forward it
  --trusted-proxy-header NAME
                       the header the proxy sets to urn:uuid:VESSEL, the
                       URI SAN of the client certificate it verified, after
                       removing any a client sent; the header from any
                       other address, twice, empty or otherwise spelled is
                       401 (required with --trusted-proxy)
  --trusted-proxy-secret-file FILE
                       also require the one-line secret in FILE (16 to 1024
                       visible ASCII characters) in the header
                       X-Sourcecatalog-Proxy-Secret, which the proxy adds;
                       required unless every --trusted-proxy address is
                       loopback (127.0.0.0/8, ::1)
  --insecure-no-auth VESSEL
                       instead of TLS and authentication: plain HTTP, every
                       request taken as sent by VESSEL, whoever sends it;
                       a request presenting an Authorization header is
                       401, as a credential sent in clear.
                       For tests and for a receiver behind a proxy that
                       authenticates; --listen must then be a loopback
                       address (127.0.0.1 or ::1), and the TLS and
                       authentication flags are refused
  --admin-listen ADDR|off
                       the host:port of a plain HTTP listener serving
                       GET /healthz (200 "ok" when the store answers; 503
                       "store poisoned" or "store reopening" while it
                       heals, "store unavailable" when it does not answer),
                       GET /metrics (Prometheus text format), and a
                       vessel's active catalog as JSON, GET
                       /vessels/VESSEL/inventory (in pages: ?limit=N up to
                       1000 and ?cursor=C, the next_cursor of the page
                       before) and GET /vessels/VESSEL/history (the
                       snapshots kept), or off (default 127.0.0.1:9464).
                       It has no authentication and serves every vessel's
                       inventory: keep it on loopback or a private network
                       for the operators and the scraper
  --reconcile-interval DURATION
                       how often the reconciler runs, such as 90s or 5m
                       (at least 1s; default 5m)
  --migrate            creates or upgrades the MariaDB schema; without it
                       a schema that is not current is an error (memory
                       and sqlite:FILE create theirs anyway)
  --log-format text|json
                       the log format (default text)

Metrics (all labelled as shown):
  sourcecatalog_messages_total{outcome,code}         requests answered
  sourcecatalog_receives_total{op,outcome}           messages received
  sourcecatalog_finalize_total{outcome}              finalize outcomes
  sourcecatalog_finalize_duration_seconds{outcome}   finalize (activation) time
  sourcecatalog_staging_snapshots{vessel,bound}      staged snapshots, and
  sourcecatalog_staging_snapshots_limit{vessel,bound}  their bound
  sourcecatalog_staging_bytes{vessel,bound}          staged bytes, and
  sourcecatalog_staging_bytes_limit{vessel,bound}      their bound
  sourcecatalog_store_retries_total{op}              transactions retried
  sourcecatalog_reconcile_total{result}              vessels reconciled, and
                                                     failures to list them
  sourcecatalog_store_state{state}                   1 for the store's state
                                                     (healthy, poisoned,
                                                     reopening, closed), 0
                                                     for the others
  sourcecatalog_store_poisonings_total               failures that poisoned it
  sourcecatalog_store_reopens_total{result}          reopen attempts, ok or
                                                     error
bound is incomplete (snapshots still staging) or retained (finalized);
outcome is a receipt status, a finalize outcome, an error class's wire
name (error when it has none), or for messages_total also
unauthenticated, method_not_allowed or bad_request.

The exit status is 0 after a clean shutdown, 1 when serve cannot start
(a file, the store, an address) or stops uncleanly, and 2 for a usage
error.
`,
	run: runServe,
}

// Serve's defaults and bounds.
const (
	defaultAdminListen = "127.0.0.1:9464"
	shutdownTimeout    = 30 * time.Second // requests in flight finish within it
	healthTimeout      = 5 * time.Second  // a /healthz ping of the store
	usageWarning       = 0.8              // a staging bound this full is logged
)

// serveFlags are serve's command line.
type serveFlags struct {
	listen, admin                     stringFlag
	store                             storeFlag
	retain                            retainFlag
	tlsCert, tlsKey, clientCA, tokens stringFlag
	insecure                          uuidFlag
	interval                          durationFlag
	migrate                           boolFlag
	logFormat                         logFormatFlag
	proxy                             proxyFlags // serveproxy.go
}

func runServe(e *env, c *command, args []string) int {
	f, status, ok := parseServe(e, c, args)
	if !ok {
		return status
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return f.serve(ctx, stop, e, c)
}

// parseServe parses and checks the command line; on failure it returns the
// exit status, the problem reported.
func parseServe(e *env, c *command, args []string) (*serveFlags, int, bool) {
	f := &serveFlags{
		admin: stringFlag{s: defaultAdminListen}, insecure: uuidFlag{check: notNil},
		interval: durationFlag{d: httpbinding.DefaultReconcileInterval, min: time.Second},
	}
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.Var(&f.listen, "listen", "")
	fs.Var(&f.admin, "admin-listen", "")
	fs.Var(&f.store, "store", "")
	fs.Var(&f.retain, "retain", "")
	fs.Var(&f.tlsCert, "tls-cert", "")
	fs.Var(&f.tlsKey, "tls-key", "")
	fs.Var(&f.clientCA, "client-ca", "")
	fs.Var(&f.tokens, "tokens", "")
	fs.Var(&f.insecure, "insecure-no-auth", "")
	fs.Var(&f.interval, "reconcile-interval", "")
	fs.Var(&f.migrate, "migrate", "")
	fs.Var(&f.logFormat, "log-format", "")
	f.proxy.register(fs)
	operands, status, ok := c.parse(e, fs, args)
	if !ok {
		return nil, status, false
	}
	if err := f.check(operands); err != nil {
		return nil, c.usageError(e, "%v", err), false
	}
	return f, 0, true
}

// check reports the first problem of a parsed command line.
func (f *serveFlags) check(operands []string) error {
	switch {
	case len(operands) > 0:
		return fmt.Errorf("unexpected argument %q: serve takes no arguments", operands[0])
	case !f.listen.set:
		return errors.New("--listen ADDR is required")
	case !validAddr(f.listen.s):
		return errors.New("--listen must be HOST:PORT, such as :8443 or 127.0.0.1:8443")
	case f.admin.s != "off" && !validAddr(f.admin.s):
		return errors.New("--admin-listen must be HOST:PORT, such as 127.0.0.1:9464, or off")
	case f.store.kind == "":
		return errors.New("--store is required: " + storeSpelling)
	case !f.retain.set:
		return errors.New("--retain N or --retain all is required: decide how many finalized snapshots each vessel keeps (see 'sourcecatalog help serve')")
	case f.proxy.any():
		return f.checkProxy()
	case f.insecure.set:
		if f.tlsCert.set || f.tlsKey.set || f.clientCA.set || f.tokens.set {
			return errors.New("--insecure-no-auth serves plain HTTP without authentication: --tls-cert, --tls-key, --client-ca and --tokens do not go with it")
		}
		if !loopbackAddr(f.listen.s) {
			return errors.New("--insecure-no-auth needs --listen on a loopback address, such as 127.0.0.1:8080 or [::1]:8080")
		}
	case !f.clientCA.set && !f.tokens.set:
		return errors.New("no authentication: give --client-ca FILE, --tokens FILE or both")
	case !f.tlsCert.set || !f.tlsKey.set:
		return errors.New("--tls-cert FILE and --tls-key FILE are required")
	}
	return nil
}

// validAddr reports whether addr is HOST:PORT with a numeric port.
func validAddr(addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	n, err := strconv.ParseUint(port, 10, 16)
	return err == nil && digits(port) && n <= 65535
}

// loopbackAddr reports whether addr is HOST:PORT with HOST a loopback IP
// address. A name, even localhost, does not count: it may resolve
// elsewhere.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// serve runs the service until ctx is done, then shuts it down; stop
// restores the default handling of the signals, so that a second one
// ends the process at once. It returns the exit status.
func (f *serveFlags) serve(ctx context.Context, stop func(), e *env, c *command) (status int) {
	logger := f.logFormat.logger(e.stderr)
	auth, tlsConfig, authName, err := f.credentials()
	if err != nil {
		return c.failf(e, "%v", err)
	}
	logs := serveLog{logger}
	st, health, err := f.store.openHealing(ctx, storeOptions{migrate: f.migrate.on}, logs.store)
	if err != nil {
		return c.failf(e, "opening the store: %v", err)
	}
	defer func() {
		if err := st.close(); err != nil {
			logger.Error("closing the store", "store", st.name, "err", err)
			status = exitInvalid
		}
	}()
	metrics := newServeMetrics()
	if err := metrics.WatchStore(health.Status); err != nil {
		return c.failf(e, "%v", err)
	}
	ln, adminLn, err := f.bind()
	if err != nil {
		return c.failf(e, "%v", err)
	}
	observeReceiver := func(ev finalize.Event) { metrics.ObserveReceiver(ev); logs.receiver(ev) }
	observeBinding := func(ev httpbinding.Event) { metrics.ObserveBinding(ev); logs.binding(ev) }
	recv := finalize.NewReceiver(st.receiver, append(f.retain.options(), finalize.WithObserver(observeReceiver))...)
	errorLog := slog.NewLogLogger(logger.Handler(), slog.LevelWarn)
	srv, err := newServeServer(httpbinding.NewHandler(recv, auth, httpbinding.WithChunkReferences(true), httpbinding.WithObserver(observeBinding)), tlsConfig, errorLog)
	if err != nil {
		ln.Close()
		return c.failf(e, "%v", err)
	}

	servers, serving := []*http.Server{srv}, make(chan error, 2)
	go func() { serving <- serveOn(srv, ln, tlsConfig != nil) }()
	logger.Info("listening", "addr", ln.Addr().String(), "tls", tlsConfig != nil, "auth", authName,
		"store", st.name, "retain", f.retain.String(), "reconcile_interval", f.interval.d.String())
	if f.insecure.set {
		logger.Warn("authentication is off: every request is taken as sent by the vessel", "vessel", f.insecure.id.String())
	}
	if adminLn != nil {
		admin := newAdminServer(withInventory(adminHandler(health.Status, st.ping, metrics, logger), recv, logger), errorLog)
		servers = append(servers, admin)
		go func() { serving <- serveOn(admin, adminLn, false) }()
		logger.Info("admin listening", "addr", adminLn.Addr().String(), "paths", adminPaths)
	}

	reconcileCtx, stopReconciler := context.WithCancel(context.WithoutCancel(ctx))
	var reconciling sync.WaitGroup
	reconciling.Go(func() {
		rc := httpbinding.Reconciler{Receiver: recv, Interval: f.interval.d, Observer: observeBinding}
		_ = rc.Run(reconcileCtx) // failures go to the observer
	})
	clean := waitForStop(ctx, stop, logger, serving)
	clean = shutdownServers(logger, servers) && clean
	stopReconciler()
	reconciling.Wait()
	if !clean {
		return exitInvalid
	}
	logger.Info("stopped")
	return exitOK
}

// bind opens the listeners: --listen's, and --admin-listen's unless off
// (nil then).
func (f *serveFlags) bind() (ln, admin net.Listener, err error) {
	if ln, err = net.Listen("tcp", f.listen.s); err != nil {
		return nil, nil, fmt.Errorf("--listen: %w", err)
	}
	if f.admin.s == "off" {
		return ln, nil, nil
	}
	if admin, err = net.Listen("tcp", f.admin.s); err != nil {
		ln.Close()
		return nil, nil, fmt.Errorf("--admin-listen: %w", err)
	}
	return ln, admin, nil
}

// waitForStop waits until ctx is done or a server fails, and reports whether it
// was ctx.
func waitForStop(ctx context.Context, stop func(), logger *slog.Logger, serving <-chan error) bool {
	select {
	case <-ctx.Done():
		stop()
		logger.Info("shutting down", "cause", context.Cause(ctx).Error())
		return true
	case err := <-serving:
		logger.Error("serving failed; shutting down", "err", err)
		return false
	}
}

// serveOn serves srv on ln until it is shut down, when it returns nil.
func serveOn(srv *http.Server, ln net.Listener, useTLS bool) error {
	var err error
	if useTLS {
		err = srv.ServeTLS(ln, "", "") // the certificate is in srv.TLSConfig
	} else {
		err = srv.Serve(ln)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// shutdownServers stops the servers gracefully within shutdownTimeout, closing
// what is left after it, and reports whether every server stopped in
// time.
func shutdownServers(log *slog.Logger, servers []*http.Server) bool {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	clean := true
	for _, srv := range servers {
		if err := srv.Shutdown(ctx); err != nil {
			log.Error("requests still in flight at the shutdown bound; closing their connections", "err", err, "bound", shutdownTimeout.String())
			srv.Close()
			clean = false
		}
	}
	return clean
}

// credentials loads the TLS configuration and the Authenticator the flags
// name, with a name for the log. The TLS configuration is nil for
// --insecure-no-auth.
func (f *serveFlags) credentials() (httpbinding.Authenticator, *tls.Config, string, error) {
	if f.proxy.any() {
		return f.proxyCredentials()
	}
	if f.insecure.set {
		return httpbinding.InsecureNoAuth(f.insecure.id), nil, "insecure_no_auth", nil
	}
	cert, err := tls.LoadX509KeyPair(f.tlsCert.s, f.tlsKey.s)
	if err != nil {
		return nil, nil, "", fmt.Errorf("--tls-cert, --tls-key: %w", err)
	}
	var cas *x509.CertPool
	if f.clientCA.set {
		pem, err := os.ReadFile(f.clientCA.s)
		if err != nil {
			return nil, nil, "", fmt.Errorf("--client-ca: %w", err)
		}
		cas = x509.NewCertPool()
		if !cas.AppendCertsFromPEM(pem) {
			return nil, nil, "", fmt.Errorf("--client-ca: %s holds no PEM certificate", f.clientCA.s)
		}
	}
	var tokens *httpbinding.Tokens
	if f.tokens.set {
		if tokens, err = httpbinding.LoadTokens(f.tokens.s); err != nil {
			return nil, nil, "", fmt.Errorf("--tokens %s: %w", f.tokens.s, err)
		}
		if tokens.Len() == 0 {
			return nil, nil, "", fmt.Errorf("--tokens: %s lists no token", f.tokens.s)
		}
	}
	tlsConfig := httpbinding.ServerTLSConfig(cert, cas)
	switch {
	case cas != nil && tokens != nil:
		return httpbinding.CertOrToken(httpbinding.MutualTLS{ClientCAs: cas}, tokens), tlsConfig, "mutual_tls+bearer_tokens", nil
	case cas != nil:
		return httpbinding.MutualTLS{ClientCAs: cas}, tlsConfig, "mutual_tls", nil
	default:
		return tokens, tlsConfig, "bearer_tokens", nil
	}
}

// newServeServer returns the server of the binding: httpbinding.NewServer
// over TLS, or a plain HTTP server with the same bounds for
// --insecure-no-auth (tlsConfig nil).
func newServeServer(h http.Handler, tlsConfig *tls.Config, errorLog *log.Logger) (*http.Server, error) {
	if tlsConfig != nil {
		return httpbinding.NewServer("", h, tlsConfig, httpbinding.Timeouts{}, errorLog)
	}
	return httpbinding.NewInsecureServer("", h, httpbinding.Timeouts{}, errorLog), nil
}

// newAdminServer returns the plain HTTP server of /healthz and /metrics,
// with short bounds: its clients are a scraper and a health check.
func newAdminServer(h http.Handler, errorLog *log.Logger) *http.Server {
	return &http.Server{
		Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 120 * time.Second,
		MaxHeaderBytes: httpbinding.MaxHeaderBytes, ErrorLog: errorLog,
	}
}

// adminHandler serves GET /healthz and GET /metrics; other paths are 404.
// /healthz answers 200 "ok" when the store is healthy and ping succeeds
// within healthTimeout, and 503 otherwise: "store poisoned" or "store
// reopening" while the store heals (the transitions are logged by the
// observer), "store unavailable" when the ping fails (logged here).
func adminHandler(status func() storeheal.Status, ping func(context.Context) error, m *serveMetrics, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), healthTimeout)
		defer cancel()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if st := status(); st.State != storeheal.Healthy {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "store "+st.State.String()+"\n")
			return
		}
		if err := ping(ctx); err != nil {
			log.Warn("health check: the store does not answer", "err", err)
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "store unavailable\n")
			return
		}
		io.WriteString(w, "ok\n")
	})
	mux.Handle("GET /metrics", m.handler())
	return mux
}

// serveLog writes serve's log lines from the observers' events.
type serveLog struct{ *slog.Logger }

// store logs what the store's Handle reports: the store poisoned, the
// reopening begun, each attempt that failed, and the store reopened.
func (l serveLog) store(s storeheal.Status) {
	state := s.State.String()
	switch {
	case s.State == storeheal.Poisoned:
		l.Error("store poisoned: refusing requests until it is reopened", "state", state, "err", s.Cause)
	case s.State == storeheal.Reopening && s.Attempts == 0 && s.LastErr != nil:
		l.Warn("store reopening", "state", state, "close_err", s.LastErr)
	case s.State == storeheal.Reopening && s.Attempts == 0:
		l.Warn("store reopening", "state", state)
	case s.State == storeheal.Reopening:
		l.Warn("store reopen failed", "state", state, "attempts", s.Attempts, "err", s.LastErr)
	case s.State == storeheal.Healthy:
		l.Info("store reopened", "state", state, "failed_attempts", s.Attempts, "reopens", s.Reopens)
	}
}

// binding logs what the Handler and the Reconciler report: every request,
// and reconciliations that finalized something or failed. Finalize calls
// are logged from the Receiver's events.
func (l serveLog) binding(e httpbinding.Event) {
	switch e.Kind {
	case httpbinding.EventMessage:
		attrs := appendIDs(nil, e.Vessel, e.Snapshot)
		if e.EntityType != "" {
			attrs = append(attrs, "entity_type", e.EntityType)
		}
		attrs = append(attrs, "outcome", e.Outcome, "status", e.Status, "duration", e.Duration)
		if e.Err != nil {
			attrs = append(attrs, "err", e.Err)
		}
		level := slog.LevelInfo
		if e.Status >= 500 {
			level = slog.LevelWarn
		}
		l.Log(context.Background(), level, "message", attrs...)
	case httpbinding.EventReconcile:
		switch {
		case e.Err != nil && e.Vessel == uuid.Nil:
			l.Warn("reconcile: listing the vessels failed", "err", e.Err)
		case e.Err != nil:
			l.Warn("reconcile failed", "vessel", e.Vessel.String(), "finalized", len(e.Outcomes), "err", e.Err)
		case len(e.Outcomes) > 0:
			l.Info("reconciled", "vessel", e.Vessel.String(), "finalized", len(e.Outcomes), "duration", e.Duration)
		}
	}
}

// receiver logs what the Receiver reports: every Finalize, every retry,
// and a staging bound filling up.
func (l serveLog) receiver(e finalize.Event) {
	switch e.Kind {
	case finalize.EventFinalize:
		attrs := append(appendIDs(nil, e.Vessel, e.Snapshot), "outcome", prommetrics.FinalizeOutcome(e))
		level := slog.LevelInfo
		if e.Err == nil || e.Outcome.Status != "" {
			attrs = append(attrs, "revision", e.Outcome.Revision, "active_revision", e.Outcome.ActiveRevision)
		}
		if e.Outcome.Status == finalize.Staging {
			attrs = append(attrs, "missing_manifest", e.Outcome.MissingManifest, "missing_chunks", len(e.Outcome.MissingChunks))
		}
		if why := cmpErr(e.Err, e.Outcome.Err); why != nil {
			attrs, level = append(attrs, "err", why), slog.LevelWarn
		}
		attrs = append(attrs, "duration", e.Duration)
		l.Log(context.Background(), level, "finalize", attrs...)
		if e.Outcome.Status == finalize.Superseded && e.Outcome.SupersededByActive > 0 {
			l.Warn("snapshot superseded by the active one: while superseded_by_active grows, the vessel sends revisions below one it sent before (a lost or restored on-board store, SPEC.md §2.4)",
				"vessel", e.Vessel.String(), "snapshot", e.Snapshot.String(), "revision", e.Outcome.Revision,
				"active_revision", e.Outcome.ActiveRevision, "superseded_by_active", e.Outcome.SupersededByActive)
		}
	case finalize.EventRetry:
		l.Warn("store retry", "op", e.Op, "vessel", e.Vessel.String())
	}
	if e.Usage != nil && e.Usage.Highest() >= usageWarning {
		u := e.Usage
		l.Warn("staging bound filling up", "vessel", e.Vessel.String(), "highest", e.Usage.Highest(),
			"incomplete_snapshots", gaugeText(u.IncompleteSnapshots), "incomplete_bytes", gaugeText(u.IncompleteBytes),
			"retained_snapshots", gaugeText(u.RetainedSnapshots), "retained_bytes", gaugeText(u.RetainedBytes))
	}
}

// cmpErr returns the first error that is not nil.
func cmpErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func gaugeText(g finalize.Gauge) string { return fmt.Sprintf("%d/%d", g.Used, g.Limit) }

// appendIDs appends the vessel and the snapshot, those that are known.
func appendIDs(attrs []any, vessel, snapshot uuid.UUID) []any {
	if vessel != uuid.Nil {
		attrs = append(attrs, "vessel", vessel.String())
	}
	if snapshot != uuid.Nil {
		attrs = append(attrs, "snapshot", snapshot.String())
	}
	return attrs
}

// retainFlag is --retain N|all: set once, N from 0 to the retained bound.
type retainFlag struct {
	set, all bool
	n        int
}

func (f *retainFlag) String() string {
	if f.all {
		return "all"
	}
	return strconv.Itoa(f.n)
}

func (f *retainFlag) Set(s string) error {
	if f.set {
		return errTwice
	}
	max := finalize.DefaultLimits.RetainedSnapshots
	n, err := strconv.Atoi(s)
	switch {
	case s == "all":
		f.all = true
	case digits(s) && err == nil && n <= max:
		f.n = n
	default:
		return fmt.Errorf("must be all or a number of snapshots from 0 to %d", max)
	}
	f.set = true
	return nil
}

// options are the Receiver's options of the policy: WithRetention(N), or
// none for all, which prunes nothing.
func (f *retainFlag) options() []finalize.Option {
	if f.all {
		return nil
	}
	return []finalize.Option{finalize.WithRetention(f.n)}
}

// logFormatFlag is --log-format text|json.
type logFormatFlag struct {
	json, set bool
}

func (f *logFormatFlag) String() string { return "" }
func (f *logFormatFlag) Set(s string) error {
	if f.set {
		return errTwice
	}
	switch s {
	case "text":
	case "json":
		f.json = true
	default:
		return errors.New("must be text or json")
	}
	f.set = true
	return nil
}

// logger returns a logger writing to w in the format.
func (f *logFormatFlag) logger(w io.Writer) *slog.Logger {
	if f.json {
		return slog.New(slog.NewJSONHandler(w, nil))
	}
	return slog.New(slog.NewTextHandler(w, nil))
}
