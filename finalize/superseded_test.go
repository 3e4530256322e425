package finalize_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
)

// TestSupersededByActive requires that a vessel whose revisions went
// backwards is visible (SPEC.md §8.4): every snapshot the active one
// supersedes is counted in the outcome, in its event and in Status, a
// finalize that only reports again counts nothing new, an identical twin
// of the active snapshot is no such snapshot, and the next activation
// starts the count again.
func TestSupersededByActive(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	r := finalize.NewReceiver(memstore.New(), finalize.WithObserver(rec.observe))
	origin := finalize.Origin{VesselID: vessel}
	// deliver stages a snapshot of revision rev and finalizes it.
	deliver := func(rev int64) (uuid.UUID, finalize.Outcome) {
		t.Helper()
		id := uuid.New()
		snap := snapshotOf(t, id, rev)
		for _, c := range snap.Chunks {
			_, err := r.ReceiveChunk(ctx, origin, c.Canonical())
			require.NoError(t, err)
		}
		_, err := r.ReceiveManifest(ctx, origin, snap.Manifest.Canonical())
		require.NoError(t, err)
		rec.take()
		out, err := r.Finalize(ctx, vessel, id)
		require.NoError(t, err)
		events := rec.take()
		require.Len(t, events, 1)
		require.Equal(t, out, events[0].Outcome, "the event carries the outcome")
		return id, out
	}
	status := func() finalize.VesselStatus {
		t.Helper()
		st, err := r.Status(ctx, vessel)
		require.NoError(t, err)
		return st
	}

	first, out := deliver(1000)
	require.Equal(t, finalize.Activated, out.Status)
	require.Zero(t, out.SupersededByActive)
	_, out = deliver(1000) // the same document at the same revision: a twin
	require.Equal(t, finalize.AlreadyActive, out.Status)
	require.Zero(t, out.SupersededByActive, "an identical twin of the active snapshot is not superseded by it")

	var behind []uuid.UUID
	for n := 1; n <= 3; n++ {
		id, out := deliver(int64(n)) // a store that restarted at 1
		behind = append(behind, id)
		require.Equal(t, finalize.Superseded, out.Status)
		require.Equal(t, n, out.SupersededByActive, "cycle %d below the active revision", n)
		st := status()
		require.Equal(t, n, st.SupersededByActive, "Status counts what Finalize counted")
	}
	for _, s := range status().Snapshots {
		if s.Final == finalize.Superseded {
			require.Equal(t, fmt.Sprintf("revision 1000, snapshot %s, was active", first), s.Reason, "revision %d", s.Revision)
		}
	}
	again, err := r.Finalize(ctx, vessel, behind[0])
	require.NoError(t, err)
	require.Equal(t, finalize.Superseded, again.Status)
	require.Equal(t, 3, again.SupersededByActive, "reporting an outcome again counts nothing new")

	_, out = deliver(2000) // the vessel moved past the active revision
	require.Equal(t, finalize.Activated, out.Status)
	require.Zero(t, out.SupersededByActive, "a new activation starts the count again")
	require.Zero(t, status().SupersededByActive)
	_, out = deliver(1500) // a late older cycle
	require.Equal(t, finalize.Superseded, out.Status)
	require.Equal(t, 1, out.SupersededByActive)
	require.Equal(t, 1, status().SupersededByActive)
}
