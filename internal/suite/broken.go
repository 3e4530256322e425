package suite

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// A Broken is a store with one bug that a conformance kit must catch, for
// the kit's own tests. Like Case, it aliases a struct type so that the
// kits may list them unkeyed.
type Broken = struct {
	Name     string // passed to the child in the environment; "" is the control, a correct store
	Bug      string // what is wrong with it, for messages
	CaughtBy string // a subtest of TestBrokenStore that must fail; for the control, one that must pass
}

// BrokenStore returns the name of the broken store that env names, for the
// test TestBrokenStore of a kit's tests to run the kit against. It skips t
// unless the process is a child started by RequireKitFails.
func BrokenStore(t *testing.T, env string) string {
	name, ok := os.LookupEnv(env)
	if !ok {
		t.Skip("run by RequireKitFails in a child process")
	}
	return name
}

// failLine is the line go test -v prints for a failed test.
var failLine = regexp.MustCompile(`(?m)^\s*--- FAIL: TestBrokenStore/(\S+)`)

// RequireKitFails runs TestBrokenStore of this test binary in a child
// process per broken store, with env naming it, and requires that the kit
// failed it in the subtest CaughtBy, or passed the control. A failing kit
// fails the test running it, so it must run in another process. Skipped
// with -short.
func RequireKitFails(t *testing.T, env string, stores []Broken) {
	if testing.Short() {
		t.Skip("runs the kit once per broken store")
	}
	for _, b := range stores {
		t.Run(fmt.Sprintf("%q", b.Name), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenStore$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), env+"="+b.Name)
			out, err := cmd.CombinedOutput()
			tail := out[max(0, len(out)-4000):]
			if b.Name == "" {
				require.NoError(t, err, "the kit passes a correct store:\n%s", tail)
				require.Contains(t, string(out), "--- PASS: TestBrokenStore/"+b.CaughtBy, "the kit ran")
				return
			}
			var failed []string
			for _, m := range failLine.FindAllSubmatch(out, -1) {
				failed = append(failed, string(m[1]))
			}
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "the kit must fail a store where %s:\n%s", b.Bug, tail)
			require.Contains(t, failed, b.CaughtBy, "the subtest that checks that rule fails")
			t.Logf("a store where %s fails %d subtests: %v", b.Bug, len(failed), failed)
		})
	}
}
