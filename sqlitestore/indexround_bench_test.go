package sqlitestore_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/internal/bench"
)

// BenchmarkIndexRound times an identical cycle as the shore meets it
// through a manifest index (SPEC.md §6.7): the index, which resolves
// every chunk from the held ones, and the Finalize that activates it by
// identity (§8.4), against a first cycle's index, chunks and Finalize, on
// a fresh vessel of one file per round. identical_x_first is the
// identical cycle's wall-clock time over the first's; cpu_identical_x_first
// the same for the process's processor time (unix only).
func BenchmarkIndexRound(b *testing.B) {
	ctx := context.Background()
	s, _ := open(b)
	r := finalize.NewReceiver(s, finalize.WithLimits(finalize.Limits{
		IncompleteSnapshots: 8, IncompleteBytes: 1 << 30, RetainedSnapshots: 1 << 20, RetainedBytes: 1 << 40}))
	records := examples.Scaled(1500)
	cycle := func(snap *envelope.Snapshot, missing int) {
		origin := finalize.Origin{VesselID: snap.Manifest.VesselID}
		payloads := make([]canonical.Digest, len(snap.Chunks))
		for i, c := range snap.Chunks {
			payloads[i] = c.PayloadSHA256()
		}
		x, err := envelope.NewManifestIndex(snap.Manifest, payloads)
		if err != nil {
			b.Fatal(err)
		}
		rc, err := r.ReceiveManifestIndex(ctx, origin, x.Canonical())
		if err != nil || rc.Missing.Len() != missing {
			b.Fatalf("index: %d missing, %v", rc.Missing.Len(), err)
		}
		for _, c := range snap.Chunks {
			if rc.Missing.Has(c.Index()) {
				if _, err := r.ReceiveChunk(ctx, origin, c.Canonical()); err != nil {
					b.Fatal(err)
				}
			}
		}
		out, err := r.Finalize(ctx, snap.Manifest.VesselID, snap.Manifest.SnapshotID)
		if err != nil || out.Status != finalize.Activated {
			b.Fatal(out.Status, err)
		}
	}
	var first, identical bench.Span
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		vessel := uuid.New()
		s1, s2 := scaledSnapshot(b, vessel, 1, records), scaledSnapshot(b, vessel, 2, records)
		b.StartTimer()
		first.Add(bench.Measure(func() { cycle(s1, len(s1.Chunks)) }))
		identical.Add(bench.Measure(func() { cycle(s2, 0) }))
	}
	n := float64(b.N)
	b.ReportMetric(ms(first.Wall)/n, "first_ms")
	b.ReportMetric(ms(identical.Wall)/n, "identical_ms")
	b.ReportMetric(float64(identical.Wall)/float64(first.Wall), "identical_x_first")
	if first.CPU > 0 && identical.CPU >= 0 {
		b.ReportMetric(float64(identical.CPU)/float64(first.CPU), "cpu_identical_x_first")
	}
}
