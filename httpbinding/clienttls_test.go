package httpbinding_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// TLS verification failures, either way, are *TLSError of class
// invalid_value that an operator must see — never store_unavailable, so
// never retried as transient; a connection refused stays transient.
func TestClientTLSFailures(t *testing.T) {
	ca, other := newCA(t, "operator"), newCA(t, "another")
	serverCert := ca.server(t)
	expired := must(t)(ca.Issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "receiver"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		NotBefore:   time.Now().Add(-48 * time.Hour),
		NotAfter:    time.Now().Add(-time.Hour),
	}))
	vesselCert := ca.vessel(t, vesselA)
	strangerCert := other.vessel(t, vesselA)
	// serve starts a TLS server with cert that, when clientCAs is set,
	// requires and verifies a client certificate in the handshake, as a
	// proxy terminating mutual TLS does.
	serve := func(t *testing.T, cert tls.Certificate, clientCAs *x509.CertPool, minVersion, maxVersion uint16) string {
		ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusUnauthorized)
		}))
		ts.Config.ErrorLog = log.New(io.Discard, "", 0)
		ts.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: max(minVersion, tls.VersionTLS12), MaxVersion: maxVersion}
		if clientCAs != nil {
			ts.TLS.ClientCAs, ts.TLS.ClientAuth = clientCAs, tls.RequireAndVerifyClientCert
		}
		ts.StartTLS()
		t.Cleanup(ts.Close)
		return ts.URL
	}
	e := commitCycle(t, vesselA, [16]byte{}, "nav", 1).entries[0]
	for _, tc := range []struct {
		name       string
		serverCert tls.Certificate
		clientCAs  *x509.CertPool
		minVersion uint16 // the server's
		maxVersion uint16 // the server's
		clientMax  uint16
		roots      *x509.CertPool
		client     *tls.Certificate
		serverName string
		refused    bool // the receiver's side refused: a TLS alert
	}{
		{name: "unknown authority", serverCert: serverCert, roots: other.pool},
		{name: "system roots", serverCert: serverCert},
		{name: "expired", serverCert: expired, roots: ca.pool},
		{name: "another host name", serverCert: serverCert, roots: ca.pool, serverName: "shore.example"},
		{name: "no client certificate, TLS 1.3", serverCert: serverCert, clientCAs: ca.pool, roots: ca.pool, refused: true},
		{name: "no client certificate, TLS 1.2", serverCert: serverCert, clientCAs: ca.pool, maxVersion: tls.VersionTLS12, roots: ca.pool, refused: true},
		{name: "client certificate of another CA, TLS 1.3", serverCert: serverCert, clientCAs: ca.pool, roots: ca.pool, client: &strangerCert, refused: true},
		{name: "no common version", serverCert: serverCert, minVersion: tls.VersionTLS13, clientMax: tls.VersionTLS12, roots: ca.pool, refused: true},
		{name: "client certificate of another CA, TLS 1.2", serverCert: serverCert, clientCAs: ca.pool, maxVersion: tls.VersionTLS12, roots: ca.pool, client: &strangerCert, refused: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := serve(t, tc.serverCert, tc.clientCAs, tc.minVersion, tc.maxVersion)
			cfg := httpbinding.ClientTLSConfig(tc.roots, tc.client)
			cfg.ServerName, cfg.MaxVersion = tc.serverName, tc.clientMax
			c, err := httpbinding.NewClient(u+"/v2/messages", httpbinding.WithTLSConfig(cfg), httpbinding.WithTimeout(5*time.Second))
			require.NoError(t, err)
			defer c.CloseIdleConnections()
			_, err = c.Send(context.Background(), e)
			var tf *httpbinding.TLSError
			require.ErrorAs(t, err, &tf, "%v", err)
			assert.Equal(t, tc.refused, tf.Refused, "%v", err)
			assert.Equal(t, sourcecatalog.ErrInvalidValue, sourcecatalog.Class(err), "%v", err)
			assert.NotErrorIs(t, err, sourcecatalog.ErrStoreUnavailable, "a certificate failure is not transient")
			assert.True(t, outbox.NeedsOperator(err), "an operator must see it")
			assert.NotErrorIs(t, err, httpbinding.ErrUnauthorized)
		})
	}

	// The same receiver with the right trust and certificate answers (401
	// here), and a port nobody listens on is transient.
	t.Run("control", func(t *testing.T) {
		u := serve(t, serverCert, ca.pool, 0, 0)
		c, err := httpbinding.NewClient(u+"/v2/messages", httpbinding.WithTLSConfig(httpbinding.ClientTLSConfig(ca.pool, &vesselCert)))
		require.NoError(t, err)
		defer c.CloseIdleConnections()
		_, err = c.Send(context.Background(), e)
		require.ErrorIs(t, err, httpbinding.ErrUnauthorized)
		assert.True(t, outbox.NeedsOperator(err), "a 401 is for an operator")
		var tf *httpbinding.TLSError
		assert.False(t, errors.As(err, &tf))

		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := l.Addr().String()
		require.NoError(t, l.Close())
		c, err = httpbinding.NewClient("https://"+addr+"/", httpbinding.WithTLSConfig(httpbinding.ClientTLSConfig(ca.pool, nil)))
		require.NoError(t, err)
		_, err = c.Send(context.Background(), e)
		assert.Equal(t, sourcecatalog.ErrStoreUnavailable, sourcecatalog.Class(err), "%v", err)
		assert.False(t, outbox.NeedsOperator(err), "%v", err)
	})
}
