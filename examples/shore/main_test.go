package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
)

// TestMain runs the command itself when the test re-executes its binary
// with SHORE_MAIN=1, so that the tests run shore as a process without
// building it.
func TestMain(m *testing.M) {
	if os.Getenv("SHORE_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const secret = "the-ingress-secret-0123456789"

// shore returns the command shore with args, its store in dir.
func shore(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-db", filepath.Join(t.TempDir(), "shore.db"),
		"-listen", "127.0.0.1:0", "-admin", "127.0.0.1:0", "-proxy", "127.0.0.1/32"}, args...)...)
	cmd.Env = append(os.Environ(), "SHORE_MAIN=1", "SHORE_PROXY_SECRET="+secret)
	return cmd
}

// Without -retain, shore exits 1 with the library's error and opens
// nothing.
func TestShoreRefusesWithoutRetention(t *testing.T) {
	cmd := shore(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	timer := time.AfterFunc(30*time.Second, func() { _ = cmd.Process.Kill() }) // it would serve
	defer timer.Stop()
	err := cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "stderr: %s", stderr.String())
	assert.Equal(t, 1, exit.ExitCode())
	assert.Contains(t, stderr.String(), `shore: sourcecatalog: field "Retention": invalid value: receiver: no retention: choose Keep(n)`)
	assert.NotContains(t, stderr.String(), "listening")
}

var listening = regexp.MustCompile(`listening route=(\S+) admin=(\S+)`)

// With -retain, shore answers /healthz and the ingress's GET of the
// message route with the declaration, and stops cleanly on SIGTERM.
func TestShoreServes(t *testing.T) {
	cmd := shore(t, "-retain", "8")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := bufio.NewScanner(stderr)
	var route, admin string
	for route == "" && lines.Scan() {
		if m := listening.FindStringSubmatch(lines.Text()); m != nil {
			route, admin = m[1], m[2]
		}
	}
	require.NotEmpty(t, route, "no listening line")
	go io.Copy(io.Discard, stderr)

	resp, err := http.Get("http://" + admin + "/healthz")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "ok\n", string(body))

	for _, tc := range []struct {
		name   string
		secret string
		want   int
	}{{"with the secret", secret, http.StatusOK}, {"without", "", http.StatusUnauthorized}} {
		req, err := http.NewRequest(http.MethodGet, "http://"+route+"/v2/messages", nil)
		require.NoError(t, err)
		req.Header.Set("X-Client-Cert-Uri", "urn:uuid:"+examples.VesselID.String())
		if tc.secret != "" {
			req.Header.Set(httpbinding.DefaultProxySecretHeader, tc.secret)
		}
		resp, err = http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, tc.want, resp.StatusCode, "%s: %s", tc.name, body)
		if tc.want == http.StatusOK {
			d, err := httpbinding.DecodeDeclaration(body)
			require.NoError(t, err)
			assert.True(t, d.V2() && d.Has(httpbinding.CapabilityChunkReference), "%s", body)
		}
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		assert.NoError(t, err, "a clean stop exits 0")
	case <-time.After(40 * time.Second):
		t.Fatal("shore did not stop")
	}
}
