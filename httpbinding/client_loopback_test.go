package httpbinding_test

import (
	"context"
	"crypto/tls"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
)

// http is allowed to a loopback endpoint only (a tunnel's or a local
// proxy's end), and then without credentials, which the receiver would
// refuse in clear (SPEC.md §11.2, §11.6).
func TestNewClientPlainHTTP(t *testing.T) {
	noCert := httpbinding.WithTLSConfig(httpbinding.ClientTLSConfig(nil, nil))
	cert := httpbinding.WithTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{{}}})
	getCert := httpbinding.WithTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return nil, nil }})
	token := httpbinding.WithBearerToken("abc")
	for _, tc := range []struct {
		url  string
		opt  httpbinding.ClientOption
		okay bool
	}{
		{"http://127.0.0.1:8443/v2/messages", nil, true},
		{"http://127.1.2.3/v2/messages", nil, true},
		{"http://[::1]:8080/v2/messages", nil, true},
		{"http://localhost/v2/messages", nil, true},
		{"http://LocalHost:9/v2/messages", nil, true},
		{"http://[::ffff:127.0.0.1]/v2/messages", nil, true},
		{"http://127.0.0.1/", noCert, true}, // serve's flags always give one
		{"https://127.0.0.1/", token, true},
		{"https://127.0.0.1/", cert, true},

		{"http://10.0.0.1/v2/messages", nil, false},
		{"http://192.168.1.10:8443/", nil, false},
		{"http://shore.example/v2/messages", nil, false},
		{"http://localhost.shore.example/", nil, false},
		{"http://127.0.0.1.nip.io/", nil, false},
		{"http://0.0.0.0/", nil, false},
		{"http://[::]/", nil, false},
		{"http://[::ffff:10.0.0.1]/", nil, false},
		{"ftp://127.0.0.1/", nil, false},
		{"http://127.0.0.1/", token, false},
		{"http://localhost/", cert, false},
		{"http://[::1]/", getCert, false},
	} {
		var opts []httpbinding.ClientOption
		if tc.opt != nil {
			opts = append(opts, tc.opt)
		}
		c, err := httpbinding.NewClient(tc.url, opts...)
		if tc.okay {
			assert.NoError(t, err, tc.url)
			continue
		}
		assert.ErrorIs(t, err, sourcecatalog.ErrInvalidValue, tc.url)
		assert.Nil(t, c, tc.url)
	}
}

// A cycle sent over http to a loopback receiver is received: the link a
// local proxy or a tunnel provides.
func TestClientPlainHTTPLoopback(t *testing.T) {
	recv := finalize.NewReceiver(memstore.New())
	ts := httptest.NewServer(httpbinding.NewHandler(recv, httpbinding.InsecureNoAuth(vesselA)))
	defer ts.Close()
	u, err := url.Parse(ts.URL)
	require.NoError(t, err)
	b := commitCycle(t, vesselA, [16]byte{}, "nav", 1)
	for _, host := range []string{u.Host, "localhost:" + u.Port()} {
		c, err := httpbinding.NewClient("http://" + host + "/v2/messages")
		require.NoError(t, err)
		for _, e := range b.entries {
			r, err := c.Send(context.Background(), e)
			require.NoError(t, err, host)
			assert.Contains(t, []envelope.ReceiptStatus{envelope.Staged, envelope.AlreadyReceived}, r.Status)
		}
		c.CloseIdleConnections()
	}
	_, err = recv.Active(context.Background(), vesselA)
	require.NoError(t, err, "the cycle was activated")
}
