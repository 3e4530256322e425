package main

import (
	"database/sql"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/internal/demo"
)

func TestDemo(t *testing.T) {
	r := cli(t, "", "demo", "--seed", "3")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Empty(t, r.stderr)
	for _, want := range []string{
		"sourcecatalog demo: seed 3, vessel ",
		"receiver store memstore\n",
		"cycle 1: the example boat",
		"cycle 2: ",
		"\nreport\n",
		"  link:       ",
		"  receiver:   ",
		"  snapshot 1: revision 1 ",
		"; now superseded\n",
		"; now already_active\n",
		"  active:     revision 2, snapshot ",
		"  inventory:  129 items: 126 currently observed, 3 not currently observed\n",
		"    changed  source      can0.",
		"    left     path        electrical.switches.anchorLight.state; not currently observed, first seen 1, last seen 1\n",
		"\nverified: active revision 2 is cycle 2's snapshot; 129 inventory items as expected; 6 of 6 outbox entries delivered\n",
	} {
		assert.Contains(t, r.stdout, want)
	}
	again := cli(t, "", "demo", "--seed", "3")
	assert.Equal(t, r, again, "the same seed prints the same output")

	def := cli(t, "", "demo")
	require.Equal(t, exitOK, def.code, def.stderr)
	assert.True(t, strings.HasPrefix(def.stdout, "sourcecatalog demo: seed 1, "), def.stdout)
	assert.Equal(t, def, cli(t, "", "demo", "--seed", "1"))
	assert.NotEqual(t, def.stdout, r.stdout)
}

func TestDemoUsage(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"demo", "--seed", "x"}, "must be digits"},
		{[]string{"demo", "--seed", "-1"}, "must be digits"},
		{[]string{"demo", "--seed", "18446744073709551616"}, "must be digits"},
		{[]string{"demo", "--seed", "1", "--seed", "2"}, "given more than once"},
		{[]string{"demo", "extra"}, `unexpected argument "extra": demo takes no arguments`},
		{[]string{"demo", "--sqlite"}, "--sqlite needs a value"},
		{[]string{"demo", "--sqlite", ""}, "--sqlite must not be empty"},
		{[]string{"demo", "--sqlite", "a.db", "--sqlite", "b.db"}, "--sqlite given more than once"},
		{[]string{"demo", "--mysql"}, "--mysql needs a value"},
		{[]string{"demo", "--mysql", ""}, "--mysql must not be empty"},
		{[]string{"demo", "--mysql", "u:secret@tcp(h)/", "--mysql", "u:secret@tcp(h)/"}, "--mysql given more than once"},
		{[]string{"demo", "--mysql", "u:secret@tcp(h)"}, "--mysql: invalid DSN"},
		{[]string{"demo", "--http=yes"}, "takes no value"},
		{[]string{"demo", "--http", "--http"}, "given more than once"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := cli(t, "", tc.args...)
			assert.Equal(t, exitUsage, r.code)
			assert.Empty(t, r.stdout)
			assert.Contains(t, r.stderr, tc.stderr)
			assert.Contains(t, r.stderr, "Usage: sourcecatalog demo [--seed N] [--sqlite FILE] [--mysql DSN] [--http]")
			assert.NotContains(t, r.stderr, "secret", "a DSN's password is never echoed")
		})
	}
	r := cli(t, "", "demo", "-h")
	assert.Equal(t, exitOK, r.code)
	assert.Contains(t, r.stdout, "--mysql DSN")
	assert.Contains(t, r.stdout, "--sqlite FILE")
	assert.Contains(t, r.stdout, "--http ")
}

// An unreachable server is a failure (exit 1), reported without the DSN.
func TestDemoMySQLUnreachable(t *testing.T) {
	r := cli(t, "", "demo", "--mysql", "demo:secret@tcp(127.0.0.1:1)/?timeout=2s")
	assert.Equal(t, exitInvalid, r.code)
	assert.Contains(t, r.stderr, "sourcecatalog demo: mysql: ")
	assert.NotContains(t, r.stderr, "secret")
	assert.NotContains(t, r.stdout, "verified:")
}

func schemaExists(t *testing.T, admin *sql.DB, name string) bool {
	t.Helper()
	var n int
	require.NoError(t, admin.QueryRow("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", name).Scan(&n))
	return n > 0
}

func TestDemoMySQL(t *testing.T) {
	cfg, admin := mysqlAdmin(t)

	t.Run("throwaway schema", func(t *testing.T) {
		r := cli(t, "", "demo", "--seed", "3", "--mysql", cfg.FormatDSN())
		require.Equal(t, exitOK, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
		m := regexp.MustCompile(`schema (sourcecatalog_demo_[0-9a-f]{12}) \(throwaway\)`).FindStringSubmatch(r.stdout)
		require.NotNil(t, m, r.stdout)
		assert.Contains(t, r.stdout, "\nverified: active revision 2 is cycle 2's snapshot")
		assert.Contains(t, r.stdout, "\nmysql: dropped the throwaway schema "+m[1]+"\n")
		assert.False(t, schemaExists(t, admin, m[1]), "the throwaway schema is dropped")

		// The receiver store changes nothing of what the demo prints
		// besides its name.
		mem := cli(t, "", "demo", "--seed", "3")
		strip := func(s string) string {
			s = regexp.MustCompile(`receiver store [^\n]*\n`).ReplaceAllString(s, "")
			return regexp.MustCompile(`mysql: dropped[^\n]*\n`).ReplaceAllString(s, "")
		}
		assert.Equal(t, strip(mem.stdout), strip(r.stdout))
	})

	t.Run("named schema", func(t *testing.T) {
		name := throwawayDatabase(t, admin, "sourcecatalog_test_")
		named := cfg.Clone()
		named.DBName = name
		r := cli(t, "", "demo", "--seed", "5", "--mysql", named.FormatDSN())
		require.Equal(t, exitOK, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
		assert.Contains(t, r.stdout, "schema "+name+"\n")
		assert.NotContains(t, r.stdout, "throwaway")
		assert.True(t, schemaExists(t, admin, name), "a named schema is kept")

		// The vessel now has state there: a second run refuses to start.
		r = cli(t, "", "demo", "--seed", "5", "--mysql", named.FormatDSN())
		assert.Equal(t, exitInvalid, r.code)
		assert.Contains(t, r.stderr, "already holds state for the demo vessel")
		assert.NotContains(t, r.stdout, "verified:")
	})
}

// demo --http publishes through the binding and a fault proxy: receipts
// are lost to resets and cuts, resent and answered already_received, and
// everything is activated; a seed prints the same output.
func TestDemoHTTP(t *testing.T) {
	r := cli(t, "", "demo", "--http")
	require.Equal(t, exitOK, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	assert.Empty(t, r.stderr)
	m := regexp.MustCompile(`\n  link:       (\d+) requests sent over HTTPS; the proxy reset (\d+) connections? after the server answered, cut (\d+) midway, delayed (\d+)\n  receiver:   (\d+) deliveries: 6 staged, (\d+) already_received\n`).FindStringSubmatch(r.stdout)
	require.NotNil(t, m, r.stdout)
	n := func(i int) int { v, err := strconv.Atoi(m[i]); require.NoError(t, err); return v }
	sent, resets, cuts, delays, deliveries, again := n(1), n(2), n(3), n(4), n(5), n(6)
	assert.Positive(t, resets, "connections reset after the server answered")
	assert.Positive(t, cuts, "answers cut midway")
	assert.Positive(t, delays, "answers delayed")
	assert.Equal(t, resets+cuts, again, "each lost receipt resent and answered already_received")
	assert.Equal(t, sent, deliveries)
	assert.Equal(t, 6+resets+cuts, sent)
	for _, want := range []string{
		"\nlink: HTTPS with mutual TLS on 127.0.0.1 through a fault proxy",
		"; now superseded\n",
		"; now already_active\n",
		"\nverified: active revision 2 is cycle 2's snapshot; 129 inventory items as expected; 6 of 6 outbox entries delivered\n",
		"\nshutdown: the server and the fault proxy stopped cleanly\n",
	} {
		assert.Contains(t, r.stdout, want)
	}
	assert.Equal(t, r, cli(t, "", "demo", "--http", "--seed", "1"), "the same seed prints the same output")
}

// demo --http keeps the outbox and the receiver in SQLite as demo does, and
// a second run carries on.
func TestDemoHTTPSQLite(t *testing.T) {
	file := filepath.Join(t.TempDir(), "demo.db")
	r := cli(t, "", "demo", "--http", "--sqlite", file)
	require.Equal(t, exitOK, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	assert.Contains(t, r.stdout, "outbox sqlitestore "+file)
	r = cli(t, "", "demo", "--sqlite", file, "--http")
	require.Equal(t, exitOK, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	assert.Contains(t, r.stdout, "\nresume: the outbox is at revision 2 from earlier runs, 0 entries still pending\n")
	assert.Contains(t, r.stdout, "\nverified: active revision 4 is cycle 2's snapshot")
}

// With every receipt lost the demo fails with exit status 1.
func TestDemoHTTPWithoutReceipts(t *testing.T) {
	saved := demoHTTP
	t.Cleanup(func() { demoHTTP = saved })
	demoHTTP = demo.HTTPLink{Reset: 1}
	r := cli(t, "", "demo", "--http")
	assert.Equal(t, exitInvalid, r.code)
	assert.Contains(t, r.stderr, "sourcecatalog demo: demo: cycle 1: still not delivered and activated after 32 publish passes")
	assert.Contains(t, r.stdout, "pass 32: sent 3, acknowledged 0 (3 answers reset)")
	assert.NotContains(t, r.stdout, "verified:")
}
