package finalizetest

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/internal/fault"
)

// ErrInjected is the failure a FaultStore injects.
var ErrInjected = errors.New("finalizetest: injected fault")

// A Fault is a kind of failure a FaultStore injects.
type Fault = fault.Fault

// Faults. Operations and commits are counted from 1 over the life of the
// FaultStore; see Counts.
const (
	// NoFault injects nothing.
	NoFault = fault.NoFault
	// FailOp makes the Nth Tx method call return ErrInjected without
	// reaching the wrapped store, as a failed statement would. The
	// Receiver must return the error from its callback, so the wrapped
	// store rolls the transaction back.
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

// A FaultStore wraps any finalize.Store and its transactions to inject one
// failure at a chosen point, to re-run every transaction callback as a
// store retrying after a deadlock may, and to count what the Receiver does.
// It is safe for concurrent use; counts then follow the order in which
// calls reach it.
type FaultStore struct {
	plan *fault.Plan[finalize.Tx]
}

var _ finalize.Store = (*FaultStore)(nil)

// NewFaultStore wraps inner, injecting nothing until Inject is called.
func NewFaultStore(inner finalize.Store) *FaultStore {
	wrap := func(tx finalize.Tx, g *fault.Guard) finalize.Tx { return &faultTx{g: g, tx: tx} }
	return &FaultStore{plan: fault.New(inner, "finalizetest", ErrInjected, wrap)}
}

// Inject arms one fault at the nth operation (FailOp) or the nth commit
// point (FailCommit, LoseAck), counted from 1 since the FaultStore was
// made. It fires once.
func (f *FaultStore) Inject(fault Fault, n int) { f.plan.Inject(fault, n) }

// Rerun makes every WithVessel run its callback twice: first in a
// transaction that is then rolled back, as after a transient failure, and
// then for real. A Receiver whose callbacks have effects outside the
// transaction, or keep state from one run to the next, shows it.
func (f *FaultStore) Rerun(on bool) { f.plan.Rerun(on) }

// Fired reports whether the armed fault was injected.
func (f *FaultStore) Fired() bool { return f.plan.Fired() }

// Counts returns how many Tx method calls (operations) and commit points
// (callbacks that returned nil, in the run that is meant to commit) the
// FaultStore has seen since it was made, whether or not a fault fired.
func (f *FaultStore) Counts() (ops, commits int) { return f.plan.Counts() }

// Calls returns, by Tx method name, how many calls were made, except for
// PutItems and RetireItems: there it counts the items and keys passed.
// Rolled-back transactions count too.
func (f *FaultStore) Calls() map[string]int { return f.plan.Calls() }

// ResetCalls clears what Calls returns.
func (f *FaultStore) ResetCalls() { f.plan.ResetCalls() }

// WithVessel implements finalize.Store.
func (f *FaultStore) WithVessel(ctx context.Context, vesselID uuid.UUID, fn func(finalize.Tx) error) error {
	return f.plan.WithVessel(ctx, vesselID, fn)
}

// faultTx wraps a Tx; it panics when used after its callback returned.
type faultTx struct {
	g  *fault.Guard
	tx finalize.Tx
}

var _ finalize.Tx = (*faultTx)(nil)

func (t *faultTx) Vessel(ctx context.Context) (finalize.VesselState, error) {
	if err := t.g.Op("Vessel", 1); err != nil {
		return finalize.VesselState{}, err
	}
	return t.tx.Vessel(ctx)
}

func (t *faultTx) SetVessel(ctx context.Context, v finalize.VesselState) error {
	if err := t.g.Op("SetVessel", 1); err != nil {
		return err
	}
	return t.tx.SetVessel(ctx, v)
}

func (t *faultTx) Snapshot(ctx context.Context, id uuid.UUID) (finalize.Snapshot, error) {
	if err := t.g.Op("Snapshot", 1); err != nil {
		return finalize.Snapshot{}, err
	}
	return t.tx.Snapshot(ctx, id)
}

func (t *faultTx) Snapshots(ctx context.Context) ([]finalize.Snapshot, error) {
	if err := t.g.Op("Snapshots", 1); err != nil {
		return nil, err
	}
	return t.tx.Snapshots(ctx)
}

func (t *faultTx) PutSnapshot(ctx context.Context, s finalize.Snapshot) error {
	if err := t.g.Op("PutSnapshot", 1); err != nil {
		return err
	}
	return t.tx.PutSnapshot(ctx, s)
}

func (t *faultTx) DeleteSnapshot(ctx context.Context, id uuid.UUID) error {
	if err := t.g.Op("DeleteSnapshot", 1); err != nil {
		return err
	}
	return t.tx.DeleteSnapshot(ctx, id)
}

func (t *faultTx) Chunk(ctx context.Context, snapshot uuid.UUID, index int) (finalize.StagedChunk, error) {
	if err := t.g.Op("Chunk", 1); err != nil {
		return finalize.StagedChunk{}, err
	}
	return t.tx.Chunk(ctx, snapshot, index)
}

func (t *faultTx) Chunks(ctx context.Context, snapshot uuid.UUID) ([]finalize.StagedChunk, error) {
	if err := t.g.Op("Chunks", 1); err != nil {
		return nil, err
	}
	return t.tx.Chunks(ctx, snapshot)
}

func (t *faultTx) PutChunk(ctx context.Context, c finalize.StagedChunk) error {
	if err := t.g.Op("PutChunk", 1); err != nil {
		return err
	}
	return t.tx.PutChunk(ctx, c)
}

func (t *faultTx) Index(ctx context.Context) ([]finalize.IndexEntry, error) {
	if err := t.g.Op("Index", 1); err != nil {
		return nil, err
	}
	return t.tx.Index(ctx)
}

func (t *faultTx) SetIndex(ctx context.Context, index []finalize.IndexEntry) error {
	if err := t.g.Op("SetIndex", 1); err != nil {
		return err
	}
	return t.tx.SetIndex(ctx, index)
}

func (t *faultTx) PutItems(ctx context.Context, items []finalize.Item) error {
	if err := t.g.Op("PutItems", len(items)); err != nil {
		return err
	}
	return t.tx.PutItems(ctx, items)
}

func (t *faultTx) RetireItems(ctx context.Context, keys []catalog.Key, last finalize.Seen) error {
	if err := t.g.Op("RetireItems", len(keys)); err != nil {
		return err
	}
	return t.tx.RetireItems(ctx, keys, last)
}

func (t *faultTx) Items(ctx context.Context) ([]finalize.Item, error) {
	if err := t.g.Op("Items", 1); err != nil {
		return nil, err
	}
	return t.tx.Items(ctx)
}
