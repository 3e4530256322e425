package httpbinding_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	finalizemem "github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// countingRoundTripper counts the requests it forwards.
type countingRoundTripper struct {
	next http.RoundTripper
	n    atomic.Int64
}

func (c *countingRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// tokenReceiver starts an httptest TLS receiver taking const token for
// vesselA, whose handler counts the request body bytes it read (bodyRead)
// and records each POST's Content-Encoding.
type tokenReceiver struct {
	ts       *httptest.Server
	bodyRead atomic.Int64
	mu       sync.Mutex
	encoding []string
}

const testToken = "transport-test-token"

func startTokenReceiver(t *testing.T, opts ...httpbinding.HandlerOption) *tokenReceiver {
	t.Helper()
	tokens, err := httpbinding.ParseTokens(strings.NewReader(httpbinding.TokenHash(testToken, vesselA) + "\n"))
	require.NoError(t, err)
	h := httpbinding.NewHandler(finalize.NewReceiver(finalizemem.New()), tokens, opts...)
	r := &tokenReceiver{}
	r.ts = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost {
			r.mu.Lock()
			r.encoding = append(r.encoding, req.Header.Get("Content-Encoding"))
			r.mu.Unlock()
			body, err := io.ReadAll(req.Body)
			require.NoError(t, err)
			r.bodyRead.Add(int64(len(body)))
			req.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(r.ts.Close)
	return r
}

// transport returns an http.Transport trusting the receiver.
func (r *tokenReceiver) transport() *http.Transport {
	pool := x509.NewCertPool()
	pool.AddCert(r.ts.Certificate())
	return &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
}

// A caller's round tripper carries every request, and the Client's own
// rules still hold over it.
func TestWithHTTPClient(t *testing.T) {
	r := startTokenReceiver(t)
	rt := &countingRoundTripper{next: r.transport()}
	c, err := httpbinding.NewClient(r.ts.URL+"/v2/messages", httpbinding.WithHTTPClient(&http.Client{Transport: rt}),
		httpbinding.WithBearerToken(testToken))
	require.NoError(t, err)
	t.Cleanup(c.CloseIdleConnections)
	b := commitCycle(t, vesselA, [16]byte{}, "nav", 150)
	pass, err := outbox.NewPublisher(b.store, vesselA, c, outbox.WithReceiverV2(true)).Publish(context.Background())
	require.NoError(t, err)
	assert.Equal(t, len(b.entries), pass.Delivered)
	assert.Equal(t, int64(len(b.entries)), rt.n.Load(), "each request went through the caller's round tripper")

	t.Run("redirect not followed", func(t *testing.T) {
		var hits atomic.Int64
		ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			hits.Add(1)
			http.Redirect(w, req, "/elsewhere", http.StatusTemporaryRedirect)
		}))
		t.Cleanup(ts.Close)
		// The caller's own CheckRedirect would follow it; the Client's does not.
		hc := &http.Client{Transport: ts.Client().Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return nil }}
		c, err := httpbinding.NewClient(ts.URL+"/v2/messages", httpbinding.WithHTTPClient(hc))
		require.NoError(t, err)
		_, err = c.Send(context.Background(), b.entries[0])
		require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable)
		assert.Equal(t, int64(1), hits.Load(), "the redirect was not followed")
	})
	t.Run("TLS 1.2 at least, whatever the transport", func(t *testing.T) {
		const url = "https://127.0.0.1:1/v2/messages"
		// A round tripper that reports the answer's TLS as 1.1.
		old := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}, TLS: &tls.ConnectionState{Version: tls.VersionTLS11}, Request: req}, nil
		})
		c, err := httpbinding.NewClient(url, httpbinding.WithHTTPClient(&http.Client{Transport: old}))
		require.NoError(t, err)
		_, err = c.Send(context.Background(), b.entries[0])
		var tf *httpbinding.TLSError
		require.ErrorAs(t, err, &tf)
		require.ErrorIs(t, err, sourcecatalog.ErrInvalidValue)
		assert.True(t, outbox.NeedsOperator(err))
		// One that reports no TLS at all for an https URL.
		none := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}, Request: req}, nil
		})
		c, err = httpbinding.NewClient(url, httpbinding.WithHTTPClient(&http.Client{Transport: none}))
		require.NoError(t, err)
		_, err = c.Declaration(context.Background())
		require.ErrorAs(t, err, &tf)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// NewClient refuses with a caller's client what it refuses without, and
// what it can no longer check.
func TestWithHTTPClientRefuses(t *testing.T) {
	hc := &http.Client{}
	cases := []struct {
		name string
		url  string
		opts []httpbinding.ClientOption
	}{
		{"http elsewhere", "http://192.0.2.1/", nil},
		{"http to a name", "http://localhost:8080/", nil},
		{"token over http", "http://127.0.0.1:8080/", []httpbinding.ClientOption{httpbinding.WithBearerToken("abc")}},
		{"with a TLS config too", "https://127.0.0.1/", []httpbinding.ClientOption{httpbinding.WithTLSConfig(httpbinding.ClientTLSConfig(nil, nil))}},
		{"user info", "https://u:p@127.0.0.1/", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := httpbinding.NewClient(tc.url, append([]httpbinding.ClientOption{httpbinding.WithHTTPClient(hc)}, tc.opts...)...)
			require.ErrorIs(t, err, sourcecatalog.ErrInvalidValue)
			assert.Nil(t, c)
		})
	}
	t.Run("a transport allowing TLS 1.0", func(t *testing.T) {
		tr := &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS10}}
		_, err := httpbinding.NewClient("https://127.0.0.1/", httpbinding.WithHTTPClient(&http.Client{Transport: tr}))
		require.ErrorIs(t, err, sourcecatalog.ErrInvalidValue)
	})
	t.Run("http on a loopback address", func(t *testing.T) {
		_, err := httpbinding.NewClient("http://127.0.0.1:8080/", httpbinding.WithHTTPClient(hc), httpbinding.WithTimeout(time.Second))
		require.NoError(t, err)
	})
}

// The Publisher counts the request bytes a Client reports: as sent, the
// bytes the receiver read; uncompressed, the wrapped requests' lengths.
func TestPublisherCountsBytes(t *testing.T) {
	for _, gz := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "gzip"}[gz], func(t *testing.T) {
			r := startTokenReceiver(t, httpbinding.WithCapabilities(httpbinding.CapabilityRequestGzip))
			opts := []httpbinding.ClientOption{httpbinding.WithHTTPClient(&http.Client{Transport: r.transport()}), httpbinding.WithBearerToken(testToken)}
			if gz {
				opts = append(opts, httpbinding.WithRequestCompression())
			}
			c, err := httpbinding.NewClient(r.ts.URL+"/v2/messages", opts...)
			require.NoError(t, err)
			t.Cleanup(c.CloseIdleConnections)
			b := commitCycle(t, vesselA, [16]byte{}, "nav", 150)
			var wrapped int64
			for _, e := range b.entries {
				wrapped += int64(len(wrap(e)))
			}
			rep, err := outbox.NewPublisher(b.store, vesselA, c, outbox.WithReceiverV2(true)).Drain(context.Background(), outbox.DrainOptions{})
			require.NoError(t, err)
			require.Equal(t, outbox.Drained, rep.Outcome)
			assert.Equal(t, r.bodyRead.Load(), rep.Bytes.Sent, "as sent: the bytes the receiver read")
			assert.Equal(t, wrapped, rep.Bytes.Uncompressed, "uncompressed: the wrapped requests")
			if gz {
				assert.Less(t, rep.Bytes.Sent, rep.Bytes.Uncompressed)
				assert.Contains(t, r.encoding, "gzip")
			} else {
				assert.Equal(t, rep.Bytes.Uncompressed, rep.Bytes.Sent)
				assert.NotContains(t, r.encoding, "gzip")
			}
		})
	}
}

// noBytes returns p without its byte counts, for tests about the rest.
func noBytes(p outbox.Pass) outbox.Pass {
	p.Bytes = outbox.RequestBytes{}
	return p
}
