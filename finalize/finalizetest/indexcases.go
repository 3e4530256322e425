package finalizetest

import (
	"testing"

	"github.com/google/uuid"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

// indexCases hold a Store to manifest indexes (SPEC.md §6.7): the
// manifest is staged, and with it every chunk the vessel's held bytes
// resolve; the receipt names the others. A Store whose Tx is no
// finalize.PayloadTx resolves none, and the cases then require every
// chunk missing.
var indexCases = []testCase{
	{"AllHeld", testIndexAllHeld},
	{"SomeHeld", testIndexSomeHeld},
	{"OtherVessel", testIndexOtherVessel},
	{"Damaged", testIndexDamaged},
	{"StoreDamaged", testIndexStoreDamaged},
	{"NoLookup", testIndexNoLookup},
	{"Retry", testIndexRetry},
	{"Conflict", testIndexConflict},
	{"ListedDisagrees", testIndexListedDisagrees},
	{"Contradiction", testIndexContradiction},
	{"Bounds", testIndexBounds},
}

// indexOf returns the manifest index of s.
func indexOf(t require.TestingT, s *envelope.Snapshot) *envelope.ManifestIndex {
	var ds []canonical.Digest
	for _, c := range s.Chunks {
		ds = append(ds, c.PayloadSHA256())
	}
	x, err := envelope.NewManifestIndex(s.Manifest, ds)
	require.NoError(t, err, "fixture index")
	return x
}

// sendIndex sends the index of s and requires a receipt of it with
// status want and exactly the chunks missing missing.
func (e *env) sendIndex(x *envelope.ManifestIndex, want envelope.ReceiptStatus, missing ...int) envelope.Receipt {
	e.t.Helper()
	rc, err := e.r.ReceiveManifestIndex(e.ctx, e.origin, x.Canonical())
	require.NoError(e.t, err, "receive the index")
	m := x.Manifest()
	var set envelope.ChunkSet
	for _, i := range missing {
		set.Add(i)
	}
	require.Equal(e.t, envelope.Receipt{
		EntityType: sourcecatalog.ManifestIndexEntityType, VesselID: m.VesselID, SnapshotID: m.SnapshotID,
		Revision: m.Revision, ChunkIndex: sourcecatalog.NoIndex, Digest: canonical.Sum(x.Canonical()),
		Status: want, Complete: len(missing) == 0, Missing: set,
	}, rc, "receipt of the index")
	return rc
}

// all returns 0 to n-1.
func all(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// AllHeld: an unchanged snapshot's index stages every chunk in one
// request, none missing, and activates with no chunk sent.
func testIndexAllHeld(t *testing.T, newStore NewStore) {
	e, inv, s1 := refBoat(t, newStore)
	s2 := e.build(2, inv)
	if !e.requireLookup() {
		e.sendIndex(indexOf(t, s2), envelope.Staged, all(len(s2.Chunks))...)
		return
	}
	require.Greater(t, len(s2.Chunks), 1, "fixture: several chunks")
	e.sendIndex(indexOf(t, s2), envelope.Staged)
	got, bytes := e.staged(idOf(s2))
	require.Equal(t, wholeChunks(s2), got, "the staged chunks are the whole chunks, byte for byte")
	require.Equal(t, stagedBytes(messagesOf(t, s2)), bytes, "staged bytes as if sent whole")
	require.Equal(t, e.outcome(finalize.Activated, s2, s2), e.finalize(idOf(s2)))
	e.requireActive(s1, s2)
}

// changed returns the indices of s2's chunks whose payload no chunk of s1
// has.
func changed(s1, s2 *envelope.Snapshot) []int {
	held := map[canonical.Digest]bool{}
	for _, c := range s1.Chunks {
		held[c.PayloadSHA256()] = true
	}
	var out []int
	for i, c := range s2.Chunks {
		if !held[c.PayloadSHA256()] {
			out = append(out, i)
		}
	}
	return out
}

// SomeHeld: exactly the chunks the vessel's bytes do not hold are
// missing; sent whole, they complete the set.
func testIndexSomeHeld(t *testing.T, newStore NewStore) {
	e, inv, s1 := refBoat(t, newStore)
	if !e.requireLookup() {
		return
	}
	s2 := e.build(2, inv.withSensors("zz", 3, "m"))
	want := changed(s1, s2)
	require.NotEmpty(t, want, "fixture: some chunks changed")
	require.Less(t, len(want), len(s2.Chunks), "fixture: some chunks unchanged")
	e.sendIndex(indexOf(t, s2), envelope.Staged, want...)
	whole := messagesOf(t, s2)
	for _, i := range want {
		e.deliver(whole[1+i], envelope.Staged)
	}
	require.Equal(t, e.outcome(finalize.Activated, s2, s2), e.finalize(idOf(s2)))
}

// OtherVessel: another vessel's bytes are never resolved from: every
// chunk is missing, as for records never received.
func testIndexOtherVessel(t *testing.T, newStore NewStore) {
	e, inv, _ := refBoat(t, newStore)
	o := envNamed(t, t.Name()+"/other", e.store)
	s := o.build(1, inv)
	require.Equal(t, e.build(9, inv).Chunks[1].PayloadSHA256(), s.Chunks[1].PayloadSHA256(), "fixture: the same records")
	o.sendIndex(indexOf(t, s), envelope.Staged, all(len(s.Chunks))...)
	got, _ := o.staged(idOf(s))
	require.Empty(t, got, "no chunk staged from another vessel's bytes")
}

// Damaged: held bytes under a digest that are not its records leave the
// chunk missing, with no refusal.
func testIndexDamaged(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	if !e.requireLookup() {
		return
	}
	inv := baseInventory().withSensors("sensor", 150, "m")
	s1 := e.build(1, inv)
	decoy := e.build(1, baseInventory().withSensors("decoy", 150, "m"))
	require.NoError(t, e.store.WithVessel(e.ctx, e.vessel, func(tx finalize.Tx) error {
		if err := tx.PutSnapshot(e.ctx, finalize.Snapshot{ID: idOf(s1), Revision: 1, State: finalize.StateStaging,
			ChunksStaged: 1, StagedBytes: int64(len(decoy.Chunks[2].Canonical()))}); err != nil {
			return err
		}
		return tx.PutChunk(e.ctx, finalize.StagedChunk{Snapshot: idOf(s1), Index: 2,
			Canonical: decoy.Chunks[2].Canonical(), Payload: s1.Chunks[2].PayloadSHA256()})
	}))
	s2 := e.build(2, inv)
	e.sendIndex(indexOf(t, s2), envelope.Staged, all(len(s2.Chunks))...)
}

// StoreDamaged: held bytes the store finds damaged leave their chunks
// missing, with no refusal: the manifest is staged, and the sender sends
// those chunks whole.
func testIndexStoreDamaged(t *testing.T, newStore NewStore) {
	e, inv, _ := refBoat(t, newStore)
	d := e.over(finalize.NewReceiver(damagedLookup{e.store}))
	s2 := d.build(2, inv)
	d.sendIndex(indexOf(t, s2), envelope.Staged, all(len(s2.Chunks))...)
	d.requireMissing(idOf(s2), all(len(s2.Chunks))...)
}

// NoLookup: over a Tx that is no PayloadTx, the manifest is staged and
// every chunk is missing.
func testIndexNoLookup(t *testing.T, newStore NewStore) {
	e, inv, _ := refBoat(t, newStore)
	n := e.over(finalize.NewReceiver(noLookup{e.store}))
	s2 := n.build(2, inv)
	n.sendIndex(indexOf(t, s2), envelope.Staged, all(len(s2.Chunks))...)
	n.requireMissing(idOf(s2), all(len(s2.Chunks))...)
}

// Retry: an index retried is already_received, with the missing chunks
// read again: those staged meanwhile are no longer missing.
func testIndexRetry(t *testing.T, newStore NewStore) {
	e, inv, s1 := refBoat(t, newStore)
	s2 := e.build(2, inv.withSensors("zz", 3, "m"))
	want := changed(s1, s2)
	if !e.resolves() {
		want = all(len(s2.Chunks))
	}
	x := indexOf(t, s2)
	e.sendIndex(x, envelope.Staged, want...)
	e.sendIndex(x, envelope.AlreadyReceived, want...)
	whole := messagesOf(t, s2)
	e.deliver(whole[1+want[0]], envelope.Staged)
	e.sendIndex(x, envelope.AlreadyReceived, want[1:]...)
	for _, i := range want[1:] {
		e.deliver(whole[1+i], envelope.Staged)
	}
	require.Equal(t, e.outcome(finalize.Activated, s2, s2), e.finalize(idOf(s2)))
	e.sendIndex(x, envelope.AlreadyReceived)
}

// Conflict: another index of the snapshot, or one whose digest is not
// that of a chunk staged before it, is a conflict and stages nothing.
func testIndexConflict(t *testing.T, newStore NewStore) {
	e, inv, s1 := refBoat(t, newStore)
	s2 := e.build(2, inv)
	whole := messagesOf(t, s2)
	e.deliver(whole[2], envelope.Staged)
	ds := make([]canonical.Digest, len(s2.Chunks))
	for i, c := range s2.Chunks {
		ds[i] = c.PayloadSHA256()
	}
	ds[1] = s1.Chunks[2].PayloadSHA256()
	require.NotEqual(t, s2.Chunks[1].PayloadSHA256(), ds[1], "fixture: another digest")
	bad, err := envelope.NewManifestIndex(s2.Manifest, ds)
	require.NoError(t, err)
	_, err = e.r.ReceiveManifestIndex(e.ctx, e.origin, bad.Canonical())
	require.ErrorIs(t, err, sourcecatalog.ErrConflict, "a listed digest other than a staged chunk's")
	p := sourcecatalog.Problems(err)[0]
	require.Equal(t, 1, p.Chunk)
	require.Equal(t, "payload_sha256s", p.Field)
	got, _ := e.staged(idOf(s2))
	require.Equal(t, [][]byte{s2.Chunks[1].Canonical()}, got, "nothing else staged")
	e.requireNoManifest(idOf(s2))

	e.sendIndex(indexOf(t, s2), envelope.Staged, missingBut(len(s2.Chunks), e.resolves(), 1)...)
	// The same chunks under another manifest (another discovery time).
	other := e.buildAs(idOf(s2), 2, inv)
	require.NotEqual(t, s2.Manifest.Canonical(), other.Manifest.Canonical(), "fixture: another manifest")
	_, err = e.r.ReceiveManifestIndex(e.ctx, e.origin, indexOf(t, other).Canonical())
	require.ErrorIs(t, err, sourcecatalog.ErrConflict, "another manifest for the snapshot")
	other = e.buildAs(idOf(s2), 2, inv.withSensors("zz", 3, "m"))
	_, err = e.r.ReceiveManifestIndex(e.ctx, e.origin, indexOf(t, other).Canonical())
	require.ErrorIs(t, err, sourcecatalog.ErrConflict, "another manifest and other chunks")
}

// missingBut returns what an index finds missing: none but the staged
// when the store resolves, every index but the staged otherwise.
func missingBut(n int, resolves bool, staged ...int) []int {
	if resolves {
		return nil
	}
	var out []int
	for i := range n {
		if !contains(staged, i) {
			out = append(out, i)
		}
	}
	return out
}

func contains(is []int, i int) bool {
	for _, j := range is {
		if i == j {
			return true
		}
	}
	return false
}

// requireNoManifest requires the snapshot's manifest not staged.
func (e *env) requireNoManifest(id uuid.UUID) {
	e.t.Helper()
	out := e.finalize(id)
	require.Equal(e.t, finalize.Staging, out.Status)
	require.True(e.t, out.MissingManifest, "the manifest is not staged")
}

// ListedDisagrees: a chunk an index resolved is staged, so a whole chunk
// of other records at its index is a conflict.
func testIndexListedDisagrees(t *testing.T, newStore NewStore) {
	e, inv, s1 := refBoat(t, newStore)
	if !e.requireLookup() {
		return
	}
	s2 := e.build(2, inv)
	e.sendIndex(indexOf(t, s2), envelope.Staged)
	other := chunkMessage(t, rebuilt(t, s1.Chunks[2], idOf(s2), 2, 1).Canonical())
	e.refuse(other, sourcecatalog.ErrConflict)
}

// Bounds: the manifest and the resolved chunks count together, at their
// whole bytes: over the bound, nothing is staged.
func testIndexBounds(t *testing.T, newStore NewStore) {
	e, inv, _ := refBoat(t, newStore)
	if !e.requireLookup() {
		return
	}
	s2 := e.build(2, inv)
	x := indexOf(t, s2)
	room := stagedBytes(messagesOf(t, s2)) - 1
	b := e.over(finalize.NewReceiver(e.store, finalize.WithLimits(finalize.Limits{
		IncompleteSnapshots: 8, IncompleteBytes: room, RetainedSnapshots: 32, RetainedBytes: 1 << 30,
	})))
	_, err := b.r.ReceiveManifestIndex(b.ctx, b.origin, x.Canonical())
	require.ErrorIs(t, err, sourcecatalog.ErrStagingExhausted)
	b.requireNothingStaged(idOf(s2))
}

// Contradiction: an index contradicting chunks staged before it — another
// revision, an index at or beyond its chunk_count — is a conflict, as the
// manifest it carries would be.
func testIndexContradiction(t *testing.T, newStore NewStore) {
	e, inv, s1 := refBoat(t, newStore)
	s3 := e.build(3, inv)
	e.deliver(chunkMessage(t, rebuilt(t, s1.Chunks[0], idOf(s3), 3, len(s3.Chunks)).Canonical()), envelope.Staged)
	_, err := e.r.ReceiveManifestIndex(e.ctx, e.origin, indexOf(t, s3).Canonical())
	require.ErrorIs(t, err, sourcecatalog.ErrConflict, "a chunk staged beyond chunk_count")
	s4 := e.build(4, inv)
	e.deliver(chunkMessage(t, rebuilt(t, s1.Chunks[0], idOf(s4), 5, 0).Canonical()), envelope.Staged)
	_, err = e.r.ReceiveManifestIndex(e.ctx, e.origin, indexOf(t, s4).Canonical())
	require.ErrorIs(t, err, sourcecatalog.ErrConflict, "a chunk of another revision")
	e.requireNoManifest(idOf(s3))
	e.requireNoManifest(idOf(s4))
}
