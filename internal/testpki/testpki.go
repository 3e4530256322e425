// Package testpki makes throwaway certificate authorities and the
// certificates of the HTTP binding (SPEC.md §11.2) in memory: a server
// certificate for 127.0.0.1 and client certificates naming a vessel in a
// urn:uuid: URI SAN. It is for tests and the demo; its keys never leave
// the process and nothing of it suits a deployment.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"time"

	"github.com/google/uuid"
)

// Validity is how long a certificate is valid when its template sets no
// NotBefore: from an hour ago (clock skew) to a day from now.
const Validity = 24 * time.Hour

// A CA is a certificate authority made for one test or one demo run.
type CA struct {
	Cert *x509.Certificate
	Pool *x509.CertPool // holds Cert alone: the roots or client CAs to trust
	key  *ecdsa.PrivateKey
}

// NewCA returns a self-signed CA whose subject's common name is name.
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("testpki: %w", err)
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: name},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	cert, _, err := sign(tmpl, nil, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &CA{Cert: cert, Pool: pool, key: key}, nil
}

// Issue signs a leaf certificate with a new key for tmpl's names, usages
// and validity (Validity when NotBefore is zero). It sets the serial
// number and the key usage; tmpl is modified.
func (ca *CA) Issue(tmpl *x509.Certificate) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("testpki: %w", err)
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	leaf, der, err := sign(tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// sign signs tmpl with signer, self-signed when parent is nil, after
// setting a random serial number and the default validity.
func sign(tmpl, parent *x509.Certificate, pub any, signer *ecdsa.PrivateKey) (*x509.Certificate, []byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, fmt.Errorf("testpki: %w", err)
	}
	tmpl.SerialNumber = serial
	if tmpl.NotBefore.IsZero() {
		tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(Validity)
	}
	if parent == nil {
		parent = tmpl
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
	if err != nil {
		return nil, nil, fmt.Errorf("testpki: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("testpki: %w", err)
	}
	return cert, der, nil
}

// CertPEM returns the CA's certificate PEM-encoded, as a file of trusted
// roots or client CAs holds it.
func (ca *CA) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw})
}

// PEM returns c's certificate chain and its private key PEM-encoded, the
// key in PKCS #8: the certificate and key files a TLS server or client
// loads.
func PEM(c tls.Certificate) (certPEM, keyPEM []byte, err error) {
	for _, der := range c.Certificate {
		certPEM = append(certPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		return nil, nil, fmt.Errorf("testpki: %w", err)
	}
	return certPEM, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

// Server issues a server certificate for the IP address 127.0.0.1.
func (ca *CA) Server() (tls.Certificate, error) {
	return ca.Issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "receiver"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
}

// Client issues a client certificate with the URI SANs uris.
func (ca *CA) Client(uris ...*url.URL) (tls.Certificate, error) {
	return ca.Issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "vessel"},
		URIs:        uris,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

// Vessel issues a client certificate naming the vessel id in its one URI
// SAN, VesselURI(id).
func (ca *CA) Vessel(id uuid.UUID) (tls.Certificate, error) { return ca.Client(VesselURI(id)) }

// VesselURI is the URI SAN naming a vessel: urn:uuid:<id>.
func VesselURI(id uuid.UUID) *url.URL { return &url.URL{Scheme: "urn", Opaque: "uuid:" + id.String()} }
