package httpbinding

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
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
// request without a certificate is an error wrapping ErrNoCredentials; a certificate that
// does not verify — expired, of another CA, whose extended key usage does
// not name client authentication (none at all included, though x509 would
// take that for any use), or any certificate when ClientCAs is nil — or
// that does not name one vessel ([VesselOfCertificate]) is an error
// wrapping ErrBadCredentials. Each error has a [RefusalReason], which the
// Handler's 401 answer says.
type MutualTLS struct {
	ClientCAs *x509.CertPool // the authorities client certificates must chain to
}

var _ Authenticator = MutualTLS{}

// Authenticate implements Authenticator.
func (m MutualTLS) Authenticate(r *http.Request) (finalize.Origin, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return finalize.Origin{}, errNoCertificate
	}
	if m.ClientCAs == nil {
		return finalize.Origin{}, refusedCertificate(ReasonUntrustedIssuer, "no client certificate authority is configured")
	}
	leaf := r.TLS.PeerCertificates[0]
	if !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
		return finalize.Origin{}, refusedCertificate(ReasonNotForClientAuth, "the client certificate's extended key usage does not name client authentication")
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
		return finalize.Origin{}, refusedCertificate(verifyReason(err), "the client certificate does not verify: "+err.Error())
	}
	id, err := VesselOfCertificate(leaf)
	if err != nil {
		return finalize.Origin{}, err
	}
	return finalize.Origin{VesselID: id}, nil
}

// Why a client certificate was refused, as a 401 answer's body says it
// (SPEC.md §11.2): fixed phrases that describe the certificate presented,
// never the server's configuration or a verifier's message.
const (
	ReasonNotForClientAuth = "the client certificate's extended key usage does not name client authentication"
	ReasonExpired          = "the client certificate has expired or is not yet valid"
	ReasonUntrustedIssuer  = "the client certificate is not issued by an authority the receiver trusts"
	ReasonNoVessel         = "the client certificate does not name one vessel: it must carry exactly one URI SAN, urn:uuid:<vessel>"
	ReasonDoesNotVerify    = "the client certificate does not verify"
	// ReasonNoCertificate: most often a client holding a certificate of
	// another authority, which TLS clients offer only to a server naming
	// its issuer.
	ReasonNoCertificate = "no client certificate was presented (a client offers one only when its issuer is an authority the receiver names)"
)

// errNoCertificate is MutualTLS's ErrNoCredentials.
var errNoCertificate error = &credentialError{why: "no client certificate", public: ReasonNoCertificate, class: ErrNoCredentials}

// verifyReason returns the Reason of a failed x509 verification.
func verifyReason(err error) string {
	var invalid x509.CertificateInvalidError
	var unknown x509.UnknownAuthorityError
	switch {
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return ReasonExpired
	case errors.As(err, &invalid) && invalid.Reason == x509.IncompatibleUsage:
		return ReasonNotForClientAuth
	case errors.As(err, &unknown):
		return ReasonUntrustedIssuer
	}
	return ReasonDoesNotVerify
}

// RefusalReason returns what a 401 answer may say of why err refused the
// credentials: one of the Reason constants for a refused or missing
// client certificate, "" for anything else. An Authenticator of its own reports
// a reason by wrapping an error of MutualTLS or VesselOfCertificate.
func RefusalReason(err error) string {
	var c *credentialError
	if errors.As(err, &c) {
		return c.public
	}
	return ""
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
		return uuid.Nil, refusedCertificate(ReasonNoVessel, "the certificate must carry exactly one urn:uuid: URI SAN and no other URI SAN")
	}
	u := cert.URIs[0]
	if u.Scheme != "urn" || !strings.HasPrefix(strings.ToLower(u.Opaque), "uuid:") {
		return uuid.Nil, refusedCertificate(ReasonNoVessel, "the certificate's URI SAN is not urn:uuid:<vessel>")
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.RawFragment != "" {
		return uuid.Nil, refusedCertificate(ReasonNoVessel, "the certificate's urn:uuid: SAN has a query or a fragment")
	}
	id, err := envelope.ParseUUID(u.Opaque[len("uuid:"):])
	if err != nil {
		return uuid.Nil, refusedCertificate(ReasonNoVessel, "the certificate's urn:uuid: SAN is not a canonical lowercase UUID")
	}
	return id, nil
}

func badCredentials(why string) error { return &credentialError{why: why} }

// refusedCertificate refuses a client certificate for the reason public,
// which the answer says, and why, which only the Observer gets.
func refusedCertificate(public, why string) error {
	return &credentialError{why: why, public: public}
}

// A credentialError says why credentials were refused; it wraps class,
// ErrBadCredentials when nil, and so sourcecatalog.ErrInvalidValue.
// public, when not "", is what the answer may say of it (RefusalReason).
type credentialError struct {
	why, public string
	class       error
}

func (e *credentialError) Error() string {
	if e.class == ErrNoCredentials {
		return "httpbinding: no credentials: " + e.why
	}
	return "httpbinding: credentials refused: " + e.why
}

func (e *credentialError) Unwrap() error {
	if e.class != nil {
		return e.class
	}
	return ErrBadCredentials
}

// ServerTLSConfig returns the server's TLS configuration: TLS 1.2 at
// least, HTTP/2 and HTTP/1.1 by ALPN, the server's certificate, and — when clientCAs is
// not nil — a request for a client certificate of those authorities
// (tls.RequestClientCert), which [MutualTLS] with the same clientCAs
// verifies. The handshake refuses no client certificate, so that a
// missing, expired or foreign one is answered 401 by the Handler, which
// observes it.
func ServerTLSConfig(cert tls.Certificate, clientCAs *x509.CertPool) *tls.Config {
	c := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{"h2", "http/1.1"},
	}
	if clientCAs != nil {
		c.ClientCAs = clientCAs // named in the certificate request
		c.ClientAuth = tls.RequestClientCert
	}
	return c
}

// ClientTLSConfig returns a sender's TLS configuration: TLS 1.2 at least,
// the server verified against roots (the system's when nil), and cert as
// the client certificate for [MutualTLS] when not nil. It offers
// HTTP/1.1 only by ALPN, so that it fits any http.Transport; the Client's
// own transport offers HTTP/2 first (NewClient).
func ClientTLSConfig(roots *x509.CertPool, cert *tls.Certificate) *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots, NextProtos: []string{"http/1.1"}}
	if cert != nil {
		c.Certificates = []tls.Certificate{*cert}
	}
	return c
}
