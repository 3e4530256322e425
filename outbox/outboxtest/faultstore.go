package outboxtest

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/internal/fault"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// ErrInjected is the failure a FaultStore injects.
var ErrInjected = errors.New("outboxtest: injected fault")

// A Fault is a kind of failure a FaultStore injects.
type Fault = fault.Fault

// Faults. Operations and commits are counted from 1 over the life of the
// FaultStore; see Counts.
const (
	// NoFault injects nothing.
	NoFault = fault.NoFault
	// FailOp makes the Nth Tx method call return ErrInjected without
	// reaching the wrapped store, as a failed statement would. The caller
	// must return the error from its callback, so the wrapped store rolls
	// the transaction back.
	FailOp = fault.FailOp
	// FailCommit fails the commit point of the Nth transaction whose
	// callback succeeded: the wrapped store rolls everything back (the
	// FaultStore returns ErrInjected from the callback it gave the wrapped
	// store) and WithVessel returns ErrInjected, as a crash just before
	// the commit would.
	FailCommit = fault.FailCommit
	// LoseAck lets the Nth transaction whose callback succeeded commit,
	// then returns ErrInjected: the caller never learns that the commit
	// happened, as when the process or the connection dies right after it.
	LoseAck = fault.LoseAck
)

// A FaultStore wraps any outbox.Store and its transactions to inject one
// failure at a chosen point, to re-run every transaction callback as a
// store retrying after a deadlock may, to alter the entries the store
// returns as if their bytes had changed after they were committed, and to
// count what its callers do. It is safe for concurrent use; counts then
// follow the order in which calls reach it.
type FaultStore struct {
	plan *fault.Plan[outbox.Tx]

	mu     sync.Mutex
	tamper func(outbox.Entry) outbox.Entry
}

var _ outbox.Store = (*FaultStore)(nil)

// NewFaultStore wraps inner, injecting nothing until Inject is called.
func NewFaultStore(inner outbox.Store) *FaultStore {
	f := &FaultStore{}
	wrap := func(tx outbox.Tx, g *fault.Guard) outbox.Tx { return &faultTx{f: f, g: g, tx: tx} }
	f.plan = fault.New(inner, "outboxtest", ErrInjected, wrap)
	return f
}

// Inject arms one fault at the nth operation (FailOp) or the nth commit
// point (FailCommit, LoseAck), counted from 1 since the FaultStore was
// made. It fires once.
func (f *FaultStore) Inject(fault Fault, n int) { f.plan.Inject(fault, n) }

// Rerun makes every WithVessel run its callback twice: first in a
// transaction that is then rolled back, as after a transient failure, and
// then for real. A caller whose callbacks have effects outside the
// transaction, or keep state from one run to the next, shows it.
func (f *FaultStore) Rerun(on bool) { f.plan.Rerun(on) }

// Tamper makes Entries and Pending return every entry through fn, which
// gets a copy whose Payload it may modify: as a store whose bytes were
// changed after the commit (a disk, a migration, an operator) would return
// them. A nil fn stops the tampering. Nothing in the wrapped store changes.
func (f *FaultStore) Tamper(fn func(outbox.Entry) outbox.Entry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tamper = fn
}

// Fired reports whether the armed fault was injected.
func (f *FaultStore) Fired() bool { return f.plan.Fired() }

// Counts returns how many Tx method calls (operations) and commit points
// (callbacks that returned nil, in the run that is meant to commit) the
// FaultStore has seen since it was made, whether or not a fault fired.
func (f *FaultStore) Counts() (ops, commits int) { return f.plan.Counts() }

// Calls returns, by Tx method name, how many calls were made, except for
// PutEntries: there it counts the entries passed. Rolled-back transactions
// count too.
func (f *FaultStore) Calls() map[string]int { return f.plan.Calls() }

// WithVessel implements outbox.Store.
func (f *FaultStore) WithVessel(ctx context.Context, vesselID uuid.UUID, fn func(outbox.Tx) error) error {
	return f.plan.WithVessel(ctx, vesselID, fn)
}

// tampered passes entries through the tamper function, if any.
func (f *FaultStore) tampered(entries []outbox.Entry) []outbox.Entry {
	f.mu.Lock()
	fn := f.tamper
	f.mu.Unlock()
	if fn == nil || entries == nil {
		return entries
	}
	out := make([]outbox.Entry, len(entries))
	for i, e := range entries {
		e.Payload = slices.Clone(e.Payload)
		out[i] = fn(e)
	}
	return out
}

// faultTx wraps a Tx; it panics when used after its callback returned.
type faultTx struct {
	f  *FaultStore
	g  *fault.Guard
	tx outbox.Tx
}

var _ outbox.Tx = (*faultTx)(nil)

func (t *faultTx) NextRevision(ctx context.Context, floor int64) (int64, error) {
	if err := t.g.Op("NextRevision", 1); err != nil {
		return 0, err
	}
	return t.tx.NextRevision(ctx, floor)
}

func (t *faultTx) Entries(ctx context.Context, snapshot uuid.UUID) ([]outbox.Entry, error) {
	if err := t.g.Op("Entries", 1); err != nil {
		return nil, err
	}
	out, err := t.tx.Entries(ctx, snapshot)
	return t.f.tampered(out), err
}

func (t *faultTx) PutEntries(ctx context.Context, entries []outbox.Entry) error {
	if err := t.g.Op("PutEntries", len(entries)); err != nil {
		return err
	}
	return t.tx.PutEntries(ctx, entries)
}

func (t *faultTx) Pending(ctx context.Context, limit int) ([]outbox.Entry, error) {
	if err := t.g.Op("Pending", 1); err != nil {
		return nil, err
	}
	out, err := t.tx.Pending(ctx, limit)
	return t.f.tampered(out), err
}

func (t *faultTx) SetState(ctx context.Context, snapshot uuid.UUID, chunkIndex int, state outbox.State) error {
	if err := t.g.Op("SetState", 1); err != nil {
		return err
	}
	return t.tx.SetState(ctx, snapshot, chunkIndex, state)
}
