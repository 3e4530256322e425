//go:build unix

package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/internal/demo"
)

// stopEnv, set in a child process of the tests, names the demo step
// (demo.Step.String) where the child stops: it says so on standard error,
// then waits to be killed.
const stopEnv = "SOURCECATALOG_TEST_DEMO_STOP_AT"

func TestMain(m *testing.M) {
	if step := os.Getenv(stopEnv); step != "" {
		os.Exit(stoppingChild(step, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// stoppingChild runs the command line args, stopping at the demo step:
// it writes "stopped at STEP" to standard error and blocks until its
// standard input ends (the parent kills it first). Its exit status 3
// means the parent went away.
func stoppingChild(step string, args []string) int {
	e := &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, afterStep: func(s demo.Step) error {
		if s.String() == step {
			fmt.Fprintf(os.Stderr, "stopped at %s\n", s)
			io.Copy(io.Discard, os.Stdin)
			os.Exit(3)
		}
		return nil
	}}
	return dispatch(e, args)
}

// stopped is a child process stopped at a demo step.
type stopped struct {
	cmd    *exec.Cmd
	stdin  io.Closer
	stdout strings.Builder
}

// startStopped runs the command line args in a child process of the test
// binary and returns once it stopped at the demo step.
func startStopped(t *testing.T, step string, args ...string) *stopped {
	t.Helper()
	c := &stopped{cmd: exec.Command(os.Args[0], args...)}
	c.cmd.Env = append(os.Environ(), stopEnv+"="+step)
	c.cmd.Stdout = &c.stdout
	stdin, err := c.cmd.StdinPipe()
	require.NoError(t, err)
	c.stdin = stdin
	stderr, err := c.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, c.cmd.Start())
	t.Cleanup(func() {
		c.stdin.Close()
		c.cmd.Process.Kill()
		c.cmd.Wait()
	})
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	timeout := time.After(2 * time.Minute)
	var said []string
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("the child ended without stopping at %q; stderr: %q; stdout:\n%s", step, said, c.stdout.String())
			}
			if line == "stopped at "+step {
				return c
			}
			said = append(said, line)
		case <-timeout:
			t.Fatalf("the child did not stop at %q within 2 minutes; stderr: %q", step, said)
		}
	}
}

// kill SIGKILLs the child and checks that it died of it.
func (c *stopped) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGKILL))
	err := c.cmd.Wait()
	require.Error(t, err)
	ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus)
	require.True(t, ok)
	require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "the child ended with %v, not SIGKILL", err)
}

func entries(n int) string {
	if n == 1 {
		return "1 entry"
	}
	return fmt.Sprintf("%d entries", n)
}

// A demo stopped for good at a step — its process SIGKILLed there — leaves a
// file on which the next run resumes: it publishes what is pending,
// reconciles, so that the killed run's last snapshot is activated, and
// finishes at the next revisions with the history intact.
func TestDemoSQLiteKilled(t *testing.T) {
	for _, tc := range []struct {
		step    string
		last    int64 // the outbox's last revision at the kill
		pending int   // entries left pending at the kill (seed 1)
	}{
		{"cycle 1 committed", 1, 3},
		{"cycle 1 pass 2 published", 1, 1},
		{"cycle 2 committed", 2, 3},
		{"cycle 2 pass 1 published", 2, 1},
		{"cycle 2 activated", 2, 0},
	} {
		t.Run(tc.step, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "demo.db")
			child := startStopped(t, tc.step, "demo", "--sqlite", file)

			// While the killed-to-be run holds the file, no other may use it.
			r := cli(t, "", "demo", "--sqlite", file)
			assert.Equal(t, exitInvalid, r.code)
			assert.Equal(t, "sourcecatalog demo: another process has "+file+" open\n", r.stderr)
			assert.Empty(t, r.stdout)

			child.kill(t)
			st := readFile(t, file)
			assert.Equal(t, tc.pending, st.pending, "entries pending at the kill")
			killed, ok := st.snapshots[tc.last]
			if tc.pending == 3 {
				assert.False(t, ok, "nothing of the killed snapshot was sent")
				killed.ID = uuid.Nil
			} else {
				require.True(t, ok, "revision %d staged", tc.last)
			}

			r = cli(t, "", "demo", "--sqlite", file)
			require.Equal(t, exitOK, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			assert.Contains(t, r.stdout, fmt.Sprintf("\nresume: the outbox is at revision %d from earlier runs, %s still pending\n",
				tc.last, entries(tc.pending)))
			st = readFile(t, file)
			checkHistory(t, st, tc.last+2)
			// The killed run's last snapshot was activated before the new
			// cycles: at the resume's reconcile, or before the kill.
			assert.Equal(t, finalize.StateActivated, st.snapshots[tc.last].State)
			if tc.step != "cycle 2 activated" {
				assert.Regexp(t, fmt.Sprintf(`\n  reconcile: snapshot %s revision %d: activated, active revision %d\n`,
					st.snapshots[tc.last].ID, tc.last, tc.last), r.stdout)
			} else {
				assert.Contains(t, r.stdout, "\n  reconcile: nothing complete left staging\n")
			}
			if killed.ID != uuid.Nil {
				assert.Equal(t, killed.ID, st.snapshots[tc.last].ID)
			}
		})
	}
}
