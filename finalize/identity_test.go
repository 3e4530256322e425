package finalize_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
)

// TestIdenticalNotDecoded: Finalize decodes a staged set in full unless it
// is identical to the active snapshot (SPEC.md §8.4): the first round and
// a changed document are decoded; an identical document, at a higher, the
// same or a lower revision, is not. finalizetest's Identity cases check
// that a damaged or recombined set is still verified in full.
func TestIdenticalNotDecoded(t *testing.T) {
	ctx := context.Background()
	r := finalize.NewReceiver(memstore.New())
	origin := finalize.Origin{VesselID: benchVessel}
	records := examples.Scaled(300)
	deliver := func(s *envelope.Snapshot) {
		t.Helper()
		_, err := r.ReceiveManifest(ctx, origin, s.Manifest.Canonical())
		require.NoError(t, err)
		for _, c := range s.Chunks {
			_, err := r.ReceiveChunk(ctx, origin, c.Canonical())
			require.NoError(t, err)
		}
	}
	count, restore := finalize.CountDecodes()
	defer restore()
	decodes := 0
	step := func(s *envelope.Snapshot, want finalize.OutcomeStatus, decoded bool, msg string) {
		t.Helper()
		out, err := r.Finalize(ctx, benchVessel, s.Manifest.SnapshotID)
		require.NoError(t, err, msg)
		require.Equal(t, want, out.Status, msg)
		if decoded {
			decodes++
		}
		require.Equal(t, decodes, count(), msg)
	}
	first := benchSnapshot(t, 2, records)
	deliver(first)
	step(first, finalize.Activated, true, "the first round is decoded")
	for _, tc := range []struct {
		rev  int64
		want finalize.OutcomeStatus
	}{{3, finalize.Activated}, {3, finalize.AlreadyActive}, {1, finalize.Superseded}} {
		s := benchSnapshot(t, tc.rev, records)
		deliver(s)
		step(s, tc.want, false, "an identical document is not decoded")
	}
	changed := benchSnapshot(t, 4, examples.WithChangedUnits(records, 3))
	deliver(changed)
	step(changed, finalize.Activated, true, "a changed document is decoded")
}
