package finalize_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
)

// The record index an activation stores holds every record's key and the
// SHA-256 of its canonical bytes, in canonical order (IndexEntry): stores
// keep it across versions of the Receiver, so its digests must not change
// meaning. A first activation, a changed document and an identical one
// each leave the index of the active document.
func TestActivationStoresTheRecordIndex(t *testing.T) {
	ctx := context.Background()
	records := examples.Scaled(450)
	first := benchSnapshot(t, 1, records)
	changed := benchSnapshot(t, 2, examples.WithChangedUnits(records, 20))
	identical := benchSnapshot(t, 3, examples.WithChangedUnits(records, 20))
	store := memstore.New()
	r := finalize.NewReceiver(store)
	origin := finalize.Origin{VesselID: benchVessel}
	for _, snap := range []*envelope.Snapshot{first, changed, identical} {
		_, err := r.ReceiveManifest(ctx, origin, snap.Manifest.Canonical())
		require.NoError(t, err)
		for _, c := range snap.Chunks {
			_, err := r.ReceiveChunk(ctx, origin, c.Canonical())
			require.NoError(t, err)
		}
		out, err := r.Finalize(ctx, benchVessel, snap.Manifest.SnapshotID)
		require.NoError(t, err)
		require.Equal(t, finalize.Activated, out.Status)
		var want []finalize.IndexEntry
		for _, c := range snap.Chunks {
			for _, rec := range c.Records() {
				want = append(want, finalize.IndexEntry{Key: rec.Key(), Digest: canonical.Sum(rec.Canonical())})
			}
		}
		require.NoError(t, store.WithVessel(ctx, benchVessel, func(tx finalize.Tx) error {
			got, err := tx.Index(ctx)
			require.NoError(t, err)
			require.Equal(t, want, got, "revision %d", snap.Manifest.Revision)
			return nil
		}))
	}
}
