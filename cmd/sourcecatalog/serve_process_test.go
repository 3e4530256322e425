//go:build unix

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
)

// curlPath is the HTTP client of the process test: one that is not this
// library.
const curlPath = "/usr/bin/curl"

// serveNeedTool returns the path of a tool the test needs; without it the test
// skips, unless CI=true, where it fails.
func serveNeedTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is needed under CI=true: %v", name, err)
	}
	t.Skipf("%s not found: %v", name, err)
	return ""
}

// buildServeBinary builds the command into dir and returns its path.
func buildServeBinary(t *testing.T, dir string) string {
	t.Helper()
	goTool := serveNeedTool(t, "go")
	bin := filepath.Join(dir, "sourcecatalog")
	out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// serveAnswer is what curl got: the status and the body.
type serveAnswer struct {
	status int
	body   string
}

// serveCurl runs curl with args and the URL, and returns the answer.
func serveCurl(t *testing.T, url string, args ...string) serveAnswer {
	t.Helper()
	args = append([]string{"--silent", "--show-error", "--max-time", "30", "--output", "-", "--write-out", "\n%{http_code}"}, args...)
	cmd := exec.Command(curlPath, append(args, url)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "curl %s: %s", url, stderr.String())
	out := stdout.String()
	i := strings.LastIndexByte(out, '\n')
	require.GreaterOrEqual(t, i, 0, "curl's output: %q", out)
	status, err := strconv.Atoi(out[i+1:])
	require.NoError(t, err, "curl's output: %q", out)
	return serveAnswer{status, out[:i]}
}

// serve started as a process, driven with curl: a snapshot posted
// message by message over mutual TLS is staged, acknowledged, activated
// and counted; a resend with a bearer token is already_received; missing
// credentials are 401 and another vessel's token 403; /healthz and /metrics
// answer on the admin listener; status --json, run beside it, shows the
// activation; SIGTERM ends it cleanly with status 0.
func TestServeProcess(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("builds the binary and runs it")
	}
	if _, err := os.Stat(curlPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("curl is needed under CI=true: %v", err)
		}
		t.Skipf("no curl: %v", err)
	}
	dir := t.TempDir()
	bin := buildServeBinary(t, dir)
	pki := newServePKI(t, dir)
	other := uuid.MustParse("5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9")
	tokens := writeFile(t, dir, "tokens", []byte("# vessel tokens\n"+
		httpbinding.TokenHash("vessel-token", examples.VesselID)+"\n"+
		httpbinding.TokenHash("other-token", other)+"\n"))
	db := filepath.Join(dir, "s.db")
	snap, bodies := serveSnapshot(t, 5)
	files := make([]string, len(bodies))
	for i, b := range bodies {
		files[i] = writeFile(t, dir, fmt.Sprintf("message-%d.json", i), b)
	}

	log := &serveLogTail{}
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
		"--store", "sqlite:"+db, "--create-store", "--retain", "8", "--tls-cert", pki.serverCert, "--tls-key", pki.serverKey,
		"--client-ca", pki.caFile, "--tokens", tokens, "--log-format", "json")
	cmd.Stderr = log
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	listen, admin := log.addrs(t)
	url := "https://" + listen + "/"
	post := func(file string, credentials ...string) serveAnswer {
		args := append([]string{"--cacert", pki.caFile, "--header", "Content-Type: application/json", "--data-binary", "@" + file}, credentials...)
		return serveCurl(t, url, args...)
	}
	cert := []string{"--cert", pki.clientCert, "--key", pki.clientKey}
	receipt := func(a serveAnswer) envelope.Receipt {
		t.Helper()
		require.Equal(t, 200, a.status, "%s", a.body)
		rc, err := envelope.DecodeReceipt([]byte(a.body))
		require.NoError(t, err, "%s", a.body)
		return rc
	}

	// Unauthenticated: 401, nothing staged.
	a := post(files[0])
	assert.Equal(t, 401, a.status, a.body)
	// Another vessel's token cannot stage this vessel's message.
	a = post(files[0], "--header", "Authorization: Bearer other-token")
	assert.Equal(t, 403, a.status, a.body)
	assert.Contains(t, a.body, `"error":"foreign_vessel"`)

	// The manifest and every chunk, by client certificate.
	for i, f := range files {
		rc := receipt(post(f, cert...))
		assert.Equal(t, envelope.Staged, rc.Status, "message %d", i)
		assert.Equal(t, i == len(files)-1, rc.Complete, "message %d", i)
		assert.Equal(t, snap.Manifest.SnapshotID, rc.SnapshotID)
	}
	// A resend, by bearer token, changes nothing.
	rc := receipt(post(files[1], "--header", "Authorization: Bearer vessel-token"))
	assert.Equal(t, envelope.AlreadyReceived, rc.Status)

	sid := snap.Manifest.SnapshotID.String()
	log.wait(t, "finalize", map[string]any{"vessel": vesselFlag, "snapshot": sid, "outcome": "activated", "revision": 5.0})
	log.wait(t, "message", map[string]any{"vessel": vesselFlag, "snapshot": sid, "entity_type": "signalk_catalog_chunk_v2",
		"outcome": "already_received", "status": 200.0})
	log.wait(t, "message", map[string]any{"outcome": "unauthenticated", "status": 401.0})

	a = serveCurl(t, "http://"+admin+"/healthz")
	assert.Equal(t, serveAnswer{200, "ok\n"}, a)
	a = serveCurl(t, "http://"+admin+"/metrics")
	require.Equal(t, 200, a.status)
	for _, want := range []string{
		fmt.Sprintf(`sourcecatalog_messages_total{code="200",outcome="staged"} %d`, len(files)),
		`sourcecatalog_messages_total{code="200",outcome="already_received"} 1`,
		`sourcecatalog_messages_total{code="401",outcome="unauthenticated"} 1`,
		`sourcecatalog_messages_total{code="403",outcome="foreign_vessel"} 1`,
		`sourcecatalog_receives_total{op="ReceiveManifest",outcome="staged"} 1`,
		fmt.Sprintf(`sourcecatalog_receives_total{op="ReceiveChunk",outcome="staged"} %d`, len(files)-1),
		`sourcecatalog_finalize_total{outcome="activated"} 1`,
		`sourcecatalog_finalize_duration_seconds_count{outcome="activated"} 1`,
		`sourcecatalog_staging_snapshots{bound="retained",vessel="` + vesselFlag + `"} 1`,
		`sourcecatalog_staging_snapshots_limit{bound="retained",vessel="` + vesselFlag + `"} 32`,
	} {
		assertMetric(t, a.body, want)
	}

	// The operator's status, another process on the same file while serve
	// runs, shows the activation.
	out, err := exec.Command(bin, "status", "--store", "sqlite:"+db, "--vessel", vesselFlag, "--json").Output()
	require.NoError(t, err, "status --json")
	var st statusOut
	decodeStrict(t, string(out), &st)
	require.Len(t, st.Vessels, 1, "%s", out)
	v := st.Vessels[0]
	require.NotNil(t, v.Active, "%s", out)
	assert.Equal(t, activeOut{SnapshotID: sid, Revision: 5, DiscoveredAt: envelope.FormatTime(snap.Manifest.DiscoveredAt)}, *v.Active)
	require.NotNil(t, v.LastOutcome, "%s", out)
	assert.Equal(t, "activated", v.LastOutcome.Outcome)
	assert.Equal(t, int64(1), v.Usage.RetainedSnapshots.Used)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		exited <- err // for the cleanup
		require.NoError(t, err, "serve's exit; the log:\n%s", log)
	case <-time.After(10 * time.Second):
		t.Fatalf("serve did not exit within 10 s of SIGTERM; the log:\n%s", log)
	}
	log.wait(t, "shutting down", nil)
	log.wait(t, "stopped", nil)
	logged := log.String()
	for _, secret := range []string{"vessel-token", "other-token"} {
		assert.NotContains(t, logged, secret)
	}
}
