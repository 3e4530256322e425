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
// EIO or ENOSPC, at points spread over every such operation: the
// failing call reports an error wrapping ErrStoreUnavailable, every later
// call ErrPoisoned; the file, reopened, holds everything acknowledged and
// serves again.
func TestIOErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base, acked := baseline(t)
	dry := base.PowerCut()
	s := openFS(t, dry)
	_, before := dry.Ops()
	var l ledger
	require.NoError(t, faultCycles(ctx, s, &l))
	_, after := dry.Ops()
	require.NoError(t, s.Close())

	cases := []struct {
		kind string
		err  error
	}{
		{"write", sqlite3.IOERR_WRITE},
		{"write", sqlite3.FULL}, // ENOSPC
		{"sync", sqlite3.IOERR_FSYNC},
		{"truncate", sqlite3.IOERR_TRUNCATE},
		{"lock", sqlite3.IOERR_LOCK},
	}
	const points = 12 // per case, spread evenly
	for _, c := range cases {
		count := after[c.kind] - before[c.kind]
		require.Greater(t, count, 0, "the cycles do no %s", c.kind)
		for i := range min(points, count) {
			n := 1 + i*count/min(points, count)
			t.Run(fmt.Sprintf("%s-%v-%03d", c.kind, c.err, n), func(t *testing.T) {
				fs := base.PowerCut()
				s := openFS(t, fs)
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

				again := openFS(t, fs)
				defer func() { require.NoError(t, again.Close()) }()
				verify(t, ctx, again, append(acked, l.all()...))
				require.NoError(t, runCycle(ctx, again, 4, l.ack), "the reopened store serves")
			})
		}
	}
}
