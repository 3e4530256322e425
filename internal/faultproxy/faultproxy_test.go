package faultproxy_test

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/internal/faultproxy"
	"github.com/yachtmemory/sourcecatalog/internal/testpki"
)

// A server is an HTTPS server over TLS 1.2 that counts the requests it
// handled and answers each with a body of size bytes.
type server struct {
	addr    string
	handled atomic.Int32
	roots   *tls.Config
}

func startServer(t *testing.T, size int) *server {
	t.Helper()
	ca, err := testpki.NewCA("test CA")
	require.NoError(t, err)
	cert, err := ca.Server()
	require.NoError(t, err)
	s := &server{roots: &tls.Config{RootCAs: ca.Pool}}
	hs := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			s.handled.Add(1)
			_, _ = w.Write([]byte(strings.Repeat("a", size)))
		}),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MaxVersion: tls.VersionTLS12},
		ErrorLog:  nil,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s.addr = ln.Addr().String()
	done := make(chan error, 1)
	go func() { done <- hs.ServeTLS(ln, "", "") }()
	t.Cleanup(func() {
		require.NoError(t, hs.Close())
		require.ErrorIs(t, <-done, http.ErrServerClosed)
	})
	return s
}

func startProxy(t *testing.T, cfg faultproxy.Config) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	return p
}

// client returns an HTTP client that keeps connections alive.
func (s *server) client(t *testing.T, timeout time.Duration) *http.Client {
	c := &http.Client{Timeout: timeout, Transport: &http.Transport{TLSClientConfig: s.roots}}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// post sends one request through the proxy and returns the body read.
func post(c *http.Client, p *faultproxy.Proxy) (string, error) {
	resp, err := c.Post("https://"+p.Addr()+"/", "text/plain", strings.NewReader("request"))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestArmedFaults(t *testing.T) {
	for _, tc := range []struct {
		fault faultproxy.Fault
		size  int // the answer's body
		check func(t *testing.T, err error)
	}{
		{faultproxy.Reset, 2, func(t *testing.T, err error) { assert.ErrorIs(t, err, syscall.ECONNRESET) }},
		// A body of 8,000 bytes comes in one record with the headers:
		// half of it leaves the body cut short.
		{faultproxy.Cut, 8000, func(t *testing.T, err error) { assert.ErrorIs(t, err, io.ErrUnexpectedEOF) }},
		{faultproxy.Cut, 2, func(t *testing.T, err error) { assert.Error(t, err) }},
	} {
		t.Run(tc.fault.String(), func(t *testing.T) {
			s := startServer(t, tc.size)
			p := startProxy(t, faultproxy.Config{Target: s.addr})
			c := s.client(t, 10*time.Second)

			body, err := post(c, p) // relayed: keep-alive, one connection
			require.NoError(t, err)
			assert.Len(t, body, tc.size)
			p.Arm(tc.fault)
			_, err = post(c, p)
			tc.check(t, err)
			assert.EqualValues(t, 2, s.handled.Load(), "the broken answer's request was handled")
			_, err = post(c, p)
			require.NoError(t, err, "only one answer is broken")

			want := faultproxy.Counts{Conns: 2, Answers: 3}
			if tc.fault == faultproxy.Reset {
				want.Resets = 1
			} else {
				want.Cuts = 1
			}
			assert.Equal(t, want, p.Counts())
			assert.Equal(t, 1, p.Counts().Faults())
		})
	}
}

func TestDelay(t *testing.T) {
	s := startServer(t, 2)
	p := startProxy(t, faultproxy.Config{Target: s.addr, DelayFor: 300 * time.Millisecond})
	c := s.client(t, 10*time.Second)
	p.Arm(faultproxy.Delay)
	start := time.Now()
	body, err := post(c, p)
	require.NoError(t, err)
	assert.Equal(t, "aa", body)
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	assert.Equal(t, faultproxy.Counts{Conns: 1, Answers: 1, Delays: 1}, p.Counts())

	// A delay longer than the client's patience loses the answer; the
	// request was handled all the same.
	p.Arm(faultproxy.Delay)
	_, err = post(s.client(t, 50*time.Millisecond), p)
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "%v", err)
	assert.EqualValues(t, 2, s.handled.Load())
}

// Close ends a delay at once.
func TestCloseEndsADelay(t *testing.T) {
	s := startServer(t, 2)
	p, err := faultproxy.Start(faultproxy.Config{Target: s.addr, Delay: 1, DelayFor: time.Hour})
	require.NoError(t, err)
	c := s.client(t, 10*time.Second)
	failed := make(chan error, 1)
	go func() { _, err := post(c, p); failed <- err }()
	require.Eventually(t, func() bool { return p.Counts().Delays == 1 }, 10*time.Second, time.Millisecond)
	start := time.Now()
	require.NoError(t, p.Close())
	assert.Less(t, time.Since(start), 5*time.Second)
	require.Error(t, <-failed)
	require.NoError(t, p.Close(), "Close twice")
}

// outcomes sends n requests one after the other and renders what each
// met.
func outcomes(t *testing.T, cfg faultproxy.Config, n int) string {
	s := startServer(t, 2)
	cfg.Target = s.addr
	p := startProxy(t, cfg)
	c := s.client(t, 10*time.Second)
	var b strings.Builder
	for range n {
		if _, err := post(c, p); err != nil {
			b.WriteByte('x')
		} else {
			b.WriteByte('.')
		}
	}
	got := p.Counts()
	assert.Equal(t, n, got.Answers)
	assert.Equal(t, strings.Count(b.String(), "x"), got.Resets+got.Cuts, b.String())
	assert.EqualValues(t, n, s.handled.Load(), "every request reached the server")
	return b.String()
}

// The faults are drawn from the seed, answer after answer: the same seed
// breaks the same answers.
func TestSeededDecisions(t *testing.T) {
	cfg := faultproxy.Config{Seed: 7, Reset: 0.25, Cut: 0.25, Delay: 0.2, DelayFor: time.Millisecond}
	a := outcomes(t, cfg, 24)
	assert.Equal(t, a, outcomes(t, cfg, 24))
	assert.Contains(t, a, "x")
	assert.Contains(t, a, ".")
	cfg.Seed = 8
	assert.NotEqual(t, a, outcomes(t, cfg, 24))
	assert.Equal(t, strings.Repeat("x", 5), outcomes(t, faultproxy.Config{Reset: 1}, 5))
	assert.Equal(t, strings.Repeat(".", 5), outcomes(t, faultproxy.Config{}, 5))
}

func TestConfigRefused(t *testing.T) {
	for _, cfg := range []faultproxy.Config{
		{},
		{Target: "127.0.0.1:1", Reset: -0.1},
		{Target: "127.0.0.1:1", Cut: 1.5},
		{Target: "127.0.0.1:1", Reset: 0.5, Cut: 0.3, Delay: 0.3},
		{Target: "127.0.0.1:1", DelayFor: -time.Second},
	} {
		_, err := faultproxy.Start(cfg)
		assert.Error(t, err, "%+v", cfg)
	}
}

// CutRequest cuts the named record of the sender's and both connections:
// the server never handles that request, the sender meets an error, and
// the next request is relayed.
func TestCutRequest(t *testing.T) {
	s := startServer(t, 2)
	p := startProxy(t, faultproxy.Config{Target: s.addr})
	c := s.client(t, 10*time.Second)
	_, err := post(c, p)
	require.NoError(t, err)
	p.CutRequest(1)
	_, err = post(c, p)
	require.Error(t, err)
	_, err = post(c, p)
	require.NoError(t, err, "only one record is cut")
	assert.EqualValues(t, 2, s.handled.Load(), "the cut request was not handled")
	assert.Equal(t, faultproxy.Counts{Conns: 2, Answers: 2, RequestCuts: 1}, p.Counts())
}
