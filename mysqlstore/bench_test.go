package mysqlstore_test

import (
	"context"
	"database/sql"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/mysqlstore"
)

// Benchmarks B5 and B5b: activation on MariaDB. The activation step is
// timed from the moment the Receiver marks the snapshot activated to the
// commit of that transaction, by a Store wrapper; staging and verification
// happen before and are not counted. Metrics:
//   - x_floor (B5, target ≤ 3): a first activation against plain
//     multi-row INSERTs of the same rows into empty tables of the same shape;
//   - growth (B5, target ≤ 12): the first activation of 25,600 records
//     against that of 2,560;
//   - x_first (B5b, targets ≤ 0.02 identical, ≤ 0.05 one per cent
//     changed): a new revision's activation against the first activation,
//     through the Store that made the first, as a service keeps one;
//   - changed1pct_cold_x_first: a one per cent change through a new
//     Store, which keeps no record index yet (a service restarted, or
//     another process or Galera node), against the same first.

// activationTimer measures the activation step of Finalize calls.
type activationTimer struct {
	finalize.Store
	mu    sync.Mutex
	total time.Duration
}

func (s *activationTimer) WithVessel(ctx context.Context, id uuid.UUID, fn func(finalize.Tx) error) error {
	var start time.Time
	err := s.Store.WithVessel(ctx, id, func(tx finalize.Tx) error {
		start = time.Time{}
		return fn(&timedTx{Tx: tx, start: &start})
	})
	if !start.IsZero() {
		s.mu.Lock()
		s.total += time.Since(start)
		s.mu.Unlock()
	}
	return err
}

type timedTx struct {
	finalize.Tx
	start *time.Time
}

func (t *timedTx) PutSnapshot(ctx context.Context, s finalize.Snapshot) error {
	if s.State == finalize.StateActivated && t.start.IsZero() {
		*t.start = time.Now()
	}
	return t.Tx.PutSnapshot(ctx, s)
}

func scaledSnapshot(b testing.TB, vessel uuid.UUID, rev int64, records []*catalog.Record) *envelope.Snapshot {
	s, err := envelope.Build(envelope.Input{VesselID: vessel, SnapshotID: uuid.New(), Revision: rev,
		DiscoveredAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(rev) * time.Minute), Records: records})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// activateTimed stages snap through store and times its activation.
func activateTimed(b *testing.B, store *mysqlstore.Store, snap *envelope.Snapshot) time.Duration {
	ctx := context.Background()
	timer := &activationTimer{Store: store}
	r := finalize.NewReceiver(timer, finalize.WithLimits(finalize.Limits{
		IncompleteSnapshots: 8, IncompleteBytes: 1 << 30, RetainedSnapshots: 1 << 20, RetainedBytes: 1 << 40}))
	deliver(b, r, snap)
	out, err := r.Finalize(ctx, snap.Manifest.VesselID, snap.Manifest.SnapshotID)
	if err != nil || out.Status != finalize.Activated {
		b.Fatalf("finalize: %v %v", out.Status, err)
	}
	return timer.total
}

func itemsOf(snap *envelope.Snapshot) []finalize.Item {
	seen := finalize.Seen{Revision: snap.Manifest.Revision, At: snap.Manifest.DiscoveredAt}
	var items []finalize.Item
	for _, c := range snap.Chunks {
		for _, r := range c.Records() {
			items = append(items, finalize.Item{Key: catalog.Key{Kind: r.Kind(), Path: r.PathName(), SourceRef: r.SourceRef()},
				Record: r.Canonical(), FirstSeen: seen, LastSeen: seen, CurrentlyObserved: true})
		}
	}
	return items
}

// floorTimed times plain INSERTs of snap's rows into empty copies of the
// inventory tables.
func floorTimed(b *testing.B, db *sql.DB, snap *envelope.Snapshot) time.Duration {
	ctx := context.Background()
	for _, t := range mysqlstore.InventoryTables() {
		for _, q := range []string{"DROP TABLE IF EXISTS " + t + "_floor", "CREATE TABLE " + t + "_floor LIKE " + t} {
			if _, err := db.ExecContext(ctx, q); err != nil {
				b.Fatal(err)
			}
		}
	}
	items := itemsOf(snap)
	start := time.Now()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	vessel := snap.Manifest.VesselID
	if err := mysqlstore.FloorInsert(ctx, tx, "_floor", items, vessel[:], 500); err != nil {
		b.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkB5Activation runs b.N rounds; each round measures every figure
// once on fresh vessels and the metrics report the means.
func BenchmarkB5Activation(b *testing.B) {
	db := migrated(b)
	max := examples.Scaled(25600)
	small := examples.Scaled(2560)
	var first, tenth, floor, identical, changed, cold time.Duration
	for range b.N {
		vessel := uuid.New()
		store := mysqlstore.New(db)
		s1 := scaledSnapshot(b, vessel, 1, max)
		first += activateTimed(b, store, s1)
		floor += floorTimed(b, db, s1)
		identical += activateTimed(b, store, scaledSnapshot(b, vessel, 2, max))
		changed += activateTimed(b, store, scaledSnapshot(b, vessel, 3, examples.WithChangedUnits(max, len(max)/100)))
		// Back to the first's records: the same one per cent changed.
		cold += activateTimed(b, mysqlstore.New(db), scaledSnapshot(b, vessel, 4, max))
		tenth += activateTimed(b, mysqlstore.New(db), scaledSnapshot(b, uuid.New(), 1, small))
	}
	n := float64(b.N)
	b.ReportMetric(ms(first)/n, "first_ms")
	b.ReportMetric(ms(floor)/n, "floor_ms")
	b.ReportMetric(float64(first)/float64(floor), "x_floor")
	b.ReportMetric(float64(first)/float64(tenth), "growth")
	b.ReportMetric(float64(identical)/float64(first), "identical_x_first")
	b.ReportMetric(float64(changed)/float64(first), "changed1pct_x_first")
	b.ReportMetric(float64(cold)/float64(first), "changed1pct_cold_x_first")
}
