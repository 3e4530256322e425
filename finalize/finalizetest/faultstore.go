package finalizetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

// ErrInjected is the failure a FaultStore injects.
var ErrInjected = errors.New("finalizetest: injected fault")

// A Fault is a kind of failure a FaultStore injects.
type Fault int

// Faults. Operations and commits are counted from 1 over the life of the
// FaultStore; see Counts.
const (
	// NoFault injects nothing.
	NoFault Fault = iota
	// FailOp makes the Nth Tx method call return ErrInjected without
	// reaching the wrapped store, as a failed statement would. The
	// Receiver must return the error from its callback, so the wrapped
	// store rolls the transaction back.
	FailOp
	// FailCommit fails the commit point of the Nth transaction whose
	// callback succeeded: the wrapped store rolls everything back (the
	// FaultStore returns ErrInjected from the callback it gave the wrapped
	// store) and WithVessel returns ErrInjected, as a crash just before
	// the commit would.
	FailCommit
	// LoseAck lets the Nth transaction whose callback succeeded commit,
	// then returns ErrInjected: the caller never learns that the commit
	// happened, as when the process or the connection dies right after it.
	LoseAck
)

func (f Fault) String() string {
	switch f {
	case NoFault:
		return "no-fault"
	case FailOp:
		return "fail-op"
	case FailCommit:
		return "fail-commit"
	case LoseAck:
		return "lose-ack"
	}
	return fmt.Sprintf("Fault(%d)", int(f))
}

// A FaultStore wraps any finalize.Store and its transactions to inject one
// failure at a chosen point, to re-run every transaction callback as a
// store retrying after a deadlock may, and to count what the Receiver does.
// It is safe for concurrent use; counts then follow the order in which
// calls reach it.
type FaultStore struct {
	inner finalize.Store

	mu      sync.Mutex
	fault   Fault
	at      int
	fired   bool
	rerun   bool
	ops     int
	commits int
	calls   map[string]int
}

var _ finalize.Store = (*FaultStore)(nil)

// NewFaultStore wraps inner, injecting nothing until Inject is called.
func NewFaultStore(inner finalize.Store) *FaultStore {
	return &FaultStore{inner: inner, calls: make(map[string]int)}
}

// Inject arms one fault at the nth operation (FailOp) or the nth commit
// point (FailCommit, LoseAck), counted from 1 since the FaultStore was
// made. It fires once.
func (f *FaultStore) Inject(fault Fault, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault, f.at, f.fired = fault, n, false
}

// Rerun makes every WithVessel run its callback twice: first in a
// transaction that is then rolled back, as after a transient failure, and
// then for real. A Receiver whose callbacks have effects outside the
// transaction, or keep state from one run to the next, shows it.
func (f *FaultStore) Rerun(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rerun = on
}

// Fired reports whether the armed fault was injected.
func (f *FaultStore) Fired() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fired
}

// Counts returns how many Tx method calls (operations) and commit points
// (callbacks that returned nil, in the run that is meant to commit) the
// FaultStore has seen since it was made, whether or not a fault fired.
func (f *FaultStore) Counts() (ops, commits int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ops, f.commits
}

// Calls returns, by Tx method name, how many calls were made, except for
// PutItems and RetireItems: there it counts the items and keys passed.
// Rolled-back transactions count too.
func (f *FaultStore) Calls() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.calls)
}

// ResetCalls clears what Calls returns.
func (f *FaultStore) ResetCalls() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.calls)
}

var errRerun = errors.New("finalizetest: rolled back to run the callback again")

// WithVessel implements finalize.Store.
func (f *FaultStore) WithVessel(ctx context.Context, vesselID uuid.UUID, fn func(finalize.Tx) error) error {
	f.mu.Lock()
	rerun := f.rerun
	f.mu.Unlock()
	if rerun {
		err := f.inner.WithVessel(ctx, vesselID, func(tx finalize.Tx) error {
			ft := &faultTx{f: f, tx: tx}
			err := fn(ft)
			ft.close()
			if err != nil {
				return err
			}
			return errRerun
		})
		if !errors.Is(err, errRerun) {
			return err // the callback failed on its first run: no retry
		}
	}
	lost := false
	err := f.inner.WithVessel(ctx, vesselID, func(tx finalize.Tx) error {
		lost = false
		ft := &faultTx{f: f, tx: tx}
		err := fn(ft)
		ft.close()
		if err != nil {
			return err
		}
		switch n, fault := f.commitPoint(); fault {
		case FailCommit:
			return fmt.Errorf("finalizetest: commit %d failed: %w", n, ErrInjected)
		case LoseAck:
			lost = true
		}
		return nil
	})
	if err == nil && lost {
		return fmt.Errorf("finalizetest: commit acknowledgement lost: %w", ErrInjected)
	}
	return err
}

// commitPoint counts a commit point and returns the fault to inject there.
func (f *FaultStore) commitPoint() (int, Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.commits++
	if !f.fired && (f.fault == FailCommit || f.fault == LoseAck) && f.commits == f.at {
		f.fired = true
		return f.commits, f.fault
	}
	return f.commits, NoFault
}

// op counts an operation and returns the error to inject there, if any.
func (f *FaultStore) op(name string, n int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops++
	f.calls[name] += n
	if !f.fired && f.fault == FailOp && f.ops == f.at {
		f.fired = true
		return fmt.Errorf("finalizetest: operation %d (%s) failed: %w", f.ops, name, ErrInjected)
	}
	return nil
}

// faultTx wraps a Tx; it panics when used after its callback returned.
type faultTx struct {
	f    *FaultStore
	tx   finalize.Tx
	mu   sync.Mutex
	done bool
}

var _ finalize.Tx = (*faultTx)(nil)

func (t *faultTx) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done = true
}

func (t *faultTx) op(name string, n int) error {
	t.mu.Lock()
	done := t.done
	t.mu.Unlock()
	if done {
		panic("finalizetest: Tx." + name + " used after its callback returned")
	}
	return t.f.op(name, n)
}

func (t *faultTx) Vessel(ctx context.Context) (finalize.VesselState, error) {
	if err := t.op("Vessel", 1); err != nil {
		return finalize.VesselState{}, err
	}
	return t.tx.Vessel(ctx)
}

func (t *faultTx) SetVessel(ctx context.Context, v finalize.VesselState) error {
	if err := t.op("SetVessel", 1); err != nil {
		return err
	}
	return t.tx.SetVessel(ctx, v)
}

func (t *faultTx) Snapshot(ctx context.Context, id uuid.UUID) (finalize.Snapshot, error) {
	if err := t.op("Snapshot", 1); err != nil {
		return finalize.Snapshot{}, err
	}
	return t.tx.Snapshot(ctx, id)
}

func (t *faultTx) Snapshots(ctx context.Context) ([]finalize.Snapshot, error) {
	if err := t.op("Snapshots", 1); err != nil {
		return nil, err
	}
	return t.tx.Snapshots(ctx)
}

func (t *faultTx) PutSnapshot(ctx context.Context, s finalize.Snapshot) error {
	if err := t.op("PutSnapshot", 1); err != nil {
		return err
	}
	return t.tx.PutSnapshot(ctx, s)
}

func (t *faultTx) DeleteSnapshot(ctx context.Context, id uuid.UUID) error {
	if err := t.op("DeleteSnapshot", 1); err != nil {
		return err
	}
	return t.tx.DeleteSnapshot(ctx, id)
}

func (t *faultTx) Chunk(ctx context.Context, snapshot uuid.UUID, index int) (finalize.StagedChunk, error) {
	if err := t.op("Chunk", 1); err != nil {
		return finalize.StagedChunk{}, err
	}
	return t.tx.Chunk(ctx, snapshot, index)
}

func (t *faultTx) Chunks(ctx context.Context, snapshot uuid.UUID) ([]finalize.StagedChunk, error) {
	if err := t.op("Chunks", 1); err != nil {
		return nil, err
	}
	return t.tx.Chunks(ctx, snapshot)
}

func (t *faultTx) PutChunk(ctx context.Context, c finalize.StagedChunk) error {
	if err := t.op("PutChunk", 1); err != nil {
		return err
	}
	return t.tx.PutChunk(ctx, c)
}

func (t *faultTx) Index(ctx context.Context) ([]finalize.IndexEntry, error) {
	if err := t.op("Index", 1); err != nil {
		return nil, err
	}
	return t.tx.Index(ctx)
}

func (t *faultTx) SetIndex(ctx context.Context, index []finalize.IndexEntry) error {
	if err := t.op("SetIndex", 1); err != nil {
		return err
	}
	return t.tx.SetIndex(ctx, index)
}

func (t *faultTx) PutItems(ctx context.Context, items []finalize.Item) error {
	if err := t.op("PutItems", len(items)); err != nil {
		return err
	}
	return t.tx.PutItems(ctx, items)
}

func (t *faultTx) RetireItems(ctx context.Context, keys []finalize.ItemKey, last finalize.Seen) error {
	if err := t.op("RetireItems", len(keys)); err != nil {
		return err
	}
	return t.tx.RetireItems(ctx, keys, last)
}

func (t *faultTx) Items(ctx context.Context) ([]finalize.Item, error) {
	if err := t.op("Items", 1); err != nil {
		return nil, err
	}
	return t.tx.Items(ctx)
}
