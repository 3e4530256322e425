package sqlitestore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ncruces/go-sqlite3"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// TestIOErrors fails one write, sync, truncation or lock of a cycle with
// EIO or ENOSPC, at points spread over every such operation, in either
// journal (a WAL commit truncates nothing and takes no file lock: its
// locks are in shared memory): the failing call reports an error wrapping
// ErrStoreUnavailable, every later call ErrPoisoned; the file, reopened,
// holds everything acknowledged and serves again.
func TestIOErrors(t *testing.T) {
	t.Parallel()
	type fault struct {
		kind string
		err  error
	}
	write := []fault{
		{"write", sqlite3.IOERR_WRITE},
		{"write", sqlite3.FULL}, // ENOSPC
		{"sync", sqlite3.IOERR_FSYNC},
	}
	for _, j := range []struct {
		journal string
		faults  []fault
	}{
		{"truncate", append(write, fault{"truncate", sqlite3.IOERR_TRUNCATE}, fault{"lock", sqlite3.IOERR_LOCK})},
		{"wal", write},
	} {
		t.Run(j.journal, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			base, acked := journalBaseline(t, j.journal)
			dry := base.PowerCut()
			s := openJournal(t, dry, j.journal)
			_, before := dry.Ops()
			var l ledger
			require.NoError(t, faultCycles(ctx, s, &l))
			_, after := dry.Ops()
			require.NoError(t, s.Close())

			const points = 12 // per fault, spread evenly
			for _, c := range j.faults {
				count := after[c.kind] - before[c.kind]
				require.Greater(t, count, 0, "the cycles do no %s", c.kind)
				for i := range min(points, count) {
					n := 1 + i*count/min(points, count)
					t.Run(fmt.Sprintf("%s-%v-%03d", c.kind, c.err, n), func(t *testing.T) {
						fs := base.PowerCut()
						s := openJournal(t, fs, j.journal)
						fs.FailNext(c.kind, n, c.err)
						var l ledger
						err := faultCycles(ctx, s, &l)
						require.True(t, fs.Failed(), "the error was injected")
						require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable)
						require.ErrorIs(t, err, sqlitestore.ErrPoisoned)
						err = s.WithVessel(ctx, faultVessel, func(finalize.Tx) error { return nil })
						require.ErrorIs(t, err, sqlitestore.ErrPoisoned, "the handle stays poisoned")
						err = faultCycles(ctx, s, &l)
						require.ErrorIs(t, err, sqlitestore.ErrPoisoned, "the handle stays poisoned")
						require.NoError(t, s.Close())

						again := openJournal(t, fs, j.journal)
						defer func() { require.NoError(t, again.Close()) }()
						verify(t, ctx, again, append(acked, l.all()...))
						require.NoError(t, runCycle(ctx, again, 4, l.ack), "the reopened store serves")
					})
				}
			}
		})
	}
}
