package sqlitestore_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/ncruces/go-sqlite3/driver"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// sqliteFile makes an SQLite database at path with the given statements.
func sqliteFile(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path)
	require.NoError(t, err)
	defer db.Close()
	for _, q := range stmts {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
}

// TestOpenRefuses checks that Open fails closed, with ErrInvalidFile and
// without changing the file, on a path that is not a regular file or a
// file that is not a database of this schema.
func TestOpenRefuses(t *testing.T) {
	cases := []struct {
		name string
		make func(t *testing.T, path string)
	}{
		{"symlink", func(t *testing.T, path string) {
			target := filepath.Join(filepath.Dir(path), "target.db")
			s, err := sqlitestore.Open(context.Background(), target)
			require.NoError(t, err)
			require.NoError(t, s.Close())
			require.NoError(t, os.Symlink(target, path))
		}},
		{"dangling symlink", func(t *testing.T, path string) {
			require.NoError(t, os.Symlink(filepath.Join(filepath.Dir(path), "nowhere.db"), path))
		}},
		{"directory", func(t *testing.T, path string) { require.NoError(t, os.Mkdir(path, 0o755)) }},
		{"fifo", func(t *testing.T, path string) { require.NoError(t, mkfifo(path)) }},
		{"random bytes", func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, []byte(rand.Text()+rand.Text()), 0o644))
		}},
		{"another application", func(t *testing.T, path string) {
			sqliteFile(t, path, "CREATE TABLE notes (body TEXT)", "INSERT INTO notes VALUES ('hello')")
		}},
		{"another application id", func(t *testing.T, path string) {
			sqliteFile(t, path, "PRAGMA application_id = 42", "PRAGMA user_version = 1")
		}},
		{"newer schema version", func(t *testing.T, path string) {
			s, err := sqlitestore.Open(context.Background(), path)
			require.NoError(t, err)
			require.NoError(t, s.Close())
			sqliteFile(t, path, fmt.Sprintf("PRAGMA user_version = %d", sqlitestore.SchemaVersion+1))
		}},
		{"cut by one byte", cutFile(func(n int64) int64 { return n - 1 })},
		{"cut by 1000 bytes", cutFile(func(n int64) int64 { return n - 1000 })},
		{"cut at a page boundary", cutFile(func(n int64) int64 { return n - 4096 })},
		{"cut inside the header", cutFile(func(int64) int64 { return 50 })},
		{"symlinked lock file", func(t *testing.T, path string) {
			require.NoError(t, os.Symlink(filepath.Join(filepath.Dir(path), "elsewhere"), path+".lock"))
		}},
	}
	for _, journal := range []string{"truncate", "wal"} {
		for _, c := range cases {
			t.Run(journal+"/"+c.name, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "catalog.db")
				c.make(t, path)
				before := snapshotFile(path)
				s, err := sqlitestore.Open(context.Background(), path, sqlitestore.WithJournal(journal))
				if s != nil {
					s.Close()
				}
				require.ErrorIs(t, err, sqlitestore.ErrInvalidFile)
				require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable)
				require.Equal(t, before, snapshotFile(path), "the file is unchanged")
			})
		}
	}
}

// cutFile makes a file with an activated cycle, closed, and cuts it to
// the size to returns for its size.
func cutFile(to func(int64) int64) func(t *testing.T, path string) {
	return func(t *testing.T, path string) {
		s, err := sqlitestore.Open(context.Background(), path)
		require.NoError(t, err)
		var l ledger
		require.NoError(t, runCycle(context.Background(), s, 1, l.ack))
		require.NoError(t, s.Close())
		fi, err := os.Stat(path)
		require.NoError(t, err)
		require.Zero(t, fi.Size()%4096, "fixture: 4096-byte pages")
		require.NoError(t, os.Truncate(path, to(fi.Size())))
	}
}

// snapshotFile returns the bytes of path's file, following nothing, or ""
// when it is not a regular file.
func snapshotFile(path string) string {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	b, _ := os.ReadFile(path)
	return string(b)
}

// TestOpenAccepts opens an absent path, an empty file and a file of the
// schema, and refuses bad options with ErrInvalidValue.
func TestOpenAccepts(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, path := range []string{filepath.Join(dir, "new.db"), filepath.Join(dir, "empty.db")} {
		if filepath.Base(path) == "empty.db" {
			require.NoError(t, os.WriteFile(path, nil, 0o644))
		}
		for range 2 { // creates, then opens what it created
			s, err := sqlitestore.Open(ctx, path)
			require.NoError(t, err, path)
			require.NoError(t, s.Close())
			require.NoError(t, s.Close(), "Close is idempotent")
		}
	}
	for _, d := range []time.Duration{-time.Millisecond, 11 * time.Minute} {
		_, err := sqlitestore.Open(ctx, filepath.Join(dir, "x.db"), sqlitestore.WithBusyTimeout(d))
		require.ErrorIs(t, err, sourcecatalog.ErrInvalidValue, d)
	}
	_, err := sqlitestore.Open(ctx, "")
	require.ErrorIs(t, err, sourcecatalog.ErrInvalidValue)
}
