package finalizetest

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

// chunkRefCases hold a Store to chunk references (SPEC.md §6.6, §8.2,
// §8.3). A Store whose Tx is a finalize.PayloadTx resolves them; one whose
// Tx is not refuses every reference with ErrReferenceUnavailable, which
// the cases then require instead.
var chunkRefCases = []testCase{
	{"SameAsWhole", testRefSameAsWhole},
	{"WholeAfterRef", testRefWholeAfterRef},
	{"Finalized", testRefFinalized},
	{"Conflict", testRefConflict},
	{"Unavailable", testRefUnavailable},
	{"OtherVessel", testRefOtherVessel},
	{"Discarded", testRefDiscarded},
	{"Tampered", testRefTampered},
	{"StoreDamaged", testRefStoreDamaged},
	{"NoLookup", testRefNoLookup},
	{"CountsFullBytes", testRefCountsFullBytes},
}

// refTo returns the reference of a chunk message as a message earning the
// chunk's receipt.
func refTo(t require.TestingT, m message) message {
	c, err := envelope.DecodeChunk(m.raw)
	require.NoError(t, err, "fixture chunk")
	r := m
	r.name, r.raw, r.ref = "reference to "+m.name, envelope.NewChunkRef(c).Canonical(), true
	return r
}

// refsOf returns the manifest of s and a reference to every chunk.
func refsOf(t require.TestingT, s *envelope.Snapshot) []message {
	msgs := messagesOf(t, s)
	for i := 1; i < len(msgs); i++ {
		msgs[i] = refTo(t, msgs[i])
	}
	return msgs
}

// resolves reports whether the env's Store can look chunks up by payload.
func (e *env) resolves() bool {
	e.t.Helper()
	var ok bool
	require.NoError(e.t, e.store.WithVessel(e.ctx, e.vessel, func(tx finalize.Tx) error {
		_, ok = tx.(finalize.PayloadTx)
		return nil
	}))
	return ok
}

// requireLookup skips nothing: a Store without the lookup must refuse
// every reference (the NoLookup case holds it); the other cases need one.
func (e *env) requireLookup() bool {
	e.t.Helper()
	if e.resolves() {
		return true
	}
	e.t.Log("the Store's Tx is no finalize.PayloadTx: every reference must be refused")
	return false
}

// staged returns the canonical bytes of the chunks staged for a snapshot,
// in index order, and its staged byte count.
func (e *env) staged(id uuid.UUID) ([][]byte, int64) {
	e.t.Helper()
	var out [][]byte
	var bytes int64
	require.NoError(e.t, e.store.WithVessel(e.ctx, e.vessel, func(tx finalize.Tx) error {
		s, err := tx.Snapshot(e.ctx, id)
		if err != nil {
			return err
		}
		bytes = s.StagedBytes
		chunks, err := tx.Chunks(e.ctx, id)
		for _, c := range chunks {
			out = append(out, c.Canonical)
		}
		return err
	}))
	return out, bytes
}

// refBoat is the inventory of the reference cases (several chunks), and
// an env whose vessel activated it at revision 1.
func refBoat(t *testing.T, newStore NewStore) (*env, inventory, *envelope.Snapshot) {
	e := newEnv(t, newStore)
	inv := baseInventory().withSensors("sensor", 150, "m")
	s1 := e.build(1, inv)
	e.activate(s1)
	return e, inv, s1
}

// wholeChunks returns the canonical bytes of s's chunks.
func wholeChunks(s *envelope.Snapshot) [][]byte {
	var out [][]byte
	for _, c := range s.Chunks {
		out = append(out, c.Canonical())
	}
	return out
}

// SameAsWhole: an unchanged snapshot sent as its manifest and references
// gets the receipts its whole chunks would, stages their bytes and counts,
// and activates.
func testRefSameAsWhole(t *testing.T, newStore NewStore) {
	e, inv, s1 := refBoat(t, newStore)
	s2 := e.build(2, inv)
	if !e.requireLookup() {
		e.refuse(refsOf(t, s2)[1], sourcecatalog.ErrReferenceUnavailable)
		return
	}
	require.Greater(t, len(s2.Chunks), 1, "fixture: several chunks")
	e.deliverAll(refsOf(t, s2), envelope.Staged)
	got, bytes := e.staged(idOf(s2))
	require.Equal(t, wholeChunks(s2), got, "the staged chunks are the whole chunks, byte for byte")
	require.Equal(t, stagedBytes(messagesOf(t, s2)), bytes, "staged bytes as if sent whole")
	require.Equal(t, e.outcome(finalize.Activated, s2, s2), e.finalize(idOf(s2)))
	e.requireActive(s1, s2)
}

// WholeAfterRef: a reference and its whole chunk are the same message —
// either retried after the other is already_received.
func testRefWholeAfterRef(t *testing.T, newStore NewStore) {
	e, inv, _ := refBoat(t, newStore)
	if !e.requireLookup() {
		return
	}
	s2 := e.build(2, inv)
	whole, refs := messagesOf(t, s2), refsOf(t, s2)
	e.deliver(whole[0], envelope.Staged)
	e.deliver(refs[1], envelope.Staged)
	e.deliver(whole[1], envelope.AlreadyReceived)
	e.deliver(refs[1], envelope.AlreadyReceived)
	e.deliver(whole[2], envelope.Staged)
	e.deliver(refs[2], envelope.AlreadyReceived)
	e.deliverAll(whole[3:], envelope.Staged)
	require.Equal(t, e.outcome(finalize.Activated, s2, s2), e.finalize(idOf(s2)))
	// After finalize, a reference is a resend like any other.
	e.deliverAll(refs[1:], envelope.AlreadyReceived)
}

// Finalized: the rules of SPEC.md §8.2 come before resolution — a
// reference to a snapshot finalized without it is a conflict, whether or
// not its records are held.
func testRefFinalized(t *testing.T, newStore NewStore) {
	e, inv, s1 := refBoat(t, newStore)
	s2 := e.build(2, inv.withSensors("probe", 40, "m"))
	e.activate(s2)
	// s1's chunk 1 named at s2's index 0, and at an index beyond its count.
	c := s1.Chunks[1]
	for _, index := range []int{0, len(s2.Chunks)} {
		ref := envelope.NewChunkRef(rebuilt(t, c, idOf(s2), 2, index))
		_, err := e.r.ReceiveChunkRef(e.ctx, e.origin, ref.Canonical())
		require.ErrorIs(t, err, sourcecatalog.ErrConflict, "a reference at index %d of a finalized snapshot", index)
	}
	// A payload nobody holds: still the conflict, not the send-whole class.
	unknown := envelope.NewChunkRef(rebuilt(t, e.build(3, baseInventory().withSensors("x", 3, "m")).Chunks[0], idOf(s2), 2, 0))
	_, err := e.r.ReceiveChunkRef(e.ctx, e.origin, unknown.Canonical())
	require.ErrorIs(t, err, sourcecatalog.ErrConflict)
}

// rebuilt returns c's records as the chunk at index of another snapshot
// and revision, resolved from c's own bytes.
func rebuilt(t require.TestingT, c *envelope.Chunk, snapshot uuid.UUID, revision int64, index int) *envelope.Chunk {
	raw := rawChunk(c.VesselID(), snapshot, revision, index, canonicalRecords(c.Records()))
	out, err := envelope.DecodeChunk(raw)
	require.NoError(t, err, "fixture chunk")
	return out
}

// Conflict: a reference naming other records than those staged at its
// index, or another revision, is a conflict, and stages nothing.
func testRefConflict(t *testing.T, newStore NewStore) {
	e, inv, s1 := refBoat(t, newStore)
	if !e.requireLookup() {
		return
	}
	s2 := e.build(2, inv)
	whole := messagesOf(t, s2)
	e.deliver(whole[1], envelope.Staged)
	other := envelope.NewChunkRef(rebuilt(t, s1.Chunks[1], idOf(s2), 2, 0))
	_, err := e.r.ReceiveChunkRef(e.ctx, e.origin, other.Canonical())
	require.ErrorIs(t, err, sourcecatalog.ErrConflict, "other records at a staged index")
	rev := envelope.NewChunkRef(rebuilt(t, s1.Chunks[1], idOf(s2), 3, 1))
	_, err = e.r.ReceiveChunkRef(e.ctx, e.origin, rev.Canonical())
	require.ErrorIs(t, err, sourcecatalog.ErrConflict, "another revision")
	got, _ := e.staged(idOf(s2))
	require.Equal(t, [][]byte{s2.Chunks[0].Canonical()}, got, "nothing else staged")
}

// Unavailable: a reference to records never received is the send-whole
// class, and stages nothing; the whole chunk is then staged.
func testRefUnavailable(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	s := e.build(1, baseInventory().withSensors("sensor", 150, "m"))
	refs, whole := refsOf(t, s), messagesOf(t, s)
	for _, m := range refs[1:] {
		e.refuse(m, sourcecatalog.ErrReferenceUnavailable)
	}
	e.requireNothingStaged(idOf(s))
	e.deliverAll(whole, envelope.Staged)
	require.Equal(t, e.outcome(finalize.Activated, s, s), e.finalize(idOf(s)))
}

// OtherVessel: another vessel's records are never resolved from; the
// refusal is the one for records never received.
func testRefOtherVessel(t *testing.T, newStore NewStore) {
	e, inv, _ := refBoat(t, newStore)
	o := envNamed(t, t.Name()+"/other", e.store)
	s := o.build(1, inv)
	require.Equal(t, e.build(9, inv).Chunks[1].PayloadSHA256(), s.Chunks[1].PayloadSHA256(), "fixture: the same records")
	for _, m := range refsOf(t, s)[1:] {
		o.refuse(m, sourcecatalog.ErrReferenceUnavailable)
	}
	o.requireNothingStaged(idOf(s))
}

// Discarded: a discarded snapshot's records are no longer referenced, and
// a chunk staged from them before is a copy that outlives them.
func testRefDiscarded(t *testing.T, newStore NewStore) {
	e, inv, s1 := refBoat(t, newStore)
	s2 := e.build(2, inv.withSensors("probe", 150, "m"))
	e.activate(s2)
	if !e.requireLookup() {
		return
	}
	s3 := e.build(3, inv)
	refs := refsOf(t, s3)
	e.deliver(refs[0], envelope.Staged)
	e.deliver(refs[1], envelope.Staged)
	require.NoError(t, e.r.Discard(e.ctx, e.vessel, idOf(s1)))
	whole := messagesOf(t, s3)
	held := 0
	for i, m := range refs[2:] {
		rc, err := e.send(m)
		if err == nil {
			held++ // s2 holds some of s1's records in the same chunks
			requireReceipt(t, m, envelope.Staged, rc)
			e.deliver(whole[2+i], envelope.AlreadyReceived)
			continue
		}
		require.ErrorIs(t, err, sourcecatalog.ErrReferenceUnavailable, "%s after its records were discarded", m.name)
		e.deliver(whole[2+i], envelope.Staged)
	}
	require.Less(t, held, len(refs)-2, "fixture: some records only s1 held")
	require.Equal(t, e.outcome(finalize.Activated, s3, s3), e.finalize(idOf(s3)))
	got, _ := e.staged(idOf(s3))
	require.Equal(t, wholeChunks(s3), got)
}

// Tampered: stored bytes under a payload digest that are not its records
// are never staged from: hash_mismatch, nothing staged.
func testRefTampered(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	inv := baseInventory().withSensors("sensor", 150, "m")
	if !e.requireLookup() {
		return
	}
	s1 := e.build(1, inv)
	decoy := e.build(1, baseInventory().withSensors("decoy", 150, "m"))
	// s1's chunk 2 stored with another chunk's bytes: a damaged store.
	require.NoError(t, e.store.WithVessel(e.ctx, e.vessel, func(tx finalize.Tx) error {
		if err := tx.PutSnapshot(e.ctx, finalize.Snapshot{ID: idOf(s1), Revision: 1, State: finalize.StateStaging,
			ChunksStaged: 1, StagedBytes: int64(len(decoy.Chunks[2].Canonical()))}); err != nil {
			return err
		}
		return tx.PutChunk(e.ctx, finalize.StagedChunk{Snapshot: idOf(s1), Index: 2,
			Canonical: decoy.Chunks[2].Canonical(), Payload: s1.Chunks[2].PayloadSHA256()})
	}))
	s2 := e.build(2, inv)
	ref := refsOf(t, s2)[3]
	rc, err := e.send(ref)
	require.ErrorIs(t, err, sourcecatalog.ErrHashMismatch)
	require.Zero(t, rc)
	p := sourcecatalog.Problems(err)[0]
	require.Equal(t, 2, p.Chunk)
	require.Equal(t, "payload_sha256", p.Field)
	e.requireNothingStaged(idOf(s2))
}

// damagedLookup is a Store whose lookups by payload find every chunk
// held damaged, as a store checking a checksum of its own at each read
// reports it (finalize.PayloadTx).
type damagedLookup struct{ finalize.Store }

type damagedTx struct{ finalize.Tx }

func (s damagedLookup) WithVessel(ctx context.Context, v uuid.UUID, fn func(finalize.Tx) error) error {
	return s.Store.WithVessel(ctx, v, func(tx finalize.Tx) error { return fn(damagedTx{tx}) })
}

func (damagedTx) ChunkByPayload(context.Context, canonical.Digest) (finalize.StagedChunk, error) {
	return finalize.StagedChunk{}, sourcecatalog.Errorf(sourcecatalog.ErrHashMismatch, "finalizetest: the chunk held under the digest is damaged")
}

// StoreDamaged: held bytes the store finds damaged are hash_mismatch at
// the reference's chunk and payload_sha256 — the answer that makes the
// sender send the chunk whole — never store_unavailable, which would have
// it repeat the reference; nothing is staged.
func testRefStoreDamaged(t *testing.T, newStore NewStore) {
	e, inv, _ := refBoat(t, newStore)
	d := e.over(finalize.NewReceiver(damagedLookup{e.store}))
	s2 := d.build(2, inv)
	for i, m := range refsOf(t, s2)[1:] {
		rc, err := d.send(m)
		require.ErrorIs(t, err, sourcecatalog.ErrHashMismatch, m.name)
		require.Zero(t, rc)
		p := sourcecatalog.Problems(err)[0]
		require.Equal(t, i, p.Chunk)
		require.Equal(t, "payload_sha256", p.Field)
	}
	d.requireNothingStaged(idOf(s2))
}

// noLookup hides a Store's PayloadTx.
type noLookup struct{ finalize.Store }

type plainTx struct{ finalize.Tx }

func (s noLookup) WithVessel(ctx context.Context, v uuid.UUID, fn func(finalize.Tx) error) error {
	return s.Store.WithVessel(ctx, v, func(tx finalize.Tx) error { return fn(plainTx{tx}) })
}

// NoLookup: over a Tx that is no PayloadTx, every reference is refused
// with the send-whole class, and nothing is staged.
func testRefNoLookup(t *testing.T, newStore NewStore) {
	e, inv, _ := refBoat(t, newStore)
	n := e.over(finalize.NewReceiver(noLookup{e.store}))
	s2 := n.build(2, inv)
	for _, m := range refsOf(t, s2)[1:] {
		n.refuse(m, sourcecatalog.ErrReferenceUnavailable)
	}
	n.requireNothingStaged(idOf(s2))
}

// CountsFullBytes: a chunk staged from a reference counts its whole bytes
// against the staging bounds, however small the reference.
func testRefCountsFullBytes(t *testing.T, newStore NewStore) {
	e, inv, _ := refBoat(t, newStore)
	if !e.requireLookup() {
		return
	}
	s2 := e.build(2, inv)
	whole, refs := messagesOf(t, s2), refsOf(t, s2)
	// Room for the manifest and chunk 0 whole, one byte short of chunk 1.
	room := int64(len(whole[0].raw)+len(whole[1].raw)+len(whole[2].raw)) - 1
	require.Greater(t, room, int64(len(whole[0].raw)+len(whole[1].raw)+len(refs[2].raw)), "fixture: the reference alone would fit")
	b := e.over(finalize.NewReceiver(e.store, finalize.WithLimits(finalize.Limits{
		IncompleteSnapshots: 8, IncompleteBytes: room, RetainedSnapshots: 32, RetainedBytes: 1 << 30,
	})))
	b.deliver(refs[0], envelope.Staged)
	b.deliver(refs[1], envelope.Staged)
	b.refuse(refs[2], sourcecatalog.ErrStagingExhausted)
	got, bytes := b.staged(idOf(s2))
	require.Len(t, got, 1)
	require.Equal(t, int64(len(whole[0].raw)+len(whole[1].raw)), bytes)
}
