package httpbinding_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// padded returns the wrapped request of the board's manifest padded with
// JSON whitespace to n bytes.
func padded(t *testing.T, b *board, n int) []byte {
	body := wrap(b.entries[0])
	require.Less(t, len(body), n)
	return append(body, bytes.Repeat([]byte(" "), n-len(body))...)
}

// The body cap is 32,768 bytes exactly, announced or chunked: one byte
// more is 413 limit_exceeded and closes the connection.
func TestBodyCap(t *testing.T) {
	r := startRig(t, rigConfig{})
	cert := r.ca.vessel(t, vesselA)
	b := commitCycle(t, vesselA, uuid.Nil, "nav", 1)
	cases := []struct {
		size    int
		chunked bool
		status  int
	}{
		{httpbinding.MaxRequestBody, false, http.StatusOK},
		{httpbinding.MaxRequestBody + 1, false, http.StatusRequestEntityTooLarge},
		{httpbinding.MaxRequestBody, true, http.StatusOK},
		{httpbinding.MaxRequestBody + 1, true, http.StatusRequestEntityTooLarge},
		{10 * httpbinding.MaxRequestBody, false, http.StatusRequestEntityTooLarge},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%d chunked=%v", tc.size, tc.chunked), func(t *testing.T) {
			hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: r.tlsFor(&cert)}}
			defer hc.CloseIdleConnections()
			var body io.Reader = bytes.NewReader(padded(t, b, tc.size))
			if tc.chunked {
				body = io.MultiReader(body) // no length known: chunked
			}
			req, err := http.NewRequest(http.MethodPost, r.url, body)
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			resp, err := hc.Do(req)
			require.NoError(t, err, "the answer is read, not reset (a lingering close)")
			defer resp.Body.Close()
			ans, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, tc.status, resp.StatusCode, "%s", ans)
			if tc.status == http.StatusOK {
				_, err := envelope.DecodeReceipt(ans)
				require.NoError(t, err)
				return
			}
			assert.True(t, resp.Close, "the connection is closed, not drained")
			f := answer{resp.StatusCode, resp.Header, ans}.refusal(t)
			assert.Equal(t, sourcecatalog.ErrLimitExceeded, f.Class)
		})
	}
}

// dial opens a TLS connection to the rig presenting cert.
func dial(t *testing.T, r *rig, cert *tls.Certificate) *tls.Conn {
	t.Helper()
	conn, err := tls.Dial("tcp", r.addr, r.tlsFor(cert))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

// readAnswer reads what the server sends until it closes the connection,
// waiting at most 10 seconds: a server still reading the request body
// would not answer in time.
func readAnswer(t *testing.T, conn *tls.Conn) string {
	t.Helper()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	got, err := io.ReadAll(conn)
	if err != nil {
		require.NotContains(t, err.Error(), "timeout", "the server neither answered nor closed in time; got %q", got)
	}
	return string(got)
}

// A body over the cap is answered 413 without reading the rest: the
// sender here never sends the rest, and stays connected.
func TestBodyCapDoesNotReadTheRest(t *testing.T) {
	r := startRig(t, rigConfig{})
	cert := r.ca.vessel(t, vesselA)
	head := "POST /v2/messages HTTP/1.1\r\nHost: receiver\r\nContent-Type: application/json\r\n"
	part := strings.Repeat(" ", httpbinding.MaxRequestBody+100)
	cases := []struct{ name, header, body string }{
		{"announced 1 MiB, sent 32 KiB", head + "Content-Length: 1048576\r\n\r\n", part},
		{"announced 32769, sent 100", head + "Content-Length: 32769\r\n\r\n", part[:100]},
		{"gzip, announced 32769, sent 100", head + "Content-Encoding: gzip\r\nContent-Length: 32769\r\n\r\n", part[:100]},
		{"chunked, sent 32 KiB", head + "Transfer-Encoding: chunked\r\n\r\n", fmt.Sprintf("%x\r\n%s\r\n", len(part), part)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conn := dial(t, r, &cert)
			_, err := io.WriteString(conn, tc.header)
			require.NoError(t, err)
			// The server may answer and hang up as soon as the header
			// announces too much, so writing the body may fail.
			if _, err := io.WriteString(conn, tc.body); err != nil {
				t.Logf("writing the body: %v", err)
			}
			got := readAnswer(t, conn)
			require.True(t, strings.HasPrefix(got, "HTTP/1.1 413 "), "%q", got)
			assert.Contains(t, got, "Connection: close")
			assert.Contains(t, got, `"error":"limit_exceeded"`)
		})
	}
}

// Slow senders are cut by the timeouts: a connection that never
// handshakes, headers that stall, a body that stalls or trickles.
func TestSlowSendersAreCut(t *testing.T) {
	r := startRig(t, rigConfig{timeouts: httpbinding.Timeouts{ReadHeader: time.Second, Read: 2 * time.Second, Write: 5 * time.Second, Idle: time.Second}})
	cert := r.ca.vessel(t, vesselA)
	body := string(wrap(commitCycle(t, vesselA, uuid.Nil, "nav", 1).entries[0]))
	head := "POST /v2/messages HTTP/1.1\r\nHost: receiver\r\nContent-Type: application/json\r\n"
	cases := []struct {
		name    string
		send    string
		trickle bool // then send the body a byte at a time
	}{
		{"headers stall", head, false},
		{"body stalls", head + fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body)) + body[:len(body)/2], false},
		{"body trickles", head + fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body)), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(r.events.of(httpbinding.EventMessage))
			conn := dial(t, r, &cert)
			_, err := io.WriteString(conn, tc.send)
			require.NoError(t, err)
			var wg sync.WaitGroup
			if tc.trickle {
				wg.Add(1)
				go func() { // stops when the server closes the connection
					defer wg.Done()
					for i := 0; i < len(body); i++ {
						if _, err := conn.Write([]byte{body[i]}); err != nil {
							return
						}
						time.Sleep(50 * time.Millisecond)
					}
				}()
			}
			got := readAnswer(t, conn)
			conn.Close()
			wg.Wait()
			if got != "" {
				assert.True(t, strings.HasPrefix(got, "HTTP/1.1 400 "), "%q", got)
			}
			for _, ev := range r.events.of(httpbinding.EventMessage)[before:] {
				assert.Equal(t, httpbinding.OutcomeBadRequest, ev.Outcome)
			}
			u, err := r.recv.Usage(context.Background(), vesselA)
			require.NoError(t, err)
			assert.Zero(t, u.IncompleteSnapshots.Used, "nothing staged")
		})
	}
	t.Run("no handshake", func(t *testing.T) {
		conn, err := net.Dial("tcp", r.addr)
		require.NoError(t, err)
		defer conn.Close()
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
		_, err = io.ReadAll(conn)
		if err != nil {
			require.NotContains(t, err.Error(), "timeout", "the server did not cut a silent connection")
		}
	})
}

// Only POSTs of application/json are served, and GETs without a body.
func TestMethodAndMediaType(t *testing.T) {
	r := startRig(t, rigConfig{})
	cert := r.ca.vessel(t, vesselA)
	body := wrap(commitCycle(t, vesselA, uuid.Nil, "nav", 1).entries[0])
	cases := []struct {
		method, contentType string
		status              int
	}{
		{http.MethodGet, "application/json", http.StatusBadRequest}, // a GET's body is never read (SPEC.md §11.7)
		{http.MethodHead, "application/json", http.StatusMethodNotAllowed},
		{http.MethodPut, "application/json", http.StatusMethodNotAllowed},
		{http.MethodPost, "text/plain", http.StatusUnsupportedMediaType},
		{http.MethodPost, "", http.StatusUnsupportedMediaType},
		{http.MethodPost, "application/json; charset=latin1", http.StatusUnsupportedMediaType},
		{http.MethodPost, "application/json-seq", http.StatusUnsupportedMediaType},
		{http.MethodPost, "application/json; charset=UTF-8", http.StatusOK},
		{http.MethodPost, "Application/JSON", http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.contentType, func(t *testing.T) {
			a := r.post(t, &cert, tc.method, map[string]string{"Content-Type": tc.contentType}, body)
			require.Equal(t, tc.status, a.status, "%s", a.body)
			if tc.status == http.StatusUnsupportedMediaType {
				assert.Equal(t, sourcecatalog.ErrUnsupported, a.refusal(t).Class)
			}
		})
	}

	raw := func(t *testing.T, request string) string {
		t.Helper()
		conn := dial(t, r, &cert)
		_, err := io.WriteString(conn, request)
		require.NoError(t, err)
		return readAnswer(t, conn)
	}
	// Two media types are none: the first is not taken for the request's.
	for _, types := range [][2]string{{"application/json", "text/plain"}, {"text/plain", "application/json"}} {
		t.Run("two Content-Types "+types[0]+", "+types[1], func(t *testing.T) {
			got := raw(t, fmt.Sprintf("POST / HTTP/1.1\r\nHost: receiver\r\nContent-Type: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s",
				types[0], types[1], len(body), body))
			assert.True(t, strings.HasPrefix(got, "HTTP/1.1 415 "), "%q", got)
		})
	}
	// net/http would answer OPTIONS * itself, unauthenticated.
	t.Run("OPTIONS *", func(t *testing.T) {
		before := len(r.events.of(httpbinding.EventMessage))
		got := raw(t, "OPTIONS * HTTP/1.1\r\nHost: receiver\r\nConnection: close\r\n\r\n")
		assert.True(t, strings.HasPrefix(got, "HTTP/1.1 405 "), "%q", got)
		assert.Contains(t, got, "\r\nAllow: GET, POST\r\n")
		assert.Len(t, r.events.of(httpbinding.EventMessage), before+1, "the Handler answered it")
	})
	// A request framed by Transfer-Encoding is answered, and the
	// connection closed (RFC 9112 §6.3): a request pipelined after it,
	// which a Content-Length beside it would have framed otherwise, is
	// never read.
	t.Run("Transfer-Encoding and Content-Length", func(t *testing.T) {
		got := raw(t, fmt.Sprintf("POST / HTTP/1.1\r\nHost: receiver\r\nContent-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n"+
			"GET / HTTP/1.1\r\nHost: receiver\r\n\r\n", len(body), body))
		assert.True(t, strings.HasPrefix(got, "HTTP/1.1 200 "), "%q", got)
		assert.Equal(t, 1, strings.Count(got, "HTTP/1.1 "), "one answer, then the connection closed: %q", got)
	})
}

// A vessel has at most its limit of requests in flight; more are 429 with
// Retry-After, and other vessels are not affected.
func TestPerVesselConcurrency(t *testing.T) {
	gate := &gateStore{Store: memstore.New(), entered: make(chan struct{}, 64), gate: make(chan struct{})}
	r := startRig(t, rigConfig{store: gate, opts: []httpbinding.HandlerOption{httpbinding.WithMaxInFlight(2), httpbinding.WithRetryAfter(7 * time.Second)}})
	certA, certB := r.ca.vessel(t, vesselA), r.ca.vessel(t, vesselB)
	a := commitCycle(t, vesselA, uuid.Nil, "nav", 60)
	b := commitCycle(t, vesselB, uuid.Nil, "nav", 1)
	errs := make(chan error, 3)
	send := func(c *httpbinding.Client, e outbox.Entry) {
		go func() { _, err := c.Send(context.Background(), e); errs <- err }()
	}
	asA, asB := r.client(t, &certA), r.client(t, &certB)
	var once sync.Once
	open := func() { once.Do(func() { close(gate.gate) }) }
	t.Cleanup(open) // never leave a request held
	entered := func(who string) {
		t.Helper()
		select {
		case <-gate.entered:
		case err := <-errs:
			t.Fatalf("%s: a request ended before reaching the store: %v", who, err)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no request reached the store", who)
		}
	}
	send(asA, a.entries[0])
	send(asA, a.entries[1])
	entered("A")
	entered("A") // A's two requests are in the store
	ans := r.post(t, &certA, http.MethodPost, nil, wrap(a.entries[2]))
	require.Equal(t, http.StatusTooManyRequests, ans.status)
	assert.Equal(t, "7", ans.header.Get("Retry-After"))
	assert.Equal(t, sourcecatalog.ErrStoreUnavailable, ans.refusal(t).Class)
	send(asB, b.entries[0])
	entered("B") // B is served beside them
	open()
	for range 3 {
		require.NoError(t, <-errs)
	}
}

// A store that does not answer makes no receipt and holds no slot: the
// request is answered 503 store_unavailable at the receive timeout, and
// the vessel's next request, once the store answers, is served.
func TestStoreThatHangsIsNoReceipt(t *testing.T) {
	gate := &gateStore{Store: memstore.New(), entered: make(chan struct{}, 64), gate: make(chan struct{})}
	r := startRig(t, rigConfig{store: gate, opts: []httpbinding.HandlerOption{
		httpbinding.WithMaxInFlight(1), httpbinding.WithReceiveTimeout(200 * time.Millisecond),
	}})
	var once sync.Once
	open := func() { once.Do(func() { close(gate.gate) }) }
	t.Cleanup(open)
	cert := r.ca.vessel(t, vesselA)
	e := commitCycle(t, vesselA, uuid.Nil, "nav", 1).entries[0]
	start := time.Now()
	ans := r.post(t, &cert, http.MethodPost, nil, wrap(e))
	require.Equal(t, http.StatusServiceUnavailable, ans.status, "%s", ans.body)
	assert.Less(t, time.Since(start), 10*time.Second)
	assert.Equal(t, "30", ans.header.Get("Retry-After"))
	assert.Equal(t, sourcecatalog.ErrStoreUnavailable, ans.refusal(t).Class)
	open()
	rc, err := r.client(t, &cert).Send(context.Background(), e)
	require.NoError(t, err, "the slot was freed")
	assert.Equal(t, envelope.Staged, rc.Status, "nothing was staged before")
}

// A store that fails makes no receipt: 503 store_unavailable with
// Retry-After, and the message is staged once the store is back.
func TestStoreFailureIsNoReceipt(t *testing.T) {
	fs := &failStore{Store: memstore.New()}
	r := startRig(t, rigConfig{store: fs})
	cert := r.ca.vessel(t, vesselA)
	e := commitCycle(t, vesselA, uuid.Nil, "nav", 1).entries[0]
	fs.fail.Store(true)
	ans := r.post(t, &cert, http.MethodPost, nil, wrap(e))
	require.Equal(t, http.StatusServiceUnavailable, ans.status)
	assert.Equal(t, "30", ans.header.Get("Retry-After"))
	f := ans.refusal(t)
	assert.Equal(t, sourcecatalog.ErrStoreUnavailable, f.Class)
	assert.NotContains(t, f.Message, errInjected.Error(), "the cause stays on the server")
	fs.fail.Store(false)
	rc, err := r.client(t, &cert).Send(context.Background(), e)
	require.NoError(t, err)
	assert.Equal(t, envelope.Staged, rc.Status, "nothing was staged before")
}

// With the store locked, a request is answered 503 store_unavailable at
// its receive timeout while the reconciler's pass, which took the store
// first, and a health probe queued behind it still wait: the answer is not
// queued behind them. Once the lock is free, both finish.
func TestLockedStoreAnswersInTime(t *testing.T) {
	ls := newLockedStore()
	r := startRig(t, rigConfig{store: ls, opts: []httpbinding.HandlerOption{httpbinding.WithReceiveTimeout(300 * time.Millisecond)}})
	var once sync.Once
	release := func() { once.Do(func() { close(ls.released) }) }
	t.Cleanup(release)
	reconciled := make(chan error, 1)
	go func() {
		rc := httpbinding.Reconciler{Receiver: r.recv, Interval: time.Hour}
		reconciled <- rc.Once(context.Background())
	}()
	require.Equal(t, "vessels", <-ls.entered, "the reconciler has the store, waiting for the lock")
	probed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := ls.Vessels(ctx, true) // /healthz's probe
		probed <- err
	}()

	cert := r.ca.vessel(t, vesselA)
	ans := r.post(t, &cert, http.MethodPost, nil, wrap(commitCycle(t, vesselA, uuid.Nil, "nav", 1).entries[0]))
	require.Equal(t, http.StatusServiceUnavailable, ans.status, "%s", ans.body)
	f := ans.refusal(t)
	assert.Equal(t, sourcecatalog.ErrStoreUnavailable, f.Class)
	assert.Equal(t, "store unavailable", f.Message)
	select {
	case err := <-reconciled:
		t.Fatalf("the reconciler finished while the store was locked: %v", err)
	case err := <-probed:
		t.Fatalf("the probe finished while the store was locked: %v", err)
	default: // the answer came first
	}
	release()
	require.NoError(t, <-reconciled)
	require.NoError(t, <-probed)
}
