package finalizetest_test

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/finalizetest"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/internal/suite"
)

// The kit is tested the way it is meant to fail: against stores with one
// bug each, a memstore wrapped to inject it. A failing kit fails the test
// running it, so each broken store runs in a child process — this test
// binary again, running only TestBrokenStore — and the parent requires
// that the child failed, and in the subtest named.
var brokenStores = []suite.Broken{
	{"ignore-ctx", "Tx methods ignore a done context", "Store/TxContextDone/Vessel"},
	{"wrap-error", "WithVessel wraps the callback's error", "Store/CallbackErrorUnchanged/Sentinel"},
	{"empty-index", "Index returns an empty slice, not nil, before the first activation", "Store/VesselAndIndex"},
	{"reuse-buffer", "returned byte slices are a buffer reused by the next transaction", "Store/BytesOutliveTransaction"},
	{"lose-on-reopen", "a reopened store has lost its data", "Store/ReadYourWritesAndCommit"},
	{"ping-ignores-ctx", "Ping answers nil whatever its context", "Status/Ping"},
	{"", "none (control): RunReopen over a memstore kept across reopens", "Store/ReadYourWritesAndCommit"},
}

// brokenEnv names the broken store TestBrokenStore runs the kit against.
const brokenEnv = "FINALIZETEST_BROKEN_STORE"

// TestBrokenStore runs the kit against the broken store brokenEnv names;
// only TestKitFailsBrokenStores runs it, in a child process.
func TestBrokenStore(t *testing.T) {
	switch name := suite.BrokenStore(t, brokenEnv); name {
	case "lose-on-reopen":
		finalizetest.RunReopen(t, func(*testing.T) (finalize.Store, func() (finalize.Store, error)) {
			return memstore.New(), func() (finalize.Store, error) { return memstore.New(), nil }
		})
	case "":
		finalizetest.RunReopen(t, func(*testing.T) (finalize.Store, func() (finalize.Store, error)) {
			s := memstore.New()
			return s, func() (finalize.Store, error) { return s, nil }
		})
	default:
		finalizetest.Run(t, func(*testing.T) finalize.Store { return &broken{Bug: &suite.Bug{Name: name}, inner: memstore.New()} })
	}
}

func TestKitFailsBrokenStores(t *testing.T) {
	suite.RequireKitFails(t, brokenEnv, brokenStores)
}

// broken is a memstore with one bug.
type broken struct {
	*suite.Bug
	inner *memstore.Store
}

func (b *broken) WithVessel(ctx context.Context, vessel uuid.UUID, fn func(finalize.Tx) error) error {
	return b.Err(b.inner.WithVessel(ctx, vessel, func(tx finalize.Tx) error {
		b.Begin(vessel)
		return fn(&brokenTx{b: b, vessel: vessel, Tx: tx})
	}))
}

// Ping implements finalize.Pinger; ping-ignores-ctx answers nil always.
func (b *broken) Ping(ctx context.Context) error {
	if b.Name == "ping-ignores-ctx" {
		return nil
	}
	return b.inner.Ping(b.Ctx(ctx))
}

// brokenTx passes every call to the memstore Tx, except those its bug
// changes.
type brokenTx struct {
	b      *broken
	vessel uuid.UUID
	finalize.Tx
}

func (t *brokenTx) Vessel(ctx context.Context) (finalize.VesselState, error) {
	return t.Tx.Vessel(t.b.Ctx(ctx))
}

func (t *brokenTx) SetVessel(ctx context.Context, v finalize.VesselState) error {
	return t.Tx.SetVessel(t.b.Ctx(ctx), v)
}

func (t *brokenTx) Snapshot(ctx context.Context, id uuid.UUID) (finalize.Snapshot, error) {
	s, err := t.Tx.Snapshot(t.b.Ctx(ctx), id)
	s.Manifest = t.b.Bytes(t.vessel, s.Manifest)
	return s, err
}

func (t *brokenTx) Snapshots(ctx context.Context) ([]finalize.Snapshot, error) {
	all, err := t.Tx.Snapshots(t.b.Ctx(ctx))
	for i := range all {
		all[i].Manifest = t.b.Bytes(t.vessel, all[i].Manifest)
	}
	return all, err
}

func (t *brokenTx) PutSnapshot(ctx context.Context, s finalize.Snapshot) error {
	s.Manifest = bytes.Clone(s.Manifest) // stored, as in a file, not kept
	return t.Tx.PutSnapshot(t.b.Ctx(ctx), s)
}

func (t *brokenTx) DeleteSnapshot(ctx context.Context, id uuid.UUID) error {
	return t.Tx.DeleteSnapshot(t.b.Ctx(ctx), id)
}

func (t *brokenTx) Chunk(ctx context.Context, snapshot uuid.UUID, index int) (finalize.StagedChunk, error) {
	c, err := t.Tx.Chunk(t.b.Ctx(ctx), snapshot, index)
	c.Canonical = t.b.Bytes(t.vessel, c.Canonical)
	return c, err
}

func (t *brokenTx) Chunks(ctx context.Context, snapshot uuid.UUID) ([]finalize.StagedChunk, error) {
	all, err := t.Tx.Chunks(t.b.Ctx(ctx), snapshot)
	for i := range all {
		all[i].Canonical = t.b.Bytes(t.vessel, all[i].Canonical)
	}
	return all, err
}

func (t *brokenTx) PutChunk(ctx context.Context, c finalize.StagedChunk) error {
	c.Canonical = bytes.Clone(c.Canonical)
	return t.Tx.PutChunk(t.b.Ctx(ctx), c)
}

func (t *brokenTx) Index(ctx context.Context) ([]finalize.IndexEntry, error) {
	idx, err := t.Tx.Index(t.b.Ctx(ctx))
	if t.b.Name == "empty-index" && idx == nil && err == nil {
		return []finalize.IndexEntry{}, nil
	}
	return idx, err
}

func (t *brokenTx) SetIndex(ctx context.Context, index []finalize.IndexEntry) error {
	return t.Tx.SetIndex(t.b.Ctx(ctx), index)
}

func (t *brokenTx) PutItems(ctx context.Context, items []finalize.Item) error {
	items = slices.Clone(items)
	for i := range items {
		items[i].Record = bytes.Clone(items[i].Record)
	}
	return t.Tx.PutItems(t.b.Ctx(ctx), items)
}

func (t *brokenTx) RetireItems(ctx context.Context, keys []catalog.Key, last finalize.Seen) error {
	return t.Tx.RetireItems(t.b.Ctx(ctx), keys, last)
}

func (t *brokenTx) Items(ctx context.Context) ([]finalize.Item, error) {
	all, err := t.Tx.Items(t.b.Ctx(ctx))
	for i := range all {
		all[i].Record = t.b.Bytes(t.vessel, all[i].Record)
	}
	return all, err
}
