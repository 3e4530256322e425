package httpbinding_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/outbox"
	outboxmem "github.com/yachtmemory/sourcecatalog/outbox/memstore"
)

// BenchmarkCycleBytes measures what the steady state costs a boat over the
// binding, with every capability on (gzip bodies, chunk references,
// manifest indexes): for the typical boat (examples.Scaled(1500)) and the
// example boat, under the greedy cut and the content-defined one (SPEC.md
// §7.2), three cycles are published to a receiver — a first, an identical
// one, and one with 1 % of the paths' units changed (at least one) — and
// it reports, against the first cycle's request bytes uncompressed:
//   - identical_x_first: the identical cycle's bytes as sent (target ≤ 0.01);
//   - identical_requests: its requests (target ≤ 2; the declaration is
//     not read here, the gate being on);
//   - changed_x_first: the changed cycle's bytes uncompressed (targets
//     ≤ 0.10 typical, ≤ 0.25 example);
//   - first_requests.
func BenchmarkCycleBytes(b *testing.B) {
	typical, example := examples.Scaled(1500), examples.Boat()
	for _, boat := range []struct {
		name string
		recs []*catalog.Record
	}{{"typical", typical}, {"example", example}} {
		for _, cut := range []struct {
			name string
			opts []envelope.Option
		}{{"greedy", nil}, {"content-defined", []envelope.Option{envelope.WithContentDefinedCuts()}}} {
			b.Run(boat.name+"/"+cut.name, func(b *testing.B) {
				for b.Loop() {
					first, identical, changed := cycleBytes(b, boat.recs, cut.opts)
					b.ReportMetric(float64(identical.Bytes.Sent)/float64(first.Bytes.Uncompressed), "identical_x_first")
					b.ReportMetric(float64(identical.Sent), "identical_requests")
					b.ReportMetric(float64(changed.Bytes.Uncompressed)/float64(first.Bytes.Uncompressed), "changed_x_first")
					b.ReportMetric(float64(first.Sent), "first_requests")
				}
			})
		}
	}
}

// cycleBytes publishes the three cycles of BenchmarkCycleBytes and returns
// their passes.
func cycleBytes(b *testing.B, recs []*catalog.Record, cut []envelope.Option) (first, identical, changed outbox.Pass) {
	ctx := context.Background()
	r := startRig(b, rigConfig{opts: []httpbinding.HandlerOption{httpbinding.WithManifestIndexes(true), httpbinding.WithChunkReferences(true)}})
	cert := r.ca.vessel(b, vesselA)
	c := r.client(b, &cert, httpbinding.WithRequestCompression())
	store := outboxmem.New()
	pub := outbox.NewPublisher(store, vesselA, c, outbox.WithReceiverV2(true), outbox.WithChunkReferences(true), outbox.WithManifestIndexes(true))
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	cycle := func(recs []*catalog.Record) outbox.Pass {
		at = at.Add(15 * time.Minute)
		com, err := outbox.NewWriter(store, outbox.WithBuildOptions(cut...)).Commit(ctx, outbox.NewCycle(vesselA, at, recs))
		require.NoError(b, err)
		pass, err := pub.Publish(ctx)
		require.NoError(b, err)
		require.Equal(b, len(com.Entries), pass.Delivered, "every entry delivered")
		return pass
	}
	paths := 0
	for _, rec := range recs {
		if rec.Kind() == catalog.KindPath {
			paths++
		}
	}
	return cycle(recs), cycle(recs), cycle(examples.WithChangedUnits(recs, max(1, paths/100)))
}
