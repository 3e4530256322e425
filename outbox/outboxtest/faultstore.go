package outboxtest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// ErrInjected is the failure a FaultStore injects.
var ErrInjected = errors.New("outboxtest: injected fault")

// A Fault is a kind of failure a FaultStore injects.
type Fault int

// Faults. Operations and commits are counted from 1 over the life of the
// FaultStore; see Counts.
const (
	// NoFault injects nothing.
	NoFault Fault = iota
	// FailOp makes the Nth Tx method call return ErrInjected without
	// reaching the wrapped store, as a failed statement would. The caller
	// must return the error from its callback, so the wrapped store rolls
	// the transaction back.
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

// A FaultStore wraps any outbox.Store and its transactions to inject one
// failure at a chosen point, to re-run every transaction callback as a
// store retrying after a deadlock may, to alter the entries the store
// returns as if their bytes had changed after they were committed, and to
// count what its callers do. It is safe for concurrent use; counts then
// follow the order in which calls reach it.
type FaultStore struct {
	inner outbox.Store

	mu      sync.Mutex
	fault   Fault
	at      int
	fired   bool
	rerun   bool
	tamper  func(outbox.Entry) outbox.Entry
	ops     int
	commits int
	calls   map[string]int
}

var _ outbox.Store = (*FaultStore)(nil)

// NewFaultStore wraps inner, injecting nothing until Inject is called.
func NewFaultStore(inner outbox.Store) *FaultStore {
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
// then for real. A caller whose callbacks have effects outside the
// transaction, or keep state from one run to the next, shows it.
func (f *FaultStore) Rerun(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rerun = on
}

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
// PutEntries: there it counts the entries passed. Rolled-back transactions
// count too.
func (f *FaultStore) Calls() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.calls)
}

var errRerun = errors.New("outboxtest: rolled back to run the callback again")

// WithVessel implements outbox.Store.
func (f *FaultStore) WithVessel(ctx context.Context, vesselID uuid.UUID, fn func(outbox.Tx) error) error {
	f.mu.Lock()
	rerun := f.rerun
	f.mu.Unlock()
	if rerun {
		err := f.inner.WithVessel(ctx, vesselID, func(tx outbox.Tx) error {
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
	err := f.inner.WithVessel(ctx, vesselID, func(tx outbox.Tx) error {
		lost = false
		ft := &faultTx{f: f, tx: tx}
		err := fn(ft)
		ft.close()
		if err != nil {
			return err
		}
		switch n, fault := f.commitPoint(); fault {
		case FailCommit:
			return fmt.Errorf("outboxtest: commit %d failed: %w", n, ErrInjected)
		case LoseAck:
			lost = true
		}
		return nil
	})
	if err == nil && lost {
		return fmt.Errorf("outboxtest: commit acknowledgement lost: %w", ErrInjected)
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
		return fmt.Errorf("outboxtest: operation %d (%s) failed: %w", f.ops, name, ErrInjected)
	}
	return nil
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
	f    *FaultStore
	tx   outbox.Tx
	mu   sync.Mutex
	done bool
}

var _ outbox.Tx = (*faultTx)(nil)

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
		panic("outboxtest: Tx." + name + " used after its callback returned")
	}
	return t.f.op(name, n)
}

func (t *faultTx) NextRevision(ctx context.Context) (int64, error) {
	if err := t.op("NextRevision", 1); err != nil {
		return 0, err
	}
	return t.tx.NextRevision(ctx)
}

func (t *faultTx) Entries(ctx context.Context, snapshot uuid.UUID) ([]outbox.Entry, error) {
	if err := t.op("Entries", 1); err != nil {
		return nil, err
	}
	out, err := t.tx.Entries(ctx, snapshot)
	return t.f.tampered(out), err
}

func (t *faultTx) PutEntries(ctx context.Context, entries []outbox.Entry) error {
	if err := t.op("PutEntries", len(entries)); err != nil {
		return err
	}
	return t.tx.PutEntries(ctx, entries)
}

func (t *faultTx) Pending(ctx context.Context, limit int) ([]outbox.Entry, error) {
	if err := t.op("Pending", 1); err != nil {
		return nil, err
	}
	out, err := t.tx.Pending(ctx, limit)
	return t.f.tampered(out), err
}

func (t *faultTx) SetState(ctx context.Context, snapshot uuid.UUID, chunkIndex int, state outbox.State) error {
	if err := t.op("SetState", 1); err != nil {
		return err
	}
	return t.tx.SetState(ctx, snapshot, chunkIndex, state)
}
