// Package dbtest holds what the tests that need a database server share:
// settings taken from the environment, skipped without them, except under
// CI=true, where every test must run.
package dbtest

import (
	"os"
	"testing"

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
