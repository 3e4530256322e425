package finalizetest

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

// What an operator reads: the vessels a store holds (for a store that is a
// finalize.VesselLister) and a vessel's status.
var statusCases = []testCase{
	{"VesselsListed", testVesselsListed},
	{"VesselStatus", testVesselStatus},
	{"Ping", testPing},
}

// testPing holds a store that is a finalize.Pinger to its contract: Ping
// answers nil for an empty store and for one with a vessel active, answers
// a done context with its error, and writes nothing — no vessel is listed
// for it, the active catalog is unchanged. It is skipped for a store that
// is not a Pinger.
func testPing(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	p, ok := e.store.(finalize.Pinger)
	if !ok {
		t.Skip("the store is not a finalize.Pinger")
	}
	require.NoError(t, p.Ping(e.ctx), "Ping of an empty store")
	require.NoError(t, e.r.Ping(e.ctx), "the Receiver's Ping of an empty store")
	if l, ok := e.store.(finalize.VesselLister); ok {
		ids, err := l.Vessels(e.ctx, false)
		require.NoError(t, err, "Vessels")
		require.Empty(t, ids, "Ping creates no vessel")
	}
	s := e.build(1, baseInventory())
	e.activate(s)
	before := e.active()
	done, cancel := context.WithCancel(e.ctx)
	cancel()
	err := p.Ping(done)
	require.ErrorIs(t, err, context.Canceled, "Ping with a done context returns its error")
	err = e.r.Ping(done)
	require.ErrorIs(t, err, context.Canceled, "the Receiver's Ping with a done context")
	require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable, "the Receiver's Ping classes the context's error")
	require.NoError(t, p.Ping(e.ctx), "Ping of a store with a vessel active")
	require.Equal(t, before, e.active(), "Ping changes nothing")
}

// testVesselsListed gives four vessels four fates — one snapshot staging,
// one activated, only reads, and a transaction that failed after writing —
// and requires Vessels to list the first two, and with staging only the
// first. It is skipped when the store cannot list (the Receiver refuses
// with ErrUnsupported: the store is not a finalize.VesselLister).
func testVesselsListed(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	if _, err := e.r.Vessels(e.ctx, false); errors.Is(err, sourcecatalog.ErrUnsupported) {
		t.Skipf("the store cannot list its vessels: %v", err)
	}
	staging, active, reader, failed := e, e.forVessel(e.ids.next()), e.forVessel(e.ids.next()), e.forVessel(e.ids.next())
	s := staging.build(1, baseInventory().withSensors("sensor", 150, "m"))
	staging.deliver(messagesOf(t, s)[1], envelope.Staged)
	active.activate(active.build(1, baseInventory()))
	reader.active()
	_, err := reader.r.Status(reader.ctx, reader.vessel)
	require.NoError(t, err, "Status of a vessel with nothing staged")
	boom := errors.New("the callback fails after writing")
	err = e.store.WithVessel(e.ctx, failed.vessel, func(tx finalize.Tx) error {
		if err := tx.PutSnapshot(e.ctx, finalize.Snapshot{ID: e.ids.next(), Revision: 1, State: finalize.StateStaging}); err != nil {
			return err
		}
		return boom
	})
	require.ErrorIs(t, err, boom, "WithVessel returns the callback's error")

	sorted := func(ids ...uuid.UUID) []uuid.UUID {
		return slices.SortedFunc(slices.Values(ids), func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
	}
	got, err := e.r.Vessels(e.ctx, false)
	require.NoError(t, err, "Vessels")
	require.Equal(t, sorted(staging.vessel, active.vessel), got, "every vessel with a staged or an active snapshot, in byte order")
	got, err = e.r.Vessels(e.ctx, true)
	require.NoError(t, err, "Vessels staging")
	require.Equal(t, []uuid.UUID{staging.vessel}, got, "the vessels with a snapshot staging")

	listed, err := e.store.(finalize.VesselLister).Vessels(e.ctx, false)
	require.NoError(t, err, "the store's Vessels")
	require.ElementsMatch(t, []uuid.UUID{staging.vessel, active.vessel}, listed, "the store lists each vessel once")

	staging.deliverAll(messagesOf(t, s)[2:], envelope.Staged)
	staging.deliver(messagesOf(t, s)[0], envelope.Staged)
	staging.finalize(idOf(s))
	got, err = e.r.Vessels(e.ctx, true)
	require.NoError(t, err, "Vessels staging")
	require.Empty(t, got, "no snapshot is staging once the last is finalized")
}

// testVesselStatus follows a vessel through a cycle: chunks before their
// manifest, the manifest with chunks missing, a complete set, the
// activation and a second snapshot staging. Status must report each
// snapshot's state, what it misses and the usage the Receiver reports.
func testVesselStatus(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	status := func() finalize.VesselStatus {
		t.Helper()
		st, err := e.r.Status(e.ctx, e.vessel)
		require.NoError(t, err, "Status")
		require.Equal(t, e.vessel, st.VesselID)
		require.Equal(t, e.storedUsage(), st.Usage, "Status reports the vessel's usage")
		return st
	}
	st := status()
	require.Empty(t, st.Snapshots, "nothing staged")
	require.Equal(t, uuid.Nil, st.Active.ActiveSnapshot, "nothing active")
	_, ok := st.LastFinalized()
	require.False(t, ok, "nothing finalized")

	first := e.build(1, baseInventory().withSensors("sensor", 150, "m"))
	msgs := messagesOf(t, first)
	require.GreaterOrEqual(t, len(msgs), 4, "the fixture has at least three chunks")
	e.deliver(msgs[2], envelope.Staged)
	st = status()
	require.Len(t, st.Snapshots, 1)
	sn := st.Snapshots[0]
	require.Equal(t, finalize.SnapshotStatus{
		ID: idOf(first), Revision: 1, State: finalize.StateStaging,
		ChunksStaged: 1, StagedBytes: int64(len(msgs[2].raw)), MissingManifest: true,
	}, sn, "a chunk without its manifest")

	e.deliver(msgs[0], envelope.Staged)
	st = status()
	sn = st.Snapshots[0]
	var missing []int
	for i := range first.Chunks {
		if i != 1 {
			missing = append(missing, i)
		}
	}
	require.Equal(t, missing, sn.MissingChunks, "every chunk but the staged one is missing")
	require.False(t, sn.MissingManifest || sn.Complete)
	require.Equal(t, len(first.Chunks), sn.ChunkCount)
	require.Equal(t, first.Manifest.RecordCount, sn.RecordCount)

	e.deliverAll(append(slices.Clone(msgs[1:2]), msgs[3:]...), envelope.Staged)
	st = status()
	sn = st.Snapshots[0]
	require.True(t, sn.Complete, "every message staged")
	require.Empty(t, sn.MissingChunks)
	require.Equal(t, len(first.Chunks), sn.ChunksStaged)

	e.finalize(idOf(first))
	second := e.build(2, baseInventory())
	e.deliver(messagesOf(t, second)[0], envelope.Staged)
	st = status()
	require.Equal(t, idOf(first), st.Active.ActiveSnapshot)
	require.Equal(t, int64(1), st.Active.ActiveRevision)
	require.Len(t, st.Snapshots, 2)
	require.Equal(t, idOf(second), st.Snapshots[0].ID, "highest revision first")
	require.Equal(t, finalize.StateStaging, st.Snapshots[0].State)
	last, ok := st.LastFinalized()
	require.True(t, ok)
	require.Equal(t, idOf(first), last.ID)
	require.Equal(t, finalize.StateActivated, last.State)
	require.Equal(t, finalize.Activated, last.Final)
	require.Empty(t, last.MissingChunks, "a finalized snapshot misses nothing")
}
