package sqlitestore_test

import (
	"context"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// TestDiskFull fails a write, sync or truncation of a cycle with ENOSPC,
// as the operating system reports it (an *os.PathError), in either
// journal (a WAL commit truncates nothing): the call fails with
// ErrDiskFull ("disk full") and ErrPoisoned, every later call says so
// too, and the file, reopened, holds everything acknowledged.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for journal, kinds := range map[string][]string{"truncate": {"write", "sync", "truncate"}, "wal": {"write", "sync"}} {
		base, acked := journalBaseline(t, journal)
		for _, kind := range kinds {
			t.Run(journal+"/"+kind, func(t *testing.T) {
				fs := base.PowerCut()
				s := openJournal(t, fs, journal)
				fs.FailNext(kind, 1, &os.PathError{Op: kind, Path: dbPath, Err: syscall.ENOSPC})
				var l ledger
				err := faultCycles(ctx, s, &l)
				require.True(t, fs.Failed(), "the error was injected")
				for _, err := range []error{err, s.WithVessel(ctx, faultVessel, func(finalize.Tx) error { return nil })} {
					require.ErrorIs(t, err, sqlitestore.ErrDiskFull)
					require.ErrorIs(t, err, sqlitestore.ErrPoisoned)
					require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable)
					require.ErrorContains(t, err, "disk full")
				}
				require.NoError(t, s.Close())
				again := openJournal(t, fs, journal)
				defer func() { require.NoError(t, again.Close()) }()
				verify(t, ctx, again, append(acked, l.all()...))
			})
		}
	}
}
