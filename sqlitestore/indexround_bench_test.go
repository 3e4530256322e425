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
// a fresh vessel of one file per round, with the Receiver of serve, which
// finalizes a set with the message completing it (§8.6). identical_x_first is the
// identical cycle's wall-clock time over the first's; cpu_identical_x_first
// the same for the process's processor time (unix only).
func BenchmarkIndexRound(b *testing.B) {
	ctx := context.Background()
	s, _ := open(b)
	r := finalize.NewReceiver(s, finalize.WithLimits(finalize.Limits{
		IncompleteSnapshots: 8, IncompleteBytes: 1 << 30, RetainedSnapshots: 1 << 20, RetainedBytes: 1 << 40}), finalize.WithFinalizeWhenComplete())
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
		st, err := r.StageManifestIndex(ctx, origin, x.Canonical())
		if err != nil || st.Receipt.Missing.Len() != missing {
			b.Fatalf("index: %d missing, %v", st.Receipt.Missing.Len(), err)
		}
		wanted := st.Receipt.Missing
		for _, c := range snap.Chunks {
			if wanted.Has(c.Index()) {
				if st, err = r.StageChunk(ctx, origin, c); err != nil {
					b.Fatal(err)
				}
			}
		}
		if st.FinalizeRun == nil || st.FinalizeRun.Outcome.Status != finalize.Activated {
			b.Fatalf("not activated with its last message: %+v", st.FinalizeRun)
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
