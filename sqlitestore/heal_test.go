package sqlitestore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/vfs"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/outbox"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
	"github.com/yachtmemory/sourcecatalog/storeheal"
)

// brokenFS is a memFS whose storage can break and be mended: while
// broken, every write, truncation and sync fails with the error given, as
// a disk that has gone bad or full does, and, for a bad disk, every lock
// with IOERR_LOCK; reads still work.
type brokenFS struct {
	*memFS
	name string

	mu    sync.Mutex
	err   error // nil while the storage works
	locks bool  // locks fail too
}

func newBrokenFS(t *testing.T, fs *memFS) *brokenFS {
	b := &brokenFS{memFS: fs, name: fs.name + "-broken"}
	vfs.Register(b.name, b)
	t.Cleanup(func() { vfs.Unregister(b.name) })
	return b
}

func (b *brokenFS) set(err error, locks bool) {
	b.mu.Lock()
	b.err, b.locks = err, locks
	b.mu.Unlock()
}

func (b *brokenFS) fault(lock bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.err == nil || lock && !b.locks:
		return nil
	case lock:
		return sqlite3.IOERR_LOCK
	}
	return b.err
}

func (b *brokenFS) Open(name string, flags vfs.OpenFlag) (vfs.File, vfs.OpenFlag, error) {
	f, flags, err := b.memFS.Open(name, flags)
	if err != nil {
		return nil, flags, err
	}
	return brokenFile{f, b}, flags, nil
}

type brokenFile struct {
	vfs.File
	fs *brokenFS
}

// SharedMemory passes on the memFile's WAL index.
func (f brokenFile) SharedMemory() vfs.SharedMemory {
	if m, ok := f.File.(vfs.FileSharedMemory); ok {
		return m.SharedMemory()
	}
	return nil
}

func (f brokenFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.fault(false); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}

func (f brokenFile) Truncate(size int64) error {
	if err := f.fs.fault(false); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

func (f brokenFile) Sync(flags vfs.SyncFlag) error {
	if err := f.fs.fault(false); err != nil {
		return err
	}
	return f.File.Sync(flags)
}

func (f brokenFile) Lock(l vfs.LockLevel) error {
	if err := f.fs.fault(true); err != nil {
		return err
	}
	return f.File.Lock(l)
}

// A storeheal.Handle over a Store heals it without a restart: an I/O
// error injected through the VFS poisons the handle, calls are refused
// with ErrReopening while the storage stays broken and the reopens fail —
// the file opens on a full disk, but the probe's write fails — and once it
// is mended the Handle reopens the file and serves again, with every
// acknowledged receipt, commit and activation kept.
func TestHealAfterIOError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		fault error
		locks bool
	}{{"EIO", sqlite3.IOERR_WRITE, true}, {"ENOSPC", sqlite3.FULL, false}, {"fsync", sqlite3.IOERR_FSYNC, true}} {
		t.Run(tc.name, func(t *testing.T) {
			base, acked := baseline(t)
			fs := base.PowerCut()
			disk := newBrokenFS(t, fs)
			states := make(chan storeheal.Status, 1000)
			h, err := storeheal.Open(ctx, func(ctx context.Context) (*sqlitestore.Store, io.Closer, error) {
				s, err := sqlitestore.Open(ctx, dbPath, sqlitestore.WithVFS(disk.name))
				if err != nil {
					return nil, nil, err
				}
				if err := storeheal.ProbeReceiver(ctx, s); err != nil {
					return nil, nil, errors.Join(err, s.Close())
				}
				return s, s, nil
			}, func(err error) bool { return errors.Is(err, sqlitestore.ErrPoisoned) },
				storeheal.WithBackoff(time.Millisecond, 10*time.Millisecond),
				storeheal.WithObserver(func(s storeheal.Status) { states <- s }))
			require.NoError(t, err)
			rs := storeheal.Receiver(h, func(s *sqlitestore.Store) finalize.Store { return s })
			ob := storeheal.Outbox(h, func(s *sqlitestore.Store) outbox.Store { return s.Outbox() })
			var l ledger
			require.NoError(t, runCycleOn(ctx, ob, rs, 2, l.ack))

			disk.set(tc.fault, tc.locks)
			err = runCycleOn(ctx, ob, rs, 3, l.ack)
			require.ErrorIs(t, err, sqlitestore.ErrPoisoned, "the failing call")
			err = rs.WithVessel(ctx, faultVessel, func(finalize.Tx) error { return nil })
			require.ErrorIs(t, err, storeheal.ErrReopening, "the next call")
			require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable)
			for st := range states { // reopens fail while the disk is broken
				require.NotEqual(t, storeheal.Healthy, st.State, "healthy on a broken disk: %+v", st)
				if st.Attempts == 3 {
					require.ErrorIs(t, st.LastErr, sourcecatalog.ErrStoreUnavailable)
					require.ErrorIs(t, st.Cause, sqlitestore.ErrPoisoned)
					break
				}
			}

			disk.set(nil, false)
			for st := range states {
				if st.State == storeheal.Healthy {
					require.Equal(t, int64(1), st.Reopens)
					break
				}
			}
			require.NoError(t, runCycleOn(ctx, ob, rs, 4, l.ack), "the healed store serves")
			require.NoError(t, h.Close())

			s := openFS(t, fs)
			defer func() { require.NoError(t, s.Close()) }()
			verify(t, ctx, s, append(acked, l.all()...))
		})
	}
}

// A Store opened with WithExclusiveLock is reopened by a Handle: the
// poisoned handle releases its lock before the new one takes it.
func TestHealWithExclusiveLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := t.TempDir() + "/heal.db"
	states := make(chan storeheal.Status, 100)
	h, err := storeheal.Open(ctx, func(ctx context.Context) (*sqlitestore.Store, io.Closer, error) {
		s, err := sqlitestore.Open(ctx, path, sqlitestore.WithExclusiveLock())
		return s, s, err
	}, func(err error) bool { return errors.Is(err, sqlitestore.ErrPoisoned) },
		storeheal.WithObserver(func(s storeheal.Status) { states <- s }))
	require.NoError(t, err)
	defer func() { require.NoError(t, h.Close()) }()
	err = h.Do(func(*sqlitestore.Store) error { return fmt.Errorf("an I/O error: %w", sqlitestore.ErrPoisoned) })
	require.ErrorIs(t, err, sqlitestore.ErrPoisoned)
	for st := range states {
		require.Zero(t, st.Attempts, "a reopen failed: %v", st.LastErr)
		if st.State == storeheal.Healthy {
			break
		}
	}
	require.Equal(t, int64(1), h.Status().Reopens)
	_, err = sqlitestore.Open(ctx, path)
	require.ErrorIs(t, err, sqlitestore.ErrLocked, "the new handle holds the lock")
	rs := storeheal.Receiver(h, func(s *sqlitestore.Store) finalize.Store { return s })
	_, err = rs.(finalize.VesselLister).Vessels(ctx, false)
	require.NoError(t, err)
}
