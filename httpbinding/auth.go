package httpbinding

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
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

// MutualTLS authenticates a request by its client certificate: the vessel
// id is the certificate's one URI SAN of the form urn:uuid:<uuid>, the UUID
// in canonical lowercase form (SPEC.md §2.1). Only a chain crypto/tls
// verified against the operator's client CAs counts
// (r.TLS.VerifiedChains; see [ServerTLSConfig]): a request without one is
// ErrNoCredentials, a verified leaf with no such SAN, several, or a nil
// UUID is ErrBadCredentials.
type MutualTLS struct{}

var _ Authenticator = MutualTLS{}

// Authenticate implements Authenticator.
func (MutualTLS) Authenticate(r *http.Request) (finalize.Origin, error) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return finalize.Origin{}, ErrNoCredentials
	}
	id, err := VesselOfCertificate(r.TLS.VerifiedChains[0][0])
	if err != nil {
		return finalize.Origin{}, err
	}
	return finalize.Origin{VesselID: id}, nil
}

// VesselOfCertificate returns the vessel id a client certificate names: its
// one URI SAN urn:uuid:<uuid> (the namespace "uuid" in any case, RFC
// 8141; the UUID in canonical lowercase form). It does not verify the
// certificate. Errors wrap ErrBadCredentials.
func VesselOfCertificate(cert *x509.Certificate) (uuid.UUID, error) {
	var found []string
	for _, u := range cert.URIs {
		if u.Scheme == "urn" && strings.HasPrefix(strings.ToLower(u.Opaque), "uuid:") {
			found = append(found, u.Opaque[len("uuid:"):])
		}
	}
	if len(found) != 1 {
		return uuid.Nil, badCredentials("the certificate must carry exactly one urn:uuid: URI SAN")
	}
	id, err := envelope.ParseUUID(found[0])
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
// not nil — client certificates verified against clientCAs
// (tls.VerifyClientCertIfGiven) for [MutualTLS].
//
// A client that presents no certificate completes the handshake and is
// answered 401 by the Handler; a client whose certificate fails
// verification (expired, of another CA, not for client authentication) is
// refused in the handshake with a TLS alert and never reaches HTTP. An
// operator who wants the handshake to refuse a missing certificate too may
// set ClientAuth to tls.RequireAndVerifyClientCert on the result.
func ServerTLSConfig(cert tls.Certificate, clientCAs *x509.CertPool) *tls.Config {
	c := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{"http/1.1"},
	}
	if clientCAs != nil {
		c.ClientCAs = clientCAs
		c.ClientAuth = tls.VerifyClientCertIfGiven
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
