package sqlitestore_test

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/internal/fsfault"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
	"github.com/yachtmemory/sourcecatalog/storeheal"
)

// TestReadOnlyDirectory makes the directory of a Source's file read-only
// under the Store (a read-only bind mount over it, as fsfault.ReadOnly
// does). In WAL mode the Store commits on through it, since it holds open
// every file it writes; under the rollback journal the next commit fails
// to open its journal and poisons the Store. Either way a reopen during
// the fault fails with ErrStoreUnavailable, naming the read-only file
// system, and once the directory is writable again the same Source
// reopens the file in the same process and commits, every commit that
// succeeded kept.
func TestReadOnlyDirectory(t *testing.T) {
	fsfault.NeedRoot(t, "the read-only directory test, which mounts a tmpfs")
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		opts     []sqlitestore.Option
		servesOn bool // the Store commits through the fault
	}{{"WAL", nil, true}, {"rollback journal", []sqlitestore.Option{sqlitestore.WithRollbackJournal()}, false}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := fsfault.Tmpfs(t, 8<<20)
			src := sqlitestore.Source(filepath.Join(dir, "catalog.db"), tc.opts...)
			s, c, err := src.Open(ctx)
			require.NoError(t, err)
			// c is closed by the test, or by the cleanup should it fail,
			// before Tmpfs's cleanup: a file held open keeps it mounted.
			open := true
			t.Cleanup(func() {
				if open {
					c.Close()
				}
			})
			commits := 0
			probe := func(s finalize.Store) error {
				err := storeheal.ProbeReceiver(ctx, s)
				if err == nil {
					commits++
				}
				return err
			}
			require.NoError(t, probe(s))

			mend := fsfault.ReadOnly(t, dir)
			if tc.servesOn {
				for range 3 {
					require.NoError(t, probe(s), "a commit while the directory is read-only")
				}
			} else {
				err := probe(s)
				require.ErrorIs(t, err, sqlitestore.ErrPoisoned)
				require.ErrorIs(t, err, syscall.EROFS)
			}
			open = false
			require.NoError(t, c.Close())
			_, _, err = src.Open(ctx)
			require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable, "a reopen while the directory is read-only")
			require.ErrorIs(t, err, syscall.EROFS)

			mend()
			s, c, err = src.Open(ctx)
			require.NoError(t, err, "the reopen once the directory is writable")
			open = true
			require.NoError(t, probe(s), "a commit once the directory is writable")
			require.Equal(t, int64(commits), probeCount(t, ctx, s), "the commits kept")
			open = false
			require.NoError(t, c.Close())
		})
	}
}

// probeCount returns how many storeheal.ProbeReceiver commits s holds:
// the active revision each one counts up on the nil vessel.
func probeCount(t *testing.T, ctx context.Context, s finalize.Store) int64 {
	var n int64
	require.NoError(t, s.WithVessel(ctx, uuid.Nil, func(tx finalize.Tx) error {
		v, err := tx.Vessel(ctx)
		n = v.ActiveRevision
		return err
	}))
	return n
}
