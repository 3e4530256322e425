package httpbinding_test

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/internal/testpki"
)

// A refused client certificate is answered 401 with why in the plain text
// body — one fixed phrase describing the certificate, never the
// verifier's message, which names the server's authorities — and the
// Observer still gets the whole cause (SPEC.md §11.2).
func TestRefusedCertificateSaysWhy(t *testing.T) {
	r := startRig(t, rigConfig{})
	other := newCA(t, "another CA")
	offer := func(c tls.Certificate) *tls.Config { // offered whatever CAs the server names, as curl does
		tc := r.tlsFor(nil)
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &c, nil }
		return tc
	}
	issue := func(tmpl *x509.Certificate) *tls.Config { return offer(must(t)(r.ca.Issue(tmpl))) }
	vesselURI := []*url.URL{testpki.VesselURI(vesselA)}
	cases := []struct {
		name   string
		tls    *tls.Config
		reason string
	}{
		{"no certificate", r.tlsFor(nil), httpbinding.ReasonNoCertificate},
		{"no client-authentication usage", offer(r.ca.server(t)), httpbinding.ReasonNotForClientAuth},
		{"no extended key usage", issue(&x509.Certificate{Subject: pkix.Name{CommonName: "vessel"}, URIs: vesselURI}), httpbinding.ReasonNotForClientAuth},
		{"expired", offer(r.ca.expiredVessel(t, vesselA)), httpbinding.ReasonExpired},
		{"not yet valid", issue(&x509.Certificate{
			Subject: pkix.Name{CommonName: "vessel"}, URIs: vesselURI, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			NotBefore: time.Now().Add(time.Hour), NotAfter: time.Now().Add(48 * time.Hour),
		}), httpbinding.ReasonExpired},
		{"another CA", offer(other.vessel(t, vesselA)), httpbinding.ReasonUntrustedIssuer},
		{"no URI SAN", offer(r.ca.clientWith(t)), httpbinding.ReasonNoVessel},
		{"two URI SANs", offer(r.ca.clientWith(t, testpki.VesselURI(vesselA), testpki.VesselURI(vesselB))), httpbinding.ReasonNoVessel},
		{"uppercase UUID", offer(r.ca.clientWith(t, &url.URL{Scheme: "urn", Opaque: "uuid:" + strings.ToUpper(vesselA.String())})), httpbinding.ReasonNoVessel},
	}
	entry := commitCycle(t, vesselA, uuid.Nil, "nav", 1).entries[0]
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tc.tls}}
			defer hc.CloseIdleConnections()
			req, err := http.NewRequest(http.MethodPost, r.url, strings.NewReader(string(wrap(entry))))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			resp, err := hc.Do(req)
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
			require.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
			require.Equal(t, "Unauthorized: "+tc.reason+"\n", string(body))
			ev := r.events.of(httpbinding.EventMessage)
			last := ev[len(ev)-1].Err
			require.Equal(t, tc.reason, httpbinding.RefusalReason(last))
			require.NotContains(t, string(body), "operator CA", "the answer names none of the server's authorities")
		})
	}
	require.Empty(t, httpbinding.RefusalReason(nil))
	require.Empty(t, httpbinding.RefusalReason(httpbinding.ErrBadCredentials), "a token's refusal says nothing")
}
