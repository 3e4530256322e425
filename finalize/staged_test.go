package finalize_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
)

// TestStagedFinalized holds StageManifest and StageChunk to their report
// of a snapshot finalized before the message came: a resend of a
// finalized set needs no Finalize, a complete set still staging (its
// Finalize cut by a crash) does, and so does the message completing it.
func TestStagedFinalized(t *testing.T) {
	ctx := context.Background()
	r := finalize.NewReceiver(memstore.New())
	origin := finalize.Origin{VesselID: vessel}
	s := snapshotOf(t, active, 1)
	stageAll := func(step string, wantStatus envelope.ReceiptStatus, wantNeeds bool, wantFinal bool) {
		t.Helper()
		m, err := r.StageManifest(ctx, origin, s.Manifest.Canonical())
		require.NoError(t, err, step)
		c, err := r.StageChunk(ctx, origin, s.Chunks[0])
		require.NoError(t, err, step)
		for _, st := range []finalize.Staged{m, c} {
			require.Equal(t, wantStatus, st.Receipt.Status, step)
			require.True(t, st.Receipt.Complete, step)
			require.Equal(t, wantFinal, st.Finalized, step)
			require.Equal(t, wantNeeds, st.NeedsFinalize(), step)
		}
	}
	require.Len(t, s.Chunks, 1)
	m, err := r.StageManifest(ctx, origin, s.Manifest.Canonical())
	require.NoError(t, err)
	require.Equal(t, finalize.Staged{Receipt: m.Receipt}, m, "a new message is never Finalized")
	require.False(t, m.NeedsFinalize(), "the manifest alone does not complete the set")
	c, err := r.StageChunk(ctx, origin, s.Chunks[0])
	require.NoError(t, err)
	require.True(t, c.NeedsFinalize(), "the message completing the set needs a Finalize")

	// A crash before Finalize: the set is complete and still staging, so
	// resends need the Finalize the crash cut.
	stageAll("complete, still staging", envelope.AlreadyReceived, true, false)
	out, err := r.Finalize(ctx, vessel, active)
	require.NoError(t, err)
	require.Equal(t, finalize.Activated, out.Status)
	stageAll("finalized", envelope.AlreadyReceived, false, true)

	rc, err := r.ReceiveManifest(ctx, origin, s.Manifest.Canonical())
	require.NoError(t, err)
	require.Equal(t, m.Receipt.Revision, rc.Revision)
	require.True(t, rc.Complete, "the wire's complete stays true for a finalized set (SPEC.md §9.1)")
}
