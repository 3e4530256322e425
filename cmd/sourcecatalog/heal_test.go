package main

import (
	"bytes"
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/internal/dbtest"
	"github.com/yachtmemory/sourcecatalog/internal/fsfault"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// The healing tests break serve's store under a running serve — a full
// disk, a MariaDB server stopped — and mend it: while it is broken every
// message is answered 503, /healthz is 503 with the store's state, the
// metric and the log say so; once it is mended serve answers receipts
// again without a restart, and nothing it acknowledged is lost.

// healingServe is a serve in the test's process, without authentication,
// and what a test needs to talk to it.
type healingServe struct {
	*inProcessServe
	listen, admin string
}

func startHealingServe(t *testing.T, store string, extra ...string) *healingServe {
	t.Helper()
	s := startServe(t, append([]string{"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--store", store,
		"--retain", "8", "--insecure-no-auth", vesselFlag}, extra...)...)
	listen, admin := s.log.addrs(t)
	return &healingServe{s, listen, admin}
}

// post sends one wrapped request and returns the status and the body.
func (s *healingServe) post(t *testing.T, body []byte) (int, []byte) {
	t.Helper()
	resp, err := http.Post("http://"+s.listen+"/", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, answer
}

// deliver sends every message of a snapshot, requiring a receipt of
// status want for each, and waits for its activation when want is staged.
func (s *healingServe) deliver(t *testing.T, snap *envelope.Snapshot, bodies [][]byte, want envelope.ReceiptStatus) {
	t.Helper()
	for i, b := range bodies {
		code, answer := s.post(t, b)
		require.Equal(t, http.StatusOK, code, "message %d: %s", i, answer)
		rc, err := envelope.DecodeReceipt(answer)
		require.NoError(t, err)
		require.Equal(t, want, rc.Status, "message %d", i)
	}
	if want == envelope.Staged {
		s.log.wait(t, "finalize", map[string]any{"snapshot": snap.Manifest.SnapshotID.String(), "outcome": "activated"})
	}
}

// requireBroken checks every sign of a store that cannot serve: a message
// answered 503 store_unavailable, /healthz 503 "store reopening", the
// state metric, and the log lines of the poisoning and of a failed reopen.
func (s *healingServe) requireBroken(t *testing.T, body []byte) {
	t.Helper()
	code, answer := s.post(t, body)
	require.Equal(t, http.StatusServiceUnavailable, code, "%s", answer)
	assert.Contains(t, string(answer), `"store_unavailable"`)
	poisoned := s.log.wait(t, "store poisoned: refusing requests until it is reopened", map[string]any{"state": "poisoned"})
	assert.Equal(t, "ERROR", poisoned["level"])
	assert.NotEmpty(t, poisoned["err"], "the log names the cause")
	s.log.wait(t, "store reopen failed", map[string]any{"state": "reopening"})

	code, answer = s.post(t, body) // refused at once while reopening
	require.Equal(t, http.StatusServiceUnavailable, code, "%s", answer)
	code, health := serveGet(t, "http://"+s.admin+"/healthz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "store reopening\n", health)
	_, metrics := serveGet(t, "http://"+s.admin+"/metrics")
	for _, want := range []string{`sourcecatalog_store_state{state="reopening"} 1`, `sourcecatalog_store_state{state="healthy"} 0`,
		`sourcecatalog_store_poisonings_total 1`} {
		assertMetric(t, metrics, want)
	}
	assert.Contains(t, metrics, `sourcecatalog_store_reopens_total{result="error"} `)
}

// requireHealed waits for the reopen and checks that every sign says so.
func (s *healingServe) requireHealed(t *testing.T) {
	t.Helper()
	healed := s.log.wait(t, "store reopened", map[string]any{"state": "healthy"})
	assert.Equal(t, float64(1), healed["reopens"])
	code, health := serveGet(t, "http://"+s.admin+"/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok\n", health)
	_, metrics := serveGet(t, "http://"+s.admin+"/metrics")
	for _, want := range []string{`sourcecatalog_store_state{state="healthy"} 1`, `sourcecatalog_store_state{state="reopening"} 0`,
		`sourcecatalog_store_reopens_total{result="ok"} 1`} {
		assertMetric(t, metrics, want)
	}
}

// heal runs the scenario on a serve over store: a snapshot delivered
// while the store works, then break, a message refused and every sign of
// the broken store, then mend, the next snapshot delivered and activated,
// and the first snapshot's messages answered already_received: no receipt
// it had was lost.
func heal(t *testing.T, s *healingServe, brk, mend func()) {
	t.Helper()
	first, firstBodies := serveSnapshot(t, 1)
	s.deliver(t, first, firstBodies, envelope.Staged)
	second, bodies := serveSnapshot(t, 2)
	brk()
	s.requireBroken(t, bodies[0])
	mend()
	s.requireHealed(t)
	s.deliver(t, second, bodies, envelope.Staged)
	s.deliver(t, first, firstBodies, envelope.AlreadyReceived)
	require.Equal(t, exitOK, s.shutdown(t), "the log:\n%s", s.log)
}

// On a full disk serve refuses every message and /healthz says the store
// is reopening; once space is freed it reopens the file and serves again.
func TestServeHealsAfterDiskFull(t *testing.T) {
	fsfault.NeedRoot(t, "the full-disk test, which mounts a tmpfs")
	dir := fsfault.Tmpfs(t, 8<<20)
	filler := filepath.Join(dir, "filler")
	s := startHealingServe(t, "sqlite:"+filepath.Join(dir, "shore.db"), "--create-store")
	heal(t, s, func() { fsfault.FillDisk(t, filler) }, func() { require.NoError(t, os.Remove(filler)) })
}

// The shore file removed under serve: serve answers 503 at once, /healthz
// says so, the log and the metric name the replacement, no file is
// created at the path, and once the file it opened is back serve heals:
// every receipt it gave before is still there.
func TestServeFileRemoved(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "shore.db")
	s := startHealingServe(t, "sqlite:"+path, "--create-store")
	first, firstBodies := serveSnapshot(t, 1)
	s.deliver(t, first, firstBodies, envelope.Staged)
	kept := filepath.Join(dir, "kept.db")
	require.NoError(t, os.Link(path, kept))
	require.NoError(t, os.Remove(path))

	code, health := serveGet(t, "http://"+s.admin+"/healthz") // idle: the health check finds it
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, health, "store ")
	second, bodies := serveSnapshot(t, 2)
	code, answer := s.post(t, bodies[0])
	require.Equal(t, http.StatusServiceUnavailable, code, "%s", answer)
	assert.Contains(t, string(answer), `"store_unavailable"`)
	s.log.wait(t, "store file removed or replaced: refusing requests; only the file it had open is reopened (put it back, or restart to accept the file now at the path)",
		map[string]any{"state": "poisoned"})
	s.log.wait(t, "store reopen failed", map[string]any{"state": "reopening"})
	_, metrics := serveGet(t, "http://"+s.admin+"/metrics")
	assertMetric(t, metrics, `sourcecatalog_store_replacements_total 1`)
	_, err := os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist, "serve created a file where its store was")

	require.NoError(t, os.Rename(kept, path))
	s.requireHealed(t)
	s.deliver(t, second, bodies, envelope.Staged)
	s.deliver(t, first, firstBodies, envelope.AlreadyReceived)
	require.Equal(t, exitOK, s.shutdown(t), "the log:\n%s", s.log)
}

// A MariaDB server stopped under serve: every message is refused and
// /healthz says the store is reopening; once the server is started again
// serve reconnects and serves again. The server is left running.
func TestServeHealsAfterMariaDBRestart(t *testing.T) {
	cfg, admin := mysqlAdmin(t)
	dir := dbtest.Env(t, dbtest.MySQLDirEnv, "the MariaDB restart test", "bash scripts/test.sh exports it for its throwaway server")
	name := throwawayDatabase(t, admin, "sourcecatalog_heal_")
	named := cfg.Clone()
	named.DBName = name
	s := startHealingServe(t, "mysql:"+named.FormatDSN(), "--migrate")
	t.Cleanup(func() { dbtest.StartMariaDB(t, dir, admin) }) // for later tests, should the test stop half-way
	heal(t, s, func() { dbtest.StopMariaDB(t, dir) }, func() { dbtest.StartMariaDB(t, dir, admin) })
}

// Which failures make serve reopen its store: a poisoned SQLite handle, a
// connection lost to MariaDB; never a statement's own failure, a context
// done, nor anything of a memory store, which a reopen would empty.
func TestStorePoisoned(t *testing.T) {
	lost := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, tc := range []struct {
		kind string
		err  error
		want bool
	}{
		{"sqlite", fmt.Errorf("sqlitestore: commit: %w: %w", sqlitestore.ErrPoisoned, errors.New("disk I/O error")), true},
		{"sqlite", sqlitestore.ErrLocked, false},
		{"sqlite", sqlitestore.ErrClosed, false},
		{"sqlite", context.DeadlineExceeded, false},
		{"mysql", fmt.Errorf("mysqlstore: connect: %w", lost), true},
		{"mysql", driver.ErrBadConn, true},
		{"mysql", fmt.Errorf("exec: %w", mysql.ErrInvalidConn), true},
		{"mysql", io.ErrUnexpectedEOF, true},
		{"mysql", syscall.ECONNRESET, true},
		{"mysql", &mysql.MySQLError{Number: 1053, Message: "Server shutdown in progress"}, true},
		{"mysql", &mysql.MySQLError{Number: 1927, Message: "Connection was killed"}, true},
		{"mysql", &mysql.MySQLError{Number: 1213, Message: "Deadlock found"}, false},
		{"mysql", &mysql.MySQLError{Number: 1062, Message: "Duplicate entry"}, false},
		{"mysql", context.DeadlineExceeded, false},
		{"mysql", sqlitestore.ErrPoisoned, false},
		{"memory", sqlitestore.ErrPoisoned, false},
		{"memory", lost, false},
	} {
		f := &storeFlag{kind: tc.kind}
		assert.Equal(t, tc.want, f.poisoned()(tc.err), "%s: %v", tc.kind, tc.err)
	}
}
