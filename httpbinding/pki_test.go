package httpbinding_test

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/internal/testpki"
)

// A testCA is a certificate authority made for one test: testpki's, failing
// the test on an error.
type testCA struct {
	*testpki.CA
	pool *x509.CertPool
}

func newCA(t testing.TB, name string) *testCA {
	t.Helper()
	ca, err := testpki.NewCA(name)
	require.NoError(t, err)
	return &testCA{CA: ca, pool: ca.Pool}
}

func must(t testing.TB) func(tls.Certificate, error) tls.Certificate {
	return func(c tls.Certificate, err error) tls.Certificate {
		t.Helper()
		require.NoError(t, err)
		return c
	}
}

// server issues the server's certificate for 127.0.0.1.
func (ca *testCA) server(t testing.TB) tls.Certificate { return must(t)(ca.Server()) }

// vessel issues a client certificate naming the vessel in a urn:uuid: SAN.
func (ca *testCA) vessel(t testing.TB, id uuid.UUID) tls.Certificate { return must(t)(ca.Vessel(id)) }

// clientWith issues a client certificate with the given URI SANs.
func (ca *testCA) clientWith(t *testing.T, uris ...*url.URL) tls.Certificate {
	return must(t)(ca.Client(uris...))
}

// expiredVessel issues a client certificate that expired an hour ago.
func (ca *testCA) expiredVessel(t *testing.T, id uuid.UUID) tls.Certificate {
	return must(t)(ca.Issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "vessel"},
		URIs:        []*url.URL{testpki.VesselURI(id)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		NotBefore:   time.Now().Add(-48 * time.Hour),
		NotAfter:    time.Now().Add(-time.Hour),
	}))
}
