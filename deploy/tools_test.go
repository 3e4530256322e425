// Package deploy holds what runs beside a receiver — Prometheus alert
// rules, a Grafana dashboard, an nginx ingress — and on board, the
// agent's systemd unit, with the tests that hold them to the receiver and
// the agent: its metrics, its trusted-proxy authentication, the agent's
// flags. It has no Go API.
package deploy

import (
	"os"
	"os/exec"
	"testing"
)

// installed says where the programs the tests run come from.
var installed = map[string]string{
	"promtool":        "Debian's prometheus package; scripts/deploytools.sh installs it",
	"nginx":           "Debian's nginx package; scripts/deploytools.sh installs it",
	"systemd-analyze": "Debian's systemd package; scripts/deploytools.sh installs it",
	"go":              "the Go toolchain running the tests",
}

// tool returns the path of the program name, found on PATH or else at
// one of paths. Without it the test is skipped, or fails under CI=true,
// where scripts/test.sh installs it (scripts/deploytools.sh).
func tool(t *testing.T, name string, paths ...string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is needed under CI=true (%s)", name, installed[name])
	}
	t.Skipf("%s not found (%s)", name, installed[name])
	return ""
}
