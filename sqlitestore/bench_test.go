package sqlitestore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/internal/bench"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// Benchmarks of activation on SQLite, as B5 and B5b of mysqlstore, on a
// file with the durability settings on. The activation step is timed from
// the moment the Receiver marks the snapshot activated to the commit of
// that transaction; staging and verification happen before and are not
// counted. Metrics:
//   - x_floor (target ≤ 3): a first activation of 25,600 records against
//     plain multi-row INSERTs of the same rows into an empty table of the
//     same shape in the same file, in one transaction;
//   - x_first (targets ≤ 0.05 identical, ≤ 0.10 one per cent changed): a
//     new revision's activation against the first activation.

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

func scaledSnapshot(b *testing.B, vessel uuid.UUID, rev int64, records []*catalog.Record) *envelope.Snapshot {
	s, err := envelope.Build(envelope.Input{VesselID: vessel, SnapshotID: uuid.New(), Revision: rev,
		DiscoveredAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(rev) * time.Minute), Records: records})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// deliver stages every message of snap.
func deliver(b *testing.B, r *finalize.Receiver, snap *envelope.Snapshot) {
	ctx := context.Background()
	origin := finalize.Origin{VesselID: snap.Manifest.VesselID}
	if _, err := r.ReceiveManifest(ctx, origin, snap.Manifest.Canonical()); err != nil {
		b.Fatal(err)
	}
	for _, c := range snap.Chunks {
		if _, err := r.ReceiveChunk(ctx, origin, c.Canonical()); err != nil {
			b.Fatal(err)
		}
	}
}

// activateTimed stages snap and times its activation.
func activateTimed(b *testing.B, s *sqlitestore.Store, snap *envelope.Snapshot) time.Duration {
	timer := &activationTimer{Store: s}
	r := finalize.NewReceiver(timer, finalize.WithLimits(finalize.Limits{
		IncompleteSnapshots: 8, IncompleteBytes: 1 << 30, RetainedSnapshots: 1 << 20, RetainedBytes: 1 << 40}))
	deliver(b, r, snap)
	out, err := r.Finalize(context.Background(), snap.Manifest.VesselID, snap.Manifest.SnapshotID)
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

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkActivation runs b.N rounds; each round measures every figure
// once on a fresh vessel and the metrics report the means.
func BenchmarkActivation(b *testing.B) {
	ctx := context.Background()
	s, _ := open(b)
	records := examples.Scaled(25600)
	var first, floor, identical, changed time.Duration
	for range b.N {
		vessel := uuid.New()
		s1 := scaledSnapshot(b, vessel, 1, records)
		first += activateTimed(b, s, s1)
		if err := s.FloorTable(ctx); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := s.FloorInsert(ctx, vessel[:], itemsOf(s1)); err != nil {
			b.Fatal(err)
		}
		floor += time.Since(start)
		identical += activateTimed(b, s, scaledSnapshot(b, vessel, 2, records))
		changed += activateTimed(b, s, scaledSnapshot(b, vessel, 3, examples.WithChangedUnits(records, len(records)/100)))
	}
	n := float64(b.N)
	b.ReportMetric(ms(first)/n, "first_ms")
	b.ReportMetric(ms(floor)/n, "floor_ms")
	b.ReportMetric(float64(first)/float64(floor), "x_floor")
	b.ReportMetric(float64(identical)/float64(first), "identical_x_first")
	b.ReportMetric(float64(changed)/float64(first), "changed1pct_x_first")
}

// BenchmarkReceipt times one durable receipt: ReceiveChunk of a new chunk
// of 100 records, committed with synchronous=FULL.
func BenchmarkReceipt(b *testing.B) {
	ctx := context.Background()
	s, _ := open(b)
	r := receiver(s)
	records := examples.Scaled(25600) // 256 chunks a snapshot
	type receipt struct {
		origin finalize.Origin
		chunk  []byte
	}
	var todo []receipt
	for len(todo) < b.N {
		snap := scaledSnapshot(b, uuid.New(), 1, records)
		origin := finalize.Origin{VesselID: snap.Manifest.VesselID}
		if _, err := r.ReceiveManifest(ctx, origin, snap.Manifest.Canonical()); err != nil {
			b.Fatal(err)
		}
		for _, c := range snap.Chunks {
			todo = append(todo, receipt{origin, c.Canonical()})
		}
	}
	b.ResetTimer()
	for _, c := range todo[:b.N] {
		if _, err := r.ReceiveChunk(ctx, c.origin, c.chunk); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIdenticalRound times Finalize for a typical boat of 1,500
// records, as finalize's benchmark of that name does on memstore: each
// of the b.N rounds, on a fresh vessel of one file, finalizes a first
// snapshot and then the same document at the next revision, which is
// verified by identity with the active snapshot (SPEC.md §8.4) and only
// moves the pointer (§8.5). Receipt is not timed. identical_x_first is
// the identical round's wall-clock time over the first's, including the
// commit's sync; cpu_identical_x_first the same for the process's
// processor time (unix only).
func BenchmarkIdenticalRound(b *testing.B) {
	ctx := context.Background()
	s, _ := open(b)
	r := finalize.NewReceiver(s, finalize.WithLimits(finalize.Limits{
		IncompleteSnapshots: 8, IncompleteBytes: 1 << 30, RetainedSnapshots: 1 << 20, RetainedBytes: 1 << 40}))
	records := examples.Scaled(1500)
	finalizeSpan := func(snap *envelope.Snapshot) bench.Span {
		return bench.Measure(func() {
			out, err := r.Finalize(ctx, snap.Manifest.VesselID, snap.Manifest.SnapshotID)
			if err != nil || out.Status != finalize.Activated {
				b.Fatal(out.Status, err)
			}
		})
	}
	var first, identical bench.Span
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		vessel := uuid.New()
		s1, s2 := scaledSnapshot(b, vessel, 1, records), scaledSnapshot(b, vessel, 2, records)
		deliver(b, r, s1)
		b.StartTimer()
		first.Add(finalizeSpan(s1))
		b.StopTimer()
		deliver(b, r, s2)
		b.StartTimer()
		identical.Add(finalizeSpan(s2))
	}
	n := float64(b.N)
	b.ReportMetric(ms(first.Wall)/n, "first_ms")
	b.ReportMetric(ms(identical.Wall)/n, "identical_ms")
	b.ReportMetric(float64(identical.Wall)/float64(first.Wall), "identical_x_first")
	if first.CPU > 0 && identical.CPU >= 0 {
		b.ReportMetric(float64(identical.CPU)/float64(first.CPU), "cpu_identical_x_first")
	}
}
