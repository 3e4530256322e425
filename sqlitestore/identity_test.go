package sqlitestore_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
	"github.com/yachtmemory/sourcecatalog/storeheal"
)

// setVessel writes an active pointer for vessel, as an acknowledged
// message would.
func setVessel(ctx context.Context, s finalize.Store, vessel uuid.UUID) error {
	return s.WithVessel(ctx, vessel, func(tx finalize.Tx) error {
		return tx.SetVessel(ctx, finalize.VesselState{ActiveRevision: 7})
	})
}

// hasVessel reports whether the file at path holds vessel's pointer.
func hasVessel(t *testing.T, path string, vessel uuid.UUID) bool {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), path, sqlitestore.WithReadOnly())
	require.NoError(t, err)
	defer s.Close()
	var v finalize.VesselState
	require.NoError(t, s.WithVessel(context.Background(), vessel, func(tx finalize.Tx) (err error) {
		v, err = tx.Vessel(context.Background())
		return err
	}))
	return v.ActiveRevision == 7
}

// fileChanges are the ways a store file changes under a running Store:
// each gets the path and a directory for scratch files, and returns the
// bytes it left at the path (nil for none).
var fileChanges = map[string]func(t *testing.T, path, dir string) []byte{
	"remove": func(t *testing.T, path, _ string) []byte {
		require.NoError(t, os.Remove(path))
		return nil
	},
	"rename": func(t *testing.T, path, dir string) []byte {
		require.NoError(t, os.Rename(path, filepath.Join(dir, "moved.db")))
		return nil
	},
	"replace with another store": func(t *testing.T, path, dir string) []byte {
		other := filepath.Join(dir, "other.db")
		s, err := sqlitestore.Open(context.Background(), other)
		require.NoError(t, err)
		require.NoError(t, setVessel(context.Background(), s, uuid.New()))
		require.NoError(t, s.Close())
		return replaceWith(t, path, other)
	},
	"replace with a copy": func(t *testing.T, path, dir string) []byte {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		cp := filepath.Join(dir, "copy.db")
		require.NoError(t, os.WriteFile(cp, b, 0o644))
		return replaceWith(t, path, cp)
	},
}

// replaceWith renames from over path and returns its bytes.
func replaceWith(t *testing.T, path, from string) []byte {
	b, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.Rename(from, path))
	return b
}

// TestFileChangedUnderLoad changes the file under writers: removed,
// renamed away, replaced by another store or by a copy of itself. Every
// write acknowledged is in the file the Store opened with its WAL (kept
// by hard links), nothing is written to the file now at the path (and none is
// created), and from the change on every write and Ping fails with
// ErrFileChanged, wrapping ErrPoisoned and storeheal.ErrReplaced.
func TestFileChangedUnderLoad(t *testing.T) {
	t.Parallel()
	for name, change := range fileChanges {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir := t.TempDir()
			path := filepath.Join(dir, "catalog.db")
			s, err := sqlitestore.Open(ctx, path)
			require.NoError(t, err)
			defer s.Close()

			var mu sync.Mutex
			var acked []uuid.UUID
			failed := make(chan error, 4)
			for range 4 {
				go func() {
					for {
						v := uuid.New()
						if err := setVessel(ctx, s, v); err != nil {
							failed <- err
							return
						}
						mu.Lock()
						acked = append(acked, v)
						mu.Unlock()
					}
				}()
			}
			for n := 0; n < 40; {
				time.Sleep(time.Millisecond)
				mu.Lock()
				n = len(acked)
				mu.Unlock()
			}
			orig := filepath.Join(dir, "orig.db")
			require.NoError(t, os.Link(path, orig)) // keeps the inode the Store opened
			// and its WAL, which holds the commits since the last
			// checkpoint: SQLite does not checkpoint into a moved file.
			require.NoError(t, os.Link(path+"-wal", orig+"-wal"))
			left := change(t, path, dir)
			for range 4 {
				err := <-failed
				require.ErrorIs(t, err, sqlitestore.ErrFileChanged)
				require.ErrorIs(t, err, sqlitestore.ErrPoisoned)
				require.ErrorIs(t, err, storeheal.ErrReplaced)
			}
			require.ErrorIs(t, s.Ping(ctx), sqlitestore.ErrFileChanged)
			require.NoError(t, s.Close())

			mu.Lock()
			defer mu.Unlock()
			require.GreaterOrEqual(t, len(acked), 40)
			for _, v := range acked {
				require.True(t, hasVessel(t, orig, v), "acknowledged vessel %s is not in the file the store opened", v)
			}
			got, err := os.ReadFile(path)
			if left == nil {
				require.ErrorIs(t, err, os.ErrNotExist, "a file was created at the path")
			} else {
				require.NoError(t, err)
				require.Equal(t, left, got, "the file now at the path was written")
			}
		})
	}
}

// TestPingSeesFileChange: an idle Store's Ping, which reads, fails once
// its file is removed, so a health check sees it.
func TestPingSeesFileChange(t *testing.T) {
	t.Parallel()
	s, path := open(t)
	ctx := context.Background()
	require.NoError(t, s.Ping(ctx))
	require.NoError(t, os.Remove(path))
	require.ErrorIs(t, s.Ping(ctx), sqlitestore.ErrFileChanged)
	require.ErrorIs(t, s.Ping(ctx), sqlitestore.ErrPoisoned)
}

// TestCommitSeesFileChange: a transaction that only reads, which SQLite
// lets run on a moved file, is not acknowledged once the file was
// renamed away.
func TestCommitSeesFileChange(t *testing.T) {
	t.Parallel()
	s, path := open(t)
	ctx := context.Background()
	require.NoError(t, os.Rename(path, path+".moved"))
	err := s.WithVessel(ctx, uuid.New(), func(tx finalize.Tx) error {
		_, err := tx.Vessel(ctx)
		return err
	})
	require.ErrorIs(t, err, sqlitestore.ErrFileChanged)
}

// TestWriteSeesFileChange: the first write into an idle Store whose file
// was removed, which SQLite refuses (SQLITE_READONLY_DBMOVED) before any
// commit, fails with ErrFileChanged too.
func TestWriteSeesFileChange(t *testing.T) {
	t.Parallel()
	s, path := open(t)
	ctx := context.Background()
	require.NoError(t, os.Remove(path))
	err := setVessel(ctx, s, uuid.New())
	require.ErrorIs(t, err, sqlitestore.ErrFileChanged)
	require.ErrorIs(t, err, sqlitestore.ErrPoisoned)
}

// TestWithExistingFile: a missing or empty file is refused, and none is
// created; an existing one opens.
func TestWithExistingFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "catalog.db")
	_, err := sqlitestore.Open(ctx, path, sqlitestore.WithExistingFile())
	require.ErrorIs(t, err, sqlitestore.ErrInvalidFile)
	_, err = os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist)

	require.NoError(t, os.WriteFile(path, nil, 0o644))
	_, err = sqlitestore.Open(ctx, path, sqlitestore.WithExistingFile())
	require.ErrorIs(t, err, sqlitestore.ErrInvalidFile)
	require.NoError(t, os.Remove(path))

	s, err := sqlitestore.Open(ctx, path)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	s, err = sqlitestore.Open(ctx, path, sqlitestore.WithExistingFile())
	require.NoError(t, err)
	require.NoError(t, s.Close())
}

// TestSourceReopensOnlyItsFile: a Source whose file is removed or
// replaced is poisoned and reopens nothing else — no new file, not the
// file now at the path — until the file it opened is back; the Handle
// counts the replacement.
func TestSourceReopensOnlyItsFile(t *testing.T) {
	t.Parallel()
	for _, replace := range []bool{false, true} {
		t.Run(map[bool]string{false: "removed", true: "replaced by a copy"}[replace], func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir := t.TempDir()
			path := filepath.Join(dir, "catalog.db")
			statuses := make(chan storeheal.Status, 10000)
			h, err := storeheal.OpenReceiver(ctx, sqlitestore.Source(path), storeheal.WithBackoff(time.Millisecond, 5*time.Millisecond),
				storeheal.WithObserver(func(st storeheal.Status) { statuses <- st }))
			require.NoError(t, err)
			defer h.Close()
			store := storeheal.Receiver(h, func(s finalize.Store) finalize.Store { return s })
			before := uuid.New()
			require.NoError(t, setVessel(ctx, store, before))

			kept := filepath.Join(dir, "kept.db")
			require.NoError(t, os.Link(path, kept))
			var left []byte
			if replace {
				left = fileChanges["replace with a copy"](t, path, dir)
			} else {
				require.NoError(t, os.Remove(path))
			}
			require.ErrorIs(t, setVessel(ctx, store, uuid.New()), sqlitestore.ErrFileChanged)
			for st := range statuses {
				require.NotEqual(t, storeheal.Healthy, st.State, "reopened another file than the one it had open")
				if st.Attempts >= 3 {
					require.ErrorIs(t, st.LastErr, sqlitestore.ErrFileChanged)
					break
				}
			}
			got, err := os.ReadFile(path)
			if replace {
				require.NoError(t, err)
				require.Equal(t, left, got)
			} else {
				require.ErrorIs(t, err, os.ErrNotExist, "the reopen created a file")
			}
			require.Equal(t, storeheal.Reopening, h.Status().State)
			require.EqualValues(t, 1, h.Status().Replacements)

			require.NoError(t, os.Rename(kept, path)) // the file it opened is back
			for st := range statuses {
				if st.State == storeheal.Healthy {
					break
				}
			}
			after := uuid.New()
			require.NoError(t, setVessel(ctx, store, after))
			require.NoError(t, h.Close())
			require.True(t, hasVessel(t, path, before))
			require.True(t, hasVessel(t, path, after))
		})
	}
}
