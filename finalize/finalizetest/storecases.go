package finalizetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

// The Tx contract, checked directly: what the Receiver relies on.
var storeCases = []testCase{
	{"ReadYourWritesAndCommit", testStoreCommit},
	{"RollbackOnError", testStoreRollback},
	{"NotFound", testStoreNotFound},
	{"SnapshotsAndChunks", testStoreSnapshots},
	{"DeleteSnapshot", testStoreDelete},
	{"VesselAndIndex", testStoreVesselIndex},
	{"Items", testStoreItems},
	{"VesselIsolation", testStoreIsolation},
	{"Serialised", testStoreSerialised},
	{"ContextDone", testStoreContext},
	{"TxContextDone", testTxContextDone},
	{"CallbackErrorUnchanged", testCallbackErrorUnchanged},
	{"BytesOutliveTransaction", testBytesOutliveTransaction},
	{"ChunkDigests", testStoreChunkDigests},
}

// in runs fn in a transaction that must succeed.
func (e *env) in(fn func(tx finalize.Tx) error) {
	e.t.Helper()
	require.NoError(e.t, e.store.WithVessel(e.ctx, e.vessel, fn), "WithVessel")
}

func (e *env) stagedSnapshot(rev int64, chunks int) finalize.Snapshot {
	manifest := []byte(`{"manifest":"` + e.ids.next().String() + `"}`)
	return finalize.Snapshot{
		ID: e.ids.next(), Revision: rev, State: finalize.StateStaging,
		Manifest: manifest, ManifestDigest: canonical.Sum(manifest),
		ChunkCount: chunks, RecordCount: 3 * chunks, ChunksStaged: 0, StagedBytes: int64(len(manifest)),
	}
}

func stagedChunk(snapshot uuid.UUID, index int) finalize.StagedChunk {
	b := []byte(`{"chunk":` + strconv.Itoa(index) + `,"of":"` + snapshot.String() + `"}`)
	return finalize.StagedChunk{Snapshot: snapshot, Index: index, Canonical: b, Payload: canonical.Sum(b)}
}

func testStoreCommit(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	s := e.stagedSnapshot(3, 2)
	c := stagedChunk(s.ID, 1)
	e.in(func(tx finalize.Tx) error {
		if err := tx.PutSnapshot(e.ctx, s); err != nil {
			return err
		}
		if err := tx.PutChunk(e.ctx, c); err != nil {
			return err
		}
		got, err := tx.Snapshot(e.ctx, s.ID)
		require.NoError(t, err)
		require.Equal(t, s, got, "a transaction reads its own writes")
		gc, err := tx.Chunk(e.ctx, s.ID, 1)
		require.NoError(t, err)
		require.Equal(t, c, gc, "a transaction reads its own chunk")
		s.ChunksStaged, s.State = 1, finalize.StateRejected
		s.Reason, s.Final = "because", finalize.Rejected
		return tx.PutSnapshot(e.ctx, s) // replaces
	})
	e.in(func(tx finalize.Tx) error {
		got, err := tx.Snapshot(e.ctx, s.ID)
		require.NoError(t, err)
		require.Equal(t, s, got, "committed, the last PutSnapshot wins")
		gc, err := tx.Chunk(e.ctx, s.ID, 1)
		require.NoError(t, err)
		require.Equal(t, c, gc, "committed, a chunk is kept as put")
		all, err := tx.Snapshots(e.ctx)
		require.NoError(t, err)
		require.Equal(t, []finalize.Snapshot{s}, all, "Snapshots returns every committed snapshot")
		return nil
	})
}

func testStoreRollback(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	kept := e.stagedSnapshot(1, 1)
	e.in(func(tx finalize.Tx) error { return tx.PutSnapshot(e.ctx, kept) })
	var before []finalize.Item
	e.in(func(tx finalize.Tx) error {
		var err error
		before, err = tx.Items(e.ctx)
		return err
	})

	boom := errors.New("callback failed")
	s := e.stagedSnapshot(2, 1)
	err := e.store.WithVessel(e.ctx, e.vessel, func(tx finalize.Tx) error {
		require.NoError(t, tx.PutSnapshot(e.ctx, s))
		require.NoError(t, tx.PutChunk(e.ctx, stagedChunk(s.ID, 0)))
		require.NoError(t, tx.DeleteSnapshot(e.ctx, kept.ID))
		require.NoError(t, tx.SetVessel(e.ctx, finalize.VesselState{ActiveSnapshot: s.ID, ActiveRevision: 2}))
		require.NoError(t, tx.SetIndex(e.ctx, []finalize.IndexEntry{{Key: catalog.Key{Kind: catalog.KindPath, Path: "a.b"}}}))
		require.NoError(t, tx.PutItems(e.ctx, []finalize.Item{{Key: catalog.Key{Kind: catalog.KindPath, Path: "a.b"}, Record: []byte(recordFor(catalog.Key{Kind: catalog.KindPath, Path: "a.b"}, 0)), CurrentlyObserved: true}}))
		return boom
	})
	require.Truef(t, err == boom, "WithVessel must return the callback's error unchanged (finalize.Store contract): got %v", err)

	e.in(func(tx finalize.Tx) error {
		_, err := tx.Snapshot(e.ctx, s.ID)
		require.ErrorIs(t, err, sourcecatalog.ErrNotFound, "a failed callback leaves nothing written")
		_, err = tx.Chunk(e.ctx, s.ID, 0)
		require.ErrorIs(t, err, sourcecatalog.ErrNotFound, "a failed callback leaves no chunk written")
		got, err := tx.Snapshot(e.ctx, kept.ID)
		require.NoError(t, err, "a failed callback deletes nothing")
		require.Equal(t, kept, got, "a failed callback changes no snapshot")
		v, err := tx.Vessel(e.ctx)
		require.NoError(t, err)
		require.Zero(t, v, "a failed callback leaves the vessel as it was")
		idx, err := tx.Index(e.ctx)
		require.NoError(t, err)
		require.Nil(t, idx, "Tx.Index must return nil before the first activation, also after a rolled-back SetIndex (finalize.Tx contract)")
		items, err := tx.Items(e.ctx)
		require.NoError(t, err)
		require.ElementsMatch(t, before, items, "a failed callback writes no item")
		return nil
	})
}

func testStoreNotFound(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	s := e.stagedSnapshot(1, 2)
	e.in(func(tx finalize.Tx) error {
		_, err := tx.Snapshot(e.ctx, s.ID)
		require.ErrorIs(t, err, sourcecatalog.ErrNotFound, "Tx.Snapshot of an unknown snapshot returns ErrNotFound (finalize.Tx contract)")
		_, err = tx.Chunk(e.ctx, s.ID, 0)
		require.ErrorIs(t, err, sourcecatalog.ErrNotFound, "Tx.Chunk of an unknown chunk returns ErrNotFound (finalize.Tx contract)")
		if err := tx.PutSnapshot(e.ctx, s); err != nil {
			return err
		}
		if err := tx.PutChunk(e.ctx, stagedChunk(s.ID, 0)); err != nil {
			return err
		}
		_, err = tx.Chunk(e.ctx, s.ID, 1)
		require.ErrorIs(t, err, sourcecatalog.ErrNotFound, "another index of a staged snapshot")
		return nil
	})
	e.in(func(tx finalize.Tx) error {
		_, err := tx.Chunk(e.ctx, s.ID, 1)
		require.ErrorIs(t, err, sourcecatalog.ErrNotFound, "Tx.Chunk of an unknown chunk returns ErrNotFound (finalize.Tx contract)")
		chunks, err := tx.Chunks(e.ctx, e.ids.next())
		require.NoError(t, err, "Chunks of an unknown snapshot")
		require.Empty(t, chunks, "Chunks of an unknown snapshot is empty")
		return nil
	})
}

func testStoreSnapshots(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a, b := e.stagedSnapshot(1, 5), e.stagedSnapshot(2, 2)
	var want []finalize.StagedChunk
	e.in(func(tx finalize.Tx) error {
		require.NoError(t, tx.PutSnapshot(e.ctx, a))
		for _, i := range []int{3, 0, 4, 1} { // out of order, 2 missing
			c := stagedChunk(a.ID, i)
			require.NoError(t, tx.PutChunk(e.ctx, c))
		}
		return nil
	})
	for _, i := range []int{0, 1, 3, 4} {
		want = append(want, stagedChunk(a.ID, i))
	}
	e.in(func(tx finalize.Tx) error {
		require.NoError(t, tx.PutSnapshot(e.ctx, b))
		require.NoError(t, tx.PutChunk(e.ctx, stagedChunk(b.ID, 1)))
		got, err := tx.Chunks(e.ctx, a.ID)
		require.NoError(t, err)
		require.Equal(t, want, got, "Chunks in index order")
		got, err = tx.Chunks(e.ctx, b.ID)
		require.NoError(t, err)
		require.Equal(t, []finalize.StagedChunk{stagedChunk(b.ID, 1)}, got, "a snapshot's own chunks, including this transaction's")
		all, err := tx.Snapshots(e.ctx)
		require.NoError(t, err)
		require.ElementsMatch(t, []finalize.Snapshot{a, b}, all, "Snapshots includes this transaction's")
		return nil
	})
}

func testStoreDelete(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a, b := e.stagedSnapshot(1, 2), e.stagedSnapshot(2, 2)
	e.in(func(tx finalize.Tx) error {
		for _, s := range []finalize.Snapshot{a, b} {
			require.NoError(t, tx.PutSnapshot(e.ctx, s))
			require.NoError(t, tx.PutChunk(e.ctx, stagedChunk(s.ID, 0)))
			require.NoError(t, tx.PutChunk(e.ctx, stagedChunk(s.ID, 1)))
		}
		return nil
	})
	requireGone := func(tx finalize.Tx, id uuid.UUID) {
		_, err := tx.Snapshot(e.ctx, id)
		require.ErrorIs(t, err, sourcecatalog.ErrNotFound, "a deleted snapshot is not found")
		_, err = tx.Chunk(e.ctx, id, 0)
		require.ErrorIs(t, err, sourcecatalog.ErrNotFound, "chunks go with their snapshot")
		chunks, err := tx.Chunks(e.ctx, id)
		require.NoError(t, err)
		require.Empty(t, chunks, "chunks go with their snapshot")
	}
	e.in(func(tx finalize.Tx) error {
		require.NoError(t, tx.DeleteSnapshot(e.ctx, a.ID))
		require.NoError(t, tx.DeleteSnapshot(e.ctx, e.ids.next()), "deleting an unknown snapshot is not an error")
		requireGone(tx, a.ID)
		all, err := tx.Snapshots(e.ctx)
		require.NoError(t, err)
		require.Equal(t, []finalize.Snapshot{b}, all, "DeleteSnapshot removes the snapshot from Snapshots")
		return nil
	})
	e.in(func(tx finalize.Tx) error {
		requireGone(tx, a.ID)
		chunks, err := tx.Chunks(e.ctx, b.ID)
		require.NoError(t, err)
		require.Len(t, chunks, 2, "other snapshots keep their chunks")

		// Deleted and staged again in one transaction, as a retried
		// snapshot after Discard: the old chunks stay gone.
		require.NoError(t, tx.DeleteSnapshot(e.ctx, b.ID))
		fresh := b
		fresh.ChunksStaged = 0
		require.NoError(t, tx.PutSnapshot(e.ctx, fresh))
		chunks, err = tx.Chunks(e.ctx, b.ID)
		require.NoError(t, err)
		require.Empty(t, chunks, "a snapshot deleted and put again has no chunks")
		_, err = tx.Chunk(e.ctx, b.ID, 0)
		require.ErrorIs(t, err, sourcecatalog.ErrNotFound, "a snapshot deleted and put again has no chunks")
		return nil
	})
	e.in(func(tx finalize.Tx) error {
		chunks, err := tx.Chunks(e.ctx, b.ID)
		require.NoError(t, err)
		require.Empty(t, chunks, "committed: a snapshot deleted and put again has no chunks")
		_, err = tx.Chunk(e.ctx, b.ID, 1)
		require.ErrorIs(t, err, sourcecatalog.ErrNotFound, "committed: a snapshot deleted and put again has no chunks")
		return nil
	})
}

func testStoreVesselIndex(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	e.in(func(tx finalize.Tx) error {
		v, err := tx.Vessel(e.ctx)
		require.NoError(t, err)
		require.Zero(t, v, "a vessel never activated has the zero state")
		idx, err := tx.Index(e.ctx)
		require.NoError(t, err)
		require.Nil(t, idx, "Tx.Index must return nil before the first activation (finalize.Tx contract)")
		items, err := tx.Items(e.ctx)
		require.NoError(t, err)
		require.Empty(t, items, "a vessel never activated has no items")
		return nil
	})
	doc := canonical.Sum([]byte("document"))
	vs := finalize.VesselState{ActiveSnapshot: e.ids.next(), ActiveRevision: 9, ActiveDiscoveredAt: epoch, ActiveDocument: doc}
	index := []finalize.IndexEntry{
		{Key: catalog.Key{Kind: catalog.KindPath, Path: "a.b"}, Digest: canonical.Sum([]byte("1"))},
		{Key: catalog.Key{Kind: catalog.KindSource, SourceRef: "can0.x"}, Digest: canonical.Sum([]byte("2"))},
		{Key: catalog.Key{Kind: catalog.KindObservation, Path: "a.b", SourceRef: "can0.x"}, Digest: canonical.Sum([]byte("3"))},
	}
	e.in(func(tx finalize.Tx) error {
		require.NoError(t, tx.SetVessel(e.ctx, vs))
		require.NoError(t, tx.SetIndex(e.ctx, index))
		got, err := tx.Index(e.ctx)
		require.NoError(t, err)
		require.Equal(t, index, got, "a transaction reads its own SetIndex")
		return nil
	})
	e.in(func(tx finalize.Tx) error {
		v, err := tx.Vessel(e.ctx)
		require.NoError(t, err)
		require.Equal(t, vs.ActiveSnapshot, v.ActiveSnapshot, "committed: SetVessel replaces the active pointer")
		require.Equal(t, vs.ActiveRevision, v.ActiveRevision, "committed: SetVessel replaces the active pointer")
		require.True(t, vs.ActiveDiscoveredAt.Equal(v.ActiveDiscoveredAt), "discovered-at kept")
		require.Equal(t, doc, v.ActiveDocument, "committed: SetVessel replaces the active pointer")
		got, err := tx.Index(e.ctx)
		require.NoError(t, err)
		require.Equal(t, index, got, "the index in canonical order, as given")
		require.NoError(t, tx.SetIndex(e.ctx, index[:1]))
		return nil
	})
	e.in(func(tx finalize.Tx) error {
		got, err := tx.Index(e.ctx)
		require.NoError(t, err)
		require.Equal(t, index[:1], got, "SetIndex replaces the index")
		return nil
	})
}

// itemViews renders items for comparison, in canonical key order.
func itemViews(items []finalize.Item) []itemView {
	out := make([]itemView, 0, len(items))
	for _, it := range items {
		v := itemView{
			Kind: it.Key.Kind.String(), Path: it.Key.Path, SourceRef: it.Key.SourceRef, Record: string(it.Record),
			FirstSeen: seenView(it.FirstSeen), Current: it.CurrentlyObserved,
		}
		if !it.CurrentlyObserved {
			v.LastSeen = seenView(it.LastSeen) // stored only for items no longer current
		}
		out = append(out, v)
	}
	slices.SortFunc(out, compareItems)
	return out
}

func testStoreItems(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	s1 := finalize.Seen{Revision: 1, At: epoch}
	s2 := finalize.Seen{Revision: 2, At: epoch.Add(60e9)}
	s3 := finalize.Seen{Revision: 3, At: epoch.Add(120e9)}
	p := catalog.Key{Kind: catalog.KindPath, Path: "navigation.speedOverGround"}
	q := catalog.Key{Kind: catalog.KindPath, Path: "navigation.position"}
	o := catalog.Key{Kind: catalog.KindObservation, Path: "navigation.speedOverGround", SourceRef: srcGPS}
	item := func(k catalog.Key, rec string, seen finalize.Seen) finalize.Item {
		// Records are valid records of the item's kind and key, as the Tx
		// contract requires; n varies their content.
		return finalize.Item{Key: k, Record: []byte(rec), FirstSeen: seen, LastSeen: seen, CurrentlyObserved: true}
	}
	e.in(func(tx finalize.Tx) error {
		return tx.PutItems(e.ctx, []finalize.Item{item(p, recordFor(p, 1), s1), item(q, recordFor(q, 1), s1), item(o, recordFor(o, 1), s1)})
	})
	e.in(func(tx finalize.Tx) error {
		// p changes: record replaced, first-seen kept whatever is passed.
		require.NoError(t, tx.PutItems(e.ctx, []finalize.Item{item(p, recordFor(p, 2), s2)}))
		// q leaves; an unknown key is ignored.
		require.NoError(t, tx.RetireItems(e.ctx, []catalog.Key{q, {Kind: catalog.KindSource, SourceRef: "nowhere"}}, s1))
		items, err := tx.Items(e.ctx)
		require.NoError(t, err)
		require.Len(t, items, 3, "RetireItems ignores unknown keys and deletes nothing")
		return nil
	})
	e.in(func(tx finalize.Tx) error {
		items, err := tx.Items(e.ctx)
		require.NoError(t, err)
		require.Equal(t, []itemView{
			{Kind: "path", Path: q.Path, Record: recordFor(q, 1), FirstSeen: seenView(s1), LastSeen: seenView(s1)},
			{Kind: "path", Path: p.Path, Record: recordFor(p, 2), FirstSeen: seenView(s1), Current: true},
			{Kind: "observation", Path: o.Path, SourceRef: o.SourceRef, Record: recordFor(o, 1), FirstSeen: seenView(s1), Current: true},
		}, itemViews(items), "PutItems replaces the record and keeps FirstSeen; RetireItems sets Current false and LastSeen (finalize.Tx contract)")
		// q comes back, then o leaves; the same transaction sees both.
		require.NoError(t, tx.PutItems(e.ctx, []finalize.Item{item(q, recordFor(q, 3), s3)}))
		require.NoError(t, tx.RetireItems(e.ctx, []catalog.Key{o}, s2))
		require.NoError(t, tx.PutItems(e.ctx, []finalize.Item{item(q, recordFor(q, 4), s3)}))
		return nil
	})
	e.in(func(tx finalize.Tx) error {
		items, err := tx.Items(e.ctx)
		require.NoError(t, err)
		require.Equal(t, []itemView{
			{Kind: "path", Path: q.Path, Record: recordFor(q, 4), FirstSeen: seenView(s1), Current: true},
			{Kind: "path", Path: p.Path, Record: recordFor(p, 2), FirstSeen: seenView(s1), Current: true},
			{Kind: "observation", Path: o.Path, SourceRef: o.SourceRef, Record: recordFor(o, 1), FirstSeen: seenView(s1), LastSeen: seenView(s2)},
		}, itemViews(items), "first-seen is never overwritten; retired items keep their record")
		return nil
	})
}

func testStoreIsolation(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	other := *e
	other.vessel = e.ids.next()
	s := e.stagedSnapshot(1, 1)
	e.in(func(tx finalize.Tx) error {
		require.NoError(t, tx.PutSnapshot(e.ctx, s))
		require.NoError(t, tx.PutChunk(e.ctx, stagedChunk(s.ID, 0)))
		require.NoError(t, tx.SetVessel(e.ctx, finalize.VesselState{ActiveSnapshot: s.ID, ActiveRevision: 1}))
		return tx.PutItems(e.ctx, []finalize.Item{{Key: catalog.Key{Kind: catalog.KindPath, Path: "a.b"}, Record: []byte(recordFor(catalog.Key{Kind: catalog.KindPath, Path: "a.b"}, 0)), CurrentlyObserved: true}})
	})
	other.in(func(tx finalize.Tx) error {
		_, err := tx.Snapshot(e.ctx, s.ID)
		require.ErrorIs(t, err, sourcecatalog.ErrNotFound, "another vessel's snapshot")
		_, err = tx.Chunk(e.ctx, s.ID, 0)
		require.ErrorIs(t, err, sourcecatalog.ErrNotFound, "another vessel's chunk")
		all, err := tx.Snapshots(e.ctx)
		require.NoError(t, err)
		require.Empty(t, all, "a transaction sees only its own vessel's snapshots")
		v, err := tx.Vessel(e.ctx)
		require.NoError(t, err)
		require.Zero(t, v, "a transaction sees only its own vessel's pointer")
		items, err := tx.Items(e.ctx)
		require.NoError(t, err)
		require.Empty(t, items, "a transaction sees only its own vessel's items")
		return nil
	})
}

// testStoreSerialised runs read-modify-write transactions on one vessel
// from many goroutines: none may be lost.
func testStoreSerialised(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	const workers, rounds = 8, 25
	errs := make(chan error, workers*rounds)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				errs <- e.store.WithVessel(e.ctx, e.vessel, func(tx finalize.Tx) error {
					v, err := tx.Vessel(e.ctx)
					if err != nil {
						return err
					}
					v.ActiveRevision++
					return tx.SetVessel(e.ctx, v)
				})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	e.in(func(tx finalize.Tx) error {
		v, err := tx.Vessel(e.ctx)
		require.NoError(t, err)
		require.EqualValues(t, workers*rounds, v.ActiveRevision, "transactions of one vessel are serialised")
		return nil
	})
}

func testStoreContext(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	ran := false
	err := e.store.WithVessel(ctx, e.vessel, func(tx finalize.Tx) error {
		ran = true
		if _, err := tx.Vessel(ctx); err != nil {
			return err
		}
		return tx.SetVessel(ctx, finalize.VesselState{ActiveRevision: 7})
	})
	require.ErrorIs(t, err, context.Canceled, "a done context fails the transaction (ran callback: %v)", ran)
	e.in(func(tx finalize.Tx) error {
		v, err := tx.Vessel(e.ctx)
		require.NoError(t, err)
		require.Zero(t, v, "nothing written under a done context")
		return nil
	})
}

// recordFor returns the canonical bytes of a valid record for k, its
// content varied by n: the Tx contract lets a Store parse item records.
func recordFor(k catalog.Key, n int) string {
	var r *catalog.Record
	var err error
	switch k.Kind {
	case catalog.KindPath:
		r, err = catalog.NewPath(catalog.Path{Path: k.Path, Unit: catalog.UnitOf(fmt.Sprintf("u%d", n))})
	case catalog.KindSource:
		label := fmt.Sprintf("label %d", n)
		r, err = catalog.NewSource(catalog.Source{SourceRef: k.SourceRef, Label: &label})
	default:
		types := catalog.ValueTypes()
		r, err = catalog.NewObservation(catalog.Observation{Path: k.Path, SourceRef: k.SourceRef, ValueType: types[n%len(types)]})
	}
	if err != nil {
		panic("finalizetest: " + err.Error())
	}
	return string(r.Canonical())
}

// testStoreChunkDigests: a Tx that is a finalize.DigestTx reads a
// snapshot's chunks as Chunks does but for their bytes — the same chunks,
// in index order, those written earlier in the transaction included, none
// of another snapshot or vessel. A Store without it is skipped.
func testStoreChunkDigests(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	s, other := e.stagedSnapshot(3, 3), e.stagedSnapshot(3, 3)
	digests := false
	e.in(func(tx finalize.Tx) error {
		_, digests = tx.(finalize.DigestTx)
		return nil
	})
	if !digests {
		t.Skip("the Store's Tx is no finalize.DigestTx")
	}
	e.in(func(tx finalize.Tx) error {
		for _, c := range []finalize.StagedChunk{stagedChunk(s.ID, 2), stagedChunk(s.ID, 0), stagedChunk(other.ID, 1)} {
			if err := tx.PutChunk(e.ctx, c); err != nil {
				return err
			}
		}
		return nil
	})
	e.in(func(tx finalize.Tx) error {
		if err := tx.PutChunk(e.ctx, stagedChunk(s.ID, 1)); err != nil { // read in its own transaction
			return err
		}
		whole, err := tx.Chunks(e.ctx, s.ID)
		require.NoError(t, err)
		got, err := tx.(finalize.DigestTx).ChunkDigests(e.ctx, s.ID)
		require.NoError(t, err)
		for i := range whole {
			whole[i].Canonical = nil
		}
		require.Len(t, got, 3)
		require.Equal(t, whole, got, "Chunks without the bytes")
		return nil
	})
	require.NoError(t, e.store.WithVessel(e.ctx, uuid.New(), func(tx finalize.Tx) error {
		got, err := tx.(finalize.DigestTx).ChunkDigests(e.ctx, s.ID)
		require.NoError(t, err)
		require.Empty(t, got, "another vessel's")
		return nil
	}))
}
