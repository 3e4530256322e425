package sqlitestore_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// The cut-point tests in a WAL journal: the power cut, or the process
// killed, at every write, truncation, sync and deletion of cycles that
// append to the WAL, checkpoint it into the database, restart it over
// frames already copied, truncate it, and close (which checkpoints and
// deletes it). The WAL index (shared memory) does not survive any of
// them (see memFS).

// openJournal opens the database of fs in journal mode ("truncate" or
// "wal").
func openJournal(t *testing.T, fs *memFS, journal string) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), dbPath, sqlitestore.WithVFS(fs.name), sqlitestore.WithJournal(journal))
	require.NoError(t, err)
	return s
}

// journalBaseline is baseline in journal mode: a database that went
// through one complete cycle and was closed (in WAL mode, checkpointed
// and its WAL deleted).
func journalBaseline(t *testing.T, journal string) (*memFS, []string) {
	t.Helper()
	fs := newMemFS()
	t.Cleanup(fs.unregister)
	s := openJournal(t, fs, journal)
	var l ledger
	require.NoError(t, runCycle(context.Background(), s, 1, l.ack))
	require.NoError(t, s.Close())
	return fs.PowerCut(), l.all()
}

// checkpointSteps is what the WAL cut tests run after the baseline: a
// cycle, which appends to the WAL; a PASSIVE checkpoint, which copies it
// into the database and syncs the database; a cycle whose first commit
// restarts the WAL over the copied frames; a TRUNCATE checkpoint, which
// also empties the WAL; a cycle; and Close, which checkpoints and deletes
// the WAL. It returns the first error (Close's included: the power may be
// cut inside it).
func checkpointSteps(ctx context.Context, s *sqlitestore.Store, l *ledger) error {
	steps := []func() error{
		func() error { return runCycle(ctx, s, 2, l.ack) },
		func() error { return checkpoint(ctx, s, "PASSIVE") },
		func() error { return runCycle(ctx, s, 3, l.ack) },
		func() error { return checkpoint(ctx, s, "TRUNCATE") },
		func() error { return runCycle(ctx, s, 4, l.ack) },
		s.Close,
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// checkpoint runs PRAGMA wal_checkpoint(mode); a checkpoint that could not
// copy every frame (another reader) is an error here, where none runs.
func checkpoint(ctx context.Context, s *sqlitestore.Store, mode string) error {
	var busy, frames, copied int
	if err := s.QueryRow(ctx, "PRAGMA wal_checkpoint("+mode+")", &busy, &frames, &copied); err != nil {
		return err
	}
	if busy != 0 || (frames >= 0 && copied != frames) {
		return fmt.Errorf("checkpoint %s: busy %d, %d of %d frames copied", mode, busy, copied, frames)
	}
	return nil
}

// survivals are what a cut leaves of the changes not yet synced: none
// (power cut), some of them in another order (power cut on a disk that
// had written part of its cache), all (the process killed).
// A partial survival runs at every other cut point (first from the
// first, second from the second), which between them cover every one.
type survival struct {
	name        string
	after       func(*memFS) *memFS
	first, step int
}

var survivals = []survival{
	{"power", (*memFS).PowerCut, 1, 1},
	{"power-even", func(fs *memFS) *memFS { return fs.PowerCutKeeping(keepEven) }, 1, 2},
	{"power-odd", func(fs *memFS) *memFS { return fs.PowerCutKeeping(keepOdd) }, 2, 2},
	{"kill", (*memFS).Crash, 1, 1},
}

// TestWALCutPoints cuts the power, or kills the process, at every
// mutating operation of checkpointSteps in a WAL journal (see
// survivals), and checks that what survives opens, in WAL mode, to a
// database with every acknowledged receipt, commit and activation
// (verify).
func TestWALCutPoints(t *testing.T) {
	t.Parallel()
	base, acked := journalBaseline(t, "wal")
	total, byFile := dryRun(t, base, "wal", checkpointSteps)
	// Every step of the WAL is among the cut points: frames appended and
	// synced at each commit, the database written and synced by a
	// checkpoint, the WAL truncated, and deleted at Close.
	for _, op := range []string{"write " + dbPath + "-wal", "sync " + dbPath + "-wal", "write " + dbPath, "sync " + dbPath, "truncate " + dbPath + "-wal", "delete " + dbPath + "-wal"} {
		require.Positive(t, byFile[op], "no %q among the cut points", op)
	}
	require.Zero(t, byFile["write "+dbPath+"-journal"], "a WAL database wrote a rollback journal")
	cutEverywhere(t, base, acked, "wal", total, survivals, checkpointSteps)
}

// TestTruncateCutPointsKeepingSome is TestPowerLoss on a disk that had
// written some of the changes not yet synced, in another order than
// SQLite made them, when the power went: the rollback journal's syncs
// order what matters.
func TestTruncateCutPointsKeepingSome(t *testing.T) {
	t.Parallel()
	base, acked := journalBaseline(t, "truncate")
	steps := func(ctx context.Context, s *sqlitestore.Store, l *ledger) error {
		return errors.Join(faultCycles(ctx, s, l), s.Close())
	}
	total, _ := dryRun(t, base, "truncate", steps)
	cutEverywhere(t, base, acked, "truncate", total, survivals[1:3], steps)
}

// dryRun runs steps on a copy of base in journal mode without a cut and
// returns the number of mutating operations they made (the cut points),
// and how many of each kind on each file (memFS.OpsByFile).
func dryRun(t *testing.T, base *memFS, journal string, steps func(context.Context, *sqlitestore.Store, *ledger) error) (int, map[string]int) {
	t.Helper()
	dry := base.PowerCut()
	t.Cleanup(dry.unregister)
	s := openJournal(t, dry, journal)
	before, _ := dry.Ops()
	var l ledger
	require.NoError(t, steps(context.Background(), s, &l))
	total, kinds := dry.Ops()
	byFile := dry.OpsByFile()
	t.Logf("%d cut points: %v; by file: %v", total-before, kinds, byFile)
	return total - before, byFile
}

// cutEverywhere runs steps on a copy of base in journal mode, cut at each
// of its total points by each survival (every fifth of its points under
// the race detector, whose run is slow), and verifies that what survives
// opens to a database with every acknowledged line (verify).
func cutEverywhere(t *testing.T, base *memFS, acked []string, journal string, total int, svs []survival, steps func(context.Context, *sqlitestore.Store, *ledger) error) {
	ctx := context.Background()
	for _, sv := range svs {
		t.Run(sv.name, func(t *testing.T) {
			t.Parallel()
			step := sv.step
			if raceEnabled {
				step *= 5
			}
			for n := sv.first; n <= total; n += step {
				t.Run(fmt.Sprintf("cut-%03d", n), func(t *testing.T) {
					fs := base.PowerCut()
					defer fs.unregister()
					s := openJournal(t, fs, journal)
					fs.Arm(n)
					var l ledger
					err := steps(ctx, s, &l)
					require.True(t, fs.Off(), "the power was cut (error: %v)", err)
					s.Close() // the connection is dead; its error says nothing
					left := sv.after(fs)
					defer left.unregister()
					after := openJournal(t, left, journal)
					defer func() { require.NoError(t, after.Close()) }()
					verify(t, ctx, after, append(acked, l.all()...))
				})
			}
		})
	}
}

// walCrashed returns a memFS holding what a killed process left of a
// WAL database: the file as of the baseline's checkpoint and a WAL whose
// one committed transaction added a page (a table), so that the WAL's
// page 1 counts a page the file does not hold.
func walCrashed(t *testing.T) *memFS {
	t.Helper()
	first := newMemFS()
	t.Cleanup(first.unregister)
	s := openJournal(t, first, "wal")
	var l ledger
	require.NoError(t, runCycle(context.Background(), s, 1, l.ack))
	require.NoError(t, s.Close()) // checkpoints, and deletes the WAL
	base := first.Crash()
	t.Cleanup(base.unregister)
	require.Equal(t, -1, base.size(dbPath+"-wal"), "fixture: no WAL")
	s = openJournal(t, base, "wal")
	require.NoError(t, s.Exec(context.Background(), "CREATE TABLE scratch (x INTEGER) STRICT"))
	left := base.Crash()
	t.Cleanup(left.unregister)
	s.Close()
	require.Positive(t, left.size(dbPath+"-wal"), "fixture: frames in the WAL")
	return left
}

// TestOpenChecksTheWAL: Open checks a WAL database as its file overlaid
// with its WAL's committed frames. The whole pair opens (the WAL's page 1
// may count pages the file does not hold yet); a file cut below pages
// that the WAL does not hold is refused with ErrInvalidFile, and so is a
// WAL whose page size disagrees with the file's, both before anything is
// written.
func TestOpenChecksTheWAL(t *testing.T) {
	t.Parallel()
	fs := walCrashed(t)
	db, wal := fs.file(dbPath), fs.file(dbPath+"-wal")
	page := pageSize(db)

	whole := fs.PowerCut()
	defer whole.unregister()
	require.NoError(t, openJournal(t, whole, "wal").Close(), "the file with its WAL opens")

	refused := func(t *testing.T, db, wal []byte, why string) {
		t.Helper()
		cut := newMemFS()
		defer cut.unregister()
		cut.set(dbPath, db)
		cut.set(dbPath+"-wal", wal)
		before, _ := cut.Ops()
		_, err := sqlitestore.Open(context.Background(), dbPath, sqlitestore.WithVFS(cut.name), sqlitestore.WithJournal("wal"))
		require.ErrorIs(t, err, sqlitestore.ErrInvalidFile)
		require.ErrorContains(t, err, why)
		after, kinds := cut.Ops()
		require.Equal(t, before, after, "Open wrote: %v", kinds)
	}
	t.Run("file cut", func(t *testing.T) {
		refused(t, db[:2*page], wal, "nor in the WAL")
	})
	t.Run("page sizes differ", func(t *testing.T) {
		other := bytes.Clone(db)
		binary.BigEndian.PutUint16(other[16:], uint16(page/2))
		refused(t, other, wal, "differs from its WAL's")
	})
}
