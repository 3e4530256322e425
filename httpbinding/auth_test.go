package httpbinding_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/internal/testpki"
)

var (
	vesselA = uuid.MustParse("0d1f3c5e-2a4b-4c6d-8e0f-1a2b3c4d5e6f")
	vesselB = uuid.MustParse("5b0c7f6e-2d1a-4c3b-9e8f-0a1b2c3d4e5f")
)

// A vessel's credentials cannot stage, finalize or read another vessel's
// data: a message naming B sent with A's certificate is refused 403
// foreign_vessel and stages nothing for B, and completing B's snapshot
// with A's credentials does not finalize it.
func TestMutualTLSCannotActForAnotherVessel(t *testing.T) {
	ctx := context.Background()
	r := startRig(t, rigConfig{})
	certA, certB := r.ca.vessel(t, vesselA), r.ca.vessel(t, vesselB)
	asA, asB := r.client(t, &certA), r.client(t, &certB)
	b := commitCycle(t, vesselB, uuid.Nil, "nav", 60) // manifest and 2 chunks
	require.Len(t, b.entries, 3)

	// Nothing of B's is staged by A.
	_, err := asA.Send(ctx, b.entries[0])
	requireRefused(t, err, sourcecatalog.ErrForeignVessel, "vessel_id")
	u, err := r.recv.Usage(ctx, vesselB)
	require.NoError(t, err)
	assert.Zero(t, u.IncompleteSnapshots.Used+u.RetainedSnapshots.Used, "nothing staged for B")

	// B stages all but its last chunk; A's copy of the last one is refused
	// and the snapshot is not finalized.
	for _, e := range b.entries[:2] {
		rc, err := asB.Send(ctx, e)
		require.NoError(t, err)
		assert.False(t, rc.Complete)
	}
	_, err = asA.Send(ctx, b.entries[2])
	requireRefused(t, err, sourcecatalog.ErrForeignVessel, "vessel_id")
	out, err := r.recv.Finalize(ctx, vesselB, b.snapID)
	require.NoError(t, err)
	assert.Equal(t, finalize.Staging, out.Status)
	assert.Equal(t, []int{1}, out.MissingChunks)
	assert.Empty(t, r.events.of(httpbinding.EventFinalize), "A's request finalized nothing")

	// The binding has no way to read a vessel's data: a GET is the
	// receiver's capability declaration (SPEC.md §11.7) and says nothing
	// of any vessel; another method is 405.
	a := r.post(t, &certA, http.MethodGet, nil, nil)
	assert.Equal(t, http.StatusOK, a.status)
	assert.Equal(t, `{"capabilities":["request_gzip"],"protocols":["yachtmemory.source-catalog.v2"]}`, string(a.body))
	a = r.post(t, &certA, http.MethodPut, nil, nil)
	assert.Equal(t, http.StatusMethodNotAllowed, a.status)
	assert.Equal(t, "GET, POST", a.header.Get("Allow"))
	assert.NotContains(t, string(a.body), vesselB.String())
}

// requireRefused checks that err is the refusal of class at field.
func requireRefused(t *testing.T, err error, class error, field string) {
	t.Helper()
	require.ErrorIs(t, err, class)
	require.Equal(t, class, sourcecatalog.Class(err), "exactly one class: %v", err)
	var e *sourcecatalog.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, field, e.Field, "%v", err)
}

// Missing, expired and wrong-CA certificates, and certificates that name
// no vessel or several, are answered 401 by the Handler, which observes
// each refusal; nothing is staged and the sender gets ErrUnauthorized.
func TestMutualTLSCredentials(t *testing.T) {
	r := startRig(t, rigConfig{})
	other := newCA(t, "another CA")
	twoSANs := r.ca.clientWith(t, &url.URL{Scheme: "urn", Opaque: "uuid:" + vesselA.String()}, &url.URL{Scheme: "urn", Opaque: "uuid:" + vesselB.String()})
	cases := []struct {
		name string
		cert func() *tls.Certificate
	}{
		{"missing", func() *tls.Certificate { return nil }},
		{"no urn:uuid SAN", func() *tls.Certificate { c := r.ca.clientWith(t); return &c }},
		{"two urn:uuid SANs", func() *tls.Certificate { return &twoSANs }},
		// Exactly one URI SAN, whatever the others' schemes.
		{"urn:uuid and an https SAN", func() *tls.Certificate {
			c := r.ca.clientWith(t, testpki.VesselURI(vesselA), &url.URL{Scheme: "https", Host: "boat.example", Path: "/"})
			return &c
		}},
		{"a spiffe SAN then urn:uuid", func() *tls.Certificate {
			c := r.ca.clientWith(t, &url.URL{Scheme: "spiffe", Host: "fleet.example", Path: "/boat"}, testpki.VesselURI(vesselA))
			return &c
		}},
		{"an https SAN only", func() *tls.Certificate {
			c := r.ca.clientWith(t, &url.URL{Scheme: "https", Host: "boat.example", Path: "/"})
			return &c
		}},
		{"urn:uuid with a query", func() *tls.Certificate {
			c := r.ca.clientWith(t, &url.URL{Scheme: "urn", Opaque: "uuid:" + vesselA.String(), RawQuery: "x=1"})
			return &c
		}},
		{"urn:uuid with a fragment", func() *tls.Certificate {
			c := r.ca.clientWith(t, &url.URL{Scheme: "urn", Opaque: "uuid:" + vesselA.String(), Fragment: "f"})
			return &c
		}},
		{"uppercase UUID", func() *tls.Certificate {
			c := r.ca.clientWith(t, &url.URL{Scheme: "urn", Opaque: "uuid:" + strings.ToUpper(vesselA.String())})
			return &c
		}},
		{"expired", func() *tls.Certificate { c := r.ca.expiredVessel(t, vesselA); return &c }},
		// crypto/tls offers only a certificate of a CA the server names.
		{"another CA, withheld by the client", func() *tls.Certificate { c := other.vessel(t, vesselA); return &c }},
		{"server certificate as client", func() *tls.Certificate { c := r.ca.server(t); return &c }},
		// x509 takes a certificate without extended key usage for any use.
		{"no extended key usage", func() *tls.Certificate {
			c := must(t)(r.ca.Issue(&x509.Certificate{Subject: pkix.Name{CommonName: "vessel"}, URIs: []*url.URL{testpki.VesselURI(vesselA)}}))
			return &c
		}},
	}
	entry := commitCycle(t, vesselA, uuid.Nil, "nav", 1).entries[0]
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(r.events.of(httpbinding.EventMessage))
			_, err := r.client(t, tc.cert()).Send(context.Background(), entry)
			checkCredentialRefusal(t, r, err, before)
		})
	}
	// A client that offers its certificate whatever CAs the server names,
	// as curl does.
	t.Run("another CA, offered anyway", func(t *testing.T) {
		before := len(r.events.of(httpbinding.EventMessage))
		cert := other.vessel(t, vesselA)
		tc := r.tlsFor(nil)
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
		c, err := httpbinding.NewClient(r.url, httpbinding.WithTLSConfig(tc), httpbinding.WithTimeout(10*time.Second))
		require.NoError(t, err)
		_, err = c.Send(context.Background(), entry)
		checkCredentialRefusal(t, r, err, before)
	})
	// Without client CAs, MutualTLS trusts no certificate.
	noCAs := httptest.NewRequest(http.MethodPost, "https://receiver/", nil)
	good := r.ca.vessel(t, vesselA)
	noCAs.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{good.Leaf}}
	_, err := httpbinding.MutualTLS{}.Authenticate(noCAs)
	require.ErrorIs(t, err, httpbinding.ErrBadCredentials)
	o, err := httpbinding.MutualTLS{ClientCAs: r.ca.pool}.Authenticate(noCAs)
	require.NoError(t, err, "the same certificate with the client CAs")
	require.Equal(t, vesselA, o.VesselID)
}

// checkCredentialRefusal checks that err is a refusal of credentials: a
// 401 the Handler observed; and that nothing was staged.
func checkCredentialRefusal(t *testing.T, r *rig, err error, before int) {
	t.Helper()
	require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable)
	require.ErrorIs(t, err, httpbinding.ErrUnauthorized)
	ev := r.events.of(httpbinding.EventMessage)
	require.Len(t, ev, before+1)
	assert.Equal(t, httpbinding.OutcomeUnauthenticated, ev[before].Outcome)
	u, err := r.recv.Usage(context.Background(), vesselA)
	require.NoError(t, err)
	assert.Zero(t, u.IncompleteSnapshots.Used, "nothing staged")
}

// Bearer tokens: missing, malformed and unknown tokens are 401 with an RFC
// 6750 challenge; a known token authenticates its vessel only.
func TestBearerTokens(t *testing.T) {
	const tokenA, tokenB = "token-of-vessel-a", "token-of-vessel-b"
	tokens, err := httpbinding.ParseTokens(strings.NewReader(httpbinding.TokenHash(tokenA, vesselA) + "\n" + httpbinding.TokenHash(tokenB, vesselB) + "\n"))
	require.NoError(t, err)
	r := startRig(t, rigConfig{auth: func(*testCA) httpbinding.Authenticator { return tokens }})
	a := commitCycle(t, vesselA, uuid.Nil, "nav", 1).entries[0]
	cases := []struct {
		name      string
		header    string
		status    int
		challenge string
	}{
		{"missing", "", http.StatusUnauthorized, `Bearer realm="sourcecatalog"`},
		{"unknown", "Bearer not-a-token", http.StatusUnauthorized, `Bearer realm="sourcecatalog", error="invalid_token"`},
		{"the stored hash as token", "Bearer " + strings.Fields(httpbinding.TokenHash(tokenA, vesselA))[0], http.StatusUnauthorized, `Bearer realm="sourcecatalog", error="invalid_token"`},
		{"basic", "Basic dXNlcjpwYXNz", http.StatusUnauthorized, `Bearer realm="sourcecatalog", error="invalid_token"`},
		{"not b64token", "Bearer token with spaces", http.StatusUnauthorized, `Bearer realm="sourcecatalog", error="invalid_token"`},
		{"token of B for A's message", "Bearer " + tokenB, http.StatusForbidden, ""},
		{"token of A", "bearer " + tokenA, http.StatusOK, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ans := r.post(t, nil, http.MethodPost, map[string]string{"Authorization": tc.header}, wrap(a))
			require.Equal(t, tc.status, ans.status, "%s", ans.body)
			assert.Equal(t, tc.challenge, ans.header.Get("WWW-Authenticate"))
			if tc.status == http.StatusForbidden {
				assert.Equal(t, sourcecatalog.ErrForeignVessel, ans.refusal(t).Class)
			}
		})
	}
	// The Client sends the token.
	rc, err := r.client(t, nil, httpbinding.WithBearerToken(tokenA)).Send(context.Background(), a)
	require.NoError(t, err)
	assert.Equal(t, envelope.AlreadyReceived, rc.Status)
	_, err = r.client(t, nil, httpbinding.WithBearerToken("wrong")).Send(context.Background(), a)
	require.ErrorIs(t, err, httpbinding.ErrUnauthorized)
}

// A bearer token sent without TLS is refused, even a known one.
func TestBearerTokenNeedsTLS(t *testing.T) {
	tokens, err := httpbinding.ParseTokens(strings.NewReader(httpbinding.TokenHash("tok", vesselA)))
	require.NoError(t, err)
	req := httptest.NewRequest(http.MethodPost, "http://receiver/", nil)
	req.Header.Set("Authorization", "Bearer tok")
	_, err = tokens.Authenticate(req)
	require.ErrorIs(t, err, httpbinding.ErrBadCredentials)
	req.TLS = &tls.ConnectionState{}
	o, err := tokens.Authenticate(req)
	require.NoError(t, err)
	assert.Equal(t, vesselA, o.VesselID)
}

// MutualTLS verifies every certificate itself: whatever the server's TLS
// configuration asks of the handshake, a certificate of another CA is 401.
func TestMutualTLSVerifiesItself(t *testing.T) {
	unverified := tls.RequireAnyClientCert
	r := startRig(t, rigConfig{clientAuth: &unverified})
	other := newCA(t, "another CA").vessel(t, vesselA)
	tc := r.tlsFor(nil)
	tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &other, nil }
	c, err := httpbinding.NewClient(r.url, httpbinding.WithTLSConfig(tc), httpbinding.WithTimeout(10*time.Second))
	require.NoError(t, err)
	defer c.CloseIdleConnections()
	_, err = c.Send(context.Background(), commitCycle(t, vesselA, uuid.Nil, "nav", 1).entries[0])
	require.ErrorIs(t, err, httpbinding.ErrUnauthorized)
}

// On a connection without TLS an Authorization header is 401 whatever
// the Authenticator — InsecureNoAuth, which would take the request for
// its vessel, included: a credential sent in clear is taken as leaked,
// and the request stages nothing (SPEC.md §11.2). Without one,
// InsecureNoAuth serves.
func TestCredentialsInClearAreRefused(t *testing.T) {
	tokens, err := httpbinding.ParseTokens(strings.NewReader(httpbinding.TokenHash("tok", vesselA)))
	require.NoError(t, err)
	auths := []struct {
		name string
		auth httpbinding.Authenticator
	}{
		{"InsecureNoAuth", httpbinding.InsecureNoAuth(vesselA)},
		{"Tokens", tokens},
		{"MutualTLS", httpbinding.MutualTLS{ClientCAs: newCA(t, "operator CA").pool}},
	}
	headers := [][]string{{"Bearer tok"}, {"Bearer unknown"}, {"Basic dXNlcjpwYXNz"}, {"Bearer tok", "Bearer tok"}, nil}
	for _, a := range auths {
		t.Run(a.name, func(t *testing.T) {
			events := &eventLog{}
			store := memstore.New()
			recv := finalize.NewReceiver(store)
			h := httpbinding.NewHandler(recv, a.auth, httpbinding.WithObserver(events.observe))
			srv := httptest.NewServer(h)
			defer srv.Close()
			e := commitCycle(t, vesselA, uuid.Nil, "nav", 1).entries[0]
			for _, values := range headers {
				req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(string(wrap(e))))
				require.NoError(t, err)
				req.Header.Set("Content-Type", "application/json")
				for _, v := range values {
					req.Header.Add("Authorization", v)
				}
				resp, err := srv.Client().Do(req)
				require.NoError(t, err)
				resp.Body.Close()
				ev := events.of(httpbinding.EventMessage)
				last := ev[len(ev)-1]
				if values == nil {
					want := map[string]int{"InsecureNoAuth": http.StatusOK}[a.name]
					if want == 0 {
						want = http.StatusUnauthorized
					}
					assert.Equal(t, want, resp.StatusCode, "no Authorization")
					continue
				}
				assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%q", values)
				assert.Equal(t, `Bearer realm="sourcecatalog", error="invalid_token"`, resp.Header.Get("WWW-Authenticate"))
				assert.Equal(t, httpbinding.OutcomeUnauthenticated, last.Outcome)
				assert.ErrorIs(t, last.Err, httpbinding.ErrBadCredentials)
				assert.Contains(t, last.Err.Error(), "without TLS")
			}
			u, err := recv.Usage(context.Background(), vesselA)
			require.NoError(t, err)
			staged := map[string]int64{"InsecureNoAuth": 1}[a.name]
			assert.Equal(t, staged, u.IncompleteSnapshots.Used, "only the request without credentials staged")
		})
	}
}
