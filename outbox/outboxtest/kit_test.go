package outboxtest_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
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
		outboxtest.Run(t, func(*testing.T) outbox.Store { return &broken{bug: name, inner: memstore.New()} })
	}
}

func TestKitFailsBrokenStores(t *testing.T) {
	suite.RequireKitFails(t, brokenEnv, brokenStores)
}

// broken is a memstore.Store with one bug.
type broken struct {
	bug   string
	inner *memstore.Store

	mu    sync.Mutex
	arena map[uuid.UUID][]byte // reuse-buffer: the memory a vessel's reads return, reused by each transaction
}

func (b *broken) WithVessel(ctx context.Context, vessel uuid.UUID, fn func(outbox.Tx) error) error {
	err := b.inner.WithVessel(ctx, vessel, func(tx outbox.Tx) error {
		b.mu.Lock()
		if b.arena == nil {
			b.arena = make(map[uuid.UUID][]byte)
		}
		b.arena[vessel] = b.arena[vessel][:0]
		b.mu.Unlock()
		return fn(&brokenTx{b: b, vessel: vessel, Tx: tx})
	})
	if b.bug == "wrap-error" && err != nil {
		return fmt.Errorf("brokenstore: %w", err)
	}
	return err
}

// brokenTx passes every call to the memstore Tx, except those its bug
// changes.
type brokenTx struct {
	b      *broken
	vessel uuid.UUID
	outbox.Tx
}

// ctx returns the context to pass on: ignore-ctx drops it.
func (t *brokenTx) ctx(ctx context.Context) context.Context {
	if t.b.bug == "ignore-ctx" {
		return context.Background()
	}
	return ctx
}

// payloads returns entries whose payloads are as reuse-buffer would hand
// them out: in the vessel's arena, which the next transaction overwrites.
func (t *brokenTx) payloads(entries []outbox.Entry) []outbox.Entry {
	if t.b.bug != "reuse-buffer" {
		return entries
	}
	t.b.mu.Lock()
	defer t.b.mu.Unlock()
	for i, e := range entries {
		arena := t.b.arena[t.vessel]
		if len(arena)+len(e.Payload) > cap(arena) {
			arena = slices.Grow(arena, max(len(e.Payload), 1<<16)) // a new buffer; what was handed out stays
		}
		start := len(arena)
		arena = append(arena, e.Payload...)
		t.b.arena[t.vessel] = arena
		entries[i].Payload = arena[start:len(arena):len(arena)]
	}
	return entries
}

func (t *brokenTx) NextRevision(ctx context.Context) (int64, error) {
	return t.Tx.NextRevision(t.ctx(ctx))
}

func (t *brokenTx) Entries(ctx context.Context, snapshot uuid.UUID) ([]outbox.Entry, error) {
	entries, err := t.Tx.Entries(t.ctx(ctx), snapshot)
	return t.payloads(entries), err
}

func (t *brokenTx) PutEntries(ctx context.Context, entries []outbox.Entry) error {
	entries = slices.Clone(entries)
	for i := range entries {
		entries[i].Payload = bytes.Clone(entries[i].Payload) // stored, as in a file, not kept
	}
	return t.Tx.PutEntries(t.ctx(ctx), entries)
}

func (t *brokenTx) Pending(ctx context.Context, limit int) ([]outbox.Entry, error) {
	entries, err := t.Tx.Pending(t.ctx(ctx), limit)
	return t.payloads(entries), err
}

func (t *brokenTx) SetState(ctx context.Context, snapshot uuid.UUID, chunkIndex int, state outbox.State) error {
	return t.Tx.SetState(t.ctx(ctx), snapshot, chunkIndex, state)
}
