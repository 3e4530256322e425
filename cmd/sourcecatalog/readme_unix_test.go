//go:build unix

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReadmeQuickStart runs the README's quick start as it stands — the
// sh block after the sentence naming this test — with the command built
// from this checkout first on PATH, in a directory holding the example
// boat's records where a checkout has them.
func TestReadmeQuickStart(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(readme), "`TestReadmeQuickStart` runs this block")
	require.True(t, ok, "the README names this test before its quick start")
	_, rest, ok = strings.Cut(rest, "```sh\n")
	require.True(t, ok)
	script, _, ok := strings.Cut(rest, "```\n")
	require.True(t, ok)
	for _, tool := range []string{"bash", "openssl", "curl", "sha256sum"} {
		serveNeedTool(t, tool)
	}

	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.Mkdir(bin, 0o755))
	buildServeBinary(t, bin)
	records, err := os.ReadFile(filepath.Join("..", "..", "examples", "example_records.json"))
	require.NoError(t, err)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "examples"), 0o755))
	writeFile(t, filepath.Join(dir, "examples"), "example_records.json", records)

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the script and the serve it starts
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	out, err := cmd.CombinedOutput()
	log, _ := os.ReadFile(filepath.Join(dir, "serve.log"))
	require.NoError(t, err, "the quick start failed:\n%s\nserve's log:\n%s", out, log)
	require.Contains(t, string(out), "activated", "status shows the cycle active:\n%s", out)
	require.Contains(t, string(out), "delivered", "publish delivered the entries:\n%s", out)
	require.Contains(t, string(out), "pass 1: sent 1, delivered 3", "the unchanged cycle went as one manifest index:\n%s", out)
	require.Contains(t, string(out), "2 chunk(s) staged by the manifest index, not sent", "the unchanged cycle went as one manifest index:\n%s", out)
}
