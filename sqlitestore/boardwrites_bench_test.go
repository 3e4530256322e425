package sqlitestore_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/outbox"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// steadyCycles is how many identical cycles, each delivered, a store holds
// before the steady commit of BenchmarkBoardWrites.
const steadyCycles = 20

// BenchmarkBoardWrites measures what an outbox commit writes on board:
// every byte SQLite writes through the VFS (the database file, its WAL,
// temporary files) for one Writer.Commit, with the checkpoint that
// copies the commit's pages from the WAL into the file: a checkpoint
// runs before the commit (not counted: it copies the earlier
// transactions') and after it (counted), so each byte the commit makes
// reach the disk is counted once in the WAL and once in the file. In
// service a checkpoint runs every 1000 pages of WAL and copies a page
// rewritten by several commits once, so this is the most a commit
// costs. Metrics, per
// boat (typical: examples.Scaled(1500); example: examples.Boat()):
//   - first_bytes: the first cycle's commit, into an empty outbox;
//   - identical_bytes: the next cycle's, with the same records;
//   - identical_x_first (target ≤ 0.10): the second over the first;
//   - steady_x_first: the commit of an identical cycle on a store that
//     holds steadyCycles earlier ones, delivered, over the first — the
//     indexes have grown, and a commit touches more of their pages;
//   - growth_journal_x_first: what the identical commit adds to the
//     database file's size plus what it writes to the WAL, over the
//     same of the first: the pages the checkpoint rewrites in place are
//     left out.
func BenchmarkBoardWrites(b *testing.B) {
	for _, boat := range []struct {
		name    string
		records []*catalog.Record
	}{
		{"typical", examples.Scaled(1500)},
		{"example", examples.Boat()},
	} {
		b.Run(boat.name, func(b *testing.B) {
			ctx := context.Background()
			vessel := uuid.MustParse("0d9c6a3e-5b1f-4a8e-9c2d-7e4f1a6b3c58")
			at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
			var first, identical, steady, firstGrowth, identicalGrowth int64 // growth: file growth + journal bytes
			for i := 0; i < b.N; i++ {
				fs := newMemFS()
				s, err := sqlitestore.Open(ctx, dbPath, sqlitestore.WithVFS(fs.name))
				if err != nil {
					b.Fatal(err)
				}
				w := outbox.NewWriter(s.Outbox(), outbox.WithRevisionFloor(false))
				// commit commits cycle n and returns the bytes it wrote,
				// and by how much it grew the database file plus what it
				// wrote to the journal.
				commit := func(n int) (written, growth int64) {
					if err := checkpoint(ctx, s, "TRUNCATE"); err != nil { // the earlier transactions' pages, not counted
						b.Fatal(err)
					}
					before, journal := fs.Written()
					size := fs.size(dbPath)
					c, err := w.Commit(ctx, outbox.NewCycle(vessel, at.Add(time.Duration(n)*time.Minute), boat.records))
					if err != nil {
						b.Fatal(err)
					}
					if err := checkpoint(ctx, s, "TRUNCATE"); err != nil { // the commit's pages, copied into the file
						b.Fatal(err)
					}
					after, journalAfter := fs.Written()
					written, growth = after-before, int64(fs.size(dbPath)-size)+journalAfter-journal
					err = s.Outbox().WithVessel(ctx, vessel, func(tx outbox.Tx) error {
						for _, e := range c.Entries {
							if err := tx.SetState(ctx, e.SnapshotID, e.ChunkIndex, outbox.Delivered); err != nil {
								return err
							}
						}
						return nil
					})
					if err != nil {
						b.Fatal(err)
					}
					return written, growth
				}
				w1, g1 := commit(1)
				w2, g2 := commit(2)
				for n := 3; n <= steadyCycles; n++ {
					commit(n)
				}
				ws, _ := commit(steadyCycles + 1)
				first, identical, steady = first+w1, identical+w2, steady+ws
				firstGrowth, identicalGrowth = firstGrowth+g1, identicalGrowth+g2
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				fs.unregister()
			}
			b.ReportMetric(float64(first)/float64(b.N), "first_bytes")
			b.ReportMetric(float64(identical)/float64(b.N), "identical_bytes")
			b.ReportMetric(float64(steady)/float64(b.N), "steady_bytes")
			b.ReportMetric(float64(identical)/float64(first), "identical_x_first")
			b.ReportMetric(float64(steady)/float64(first), "steady_x_first")
			b.ReportMetric(float64(identicalGrowth)/float64(firstGrowth), "growth_journal_x_first")
		})
	}
}
