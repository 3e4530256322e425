package httpbinding

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

// An Authenticator establishes which vessel sent a request. It must be safe
// for concurrent use and must not read the request body.
//
// Authenticate returns the origin, or an error — ErrNoCredentials when the
// request carries none, ErrBadCredentials when they are refused — which the
// Handler answers 401 without reading the body. The error is for the
// server's logs (the [Observer]); the sender learns only the status.
type Authenticator interface {
	Authenticate(r *http.Request) (finalize.Origin, error)
}

// A Challenger is an Authenticator that names its scheme in the
// WWW-Authenticate header of a 401 answer (RFC 9110 §11.6.1).
type Challenger interface {
	Challenge(err error) string
}

// Authentication failures, returned by an Authenticator and reported to
// the Observer; a sender sees only the 401. Both wrap
// sourcecatalog.ErrInvalidValue: the same credentials fail again.
var (
	// ErrNoCredentials: the request carries no credentials of the scheme.
	ErrNoCredentials error = sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "httpbinding: no credentials")
	// ErrBadCredentials: the request's credentials are refused; the error
	// that wraps it says why.
	ErrBadCredentials error = sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "httpbinding: credentials refused")
)

// insecureNoAuth authenticates every request as one vessel.
type insecureNoAuth struct{ origin finalize.Origin }

// InsecureNoAuth returns an Authenticator that authenticates every request
// as vessel, whoever sends it. It is for tests and for a receiver that
// sits behind another authenticating layer; exposed to a network, any
// client can stage messages for vessel. It panics for uuid.Nil.
func InsecureNoAuth(vessel uuid.UUID) Authenticator {
	if vessel == uuid.Nil {
		panic("httpbinding: InsecureNoAuth with the nil vessel id")
	}
	return insecureNoAuth{finalize.Origin{VesselID: vessel}}
}

func (a insecureNoAuth) Authenticate(*http.Request) (finalize.Origin, error) { return a.origin, nil }

// MutualTLS authenticates a request by its client certificate, which it
// verifies itself against ClientCAs, for client authentication, at the
// time of the request (crypto/tls only asks for it: see
// [ServerTLSConfig]), so that every refusal is a 401 the Handler answers
// and observes. The vessel id is the certificate's one URI SAN, of the form
// urn:uuid:<uuid>, the UUID in canonical lowercase form (SPEC.md §2.1). A
// request without a certificate is ErrNoCredentials; a certificate that
// does not verify — expired, of another CA, whose extended key usage does
// not name client authentication (none at all included, though x509 would
// take that for any use), or any certificate when ClientCAs is nil — or
// that does not name one vessel ([VesselOfCertificate]) is
// ErrBadCredentials.
type MutualTLS struct {
	ClientCAs *x509.CertPool // the authorities client certificates must chain to
}

var _ Authenticator = MutualTLS{}

// Authenticate implements Authenticator.
func (m MutualTLS) Authenticate(r *http.Request) (finalize.Origin, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return finalize.Origin{}, ErrNoCredentials
	}
	if m.ClientCAs == nil {
		return finalize.Origin{}, badCredentials("no client certificate authority is configured")
	}
	leaf := r.TLS.PeerCertificates[0]
	if !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
		return finalize.Origin{}, badCredentials("the client certificate's extended key usage does not name client authentication")
	}
	intermediates := x509.NewCertPool()
	for _, c := range r.TLS.PeerCertificates[1:] {
		intermediates.AddCert(c)
	}
	_, err := leaf.Verify(x509.VerifyOptions{
		Roots: m.ClientCAs, Intermediates: intermediates,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return finalize.Origin{}, badCredentials("the client certificate does not verify: " + err.Error())
	}
	id, err := VesselOfCertificate(leaf)
	if err != nil {
		return finalize.Origin{}, err
	}
	return finalize.Origin{VesselID: id}, nil
}

// VesselOfCertificate returns the vessel id a client certificate names: its
// one URI SAN, urn:uuid:<uuid> (the namespace "uuid" in any case, RFC
// 8141; the UUID in canonical lowercase form; no query or fragment).
// A certificate with no URI SAN, with several — whatever their schemes, so
// that a certificate naming the vessel and also https://boat.example/ is
// refused — or whose one URI SAN is anything else names no vessel
// (SPEC.md §11.2). SANs of other kinds (DNS names, addresses) are not
// looked at. It does not verify the certificate. Errors wrap
// ErrBadCredentials.
func VesselOfCertificate(cert *x509.Certificate) (uuid.UUID, error) {
	if len(cert.URIs) != 1 {
		return uuid.Nil, badCredentials("the certificate must carry exactly one urn:uuid: URI SAN and no other URI SAN")
	}
	u := cert.URIs[0]
	if u.Scheme != "urn" || !strings.HasPrefix(strings.ToLower(u.Opaque), "uuid:") {
		return uuid.Nil, badCredentials("the certificate's URI SAN is not urn:uuid:<vessel>")
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.RawFragment != "" {
		return uuid.Nil, badCredentials("the certificate's urn:uuid: SAN has a query or a fragment")
	}
	id, err := envelope.ParseUUID(u.Opaque[len("uuid:"):])
	if err != nil {
		return uuid.Nil, badCredentials("the certificate's urn:uuid: SAN is not a canonical lowercase UUID")
	}
	return id, nil
}

func badCredentials(why string) error { return &credentialError{why} }

// A credentialError says why credentials were refused; it wraps
// ErrBadCredentials, and so sourcecatalog.ErrInvalidValue.
type credentialError struct{ why string }

func (e *credentialError) Error() string { return "httpbinding: credentials refused: " + e.why }
func (e *credentialError) Unwrap() error { return ErrBadCredentials }

// ServerTLSConfig returns the server's TLS configuration: TLS 1.2 at
// least, HTTP/1.1 only, the server's certificate, and — when clientCAs is
// not nil — a request for a client certificate of those authorities
// (tls.RequestClientCert), which [MutualTLS] with the same clientCAs
// verifies. The handshake refuses no client certificate, so that a
// missing, expired or foreign one is answered 401 by the Handler, which
// observes it.
func ServerTLSConfig(cert tls.Certificate, clientCAs *x509.CertPool) *tls.Config {
	c := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{"http/1.1"},
	}
	if clientCAs != nil {
		c.ClientCAs = clientCAs // named in the certificate request
		c.ClientAuth = tls.RequestClientCert
	}
	return c
}

// ClientTLSConfig returns a sender's TLS configuration: TLS 1.2 at least,
// the server verified against roots (the system's when nil), and cert as
// the client certificate for [MutualTLS] when not nil.
func ClientTLSConfig(roots *x509.CertPool, cert *tls.Certificate) *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots, NextProtos: []string{"http/1.1"}}
	if cert != nil {
		c.Certificates = []tls.Certificate{*cert}
	}
	return c
}
