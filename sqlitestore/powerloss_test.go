package sqlitestore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// dbPath is the database's name in a memFS.
const dbPath = "/catalog.db"

// openFS opens the database of fs.
func openFS(t *testing.T, fs *memFS) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), dbPath, sqlitestore.WithVFS(fs.name))
	require.NoError(t, err)
	return s
}

// baseline returns a memFS whose database went through one complete
// cycle and was closed, and the ledger of that cycle.
func baseline(t *testing.T) (*memFS, []string) {
	t.Helper()
	fs := newMemFS()
	s := openFS(t, fs)
	var l ledger
	require.NoError(t, runCycle(context.Background(), s, 1, l.ack))
	require.NoError(t, s.Close())
	return fs.PowerCut(), l.all()
}

// faultCycles is what a fault test runs after the baseline: one cycle,
// that is an outbox commit, the receipt of its manifest and two chunks,
// and a finalize that activates it over the baseline's active snapshot.
func faultCycles(ctx context.Context, s *sqlitestore.Store, l *ledger) error {
	return runCycle(ctx, s, 2, l.ack)
}

// TestPowerLoss cuts the power at every write, truncation and sync of a
// cycle in a rollback journal (WithRollbackJournal; TestWALCutPoints cuts
// the WAL) — every sync point of an outbox commit, a receipt and a finalize —
// and checks that what survives is a database with every acknowledged
// receipt, commit and activation (verify).
func TestPowerLoss(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base, acked := journalBaseline(t, "truncate")

	// A run without a cut counts the operations.
	dry := base.PowerCut()
	s := openJournal(t, dry, "truncate")
	before, _ := dry.Ops()
	var l ledger
	require.NoError(t, faultCycles(ctx, s, &l))
	total, kinds := dry.Ops()
	total -= before
	require.NoError(t, s.Close())
	t.Logf("%d cut points: %v", total, kinds)
	require.Greater(t, kinds["sync"], 0)
	require.Greater(t, kinds["truncate"], 0)

	for n := 1; n <= total; n++ {
		t.Run(fmt.Sprintf("cut-%03d", n), func(t *testing.T) {
			fs := base.PowerCut()
			s := openJournal(t, fs, "truncate")
			fs.Arm(n)
			var l ledger
			err := faultCycles(ctx, s, &l)
			require.True(t, fs.Off(), "the power was cut")
			require.Error(t, err, "a cycle went on after the power cut")
			s.Close() // the connection is dead; its error says nothing
			after := openJournal(t, fs.PowerCut(), "truncate")
			defer func() { require.NoError(t, after.Close()) }()
			verify(t, ctx, after, append(acked, l.all()...))
		})
	}
}

// TestCrashPoints kills the process, as it were, before every write,
// truncation and sync of a cycle in a rollback journal (every third under the race detector): unlike a power cut, every write made
// until then survives, so the file may be caught half-written, with a
// hot journal to roll it back. Open must recover it rather than take the
// half-written file for a cut one, and what survives holds every
// acknowledged receipt, commit and activation.
func TestCrashPoints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base, acked := journalBaseline(t, "truncate")
	dry := base.PowerCut()
	s := openJournal(t, dry, "truncate")
	before, _ := dry.Ops()
	var l ledger
	require.NoError(t, faultCycles(ctx, s, &l))
	total, _ := dry.Ops()
	total -= before
	require.NoError(t, s.Close())
	step := 1
	if raceEnabled {
		step = 3 // a commit's writes span many points in a row
	}
	for n := 1; n <= total; n += step {
		t.Run(fmt.Sprintf("crash-%03d", n), func(t *testing.T) {
			fs := base.PowerCut()
			s := openJournal(t, fs, "truncate")
			fs.Arm(n)
			var l ledger
			require.Error(t, faultCycles(ctx, s, &l))
			s.Close()
			after := openJournal(t, fs.Crash(), "truncate")
			defer func() { require.NoError(t, after.Close()) }()
			verify(t, ctx, after, append(acked, l.all()...))
		})
	}
}
