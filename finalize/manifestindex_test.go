package finalize_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
)

// An index naming another vessel's payloads leaves every chunk missing,
// exactly as one naming payloads nobody holds, also over a store that
// hands out the other vessel's bytes (SPEC.md §6.7 step 6).
func TestManifestIndexOtherVesselOverLeakyStore(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	r := finalize.NewReceiver(store)
	a := boat(t, vessel, uuid.New(), 1, "nav", 120)
	stageWhole(t, r, a, false)

	b := boat(t, stranger, uuid.New(), 1, "nav", 120) // the same records
	require.Equal(t, a.Chunks[1].PayloadSHA256(), b.Chunks[1].PayloadSHA256(), "fixture")
	var ds []canonical.Digest
	for _, c := range b.Chunks {
		ds = append(ds, c.PayloadSHA256())
	}
	x, err := envelope.NewManifestIndex(b.Manifest, ds)
	require.NoError(t, err)
	leaky := finalize.NewReceiver(leakyStore{store, a.Chunks[1].Canonical()})
	rc, err := leaky.ReceiveManifestIndex(ctx, finalize.Origin{VesselID: stranger}, x.Canonical())
	require.NoError(t, err)
	assert.Equal(t, len(b.Chunks), rc.Missing.Len(), "no chunk resolved from another vessel's bytes")
	var chunks []finalize.StagedChunk
	require.NoError(t, store.WithVessel(ctx, stranger, func(tx finalize.Tx) error {
		chunks, err = tx.Chunks(ctx, b.Manifest.SnapshotID)
		return err
	}))
	assert.Empty(t, chunks)
}
