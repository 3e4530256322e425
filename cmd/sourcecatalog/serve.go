package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/receiver"
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

// defaultAdminListen is --admin-listen's default.
const defaultAdminListen = "127.0.0.1:9464"

// adminPaths are the admin listener's paths, for the log.
const adminPaths = "/healthz /metrics /vessels/{vessel}/inventory /vessels/{vessel}/history"

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
	src := f.store.source(f.migrate.on)
	svc, err := receiver.New(ctx, receiver.Config{
		Store: src, Retention: f.retain.r, Auth: auth, Logger: logger, Metrics: newServeMetrics(),
		ReconcileInterval: f.interval.d, TLS: tlsConfig,
	})
	if err != nil {
		return c.failf(e, "opening the store: %v", err)
	}
	defer func() {
		if err := svc.Close(); err != nil {
			logger.Error("closing the store", "store", src.Name, "err", err)
			status = exitInvalid
		}
	}()
	ln, adminLn, err := f.bind()
	if err != nil {
		return c.failf(e, "%v", err)
	}
	logger.Info("listening", "addr", ln.Addr().String(), "tls", tlsConfig != nil, "auth", authName,
		"store", src.Name, "retain", f.retain.r.String(), "reconcile_interval", f.interval.d.String())
	if f.insecure.set {
		logger.Warn("authentication is off: every request is taken as sent by the vessel", "vessel", f.insecure.id.String())
	}
	if adminLn != nil {
		logger.Info("admin listening", "addr", adminLn.Addr().String(), "paths", adminPaths)
	}
	context.AfterFunc(ctx, stop)
	if err := svc.Serve(ctx, ln, adminLn); err != nil {
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

// retainFlag is --retain N|all: set once, N from 0 to the retained bound.
type retainFlag struct {
	set bool
	r   receiver.Retention
}

func (f *retainFlag) String() string { return f.r.String() }

func (f *retainFlag) Set(s string) error {
	if f.set {
		return errTwice
	}
	if f.r.Set(s) != nil {
		return fmt.Errorf("must be all or a number of snapshots from 0 to %d", finalize.DefaultLimits.RetainedSnapshots)
	}
	f.set = true
	return nil
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
