package finalizetest

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/internal/suite"
)

// A txCall is one call of each Tx method, on a vessel that has snapshot s
// with chunk 0 staged and an item for key p.
type txCall struct {
	method string
	call   func(ctx context.Context, tx finalize.Tx, e *env, s finalize.Snapshot) error
}

var txCalls = []txCall{
	{"Vessel", func(ctx context.Context, tx finalize.Tx, _ *env, _ finalize.Snapshot) error {
		_, err := tx.Vessel(ctx)
		return err
	}},
	{"SetVessel", func(ctx context.Context, tx finalize.Tx, _ *env, s finalize.Snapshot) error {
		return tx.SetVessel(ctx, finalize.VesselState{ActiveSnapshot: s.ID, ActiveRevision: s.Revision})
	}},
	{"Snapshot", func(ctx context.Context, tx finalize.Tx, _ *env, s finalize.Snapshot) error {
		_, err := tx.Snapshot(ctx, s.ID)
		return err
	}},
	{"Snapshots", func(ctx context.Context, tx finalize.Tx, _ *env, _ finalize.Snapshot) error {
		_, err := tx.Snapshots(ctx)
		return err
	}},
	{"PutSnapshot", func(ctx context.Context, tx finalize.Tx, e *env, _ finalize.Snapshot) error {
		return tx.PutSnapshot(ctx, e.stagedSnapshot(2, 1))
	}},
	{"DeleteSnapshot", func(ctx context.Context, tx finalize.Tx, _ *env, s finalize.Snapshot) error {
		return tx.DeleteSnapshot(ctx, s.ID)
	}},
	{"Chunk", func(ctx context.Context, tx finalize.Tx, _ *env, s finalize.Snapshot) error {
		_, err := tx.Chunk(ctx, s.ID, 0)
		return err
	}},
	{"Chunks", func(ctx context.Context, tx finalize.Tx, _ *env, s finalize.Snapshot) error {
		_, err := tx.Chunks(ctx, s.ID)
		return err
	}},
	{"PutChunk", func(ctx context.Context, tx finalize.Tx, _ *env, s finalize.Snapshot) error {
		return tx.PutChunk(ctx, stagedChunk(s.ID, 1))
	}},
	{"Index", func(ctx context.Context, tx finalize.Tx, _ *env, _ finalize.Snapshot) error {
		_, err := tx.Index(ctx)
		return err
	}},
	{"SetIndex", func(ctx context.Context, tx finalize.Tx, _ *env, _ finalize.Snapshot) error {
		return tx.SetIndex(ctx, []finalize.IndexEntry{{Key: keyP, Digest: canonical.Sum([]byte("1"))}})
	}},
	{"PutItems", func(ctx context.Context, tx finalize.Tx, _ *env, _ finalize.Snapshot) error {
		return tx.PutItems(ctx, []finalize.Item{{Key: keyP, Record: []byte(recordFor(keyP, 2)), CurrentlyObserved: true}})
	}},
	{"RetireItems", func(ctx context.Context, tx finalize.Tx, _ *env, _ finalize.Snapshot) error {
		return tx.RetireItems(ctx, []catalog.Key{keyP}, finalize.Seen{Revision: 1, At: epoch})
	}},
	{"Items", func(ctx context.Context, tx finalize.Tx, _ *env, _ finalize.Snapshot) error {
		_, err := tx.Items(ctx)
		return err
	}},
}

func txCallOf(method string) txCall {
	i := slices.IndexFunc(txCalls, func(c txCall) bool { return c.method == method })
	return txCalls[i]
}

// keyP is the key of the item the Tx contract tests write.
var keyP = catalog.Key{Kind: catalog.KindPath, Path: "navigation.speedOverGround"}

// stageOne commits a snapshot with chunk 0 and an item for keyP, and
// returns the snapshot.
func (e *env) stageOne() finalize.Snapshot {
	e.t.Helper()
	s := e.stagedSnapshot(1, 2)
	e.in(func(tx finalize.Tx) error {
		require.NoError(e.t, tx.PutSnapshot(e.ctx, s), "PutSnapshot")
		require.NoError(e.t, tx.PutChunk(e.ctx, stagedChunk(s.ID, 0)), "PutChunk")
		return tx.PutItems(e.ctx, []finalize.Item{{Key: keyP, Record: []byte(recordFor(keyP, 1)), FirstSeen: finalize.Seen{Revision: 1, At: epoch}, CurrentlyObserved: true}})
	})
	return s
}

// testTxContextDone calls every Tx method with a done context inside a
// transaction whose own context is live: each must return ctx's error,
// whatever WithVessel checked when it began.
func testTxContextDone(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	s := e.stageOne()
	done, cancel := context.WithCancel(e.ctx)
	cancel()
	for _, c := range txCalls {
		t.Run(c.method, func(t *testing.T) {
			var got error
			err := e.store.WithVessel(e.ctx, e.vessel, func(tx finalize.Tx) error {
				got = c.call(done, tx, e, s)
				return got
			})
			require.ErrorIs(t, got, context.Canceled,
				"Tx.%s must return ctx's error when ctx is done (finalize.Tx contract)", c.method)
			require.ErrorIs(t, err, context.Canceled, "WithVessel returns the callback's error")
		})
	}
	e.in(func(tx finalize.Tx) error {
		v, err := tx.Vessel(e.ctx)
		require.NoError(t, err, "Vessel")
		require.Zero(t, v, "a transaction whose callback failed writes nothing (finalize.Store contract)")
		got, err := tx.Snapshots(e.ctx)
		require.NoError(t, err, "Snapshots")
		require.Equal(t, []finalize.Snapshot{s}, got, "a transaction whose callback failed writes nothing (finalize.Store contract)")
		return nil
	})
}

// testCallbackErrorUnchanged fails callbacks in several ways, the third
// after a write: WithVessel must return the very error the callback
// returned, not a wrapper of it.
func testCallbackErrorUnchanged(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	s := e.stageOne()
	suite.RunCallbackErrors(t, "finalize.Store", [4]string{"Vessel", "Snapshot", "SetVessel", "PutItems"}, func(t *testing.T, call string, fail error) error {
		return e.store.WithVessel(e.ctx, e.vessel, func(tx finalize.Tx) error {
			require.NoError(t, txCallOf(call).call(e.ctx, tx, e, s), "Tx.%s", call)
			return fail
		})
	})
}

// testBytesOutliveTransaction keeps the byte slices Tx reads return, then
// writes, replaces and deletes data of the same shape in later
// transactions and reads it again: the kept slices must not change, as
// they would in a store that hands out a buffer it reuses or memory it
// maps only during a transaction.
func testBytesOutliveTransaction(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	s := e.stageOne()
	type kept struct {
		what      string
		got, want []byte
	}
	var held []kept
	keep := func(what string, b []byte) {
		held = append(held, kept{what, b, bytes.Clone(b)})
	}
	read := func(tx finalize.Tx, keepAll bool) {
		got, err := tx.Snapshot(e.ctx, s.ID)
		if !errors.Is(err, sourcecatalog.ErrNotFound) {
			require.NoError(t, err, "Snapshot")
		}
		all, err := tx.Snapshots(e.ctx)
		require.NoError(t, err, "Snapshots")
		c, err := tx.Chunk(e.ctx, s.ID, 0)
		if !errors.Is(err, sourcecatalog.ErrNotFound) {
			require.NoError(t, err, "Chunk")
		}
		chunks, err := tx.Chunks(e.ctx, s.ID)
		require.NoError(t, err, "Chunks")
		items, err := tx.Items(e.ctx)
		require.NoError(t, err, "Items")
		if !keepAll {
			return
		}
		require.Len(t, all, 1, "Snapshots")
		require.Len(t, chunks, 1, "Chunks")
		require.Len(t, items, 1, "Items")
		keep("Snapshot: Manifest", got.Manifest)
		keep("Snapshots: Manifest", all[0].Manifest)
		keep("Chunk: Canonical", c.Canonical)
		keep("Chunks: Canonical", chunks[0].Canonical)
		keep("Items: Record", items[0].Record)
	}
	e.in(func(tx finalize.Tx) error { read(tx, true); return nil })

	// Replace everything with bytes of the same length, then delete it.
	other := e.stagedSnapshot(1, 2)
	other.ID = s.ID
	e.in(func(tx finalize.Tx) error {
		require.NoError(t, tx.DeleteSnapshot(e.ctx, s.ID), "DeleteSnapshot")
		require.NoError(t, tx.PutSnapshot(e.ctx, other), "PutSnapshot")
		c := stagedChunk(e.ids.next(), 0)
		c.Snapshot = s.ID
		require.NoError(t, tx.PutChunk(e.ctx, c), "PutChunk")
		return tx.PutItems(e.ctx, []finalize.Item{{Key: keyP, Record: []byte(recordFor(keyP, 8)), CurrentlyObserved: true}})
	})
	e.in(func(tx finalize.Tx) error { read(tx, false); return nil })
	e.in(func(tx finalize.Tx) error { return tx.DeleteSnapshot(e.ctx, s.ID) })
	e.in(func(tx finalize.Tx) error { read(tx, false); return nil })

	for _, k := range held {
		require.Equalf(t, string(k.want), string(k.got),
			"%s changed after its transaction: byte slices a Tx returns must keep their contents for as long as the caller holds them (finalize.Tx contract)", k.what)
	}
}
