package httpbinding_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
)

// The Client turns every answer into a receipt or an error of exactly one
// class: refusals into their class when their status agrees, and
// everything else that breaks the binding into store_unavailable.
func TestClientAnswers(t *testing.T) {
	b := commitCycle(t, vesselA, uuid.Nil, "nav", 1)
	e := b.entries[0]
	receipt := e.Receipt().Canonical()
	refusal := func(class error) string {
		return string(envelope.RefusalOf(sourcecatalog.Errorf(class, "x")).Canonical())
	}
	cases := []struct {
		name   string
		status int
		ctype  string
		body   string
		class  error // nil: a receipt
		unauth bool
	}{
		{"receipt", 200, "application/json", string(receipt), nil, false},
		{"receipt, charset", 200, "application/json; charset=utf-8", string(receipt), nil, false},
		{"conflict", 409, "application/json", refusal(sourcecatalog.ErrConflict), sourcecatalog.ErrConflict, false},
		{"foreign vessel", 403, "application/json", refusal(sourcecatalog.ErrForeignVessel), sourcecatalog.ErrForeignVessel, false},
		{"staging exhausted", 503, "application/json", refusal(sourcecatalog.ErrStagingExhausted), sourcecatalog.ErrStagingExhausted, false},
		{"body cap", 413, "application/json", refusal(sourcecatalog.ErrLimitExceeded), sourcecatalog.ErrLimitExceeded, false},
		{"busy", 429, "application/json", refusal(sourcecatalog.ErrStoreUnavailable), sourcecatalog.ErrStoreUnavailable, false},
		{"invalid", 422, "application/json", refusal(sourcecatalog.ErrInvalidValue), sourcecatalog.ErrInvalidValue, false},
		{"401", 401, "text/plain", "no", sourcecatalog.ErrStoreUnavailable, true},
		{"refusal with 200", 200, "application/json", refusal(sourcecatalog.ErrConflict), sourcecatalog.ErrStoreUnavailable, false},
		{"conflict with 422", 422, "application/json", refusal(sourcecatalog.ErrConflict), sourcecatalog.ErrStoreUnavailable, false},
		{"receipt with 409", 409, "application/json", string(receipt), sourcecatalog.ErrStoreUnavailable, false},
		{"plain 503", 503, "text/plain", "down", sourcecatalog.ErrStoreUnavailable, false},
		{"plain 500", 500, "text/plain", "oops", sourcecatalog.ErrStoreUnavailable, false},
		{"receipt as text/html", 200, "text/html", string(receipt), sourcecatalog.ErrStoreUnavailable, false},
		{"receipt and garbage", 200, "application/json", string(receipt) + "x", sourcecatalog.ErrStoreUnavailable, false},
		{"answer over 4096 bytes", 200, "application/json", string(receipt) + strings.Repeat(" ", envelope.MaxAnswerSize), sourcecatalog.ErrStoreUnavailable, false},
		{"redirect", 307, "application/json", "", sourcecatalog.ErrStoreUnavailable, false},
	}
	var redirected atomic.Bool
	var last atomic.Pointer[http.Request]
	var lastBody atomic.Pointer[[]byte]
	var current atomic.Pointer[cannedAnswer]
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/elsewhere" {
			redirected.Store(true)
		}
		body, _ := io.ReadAll(r.Body)
		last.Store(r)
		lastBody.Store(&body)
		current.Load().write(w)
	}))
	defer ts.Close()
	c := testClient(t, ts, httpbinding.WithBearerToken("tok"))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			current.Store(&cannedAnswer{tc.status, tc.ctype, tc.body})
			rc, err := c.Send(context.Background(), e)
			r := last.Load()
			assert.Equal(t, http.MethodPost, r.Method)
			assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
			assert.Equal(t, "Bearer tok", r.Header.Get("Authorization"))
			assert.Equal(t, wrap(e), *lastBody.Load())
			if tc.class == nil {
				require.NoError(t, err)
				assert.True(t, rc.Matches(e.Receipt()))
				return
			}
			require.Error(t, err)
			assert.Equal(t, tc.class, sourcecatalog.Class(err), "%v", err)
			for _, other := range sourcecatalog.Classes() {
				if other != tc.class {
					assert.NotErrorIs(t, err, other, "exactly one class: %v", err)
				}
			}
			assert.Equal(t, tc.unauth, errors.Is(err, httpbinding.ErrUnauthorized))
		})
	}
	assert.False(t, redirected.Load(), "redirects are not followed")
}

// A cannedAnswer is what a test server answers: a status, a Content-Type
// and a body.
type cannedAnswer struct {
	status      int
	ctype, body string
}

// write answers a, with Location: /elsewhere for a 307.
func (a *cannedAnswer) write(w http.ResponseWriter) {
	if a.status == 307 {
		w.Header().Set("Location", "/elsewhere")
	}
	w.Header().Set("Content-Type", a.ctype)
	w.WriteHeader(a.status)
	_, _ = io.WriteString(w, a.body)
}

// An answer whose body is cut short is store_unavailable, even when what
// arrived is a whole receipt.
func TestClientTruncatedAnswer(t *testing.T) {
	e := commitCycle(t, vesselA, uuid.Nil, "nav", 1).entries[0]
	receipt := e.Receipt().Canonical()
	for _, sent := range []int{100, len(receipt)} {
		ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(receipt)+10))
			w.WriteHeader(200)
			_, _ = w.Write(receipt[:sent])
			rc := http.NewResponseController(w)
			if rc.Flush() == nil {
				if conn, _, err := rc.Hijack(); err == nil {
					conn.Close()
				}
			}
		}))
		_, err := testClient(t, ts).Send(context.Background(), e)
		ts.Close()
		require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable, "%d bytes", sent)
		assert.Equal(t, sourcecatalog.ErrStoreUnavailable, sourcecatalog.Class(err))
	}
}

// The Client reads no more than envelope.MaxAnswerSize+1 bytes of an
// answer: an endless one fails at once, not at the timeout.
func TestClientBoundsTheAnswer(t *testing.T) {
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		block := []byte(strings.Repeat(" ", 32<<10))
		for { // until the client hangs up
			if _, err := w.Write(block); err != nil {
				return
			}
		}
	}))
	defer ts.Close()
	_, err := testClient(t, ts).Send(context.Background(), commitCycle(t, vesselA, uuid.Nil, "nav", 1).entries[0])
	require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable)
	assert.Contains(t, err.Error(), "larger than envelope.MaxAnswerSize")
}

// testClient returns a Client of an httptest TLS server.
func testClient(t *testing.T, ts *httptest.Server, opts ...httpbinding.ClientOption) *httpbinding.Client {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(ts.Certificate())
	c, err := httpbinding.NewClient(ts.URL+"/v2/messages", append([]httpbinding.ClientOption{httpbinding.WithTLSConfig(httpbinding.ClientTLSConfig(pool, nil)), httpbinding.WithTimeout(5 * time.Second)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func TestNewClientRefuses(t *testing.T) {
	cases := []struct {
		name string
		url  string
		opts []httpbinding.ClientOption
	}{
		{"plain http elsewhere", "http://192.0.2.1/", nil},
		{"no host", "https:///v2", nil},
		{"user info", "https://u:p@127.0.0.1/", nil},
		{"not a URL", "https://[::1", nil},
		{"token with a space", "https://127.0.0.1/", []httpbinding.ClientOption{httpbinding.WithBearerToken("a b")}},
		{"TLS 1.0", "https://127.0.0.1/", []httpbinding.ClientOption{httpbinding.WithTLSConfig(&tls.Config{MinVersion: tls.VersionTLS10})}},
		{"TLS unset", "https://127.0.0.1/", []httpbinding.ClientOption{httpbinding.WithTLSConfig(&tls.Config{})}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := httpbinding.NewClient(tc.url, tc.opts...)
			require.ErrorIs(t, err, sourcecatalog.ErrInvalidValue)
			assert.Nil(t, c)
		})
	}
}

func TestNewServerRefuses(t *testing.T) {
	ca := newCA(t, "ca")
	cert := ca.server(t)
	h := http.NotFoundHandler()
	for name, tc := range map[string]*tls.Config{
		"no TLS":         nil,
		"no certificate": {MinVersion: tls.VersionTLS12},
		"TLS 1.1":        {MinVersion: tls.VersionTLS11, Certificates: []tls.Certificate{cert}},
	} {
		_, err := httpbinding.NewServer("", h, tc, httpbinding.Timeouts{}, nil)
		require.ErrorIs(t, err, sourcecatalog.ErrInvalidValue, name)
	}
	srv, err := httpbinding.NewServer(":0", h, httpbinding.ServerTLSConfig(cert, ca.pool), httpbinding.Timeouts{Read: time.Second}, nil)
	require.NoError(t, err)
	assert.Equal(t, time.Second, srv.ReadTimeout)
	assert.Equal(t, httpbinding.DefaultTimeouts.ReadHeader, srv.ReadHeaderTimeout)
	assert.Equal(t, httpbinding.DefaultTimeouts.Write, srv.WriteTimeout)
	assert.Equal(t, httpbinding.DefaultTimeouts.Idle, srv.IdleTimeout)
	assert.Equal(t, httpbinding.MaxHeaderBytes, srv.MaxHeaderBytes)
	assert.Equal(t, uint16(tls.VersionTLS12), srv.TLSConfig.MinVersion)
	assert.Equal(t, tls.RequestClientCert, srv.TLSConfig.ClientAuth, "MutualTLS verifies, so that every refusal is a 401")
	assert.True(t, srv.DisableGeneralOptionsHandler, "OPTIONS * is the Handler's")
	assert.True(t, srv.Protocols.HTTP1() && srv.Protocols.HTTP2() && !srv.Protocols.UnencryptedHTTP2(), "HTTP/2 and HTTP/1.1 over TLS: %v", srv.Protocols)
	assert.Equal(t, []string{"h2", "http/1.1"}, srv.TLSConfig.NextProtos)
	require.NotNil(t, srv.HTTP2, "HTTP/2's bounds are set, not left to net/http")
	assert.Equal(t, 16, srv.HTTP2.MaxConcurrentStreams)
	assert.Equal(t, 16<<10, srv.HTTP2.MaxReadFrameSize)
	assert.Equal(t, 4<<10, srv.HTTP2.MaxDecoderHeaderTableSize)

	// The same bounds, without TLS.
	plain := httpbinding.NewInsecureServer(":0", h, httpbinding.Timeouts{Read: time.Second}, nil)
	assert.Nil(t, plain.TLSConfig)
	for name, v := range map[string][2]any{
		"ReadTimeout":                  {srv.ReadTimeout, plain.ReadTimeout},
		"ReadHeaderTimeout":            {srv.ReadHeaderTimeout, plain.ReadHeaderTimeout},
		"WriteTimeout":                 {srv.WriteTimeout, plain.WriteTimeout},
		"IdleTimeout":                  {srv.IdleTimeout, plain.IdleTimeout},
		"MaxHeaderBytes":               {srv.MaxHeaderBytes, plain.MaxHeaderBytes},
		"DisableGeneralOptionsHandler": {srv.DisableGeneralOptionsHandler, plain.DisableGeneralOptionsHandler},
	} {
		assert.Equal(t, v[0], v[1], name)
	}
	assert.Equal(t, "{HTTP1}", plain.Protocols.String(), "no unencrypted HTTP/2")
}
