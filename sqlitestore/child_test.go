package sqlitestore_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// The multi-process tests run this test binary again as a child process,
// with SQLITESTORE_CHILD naming its role and SQLITESTORE_PATH the
// database; TestMain runs the role instead of the tests.

func TestMain(m *testing.M) {
	if role := os.Getenv("SQLITESTORE_CHILD"); role != "" {
		if err := child(role, os.Getenv("SQLITESTORE_PATH")); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	removeShmRoot()
	os.Exit(code)
}

// child runs a role, printing lines the parent reads:
//   - open: opens the database (exclusively when SQLITESTORE_EXCLUSIVE is
//     set) and prints "ok", or "locked" and how long Open took;
//   - hold: opens it, takes the write lock in a transaction, prints
//     "holding", and commits when its standard input closes;
//   - cycles: runs cycles from SQLITESTORE_START on, printing every
//     acknowledgement, until it is killed.
func child(role, path string) error {
	ctx := context.Background()
	var opts []sqlitestore.Option
	if os.Getenv("SQLITESTORE_EXCLUSIVE") != "" {
		opts = append(opts, sqlitestore.WithExclusiveLock())
	}
	start := time.Now()
	s, err := sqlitestore.Open(ctx, path, opts...)
	if errors.Is(err, sqlitestore.ErrLocked) {
		fmt.Println("locked", time.Since(start).Milliseconds())
		return nil
	}
	if err != nil {
		return err
	}
	defer s.Close()
	switch role {
	case "open":
		fmt.Println("ok")
		return nil
	case "hold":
		return s.WithVessel(ctx, faultVessel, func(tx finalize.Tx) error {
			if err := tx.SetVessel(ctx, finalize.VesselState{ActiveRevision: 1}); err != nil {
				return err
			}
			fmt.Println("holding")
			_, err := io.Copy(io.Discard, os.Stdin)
			return err
		})
	case "cycles":
		n, err := strconv.Atoi(os.Getenv("SQLITESTORE_START"))
		if err != nil {
			return err
		}
		w := bufio.NewWriter(os.Stdout)
		ack := func(line string) { w.WriteString(line + "\n"); w.Flush() }
		for ; ; n++ {
			if err := runCycle(ctx, s, n, ack); err != nil {
				return err
			}
		}
	}
	return fmt.Errorf("unknown role %q", role)
}

// spawn starts this test binary as a child with role on path; extra are
// more environment variables.
func spawn(t *testing.T, role, path string, extra ...string) (*exec.Cmd, io.WriteCloser, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{"SQLITESTORE_CHILD=" + role, "SQLITESTORE_PATH=" + path}, extra...)...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, stdin, bufio.NewScanner(stdout)
}

// line reads the child's next line.
func line(t *testing.T, sc *bufio.Scanner) string {
	t.Helper()
	if !sc.Scan() {
		t.Fatalf("the child printed nothing: %v", sc.Err())
	}
	return sc.Text()
}
