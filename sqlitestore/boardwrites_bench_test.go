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

// BenchmarkBoardWrites measures what an outbox commit writes on board:
// every byte SQLite writes through the VFS (the database file, its
// rollback journal, temporary files) for one Writer.Commit, on a store
// that holds the vessel's earlier cycles. Metrics, per boat:
//   - first_bytes: the first cycle's commit, into an empty outbox;
//   - identical_bytes: the commit of a second cycle with the same records;
//   - identical_x_first (target ≤ 0.10): the second over the first.
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
			var first, identical int64
			for i := 0; i < b.N; i++ {
				fs := newMemFS()
				s, err := sqlitestore.Open(ctx, dbPath, sqlitestore.WithVFS(fs.name))
				if err != nil {
					b.Fatal(err)
				}
				w := outbox.NewWriter(s.Outbox(), outbox.WithRevisionFloor(false))
				commit := func(n int) int64 {
					before := fs.Written()
					if _, err := w.Commit(ctx, outbox.NewCycle(vessel, at.Add(time.Duration(n)*time.Minute), boat.records)); err != nil {
						b.Fatal(err)
					}
					return fs.Written() - before
				}
				first += commit(1)
				identical += commit(2)
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				fs.unregister()
			}
			b.ReportMetric(float64(first)/float64(b.N), "first_bytes")
			b.ReportMetric(float64(identical)/float64(b.N), "identical_bytes")
			b.ReportMetric(float64(identical)/float64(first), "identical_x_first")
		})
	}
}
