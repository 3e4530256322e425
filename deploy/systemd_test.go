package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	agentUnit   = "systemd/sourcecatalog-agent.service"
	agentBinary = "/usr/local/bin/sourcecatalog"
)

// scratchUnit writes the agent's unit to a directory of its own, with
// ExecStart naming an executable there: systemd-analyze checks that the
// program exists.
func scratchUnit(t *testing.T) string {
	t.Helper()
	unit, err := os.ReadFile(agentUnit)
	require.NoError(t, err)
	dir := t.TempDir()
	bin := filepath.Join(dir, "sourcecatalog")
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755))
	require.Contains(t, string(unit), "ExecStart="+agentBinary+" agent ")
	path := filepath.Join(dir, filepath.Base(agentUnit))
	require.NoError(t, os.WriteFile(path, bytes.ReplaceAll(unit, []byte(agentBinary), []byte(bin)), 0o644))
	return path
}

// TestAgentUnitVerifies: systemd-analyze verify finds nothing to say of
// the agent's unit: every key known, every value parsed (it warns and
// carries on otherwise, so any output fails the test).
func TestAgentUnitVerifies(t *testing.T) {
	sa := tool(t, "systemd-analyze")
	out, err := exec.Command(sa, "verify", "--man=no", scratchUnit(t)).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Empty(t, strings.TrimSpace(string(out)))
}

// TestAgentUnitHardened: systemd-analyze security rates the unit's
// exposure at most 2.0 of 10 ("OK").
func TestAgentUnitHardened(t *testing.T) {
	sa := tool(t, "systemd-analyze")
	out, err := exec.Command(sa, "security", "--offline=true", "--threshold=20", "--no-pager", scratchUnit(t)).CombinedOutput()
	require.NoError(t, err, "%s", out)
}

// TestAgentUnitFlags: the unit runs the agent with flags its help
// documents, its outbox in the unit's state directory and the token from
// the unit's credential.
func TestAgentUnitFlags(t *testing.T) {
	unit, err := os.ReadFile(agentUnit)
	require.NoError(t, err)
	text := strings.ReplaceAll(string(unit), "\\\n", " ")
	exec := regexp.MustCompile(`(?m)^ExecStart=(.*)$`).FindStringSubmatch(text)
	require.NotNil(t, exec)
	args := strings.Fields(exec[1])
	require.Equal(t, []string{agentBinary, "agent"}, args[:2])
	help, err := os.ReadFile("../cmd/sourcecatalog/help/agent.txt")
	require.NoError(t, err)
	flags := map[string]string{}
	for i := 2; i < len(args); i += 2 {
		require.True(t, strings.HasPrefix(args[i], "--") && i+1 < len(args), "flag and value: %q", args[i:])
		require.Regexp(t, `(?m)^  `+regexp.QuoteMeta(args[i])+` `, string(help), "agent --help documents %s", args[i])
		flags[args[i]] = args[i+1]
	}
	value := func(key string) string {
		m := regexp.MustCompile(`(?m)^` + key + `=(.*)$`).FindStringSubmatch(text)
		require.NotNil(t, m, key)
		return m[1]
	}
	require.Equal(t, "sqlite:/var/lib/"+value("StateDirectory")+"/outbox.db", flags["--store"], "the outbox in the state directory")
	cred := strings.SplitN(value("LoadCredential"), ":", 2)[0]
	require.Equal(t, "/run/credentials/"+filepath.Base(agentUnit)+"/"+cred, flags["--token-file"])
	for _, f := range []string{"--signalk", "--vessel", "--url"} {
		require.Contains(t, flags, f)
	}
}
