package main

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/internal/testpki"
)

// A testCA is testpki's certificate authority for one test, its
// certificate written to caFile.
type testCA struct {
	*testpki.CA
	caFile string
}

// newTestCA makes the CA and writes its certificate to dir/ca.pem.
func newTestCA(t *testing.T, dir string) *testCA {
	t.Helper()
	ca, err := testpki.NewCA("test CA")
	require.NoError(t, err)
	return &testCA{CA: ca, caFile: writeFile(t, dir, "ca.pem", ca.CertPEM())}
}

// mustCert returns the certificate, failing the test on an error.
func mustCert(t *testing.T) func(tls.Certificate, error) tls.Certificate {
	return func(c tls.Certificate, err error) tls.Certificate {
		t.Helper()
		require.NoError(t, err)
		return c
	}
}

// writeCert writes c and its key to dir/NAME.pem and dir/NAME-key.pem,
// the key readable by its owner alone, and returns the two files.
func writeCert(t *testing.T, dir, name string, c tls.Certificate) (certFile, keyFile string) {
	t.Helper()
	certPEM, keyPEM, err := testpki.PEM(c)
	require.NoError(t, err)
	keyFile = filepath.Join(dir, name+"-key.pem")
	require.NoError(t, os.WriteFile(keyFile, keyPEM, 0o600))
	return writeFile(t, dir, name+".pem", certPEM), keyFile
}
