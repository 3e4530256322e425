package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/httpbinding/inventory"
)

// The trusted-proxy flags go together, exclude the other schemes, and
// over plain HTTP need a loopback or private listener.
func TestServeTrustedProxyUsage(t *testing.T) {
	base := []string{"--store", "memory", "--retain", "all"}
	proxy := []string{"--trusted-proxy", "127.0.0.1", "--trusted-proxy-header", "X-Vessel-Identity"}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no header", []string{"--listen", "127.0.0.1:0", "--trusted-proxy", "127.0.0.1"}, "--trusted-proxy CIDR[,CIDR] and --trusted-proxy-header NAME go together"},
		{"no proxy", []string{"--listen", "127.0.0.1:0", "--trusted-proxy-header", "X-Vessel"}, "--trusted-proxy CIDR[,CIDR] and --trusted-proxy-header NAME go together"},
		{"a secret alone", []string{"--listen", "127.0.0.1:0", "--trusted-proxy-secret-file", "s"}, "--trusted-proxy CIDR[,CIDR] and --trusted-proxy-header NAME go together"},
		{"with tokens", append([]string{"--listen", "127.0.0.1:0", "--tokens", "t"}, proxy...), "--trusted-proxy authenticates by the proxy's header: --client-ca, --tokens and --insecure-no-auth do not go with it"},
		{"with insecure", append([]string{"--listen", "127.0.0.1:0", "--insecure-no-auth", vesselFlag}, proxy...), "--trusted-proxy authenticates by the proxy's header"},
		{"a certificate without its key", append([]string{"--listen", "127.0.0.1:0", "--tls-cert", "c"}, proxy...), "--tls-cert FILE and --tls-key FILE go together"},
		{"plain HTTP on every address", append([]string{"--listen", ":8080"}, proxy...), "--trusted-proxy over plain HTTP needs --listen on a loopback or private address"},
		{"plain HTTP on a public address", append([]string{"--listen", "192.0.2.1:8080"}, proxy...), "--trusted-proxy over plain HTTP needs --listen on a loopback or private address"},
		{"a name", []string{"--listen", "127.0.0.1:0", "--trusted-proxy", "proxy.local", "--trusted-proxy-header", "X-V"}, `--trusted-proxy "proxy.local" is not an address or a prefix`},
		{"every address", []string{"--listen", "127.0.0.1:0", "--trusted-proxy", "0.0.0.0/0", "--trusted-proxy-header", "X-V"}, "--trusted-proxy: sourcecatalog: invalid value: httpbinding: trusted proxy: proxy prefix 0.0.0.0/0 trusts every address"},
		{"host bits", []string{"--listen", "127.0.0.1:0", "--trusted-proxy", "10.0.0.1/8", "--trusted-proxy-header", "X-V"}, "--trusted-proxy: sourcecatalog: invalid value: httpbinding: trusted proxy: proxy prefix 10.0.0.1/8 has host bits set"},
		{"Authorization as the header", []string{"--listen", "127.0.0.1:0", "--trusted-proxy", "127.0.0.1", "--trusted-proxy-header", "Authorization"}, "--trusted-proxy: sourcecatalog: invalid value: httpbinding: trusted proxy: the identity header must not be Authorization"},
		{"a private proxy without a secret", []string{"--listen", "10.0.0.5:8080", "--trusted-proxy", "10.0.0.0/24", "--trusted-proxy-header", "X-V"}, "--trusted-proxy on addresses that are not loopback needs --trusted-proxy-secret-file FILE"},
		{"loopback and a private proxy without a secret", []string{"--listen", "127.0.0.1:0", "--trusted-proxy", "127.0.0.1,fd00::/64", "--trusted-proxy-header", "X-V"}, "--trusted-proxy on addresses that are not loopback needs --trusted-proxy-secret-file FILE"},
		{"twice", append([]string{"--listen", "127.0.0.1:0", "--trusted-proxy", "10.0.0.0/8"}, proxy...), "--trusted-proxy given more than once"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			_, status, ok := parseServe(&env{stdout: &stdout, stderr: &stderr}, serveCommand, append(append([]string{}, base...), tc.args...))
			require.False(t, ok, "serve would start")
			assert.Equal(t, exitUsage, status)
			assert.True(t, strings.HasPrefix(stderr.String(), "sourcecatalog serve: "+tc.want), "stderr:\n%s", stderr.String())
		})
	}
	for _, ok := range [][]string{
		append([]string{"--listen", "127.0.0.1:0"}, proxy...),
		{"--listen", "10.0.0.5:8080", "--trusted-proxy", "10.0.0.0/24,fd00::/64", "--trusted-proxy-header", "X-V", "--trusted-proxy-secret-file", "s"},
		append([]string{"--listen", ":8443", "--tls-cert", "c", "--tls-key", "k"}, proxy...),
	} {
		var stderr bytes.Buffer
		_, _, parsed := parseServe(&env{stdout: io.Discard, stderr: &stderr}, serveCommand, append(append([]string{}, base...), ok...))
		assert.True(t, parsed, "%q: %s", ok, stderr.String())
	}
}

// serve --trusted-proxy over plain HTTP takes the vessel from the header
// on connections from the proxy's address with its secret only; from
// anyone else, without the secret, or with an Authorization header in
// clear, it is 401 and stages nothing (SPEC.md §11.2).
func TestServeTrustedProxy(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "proxy-secret")
	const secretText = "the-proxy-secret-0123456789"
	require.NoError(t, os.WriteFile(secret, []byte(secretText+"\n"), 0o600))
	_, bodies := serveSnapshot(t, 1)
	s := startServe(t, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--store", "memory", "--retain", "all",
		"--trusted-proxy", "127.0.0.2", "--trusted-proxy-header", "X-Vessel-Identity", "--trusted-proxy-secret-file", secret)
	listen, _ := s.log.addrs(t)
	s.log.wait(t, "listening", map[string]any{"auth": "trusted_proxy", "tls": false})
	identity := "urn:uuid:" + vesselFlag
	post := func(from string, header map[string]string) *http.Response {
		t.Helper()
		dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: dialer.DialContext}}
		defer hc.CloseIdleConnections()
		req, err := http.NewRequest(http.MethodPost, "http://"+listen+"/", bytes.NewReader(bodies[0]))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := hc.Do(req)
		require.NoError(t, err)
		return resp
	}
	for _, tc := range []struct {
		name   string
		from   string
		header map[string]string
	}{
		{"not from the proxy", "127.0.0.1", map[string]string{"X-Vessel-Identity": identity, httpbinding.DefaultProxySecretHeader: secretText}},
		{"without the secret", "127.0.0.2", map[string]string{"X-Vessel-Identity": identity}},
		{"a wrong secret", "127.0.0.2", map[string]string{"X-Vessel-Identity": identity, httpbinding.DefaultProxySecretHeader: secretText + "x"}},
		{"a bare UUID", "127.0.0.2", map[string]string{"X-Vessel-Identity": vesselFlag, httpbinding.DefaultProxySecretHeader: secretText}},
		{"an Authorization header in clear", "127.0.0.2", map[string]string{"X-Vessel-Identity": identity, httpbinding.DefaultProxySecretHeader: secretText, "Authorization": "Bearer tok"}},
	} {
		resp := post(tc.from, tc.header)
		resp.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, tc.name)
	}
	rc := receiptOf(t, post("127.0.0.2", map[string]string{"X-Vessel-Identity": identity, httpbinding.DefaultProxySecretHeader: secretText}))
	assert.Equal(t, envelope.Staged, rc.Status, "the proxy's request, and nothing before it, staged the manifest")
	assert.Equal(t, vesselFlag, rc.VesselID.String())
	assert.NotContains(t, s.log.String(), secretText, "the log never holds the secret")
}

// serve's admin listener serves the inventory of the vessels it
// activated, and 404 for a vessel it does not know.
func TestServeInventory(t *testing.T) {
	s := startServe(t, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--store", "memory", "--retain", "all", "--insecure-no-auth", vesselFlag)
	listen, admin := s.log.addrs(t)
	snap, bodies := serveSnapshot(t, 1)
	for _, b := range bodies {
		resp, err := http.Post("http://"+listen+"/", "application/json", bytes.NewReader(b))
		require.NoError(t, err)
		receiptOf(t, resp)
	}
	status, body := serveGet(t, "http://"+admin+"/vessels/"+vesselFlag+"/inventory?limit=5")
	require.Equal(t, http.StatusOK, status, body)
	var page inventory.Page
	require.NoError(t, json.Unmarshal([]byte(body), &page))
	assert.Equal(t, snap.Manifest.SnapshotID, page.SnapshotID)
	assert.Equal(t, snap.Manifest.RecordCount, page.ItemCount)
	assert.Len(t, page.Items, 5)
	assert.NotEmpty(t, page.NextCursor)
	status, _ = serveGet(t, "http://"+admin+"/vessels/"+vesselFlag+"/history")
	assert.Equal(t, http.StatusOK, status)
	status, _ = serveGet(t, "http://"+admin+"/vessels/"+uuid.New().String()+"/inventory")
	assert.Equal(t, http.StatusNotFound, status)
	status, body = serveGet(t, "http://"+admin+"/healthz")
	assert.Equal(t, http.StatusOK, status, "the admin listener's own paths still answer")
	assert.Equal(t, "ok\n", body)
}
