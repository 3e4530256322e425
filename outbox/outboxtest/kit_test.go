package outboxtest_test

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/internal/suite"
	"github.com/yachtmemory/sourcecatalog/outbox"
	"github.com/yachtmemory/sourcecatalog/outbox/memstore"
	"github.com/yachtmemory/sourcecatalog/outbox/outboxtest"
)

// The kit is tested the way it is meant to fail: against stores with one
// bug each, a memstore.Store wrapped to inject it. A failing kit fails the test
// running it, so each broken store runs in a child process — this test
// binary again, running only TestBrokenStore — and the parent requires
// that the child failed, and in the subtest named.
var brokenStores = []suite.Broken{
	{"ignore-ctx", "Tx methods ignore a done context", "Store/TxContextDone/NextRevision"},
	{"wrap-error", "WithVessel wraps the callback's error", "Store/CallbackErrorUnchanged/Sentinel"},
	{"reuse-buffer", "returned byte slices are a buffer reused by the next transaction", "Store/BytesOutliveTransaction"},
	{"lose-on-reopen", "a reopened store has lost its data", "Store/NextRevisionPersisted"},
	{"", "none (control): RunReopen over a memstore.Store kept across reopens", "Store/NextRevisionPersisted"},
}

// brokenEnv names the broken store TestBrokenStore runs the kit against.
const brokenEnv = "OUTBOXTEST_BROKEN_STORE"

// TestBrokenStore runs the kit against the broken store brokenEnv names;
// only TestKitFailsBrokenStores runs it, in a child process.
func TestBrokenStore(t *testing.T) {
	switch name := suite.BrokenStore(t, brokenEnv); name {
	case "lose-on-reopen":
		outboxtest.RunReopen(t, func(*testing.T) (outbox.Store, func() (outbox.Store, error)) {
			return memstore.New(), func() (outbox.Store, error) { return memstore.New(), nil }
		})
	case "":
		outboxtest.RunReopen(t, func(*testing.T) (outbox.Store, func() (outbox.Store, error)) {
			s := memstore.New()
			return s, func() (outbox.Store, error) { return s, nil }
		})
	default:
		outboxtest.Run(t, func(*testing.T) outbox.Store { return &broken{Bug: &suite.Bug{Name: name}, inner: memstore.New()} })
	}
}

func TestKitFailsBrokenStores(t *testing.T) {
	suite.RequireKitFails(t, brokenEnv, brokenStores)
}

// broken is a memstore.Store with one bug.
type broken struct {
	*suite.Bug
	inner *memstore.Store
}

func (b *broken) WithVessel(ctx context.Context, vessel uuid.UUID, fn func(outbox.Tx) error) error {
	return b.Err(b.inner.WithVessel(ctx, vessel, func(tx outbox.Tx) error {
		b.Begin(vessel)
		return fn(&brokenTx{b: b, vessel: vessel, Tx: tx})
	}))
}

// brokenTx passes every call to the memstore Tx, except those its bug
// changes.
type brokenTx struct {
	b      *broken
	vessel uuid.UUID
	outbox.Tx
}

// payloads returns entries whose payloads are as reuse-buffer would hand
// them out: in the vessel's arena, which the next transaction overwrites.
func (t *brokenTx) payloads(entries []outbox.Entry) []outbox.Entry {
	for i := range entries {
		entries[i].Payload = t.b.Bytes(t.vessel, entries[i].Payload)
	}
	return entries
}

func (t *brokenTx) NextRevision(ctx context.Context, floor int64) (int64, error) {
	return t.Tx.NextRevision(t.b.Ctx(ctx), floor)
}

func (t *brokenTx) Entries(ctx context.Context, snapshot uuid.UUID) ([]outbox.Entry, error) {
	entries, err := t.Tx.Entries(t.b.Ctx(ctx), snapshot)
	return t.payloads(entries), err
}

func (t *brokenTx) PutEntries(ctx context.Context, entries []outbox.Entry) error {
	entries = slices.Clone(entries)
	for i := range entries {
		entries[i].Payload = bytes.Clone(entries[i].Payload) // stored, as in a file, not kept
	}
	return t.Tx.PutEntries(t.b.Ctx(ctx), entries)
}

func (t *brokenTx) Pending(ctx context.Context, limit int) ([]outbox.Entry, error) {
	entries, err := t.Tx.Pending(t.b.Ctx(ctx), limit)
	return t.payloads(entries), err
}

func (t *brokenTx) SetState(ctx context.Context, snapshot uuid.UUID, chunkIndex int, state outbox.State) error {
	return t.Tx.SetState(t.b.Ctx(ctx), snapshot, chunkIndex, state)
}
