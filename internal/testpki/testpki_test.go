package testpki_test

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/internal/testpki"
)

// The certificates verify against their CA for their use, and the
// vessel's names the vessel as httpbinding reads it.
func TestCertificates(t *testing.T) {
	ca, err := testpki.NewCA("test CA")
	require.NoError(t, err)
	other, err := testpki.NewCA("other CA")
	require.NoError(t, err)

	srv, err := ca.Server()
	require.NoError(t, err)
	_, err = srv.Leaf.Verify(x509.VerifyOptions{Roots: ca.Pool, DNSName: "127.0.0.1"})
	require.NoError(t, err)
	assert.True(t, srv.Leaf.IPAddresses[0].Equal(net.IPv4(127, 0, 0, 1)))
	_, err = srv.Leaf.Verify(x509.VerifyOptions{Roots: other.Pool})
	require.Error(t, err, "another CA's pool")

	id := uuid.MustParse("1ca21e28-2200-4285-8746-22675233f129")
	v, err := ca.Vessel(id)
	require.NoError(t, err)
	_, err = v.Leaf.Verify(x509.VerifyOptions{Roots: ca.Pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err)
	_, err = v.Leaf.Verify(x509.VerifyOptions{Roots: ca.Pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	require.Error(t, err, "a client certificate is not a server's")
	got, err := httpbinding.VesselOfCertificate(v.Leaf)
	require.NoError(t, err)
	assert.Equal(t, id, got)
	assert.Equal(t, "urn:uuid:"+id.String(), testpki.VesselURI(id).String())

	again, err := ca.Vessel(id)
	require.NoError(t, err)
	assert.NotEqual(t, v.Leaf.SerialNumber, again.Leaf.SerialNumber, "serial numbers are unique")
}

// The PEM files load back as the same CA and the same certificate and key.
func TestPEM(t *testing.T) {
	ca, err := testpki.NewCA("test CA")
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(ca.CertPEM()))
	assert.True(t, pool.Equal(ca.Pool))

	v, err := ca.Vessel(uuid.New())
	require.NoError(t, err)
	certPEM, keyPEM, err := testpki.PEM(v)
	require.NoError(t, err)
	loaded, err := tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	assert.Equal(t, v.Certificate, loaded.Certificate)
	assert.True(t, loaded.PrivateKey.(interface{ Equal(crypto.PrivateKey) bool }).Equal(v.PrivateKey))
}
