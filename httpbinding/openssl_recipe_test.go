package httpbinding_test

import (
	"crypto/tls"
	"crypto/x509"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
)

// opensslVesselRecipe is README.md's recipe for a vessel's client
// certificate (its deployment note on TLS), line for line:
// TestOpenSSLVesselRecipeInREADME keeps the two the same.
const opensslVesselRecipe = `
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
    -keyout ca.key -out ca.pem -subj "/CN=fleet CA"
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout vessel.key -out vessel.csr -subj "/CN=$VESSEL"
printf 'subjectAltName=URI:urn:uuid:%s\nextendedKeyUsage=clientAuth\n' "$VESSEL" > vessel.ext
openssl x509 -req -in vessel.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 825 \
    -extfile vessel.ext -out vessel.pem
`

// The recipe is README.md's, line for line.
func TestOpenSSLVesselRecipeInREADME(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	var lines []string
	for _, l := range strings.Split(string(readme), "\n") {
		lines = append(lines, strings.TrimSpace(l))
	}
	for _, l := range strings.Split(strings.TrimSpace(opensslVesselRecipe), "\n") {
		assert.Contains(t, lines, strings.TrimSpace(l), "README.md's recipe for a vessel's certificate lacks a line")
	}
}

// The README's openssl recipe makes a certificate MutualTLS takes as the
// vessel's; without its client-auth usage, the same recipe's certificate
// is refused, so the test sees the line that matters.
func TestOpenSSLVesselRecipe(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("openssl is not installed")
		}
		t.Skip("openssl is not installed")
	}
	for _, tc := range []struct {
		name   string
		recipe string
		reason string // "": accepted
	}{
		{"the recipe", opensslVesselRecipe, ""},
		{"no client-auth usage", strings.Replace(opensslVesselRecipe, `\nextendedKeyUsage=clientAuth`, ``, 1), httpbinding.ReasonNotForClientAuth},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command("sh", "-e", "-c", tc.recipe)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "VESSEL="+vesselA.String())
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)

			caPEM, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
			require.NoError(t, err)
			pool := x509.NewCertPool()
			require.True(t, pool.AppendCertsFromPEM(caPEM))
			cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "vessel.pem"), filepath.Join(dir, "vessel.key"))
			require.NoError(t, err)
			leaf, err := x509.ParseCertificate(cert.Certificate[0])
			require.NoError(t, err)

			r := httptest.NewRequest("POST", "https://shore.example/v2/messages", nil)
			r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}}
			origin, err := httpbinding.MutualTLS{ClientCAs: pool}.Authenticate(r)
			if tc.reason == "" {
				require.NoError(t, err)
				assert.Equal(t, vesselA, origin.VesselID)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tc.reason, httpbinding.RefusalReason(err))
		})
	}
}
