package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/internal/testpki"
	"github.com/yachtmemory/sourcecatalog/prommetrics"
	"github.com/yachtmemory/sourcecatalog/receiver"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
	"github.com/yachtmemory/sourcecatalog/storeheal"
)

// ---------------------------------------------------------------------------
// Helpers of the serve tests

// servePKI is a certificate authority made for one test, with a server
// certificate for 127.0.0.1 and a client certificate for the example
// vessel, written as PEM files in a directory.
type servePKI struct {
	*testCA
	serverCert, serverKey string // files
	clientCert, clientKey string // files, for examples.VesselID
	clientTLS             tls.Certificate
}

func newServePKI(t *testing.T, dir string) *servePKI {
	t.Helper()
	p := &servePKI{testCA: newTestCA(t, dir)}
	p.serverCert, p.serverKey = writeCert(t, dir, "server", mustCert(t)(p.Server()))
	p.clientTLS = mustCert(t)(p.Vessel(examples.VesselID))
	p.clientCert, p.clientKey = writeCert(t, dir, "client", p.clientTLS)
	return p
}

// serveSnapshot builds a snapshot of the example vessel at revision that
// takes several chunks, and returns it with the wrapped outbox request of
// each message (SPEC.md §7.3, §11.1): the manifest's first, then the
// chunks' in index order.
func serveSnapshot(t *testing.T, revision int64) (*envelope.Snapshot, [][]byte) {
	t.Helper()
	s, err := envelope.Build(envelope.Input{
		VesselID: examples.VesselID, SnapshotID: uuid.New(), Revision: revision,
		DiscoveredAt: examples.DiscoveredAt, Records: examples.Scaled(300),
	})
	require.NoError(t, err)
	require.Greater(t, len(s.Chunks), 1, "the test needs several chunks")
	w := envelope.DefaultWrapper{}
	bodies := [][]byte{w.Wrap(nil, sourcecatalog.ManifestEntityType, envelope.ManifestKey(s.Manifest.SnapshotID), s.Manifest.Canonical())}
	for _, c := range s.Chunks {
		bodies = append(bodies, w.Wrap(nil, sourcecatalog.ChunkEntityType, envelope.ChunkKey(c.SnapshotID(), c.Index()), c.Canonical()))
	}
	return s, bodies
}

// serveLogTail collects a serve's JSON log lines (--log-format json) as
// they are written, for a test to wait for.
type serveLogTail struct {
	mu      sync.Mutex
	partial []byte
	lines   []string
}

func (l *serveLogTail) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, b...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			return len(b), nil
		}
		l.lines = append(l.lines, string(l.partial[:i]))
		l.partial = l.partial[i+1:]
	}
}

// String returns every line so far, for failure messages.
func (l *serveLogTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n") + string(l.partial)
}

// all returns the JSON lines whose msg is msg, in order.
func (l *serveLogTail) all(msg string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range l.lines {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// find returns the first JSON line whose msg is msg and whose attributes
// include attrs.
func (l *serveLogTail) find(msg string, attrs map[string]any) (map[string]any, bool) {
next:
	for _, m := range l.all(msg) {
		for k, v := range attrs {
			if m[k] != v {
				continue next
			}
		}
		return m, true
	}
	return nil, false
}

// wait waits up to a minute for a line find finds.
func (l *serveLogTail) wait(t *testing.T, msg string, attrs map[string]any) map[string]any {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if m, ok := l.find(msg, attrs); ok {
			return m
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no log line %q with %v within a minute; the log:\n%s", msg, attrs, l)
	return nil
}

// inProcessServe is serve running in the test's process.
type inProcessServe struct {
	log    *serveLogTail
	stop   context.CancelFunc
	status chan int
}

// startServe runs serve with args (--log-format json added) in a
// goroutine, until stop.
func startServe(t *testing.T, args ...string) *inProcessServe {
	t.Helper()
	s := &inProcessServe{log: &serveLogTail{}, status: make(chan int, 1)}
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: s.log}
	f, status, ok := parseServe(e, serveCommand, append(args, "--log-format", "json"))
	require.True(t, ok, "status %d: %s", status, s.log)
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	go func() { s.status <- f.serve(ctx, func() {}, e, serveCommand) }()
	t.Cleanup(func() {
		cancel()
		<-s.status
	})
	return s
}

// shutdown stops serve and returns its exit status.
func (s *inProcessServe) shutdown(t *testing.T) int {
	t.Helper()
	s.stop()
	select {
	case status := <-s.status:
		s.status <- status // for the cleanup
		return status
	case <-time.After(time.Minute):
		t.Fatalf("serve did not stop within a minute; the log:\n%s", s.log)
		return 0
	}
}

// addrs waits for the listening lines and returns the addresses bound.
func (l *serveLogTail) addrs(t *testing.T) (listen, admin string) {
	t.Helper()
	listen, _ = l.wait(t, "listening", nil)["addr"].(string)
	admin, _ = l.wait(t, "admin listening", nil)["addr"].(string)
	require.NotEmpty(t, listen)
	require.NotEmpty(t, admin)
	return listen, admin
}

// serveBriefly runs the command line args, a serve command, as cli does
// but for at most 5 seconds: a serve that should have failed to start
// stops then, with exit status 0.
func serveBriefly(t *testing.T, args ...string) result {
	t.Helper()
	require.Equal(t, "serve", args[0])
	var stdout bytes.Buffer
	stderr := &serveLogTail{}
	e := &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: stderr}
	f, status, ok := parseServe(e, serveCommand, args[1:])
	if ok {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		status = f.serve(ctx, func() {}, e, serveCommand)
	}
	return result{status, stdout.String(), stderr.String()}
}

// receiptOf reads resp, closes its body, and returns the receipt it
// answers, failing the test unless it is a 200 with one.
func receiptOf(t *testing.T, resp *http.Response) envelope.Receipt {
	t.Helper()
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", answer)
	rc, err := envelope.DecodeReceipt(answer)
	require.NoError(t, err)
	return rc
}

// serveGet gets url and returns the status and the body.
func serveGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// ---------------------------------------------------------------------------
// The command line

func TestServeUsage(t *testing.T) {
	base := func(drop string, extra ...string) []string {
		args := []string{"serve"}
		for _, f := range [][2]string{
			{"--listen", "127.0.0.1:0"}, {"--store", "memory"}, {"--retain", "8"},
			{"--tls-cert", "c.pem"}, {"--tls-key", "k.pem"}, {"--tokens", "t"},
		} {
			if f[0] != drop {
				args = append(args, f[0], f[1])
			}
		}
		return append(args, extra...)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no --retain", base("--retain"), "--retain N or --retain all is required"},
		{"no --listen", base("--listen"), "--listen ADDR is required"},
		{"no --store", base("--store"), "--store is required: memory, sqlite:FILE or mysql:DSN"},
		{"bad --store", base("--store", "--store", "postgres:x"), "--store must be memory, sqlite:FILE or mysql:DSN"},
		{"--store sqlite without a file", base("--store", "--store", "sqlite:"), "--store must be"},
		{"mysql DSN without a database", base("--store", "--store", "mysql:u:secret@tcp(db:3306)/"), "--store the mysql DSN must name a database"},
		{"no authentication", base("--tokens"), "no authentication: give --client-ca FILE, --tokens FILE or both"},
		{"no --tls-cert", base("--tls-cert"), "--tls-cert FILE and --tls-key FILE are required"},
		{"no --tls-key", base("--tls-key"), "--tls-cert FILE and --tls-key FILE are required"},
		{"--retain 33", base("--retain", "--retain", "33"), "--retain must be all or a number of snapshots from 0 to 32"},
		{"--retain -1", base("--retain", "--retain", "-1"), "--retain must be all or a number"},
		{"--retain +1", base("--retain", "--retain", "+1"), "--retain must be all or a number"},
		{"--retain none", base("--retain", "--retain", "none"), "--retain must be all or a number"},
		{"--retain twice", base("", "--retain", "all"), "--retain given more than once"},
		{"bad --listen", base("--listen", "--listen", "8443"), "--listen must be HOST:PORT"},
		{"bad --admin-listen", base("", "--admin-listen", "localhost"), "--admin-listen must be HOST:PORT"},
		{"short interval", base("", "--reconcile-interval", "10ms"), "--reconcile-interval must be a duration of at least 1s"},
		{"bad interval", base("", "--reconcile-interval", "often"), "--reconcile-interval must be a duration"},
		{"bad log format", base("", "--log-format", "xml"), "--log-format must be text or json"},
		{"--migrate with a value", base("", "--migrate=yes"), "--migrate takes no value"},
		{"--create-store of memory", base("", "--create-store"), "--create-store creates a sqlite:FILE store"},
		{"an operand", base("", "extra"), `unexpected argument "extra": serve takes no arguments`},
		{"insecure with TLS", base("", "--insecure-no-auth", vesselFlag), "--insecure-no-auth serves plain HTTP without authentication"},
		{"insecure off loopback", []string{"serve", "--listen", "0.0.0.0:8080", "--store", "memory", "--retain", "all", "--insecure-no-auth", vesselFlag},
			"--insecure-no-auth needs --listen on a loopback address"},
		{"insecure on a name", []string{"serve", "--listen", "localhost:8080", "--store", "memory", "--retain", "all", "--insecure-no-auth", vesselFlag},
			"--insecure-no-auth needs --listen on a loopback address"},
		{"insecure nil vessel", []string{"serve", "--listen", "127.0.0.1:0", "--store", "memory", "--retain", "all", "--insecure-no-auth", uuid.Nil.String()},
			"--insecure-no-auth must be a lowercase"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// parseServe, not run: were the rule broken, serve would not
			// return.
			var stdout, stderr bytes.Buffer
			_, status, ok := parseServe(&env{stdout: &stdout, stderr: &stderr}, serveCommand, tc.args[1:])
			require.False(t, ok, "serve would start")
			assert.Equal(t, exitUsage, status)
			assert.Empty(t, stdout.String())
			assert.True(t, strings.HasPrefix(stderr.String(), "sourcecatalog serve: "+tc.want), "stderr:\n%s", stderr.String())
			assert.Contains(t, stderr.String(), "\nUsage: sourcecatalog serve --listen ADDR")
			assert.NotContains(t, stderr.String(), "secret")
		})
	}
}

// The dispatcher runs serve: a usage error exits 2.
func TestServeCommand(t *testing.T) {
	r := cli(t, "", "serve", "--listen", "127.0.0.1:0", "--store", "memory", "--tokens", "t", "--tls-cert", "c", "--tls-key", "k")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "sourcecatalog serve: --retain N or --retain all is required")
	r = cli(t, "", "help", "serve")
	assert.Equal(t, exitOK, r.code)
	for _, flag := range []string{"--listen", "--store", "--retain", "--tls-cert", "--tls-key", "--client-ca", "--tokens",
		"--insecure-no-auth", "--admin-listen", "--reconcile-interval", "--migrate", "--log-format"} {
		assert.Contains(t, r.stdout, "\n  "+flag+" ", "the help explains %s", flag)
	}
}

func TestServeDefaults(t *testing.T) {
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}
	f, _, ok := parseServe(e, serveCommand, []string{"--listen", ":8443", "--store", "memory", "--retain", "all",
		"--tls-cert", "c", "--tls-key", "k", "--client-ca", "ca"})
	require.True(t, ok)
	assert.Equal(t, "127.0.0.1:9464", f.admin.s, "the admin listener is on loopback unless told")
	assert.Equal(t, httpbinding.DefaultReconcileInterval, f.interval.d)
	assert.False(t, f.logFormat.json)
	assert.False(t, f.migrate.on)
	assert.Equal(t, receiver.KeepAll(), f.retain.r, "all prunes nothing")
}

// The start-up failures that are not usage errors exit 1 before
// listening.
func TestServeStartupFailures(t *testing.T) {
	dir := t.TempDir()
	pki := newServePKI(t, dir)
	empty := writeFile(t, dir, "empty", nil)
	comments := writeFile(t, dir, "comments", []byte("# no tokens yet\n"))
	badTokens := writeFile(t, dir, "bad-tokens", []byte("abc "+vesselFlag+"\n"))
	tlsArgs := []string{"--tls-cert", pki.serverCert, "--tls-key", pki.serverKey}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no such certificate", []string{"--tls-cert", filepath.Join(dir, "nope.pem"), "--tls-key", pki.serverKey, "--tokens", comments}, "--tls-cert, --tls-key: "},
		{"key of another certificate", []string{"--tls-cert", pki.serverCert, "--tls-key", pki.clientKey, "--client-ca", pki.caFile}, "--tls-cert, --tls-key: "},
		{"no such client CA", append(tlsArgs, "--client-ca", filepath.Join(dir, "nope.pem")), "--client-ca: "},
		{"client CA without PEM", append(tlsArgs, "--client-ca", empty), "--client-ca: " + empty + " holds no PEM certificate"},
		{"empty token file", append(tlsArgs, "--tokens", comments), "--tokens: " + comments + " lists no token"},
		{"bad token file", append(tlsArgs, "--tokens", badTokens), "--tokens " + badTokens + ": "},
		{"unreachable mysql", []string{"--insecure-no-auth", vesselFlag, "--store", "mysql:u:secret-pw@tcp(127.0.0.1:1)/catalog"}, "opening the store: mysql schema catalog: "},
		{"unopenable sqlite", []string{"--insecure-no-auth", vesselFlag, "--store", "sqlite:" + dir}, "opening the store: "},
		{"missing sqlite without --create-store", []string{"--insecure-no-auth", vesselFlag, "--store", "sqlite:" + filepath.Join(dir, "lost.db")},
			"opening the store: sqlitestore: " + filepath.Join(dir, "lost.db") + ": no such file (WithExistingFile creates nothing)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"serve", "--listen", "127.0.0.1:0", "--retain", "8", "--admin-listen", "off"}
			if !strings.Contains(strings.Join(tc.args, " "), "--store") {
				args = append(args, "--store", "memory")
			}
			r := serveBriefly(t, append(args, tc.args...)...)
			assert.Equal(t, exitInvalid, r.code, "stderr:\n%s", r.stderr)
			assert.Contains(t, r.stderr, "sourcecatalog serve: "+tc.want)
			assert.NotContains(t, r.stderr, "listening")
			assert.NotContains(t, r.stderr, "secret-pw")
		})
	}
}

func TestServeAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	for _, args := range [][]string{
		{"--listen", ln.Addr().String(), "--admin-listen", "off"},
		{"--listen", "127.0.0.1:0", "--admin-listen", ln.Addr().String()},
	} {
		r := serveBriefly(t, append([]string{"serve", "--store", "memory", "--retain", "8", "--insecure-no-auth", vesselFlag}, args...)...)
		assert.Equal(t, exitInvalid, r.code)
		assert.Contains(t, r.stderr, "sourcecatalog serve: ")
		assert.Contains(t, r.stderr, "listen tcp "+ln.Addr().String())
	}
}

// --retain takes all or a number of snapshots within the retained bound,
// as receiver.Retention (whose tests prune).
func TestRetainFlag(t *testing.T) {
	for _, value := range []string{"all", "0", "1", "2", "32"} {
		var f retainFlag
		require.NoError(t, f.Set(value))
		assert.Equal(t, value, f.String())
		assert.ErrorIs(t, f.Set(value), errTwice)
	}
	for _, value := range []string{"", "33", "-1", "+1", "ALL", "1.5"} {
		var f retainFlag
		assert.EqualError(t, f.Set(value), "must be all or a number of snapshots from 0 to 32", "%q", value)
	}
}

// ---------------------------------------------------------------------------
// The metrics adapter

// scrapeMetrics serves m's /metrics once and returns the exposition.
func scrapeMetrics(t *testing.T, m *prommetrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.True(t, strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain"), rec.Header().Get("Content-Type"))
	return rec.Body.String()
}

// assertMetric checks that the exposition has the line want, and shows
// its sourcecatalog_ lines when it does not.
func assertMetric(t *testing.T, exposition, want string) {
	t.Helper()
	lines := strings.Split(exposition, "\n")
	if slices.Contains(lines, want) {
		return
	}
	var ours []string
	for _, l := range lines {
		if strings.HasPrefix(l, "sourcecatalog_") && !strings.Contains(l, "_bucket{") {
			ours = append(ours, l)
		}
	}
	t.Errorf("no metric line %s; the sourcecatalog_ lines but buckets:\n%s", want, strings.Join(ours, "\n"))
}

func TestServeMetrics(t *testing.T) {
	m := newServeMetrics()
	v := examples.VesselID
	usage := &finalize.Usage{
		IncompleteSnapshots: finalize.Gauge{Used: 1, Limit: 8}, IncompleteBytes: finalize.Gauge{Used: 1000, Limit: 64 << 20},
		RetainedSnapshots: finalize.Gauge{Used: 3, Limit: 32}, RetainedBytes: finalize.Gauge{Used: 5000, Limit: 256 << 20},
	}
	for _, e := range []httpbinding.Event{
		{Kind: httpbinding.EventMessage, Status: 200, Outcome: "staged"},
		{Kind: httpbinding.EventMessage, Status: 200, Outcome: "staged"},
		{Kind: httpbinding.EventMessage, Status: 200, Outcome: "already_received"},
		{Kind: httpbinding.EventMessage, Status: 401, Outcome: httpbinding.OutcomeUnauthenticated},
		{Kind: httpbinding.EventMessage, Status: 413, Outcome: "limit_exceeded"},
		{Kind: httpbinding.EventMessage, Status: 422, Outcome: "limit_exceeded"},
		{Kind: httpbinding.EventReconcile, Vessel: v},
		{Kind: httpbinding.EventReconcile, Err: sourcecatalog.Errorf(sourcecatalog.ErrUnsupported, "cannot list")},
		// Counted from the Receiver's events, not twice.
		{Kind: httpbinding.EventFinalize, Vessel: v, Finalize: &finalize.Outcome{Status: finalize.Activated}},
	} {
		m.ObserveBinding(e)
	}
	for _, e := range []finalize.Event{
		{Kind: finalize.EventReceive, Op: "ReceiveManifest", Vessel: v, Receipt: envelope.Receipt{Status: envelope.Staged}, Usage: usage},
		{Kind: finalize.EventReceive, Op: "ReceiveChunk", Vessel: v, Receipt: envelope.Receipt{Status: envelope.AlreadyReceived}},
		{Kind: finalize.EventReceive, Op: "ReceiveChunk", Vessel: v, Err: sourcecatalog.Errorf(sourcecatalog.ErrConflict, "other bytes")},
		{Kind: finalize.EventReceive, Op: "ReceiveChunk", Vessel: v, Err: errors.New("no class")},
		{Kind: finalize.EventFinalize, Op: "Finalize", Vessel: v, Outcome: finalize.Outcome{Status: finalize.Activated}, Duration: 300 * time.Millisecond},
		{Kind: finalize.EventFinalize, Op: "Finalize", Vessel: v, Outcome: finalize.Outcome{Status: finalize.Staging}, Duration: time.Millisecond},
		{Kind: finalize.EventFinalize, Op: "Finalize", Vessel: v, Outcome: finalize.Outcome{Status: finalize.Rejected},
			Err: sourcecatalog.Errorf(sourcecatalog.ErrRevisionConflict, "same revision")},
		{Kind: finalize.EventFinalize, Op: "Finalize", Vessel: v, Err: sourcecatalog.Errorf(sourcecatalog.ErrStagingExhausted, "full")},
		{Kind: finalize.EventRetry, Op: "ReceiveChunk", Vessel: v},
		{Kind: finalize.EventRetry, Op: "ReceiveChunk", Vessel: v},
		{Kind: finalize.EventRetry, Op: "Finalize", Vessel: v},
	} {
		m.ObserveReceiver(e)
	}
	got := scrapeMetrics(t, m)
	vl := `vessel="` + v.String() + `"`
	for _, want := range []string{
		`sourcecatalog_messages_total{code="200",outcome="staged"} 2`,
		`sourcecatalog_messages_total{code="200",outcome="already_received"} 1`,
		`sourcecatalog_messages_total{code="401",outcome="unauthenticated"} 1`,
		`sourcecatalog_messages_total{code="413",outcome="limit_exceeded"} 1`,
		`sourcecatalog_messages_total{code="422",outcome="limit_exceeded"} 1`,
		`sourcecatalog_reconcile_total{result="ok"} 1`,
		`sourcecatalog_reconcile_total{result="unsupported"} 1`,
		`sourcecatalog_receives_total{op="ReceiveManifest",outcome="staged"} 1`,
		`sourcecatalog_receives_total{op="ReceiveChunk",outcome="already_received"} 1`,
		`sourcecatalog_receives_total{op="ReceiveChunk",outcome="conflict"} 1`,
		`sourcecatalog_receives_total{op="ReceiveChunk",outcome="error"} 1`,
		`sourcecatalog_finalize_total{outcome="activated"} 1`,
		`sourcecatalog_finalize_total{outcome="staging"} 1`,
		`sourcecatalog_finalize_total{outcome="rejected"} 1`,
		`sourcecatalog_finalize_total{outcome="staging_exhausted"} 1`,
		`sourcecatalog_finalize_duration_seconds_count{outcome="activated"} 1`,
		`sourcecatalog_finalize_duration_seconds_sum{outcome="activated"} 0.3`,
		`sourcecatalog_finalize_duration_seconds_bucket{outcome="activated",le="0.25"} 0`,
		`sourcecatalog_finalize_duration_seconds_bucket{outcome="activated",le="0.5"} 1`,
		`sourcecatalog_store_retries_total{op="ReceiveChunk"} 2`,
		`sourcecatalog_store_retries_total{op="Finalize"} 1`,
		`sourcecatalog_staging_snapshots{bound="incomplete",` + vl + `} 1`,
		`sourcecatalog_staging_snapshots_limit{bound="incomplete",` + vl + `} 8`,
		`sourcecatalog_staging_bytes{bound="incomplete",` + vl + `} 1000`,
		`sourcecatalog_staging_bytes_limit{bound="incomplete",` + vl + `} 6.7108864e+07`,
		`sourcecatalog_staging_snapshots{bound="retained",` + vl + `} 3`,
		`sourcecatalog_staging_snapshots_limit{bound="retained",` + vl + `} 32`,
		`sourcecatalog_staging_bytes{bound="retained",` + vl + `} 5000`,
		`sourcecatalog_staging_bytes_limit{bound="retained",` + vl + `} 2.68435456e+08`,
		"# TYPE go_goroutines gauge",
		"# TYPE process_start_time_seconds gauge",
	} {
		assertMetric(t, got, want)
	}
	// The Handler's Finalize event is not counted again.
	assert.NotContains(t, got, `sourcecatalog_finalize_total{outcome="activated"} 2`)

	// Usage comes from the latest event that read it.
	usage.RetainedSnapshots.Used = 4
	m.ObserveReceiver(finalize.Event{Kind: finalize.EventFinalize, Op: "Finalize", Vessel: v, Outcome: finalize.Outcome{Status: finalize.Superseded}, Usage: usage})
	assertMetric(t, scrapeMetrics(t, m), `sourcecatalog_staging_snapshots{bound="retained",`+vl+`} 4`)
}

// ---------------------------------------------------------------------------
// Authentication by certificate or token

func TestCertOrToken(t *testing.T) {
	dir := t.TempDir()
	pki := newServePKI(t, dir)
	other := uuid.MustParse("0b1c2d3e-4f50-4617-8a9b-acbdcedf0011")
	otherCert := mustCert(t)(pki.Vessel(other))
	noSAN := mustCert(t)(pki.Client())
	foreignCA, err := testpki.NewCA("another CA")
	require.NoError(t, err)
	foreign := mustCert(t)(foreignCA.Vessel(examples.VesselID))
	tokens, err := httpbinding.ParseTokens(strings.NewReader(
		httpbinding.TokenHash("vessel-token", examples.VesselID) + "\n" + httpbinding.TokenHash("other-token", other) + "\n"))
	require.NoError(t, err)
	auth := httpbinding.CertOrToken(httpbinding.MutualTLS{ClientCAs: pki.Pool}, tokens)

	for _, tc := range []struct {
		name  string
		cert  *x509.Certificate // presented, when not nil
		token string
		want  uuid.UUID // uuid.Nil: refused
		err   error
		why   string // in the error, for the log
	}{
		{name: "nothing", err: httpbinding.ErrNoCredentials},
		{name: "certificate", cert: pki.clientTLS.Leaf, want: examples.VesselID},
		{name: "token", token: "other-token", want: other},
		{name: "both, one vessel", cert: pki.clientTLS.Leaf, token: "vessel-token", want: examples.VesselID},
		{name: "both, two vessels", cert: pki.clientTLS.Leaf, token: "other-token", err: httpbinding.ErrBadCredentials},
		{name: "both, two vessels the other way", cert: otherCert.Leaf, token: "vessel-token", err: httpbinding.ErrBadCredentials},
		{name: "certificate and an unknown token", cert: pki.clientTLS.Leaf, token: "nope", err: httpbinding.ErrBadCredentials},
		{name: "unknown token", token: "nope", err: httpbinding.ErrBadCredentials},
		{name: "certificate of another CA", cert: foreign.Leaf, err: httpbinding.ErrBadCredentials},
		{name: "certificate of another CA and a token", cert: foreign.Leaf, token: "vessel-token", err: httpbinding.ErrBadCredentials},
		{name: "certificate naming no vessel", cert: noSAN.Leaf, err: httpbinding.ErrBadCredentials},
		{name: "certificate naming no vessel and a token", cert: noSAN.Leaf, token: "vessel-token", err: httpbinding.ErrBadCredentials,
			why: "exactly one urn:uuid: URI SAN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "https://receiver/", nil)
			r.TLS = &tls.ConnectionState{}
			if tc.cert != nil {
				r.TLS.PeerCertificates = []*x509.Certificate{tc.cert}
			}
			if tc.token != "" {
				r.Header.Set("Authorization", "Bearer "+tc.token)
			}
			origin, err := auth.Authenticate(r)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				assert.Contains(t, err.Error(), tc.why)
				assert.Equal(t, finalize.Origin{}, origin)
				challenge := `Bearer realm="sourcecatalog"` // SPEC.md §11.2
				if tc.token != "" {
					challenge += `, error="invalid_token"`
				}
				assert.Equal(t, challenge, auth.(httpbinding.Challenger).Challenge(err))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, origin.VesselID)
		})
	}
}

// ---------------------------------------------------------------------------
// serve in the test's process

// stageComplete stages every message of s in the SQLite file through a
// Receiver of its own, without finalizing, as a server that crashed after
// the last receipt leaves it.
func stageComplete(t *testing.T, file string, s *envelope.Snapshot) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, file)
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	recv := finalize.NewReceiver(st)
	origin := finalize.Origin{VesselID: examples.VesselID}
	_, err = recv.ReceiveManifest(ctx, origin, s.Manifest.Canonical())
	require.NoError(t, err)
	for _, c := range s.Chunks {
		rc, err := recv.ReceiveChunk(ctx, origin, c.Canonical())
		require.NoError(t, err)
		require.Equal(t, c.Index() == len(s.Chunks)-1, rc.Complete)
	}
}

// activeSnapshot reads the example vessel's active snapshot and revision
// from the SQLite file.
func activeSnapshot(t *testing.T, file string) (uuid.UUID, int64) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, file)
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	cat, err := finalize.NewReceiver(st).Active(ctx, examples.VesselID)
	require.NoError(t, err)
	return cat.SnapshotID, cat.Revision
}

// A snapshot left complete but not finalized — the server crashed after
// the last receipt — is activated by the reconciler at start-up
// (SPEC.md §8.6). The same run serves plain HTTP under --insecure-no-auth,
// answers /healthz and /metrics, and shuts down cleanly when its context
// ends.
func TestServeReconcilesAtStartup(t *testing.T) {
	file := filepath.Join(t.TempDir(), "s.db")
	snap, bodies := serveSnapshot(t, 3)
	stageComplete(t, file, snap)
	id, _ := activeSnapshot(t, file)
	require.Equal(t, uuid.Nil, id, "nothing is active before serve")

	s := startServe(t, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--store", "sqlite:"+file, "--create-store",
		"--retain", "all", "--insecure-no-auth", vesselFlag, "--reconcile-interval", "1s")
	listen, admin := s.log.addrs(t)
	assert.Equal(t, false, s.log.wait(t, "listening", nil)["tls"])
	assert.Equal(t, "insecure_no_auth", s.log.wait(t, "listening", nil)["auth"])
	s.log.wait(t, "authentication is off: every request is taken as sent by the vessel", map[string]any{"vessel": vesselFlag})
	s.log.wait(t, "finalize", map[string]any{"vessel": vesselFlag, "snapshot": snap.Manifest.SnapshotID.String(), "outcome": "activated", "revision": 3.0})
	s.log.wait(t, "reconciled", map[string]any{"vessel": vesselFlag, "finalized": 1.0})

	// An identical resend of a chunk over plain HTTP.
	resp, err := http.Post("http://"+listen+"/", "application/json", bytes.NewReader(bodies[1]))
	require.NoError(t, err)
	assert.Equal(t, envelope.AlreadyReceived, receiptOf(t, resp).Status)
	s.log.wait(t, "message", map[string]any{"vessel": vesselFlag, "snapshot": snap.Manifest.SnapshotID.String(),
		"entity_type": sourcecatalog.ChunkEntityType, "outcome": "already_received", "status": 200.0})

	code, body := serveGet(t, "http://"+admin+"/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok\n", body)
	code, body = serveGet(t, "http://"+admin+"/metrics")
	assert.Equal(t, http.StatusOK, code)
	for _, want := range []string{
		`sourcecatalog_finalize_total{outcome="activated"} 1`,
		`sourcecatalog_reconcile_total{result="ok"} 1`,
		`sourcecatalog_messages_total{code="200",outcome="already_received"} 1`,
		`sourcecatalog_staging_snapshots{bound="retained",vessel="` + vesselFlag + `"} 1`,
		`sourcecatalog_staging_snapshots{bound="incomplete",vessel="` + vesselFlag + `"} 0`,
	} {
		assertMetric(t, body, want)
	}

	// A snapshot left complete while serve runs, by another process
	// sharing the file, is activated on the interval.
	next, _ := serveSnapshot(t, 4)
	stageComplete(t, file, next)
	s.log.wait(t, "finalize", map[string]any{"snapshot": next.Manifest.SnapshotID.String(), "outcome": "activated", "revision": 4.0})

	assert.Equal(t, exitOK, s.shutdown(t), "the log:\n%s", s.log)
	s.log.wait(t, "shutting down", nil)
	s.log.wait(t, "stopped", nil)
	id, rev := activeSnapshot(t, file)
	assert.Equal(t, next.Manifest.SnapshotID, id)
	assert.Equal(t, int64(4), rev)
}

// On MariaDB, serve refuses a schema that is not current unless
// --migrate, which creates it; the DSN's password is never printed.
func TestServeMySQLMigrate(t *testing.T) {
	cfg, admin := mysqlAdmin(t)
	name := throwawayDatabase(t, admin, "sourcecatalog_serve_")
	named := cfg.Clone()
	named.DBName = name
	args := []string{"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--store", "mysql:" + named.FormatDSN(),
		"--retain", "8", "--insecure-no-auth", vesselFlag}
	noPassword := func(t *testing.T, text string) { // as a DSN shows it
		t.Helper()
		assert.NotContains(t, text, cfg.User+":"+cfg.Passwd+"@")
	}

	r := serveBriefly(t, append([]string{"serve"}, args...)...)
	assert.Equal(t, exitInvalid, r.code)
	assert.True(t, strings.HasPrefix(r.stderr, "sourcecatalog serve: opening the store: mysql schema "+name+": "), r.stderr)
	noPassword(t, r.stderr)

	for _, migrate := range []bool{true, false} { // the second run finds the schema current
		s := startServe(t, append(args, map[bool][]string{true: {"--migrate"}, false: nil}[migrate]...)...)
		listen, adminAddr := s.log.addrs(t)
		assert.Equal(t, "mysql schema "+name, s.log.wait(t, "listening", nil)["store"])
		code, _ := serveGet(t, "http://"+adminAddr+"/healthz")
		assert.Equal(t, http.StatusOK, code)
		if migrate {
			snap, bodies := serveSnapshot(t, 1)
			for _, b := range bodies {
				resp, err := http.Post("http://"+listen+"/", "application/json", bytes.NewReader(b))
				require.NoError(t, err)
				resp.Body.Close()
				require.Equal(t, http.StatusOK, resp.StatusCode)
			}
			s.log.wait(t, "finalize", map[string]any{"snapshot": snap.Manifest.SnapshotID.String(), "outcome": "activated"})
		}
		assert.Equal(t, exitOK, s.shutdown(t), "the log:\n%s", s.log)
		noPassword(t, s.log.String())
	}
}

// SIGTERM stops serve gracefully: the listener closes at once, a request
// in flight — here one whose handler waits for the rest of the body — is
// answered and its chunk staged, and only then does serve return.
func TestServeShutdownFinishesInFlight(t *testing.T) {
	file := filepath.Join(t.TempDir(), "s.db")
	snap, bodies := serveSnapshot(t, 3)
	s := startServe(t, "--listen", "127.0.0.1:0", "--admin-listen", "off", "--store", "sqlite:"+file, "--create-store",
		"--retain", "all", "--insecure-no-auth", vesselFlag)
	listen, _ := s.log.wait(t, "listening", nil)["addr"].(string)
	require.NotEmpty(t, listen)

	// The request's headers, then, once the handler reads the body (the
	// server's 100 Continue says so), half of the body.
	conn, err := net.Dial("tcp", listen)
	require.NoError(t, err)
	defer conn.Close()
	answers := bufio.NewReader(conn)
	body := bodies[1]
	half := len(body) / 2
	_, err = fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: receiver\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", len(body))
	require.NoError(t, err)
	resp, err := http.ReadResponse(answers, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusContinue, resp.StatusCode)
	_, err = conn.Write(body[:half])
	require.NoError(t, err)

	s.stop() // what SIGTERM does
	s.log.wait(t, "shutting down", nil)
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", listen)
		if err == nil {
			c.Close()
		}
		return err != nil
	}, 10*time.Second, 10*time.Millisecond, "the listener stays open after the shutdown began")
	select {
	case status := <-s.status:
		s.status <- status // for the cleanup
		t.Fatalf("serve returned %d with a request in flight; the log:\n%s", status, s.log)
	default:
	}

	_, err = conn.Write(body[half:])
	require.NoError(t, err)
	resp, err = http.ReadResponse(answers, nil)
	require.NoError(t, err)
	assert.Equal(t, envelope.Staged, receiptOf(t, resp).Status)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = answers.ReadByte()
	assert.ErrorIs(t, err, io.EOF, "a connection answered during the shutdown is closed")

	assert.Equal(t, exitOK, s.shutdown(t), "the log:\n%s", s.log)
	s.log.wait(t, "stopped", nil)

	// The chunk was staged durably: a resend after a restart is a retry.
	st, err := sqlitestore.Open(context.Background(), file)
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	origin := finalize.Origin{VesselID: snap.Manifest.VesselID}
	rc, err := finalize.NewReceiver(st).ReceiveChunk(context.Background(), origin, snap.Chunks[0].Canonical())
	require.NoError(t, err)
	assert.Equal(t, envelope.AlreadyReceived, rc.Status)
}

// The store's health metrics read the Handle's Status at each scrape: one
// series per state, 1 for the current one, and the counters.
func TestServeStoreMetrics(t *testing.T) {
	m := newServeMetrics()
	st := storeheal.Status{State: storeheal.Healthy}
	require.NoError(t, m.WatchStore(func() storeheal.Status { return st }))
	for _, tc := range []struct {
		status storeheal.Status
		want   []string
	}{
		{storeheal.Status{State: storeheal.Healthy}, []string{
			`sourcecatalog_store_state{state="healthy"} 1`, `sourcecatalog_store_state{state="poisoned"} 0`,
			`sourcecatalog_store_state{state="reopening"} 0`, `sourcecatalog_store_state{state="closed"} 0`,
			`sourcecatalog_store_poisonings_total 0`, `sourcecatalog_store_reopens_total{result="ok"} 0`,
			`sourcecatalog_store_reopens_total{result="error"} 0`,
		}},
		{storeheal.Status{State: storeheal.Poisoned, Poisonings: 1}, []string{
			`sourcecatalog_store_state{state="healthy"} 0`, `sourcecatalog_store_state{state="poisoned"} 1`,
			`sourcecatalog_store_poisonings_total 1`,
		}},
		{storeheal.Status{State: storeheal.Reopening, Poisonings: 1, FailedReopens: 3}, []string{
			`sourcecatalog_store_state{state="poisoned"} 0`, `sourcecatalog_store_state{state="reopening"} 1`,
			`sourcecatalog_store_reopens_total{result="error"} 3`,
		}},
		{storeheal.Status{State: storeheal.Healthy, Poisonings: 1, Reopens: 1, FailedReopens: 3}, []string{
			`sourcecatalog_store_state{state="healthy"} 1`, `sourcecatalog_store_state{state="reopening"} 0`,
			`sourcecatalog_store_reopens_total{result="ok"} 1`,
		}},
	} {
		st = tc.status
		got := scrapeMetrics(t, m)
		for _, want := range tc.want {
			assertMetric(t, got, want)
		}
	}
}
