// Package dbtest holds what the tests that need a database server share:
// settings taken from the environment, skipped without them, except under
// CI=true, where every test must run.
package dbtest

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
)

// MySQLEnv names the DSN of an account that may create and drop databases.
const MySQLEnv = "SOURCECATALOG_MYSQL_DSN"

// Env returns the value of the environment variable name. Without one the
// test skips, except under CI=true, where a missing setting is a failure.
// what names the tests that need it ("the MariaDB tests"); hint, if not
// empty, says how to provide it.
func Env(t testing.TB, name, what, hint string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		if hint != "" {
			hint = " (" + hint + ")"
		}
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set; under CI=true %s must run%s", name, what, hint)
		}
		t.Skipf("%s is not set: skipping %s%s", name, what, hint)
	}
	return v
}

// MySQL returns the DSN that MySQLEnv names, parsed, as Env would.
func MySQL(t testing.TB) *mysql.Config {
	t.Helper()
	dsn := Env(t, MySQLEnv, "the MariaDB tests", "bash scripts/test.sh provisions a throwaway server")
	cfg, err := mysql.ParseDSN(dsn)
	require.NoError(t, err, "parse %s", MySQLEnv)
	return cfg
}

// MySQLDirEnv names the scripts/mariadb.sh directory of the server
// MySQLEnv names — its mariadbd.pid and its start.sh — for the tests
// that stop it and start it again.
const MySQLDirEnv = "SOURCECATALOG_MYSQL_DIR"

// MariaDBPid returns the pid dir/mariadbd.pid records, and whether it is
// a mariadbd process still running.
func MariaDBPid(tb testing.TB, dir string) (int, bool) {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "mariadbd.pid"))
	require.NoError(tb, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(tb, err)
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return pid, false
	}
	comm, state, _ := strings.Cut(string(stat), ") ")
	return pid, strings.HasSuffix(comm, "(mariadbd") && !strings.HasPrefix(state, "Z")
}

// StopMariaDB stops the server of dir with SIGTERM and waits until it has
// exited.
func StopMariaDB(tb testing.TB, dir string) {
	tb.Helper()
	pid, alive := MariaDBPid(tb, dir)
	require.True(tb, alive, "no mariadbd runs as pid %d", pid)
	require.NoError(tb, syscall.Kill(pid, syscall.SIGTERM))
	deadline := time.Now().Add(time.Minute)
	for _, alive := MariaDBPid(tb, dir); alive; _, alive = MariaDBPid(tb, dir) {
		require.True(tb, time.Now().Before(deadline), "mariadbd pid %d still runs a minute after SIGTERM", pid)
		time.Sleep(10 * time.Millisecond)
	}
}

// StartMariaDB starts the server of dir again, unless it runs, in a
// process group of its own, waits until admin reaches it, and returns
// when it did.
func StartMariaDB(tb testing.TB, dir string, admin *sql.DB) time.Time {
	tb.Helper()
	if _, alive := MariaDBPid(tb, dir); !alive {
		cmd := exec.Command("bash", filepath.Join(dir, "start.sh"))
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		out, err := cmd.CombinedOutput()
		require.NoError(tb, err, "start.sh: %s", out)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := admin.PingContext(ctx)
		cancel()
		if err == nil {
			return time.Now()
		}
		var me *mysql.MySQLError
		require.False(tb, errors.As(err, &me), "the restarted server refuses: %v", err)
		require.True(tb, time.Now().Before(deadline), "the restarted server does not answer within a minute: %v", err)
		time.Sleep(5 * time.Millisecond)
	}
}
