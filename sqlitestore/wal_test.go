package sqlitestore_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// walSize returns the size of the WAL beside path, -1 when there is none.
func walSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path + "-wal")
	if os.IsNotExist(err) {
		return -1
	}
	require.NoError(t, err)
	return fi.Size()
}

// TestOpenRefusesLoneLog: a database file removed without its WAL (or
// rollback journal) leaves the log's commits behind, which SQLite would
// delete on creating a new, empty database at the path; Open refuses
// with ErrInvalidFile instead, read-write or read-only, and leaves the
// log as it was and creates nothing. An empty log is nothing to keep.
func TestOpenRefusesLoneLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, path := open(t)
	var l ledger
	require.NoError(t, runCycle(ctx, s, 1, l.ack))
	wal, err := os.ReadFile(path + "-wal")
	require.NoError(t, err)
	require.NotEmpty(t, wal, "fixture: the commits are in the WAL")

	for _, suffix := range []string{"-wal", "-journal"} {
		for name, opts := range map[string][]sqlitestore.Option{"read-write": nil, "read-only": {sqlitestore.WithReadOnly()}} {
			t.Run(suffix+"/"+name, func(t *testing.T) {
				lone := filepath.Join(t.TempDir(), "catalog.db")
				require.NoError(t, os.WriteFile(lone+suffix, wal, 0o600))
				_, err := sqlitestore.Open(ctx, lone, opts...)
				require.ErrorIs(t, err, sqlitestore.ErrInvalidFile)
				require.ErrorContains(t, err, "catalog.db"+suffix)
				got, err := os.ReadFile(lone + suffix)
				require.NoError(t, err, "the log is kept")
				require.Equal(t, wal, got, "the log is kept as it was")
				_, err = os.Stat(lone)
				require.True(t, os.IsNotExist(err), "no database was created: %v", err)
			})
		}
	}
	t.Run("empty", func(t *testing.T) {
		lone := filepath.Join(t.TempDir(), "catalog.db")
		require.NoError(t, os.WriteFile(lone+"-wal", nil, 0o600))
		s, err := sqlitestore.Open(ctx, lone)
		require.NoError(t, err)
		require.NoError(t, s.Close())
	})
}

// TestCloseCheckpoints: Close copies the WAL into the database file and
// empties it, even while another Store (here a read-only one, as an
// operator's command opens) has the file open, where SQLite's close
// would leave the WAL as it is; the reader sees every commit, before and
// after, and the file alone, reopened, holds them.
func TestCloseCheckpoints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "catalog.db")
	s, err := sqlitestore.Open(ctx, path)
	require.NoError(t, err)
	var l ledger
	require.NoError(t, runCycle(ctx, s, 1, l.ack))
	require.Positive(t, walSize(t, path), "fixture: the commits are in the WAL")

	r, err := sqlitestore.Open(ctx, path, sqlitestore.WithReadOnly())
	require.NoError(t, err, "a read-only Open beside a writer in WAL mode")
	defer func() { require.NoError(t, r.Close()) }()
	require.Equal(t, int64(1), lastRevision(t, r))
	require.NoError(t, runCycle(ctx, s, 2, l.ack))
	require.Equal(t, int64(2), lastRevision(t, r), "the reader sees the next commit")

	require.NoError(t, s.Close())
	require.Zero(t, walSize(t, path), "Close left frames in the WAL")
	require.Equal(t, int64(2), lastRevision(t, r))

	alone := filepath.Join(t.TempDir(), "copy.db")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(alone, b, 0o600))
	again, err := sqlitestore.Open(ctx, alone)
	require.NoError(t, err)
	defer func() { require.NoError(t, again.Close()) }()
	verify(t, ctx, again, l.all())
}

// lastRevision reads the last revision the outbox allocated.
func lastRevision(t *testing.T, s *sqlitestore.Store) int64 {
	t.Helper()
	var rev int64
	require.NoError(t, s.QueryRow(context.Background(), "SELECT max(last_revision) FROM outbox_vessels", &rev))
	return rev
}
