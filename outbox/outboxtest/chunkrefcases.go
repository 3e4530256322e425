package outboxtest

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// The Publisher sending chunk references (SPEC.md §6.6, §7.5) over a
// recording fake receiver, and the outbox.DeliveredTx lookup it needs. A
// Store whose Tx is no DeliveredTx must make the Publisher send every
// chunk whole; the cases require that instead.
var chunkRefCases = []testCase{
	{"OffByDefault", testRefOffByDefault},
	{"NotDeclared", testRefNotDeclared},
	{"Lookup", testRefLookup},
	{"References", testRefReferences},
	{"FallsBackToWhole", testRefFallsBack},
	{"NotAgain", testRefNotAgain},
	{"ConflictStops", testRefConflict},
}

// refReceiver answers as a receiver that holds the records of every chunk
// delivered before: a reference's receipt is its chunk's. refuse, when
// set, answers a reference instead.
func refReceiver(refuse func(e outbox.Entry) error) *recorder {
	return &recorder{answer: func(_ int, e outbox.Entry) (envelope.Receipt, error) {
		if e.EntityType == sourcecatalog.ChunkRefEntityType {
			if refuse != nil {
				if err := refuse(e); err != nil {
					return envelope.Receipt{}, err
				}
			}
			e.EntityType = sourcecatalog.ChunkEntityType
		}
		return receiptOf(e), nil
	}}
}

// lookup reports whether the env's Store finds delivered chunks.
func (e *env) lookup() bool {
	e.t.Helper()
	var ok bool
	e.in(func(tx outbox.Tx) error { _, ok = tx.(outbox.DeliveredTx); return nil })
	if !ok {
		e.t.Log("the Store's Tx is no outbox.DeliveredTx: every chunk must be sent whole")
	}
	return ok
}

// twice commits a cycle of in, publishes it whole, and commits the same
// records again: the second cycle's chunks have the first's digests.
func (e *env) twice(in inventory) (first, second []outbox.Entry) {
	e.t.Helper()
	first = e.commit(e.cycle(in)).Entries
	e.publish(e.publisher(e.store, &recorder{}))
	return first, e.commit(e.cycle(in)).Entries
}

// kinds counts the entity types sent.
func kinds(sent []outbox.Entry) map[string]int {
	out := map[string]int{}
	for _, e := range sent {
		out[e.EntityType]++
	}
	return out
}

func testRefOffByDefault(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	_, second := e.twice(inv("a", 130))
	rec := refReceiver(nil)
	require.Equal(t, outbox.Pass{Sent: len(second), Delivered: len(second)}, e.publish(e.publisher(e.store, rec)))
	require.Equal(t, second, rec.entries(), "whole entries, as committed")
}

func testRefNotDeclared(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	_, second := e.twice(inv("a", 130))
	rec := refReceiver(nil)
	p := e.publisher(e.store, rec, outbox.WithChunkReferences(true), outbox.WithChunkReferences(false))
	require.Equal(t, outbox.Pass{Sent: len(second), Delivered: len(second)}, e.publish(p))
	require.Equal(t, second, rec.entries(), "a withdrawn declaration sends no reference")
	// Without v2 nothing at all, references or not.
	_, third := e.twice(inv("b", 3))
	pass, err := outbox.NewPublisher(e.store, e.vessel, rec, outbox.WithChunkReferences(true)).Publish(e.ctx)
	require.ErrorIs(t, err, outbox.ErrCapabilityOff)
	require.Zero(t, pass)
	require.Len(t, e.pending(), len(third))
}

func testRefLookup(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	if !e.lookup() {
		return
	}
	first, second := e.twice(inv("a", 130))
	third := e.commit(e.cycle(inv("a", 130))).Entries
	find := func(en outbox.Entry, before int64) (outbox.Entry, error) {
		var got outbox.Entry
		var err error
		e.in(func(tx outbox.Tx) error {
			got, err = tx.(outbox.DeliveredTx).DeliveredChunk(e.ctx, en.Digest, before)
			return nil
		})
		return got, err
	}
	for i := 1; i < len(first); i++ {
		got, err := find(second[i], second[i].Revision)
		require.NoError(t, err, "chunk %d", i-1)
		require.Equal(t, first[i].SnapshotID, got.SnapshotID, "the delivered entry, not the pending one")
		require.Equal(t, first[i].ChunkIndex, got.ChunkIndex)
		require.Equal(t, outbox.Delivered, got.State)
		_, err = find(second[i], first[i].Revision)
		require.ErrorIs(t, err, sourcecatalog.ErrNotFound, "only earlier revisions")
	}
	_, err := find(second[0], third[0].Revision)
	require.ErrorIs(t, err, sourcecatalog.ErrNotFound, "never a manifest")
	// Once the second cycle is delivered too, the highest earlier one.
	e.publish(e.publisher(e.store, &recorder{}))
	got, err := find(third[1], third[1].Revision)
	require.NoError(t, err)
	require.Equal(t, second[1].SnapshotID, got.SnapshotID, "the highest revision below")
}

func testRefReferences(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	_, second := e.twice(inv("a", 130))
	changed := e.commit(e.cycle(inv("b", 130))).Entries
	rec := refReceiver(nil)
	pass := e.publish(e.publisher(e.store, rec, outbox.WithChunkReferences(true)))
	all := len(second) + len(changed)
	if !e.lookup() {
		require.Equal(t, outbox.Pass{Sent: all, Delivered: all}, pass)
		require.Equal(t, entriesOf(second, changed), rec.entries())
		return
	}
	chunks := len(second) - 1
	require.Equal(t, outbox.Pass{Sent: all, Delivered: all, Referenced: chunks}, pass)
	sent := rec.entries()
	require.Equal(t, map[string]int{sourcecatalog.ManifestEntityType: 2, sourcecatalog.ChunkEntityType: len(changed) - 1,
		sourcecatalog.ChunkRefEntityType: chunks}, kinds(sent), "only the unchanged cycle's chunks by reference")
	for i, en := range sent[1:len(second)] {
		c, err := envelope.DecodeChunk(second[i+1].Payload)
		require.NoError(t, err)
		want := second[i+1]
		want.EntityType, want.Payload = sourcecatalog.ChunkRefEntityType, envelope.NewChunkRef(c).Canonical()
		require.Equal(t, want, en, "the chunk's reference under the chunk's key and digest")
	}
	require.Empty(t, e.pending(), "delivered by the chunk's receipt")
}

func testRefFallsBack(t *testing.T, newStore NewStore) {
	for _, class := range []error{sourcecatalog.ErrReferenceUnavailable, sourcecatalog.ErrHashMismatch, sourcecatalog.ErrUnsupported} {
		t.Run(sourcecatalog.WireName(class), func(t *testing.T) {
			e := newEnv(t, newStore)
			_, second := e.twice(inv("a", 130))
			if !e.lookup() {
				return
			}
			rec := refReceiver(func(en outbox.Entry) error {
				if en.ChunkIndex == 1 {
					return sourcecatalog.Errorf(class, "refused by the receiver")
				}
				return nil
			})
			pass := e.publish(e.publisher(e.store, rec, outbox.WithChunkReferences(true)))
			require.Equal(t, outbox.Pass{Sent: len(second), Delivered: len(second), Referenced: len(second) - 1, SentWhole: 1}, pass)
			sent := rec.entries()
			require.Equal(t, sourcecatalog.ChunkRefEntityType, sent[2].EntityType)
			require.Equal(t, second[2], sent[3], "sent whole at once, in the same pass")
			require.Empty(t, e.pending())
		})
	}
}

func testRefNotAgain(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	_, second := e.twice(inv("a", 130))
	if !e.lookup() {
		return
	}
	lost := errors.New("connection reset")
	refused := 0
	rec := refReceiver(func(en outbox.Entry) error {
		refused++
		return sourcecatalog.Errorf(sourcecatalog.ErrReferenceUnavailable, "refused")
	})
	// The whole chunk 0 is lost on the way the first time.
	rec.answer = func(inner func(int, outbox.Entry) (envelope.Receipt, error)) func(int, outbox.Entry) (envelope.Receipt, error) {
		return func(n int, en outbox.Entry) (envelope.Receipt, error) {
			if n == 2 {
				return envelope.Receipt{}, sourcecatalog.Wrap(sourcecatalog.ErrStoreUnavailable, lost)
			}
			return inner(n, en)
		}
	}(rec.answer)
	p := e.publisher(e.store, rec, outbox.WithChunkReferences(true))
	pass, err := p.Publish(e.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, pass.Failed)
	require.Equal(t, len(second)-1, refused, "every chunk referenced once")
	before := len(rec.entries())
	require.Equal(t, outbox.Pass{Sent: 1, Delivered: 1}, e.publish(p), "chunk 0 again: whole, not referenced again")
	require.Equal(t, second[1], rec.entries()[before])
	require.Equal(t, len(second)-1, refused)
}

func testRefConflict(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	_, second := e.twice(inv("a", 130))
	if !e.lookup() {
		return
	}
	rec := refReceiver(func(outbox.Entry) error {
		return sourcecatalog.Errorf(sourcecatalog.ErrConflict, "the snapshot was finalized without this chunk")
	})
	_, err := e.publisher(e.store, rec, outbox.WithChunkReferences(true)).Publish(e.ctx)
	require.ErrorIs(t, err, sourcecatalog.ErrConflict)
	require.Len(t, rec.entries(), 2, "the manifest and one reference: a conflict is never answered with the whole chunk")
	e.requireStates(second[0].SnapshotID, append([]outbox.State{outbox.Delivered}, states(len(second)-1, outbox.Stopped)...)...)
}
