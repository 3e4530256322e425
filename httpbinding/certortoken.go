package httpbinding

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/yachtmemory/sourcecatalog/finalize"
)

// CertOrToken returns an Authenticator that takes a request's client
// certificate (cert) or its bearer token (tokens), whichever it
// presents: a request presenting both is authenticated by both, which
// must name the same vessel, or it is refused with an error wrapping
// ErrBadCredentials. Its challenge is the bearer scheme's, with
// error="invalid_token" only when a token was presented (SPEC.md §11.2).
// It panics when tokens is nil, a misuse that would otherwise surface at
// the first request presenting a token.
func CertOrToken(cert MutualTLS, tokens *Tokens) Authenticator {
	if tokens == nil {
		panic("httpbinding: CertOrToken with nil tokens")
	}
	return certOrToken{cert, tokens}
}

type certOrToken struct {
	cert   MutualTLS
	tokens *Tokens
}

var _ Challenger = certOrToken{}

func (a certOrToken) Authenticate(r *http.Request) (finalize.Origin, error) {
	byCert, certErr := a.cert.Authenticate(r)
	if len(r.Header.Values("Authorization")) == 0 {
		return byCert, certErr
	}
	origin, err := a.withToken(r, byCert, certErr)
	if err != nil {
		return finalize.Origin{}, tokenPresented{err}
	}
	return origin, nil
}

// withToken authenticates a request that presents a bearer token, and
// whose certificate, if any, authenticated as byCert or failed with
// certErr.
func (a certOrToken) withToken(r *http.Request, byCert finalize.Origin, certErr error) (finalize.Origin, error) {
	byToken, err := a.tokens.Authenticate(r)
	switch {
	case err != nil:
		return finalize.Origin{}, err
	case errors.Is(certErr, ErrNoCredentials):
		return byToken, nil
	case certErr != nil:
		return finalize.Origin{}, certErr
	case byCert.VesselID != byToken.VesselID:
		return finalize.Origin{}, fmt.Errorf("the client certificate and the bearer token name different vessels: %w", ErrBadCredentials)
	}
	return byToken, nil
}

func (a certOrToken) Challenge(err error) string {
	if !errors.As(err, new(tokenPresented)) {
		err = ErrNoCredentials
	}
	return a.tokens.Challenge(err)
}

// tokenPresented marks the refusal of a request that presented a bearer
// token.
type tokenPresented struct{ error }

func (e tokenPresented) Unwrap() error { return e.error }
