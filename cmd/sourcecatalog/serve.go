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
	help:     helpText("serve"),
	run:      runServe,
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
	migrate, createStore              boolFlag
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
	fs.Var(&f.createStore, "create-store", "")
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
	case f.createStore.on && f.store.kind != "sqlite":
		return errors.New("--create-store creates a sqlite:FILE store (a MariaDB schema is created by --migrate)")
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
	src := f.store.source(f.migrate.on, f.createStore.on)
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
