// Package fault is the core of the FaultStores of finalizetest and
// outboxtest: one armed failure (a failed operation, a failed commit, a
// lost commit acknowledgement), re-runs of transaction callbacks, and the
// counts of operations and commit points, for any store whose WithVessel
// hands its callback a transaction of type Tx.
package fault

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"

	"github.com/google/uuid"
)

// A Fault is a kind of failure a Plan injects.
type Fault int

// Faults. Operations and commits are counted from 1 over the life of the
// Plan; see Plan.Counts.
const (
	// NoFault injects nothing.
	NoFault Fault = iota
	// FailOp makes the Nth Tx method call return the injected error
	// without reaching the wrapped store, as a failed statement would. The
	// caller must return the error from its callback, so the wrapped store
	// rolls the transaction back.
	FailOp
	// FailCommit fails the commit point of the Nth transaction whose
	// callback succeeded: the wrapped store rolls everything back (the
	// Plan returns the injected error from the callback it gave the
	// wrapped store) and WithVessel returns the injected error, as a crash
	// just before the commit would.
	FailCommit
	// LoseAck lets the Nth transaction whose callback succeeded commit,
	// then returns the injected error: the caller never learns that the
	// commit happened, as when the process or the connection dies right
	// after it.
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

// A Store is what a Plan wraps: a store whose transactions are of type Tx,
// such as finalize.Store (with finalize.Tx) or outbox.Store (outbox.Tx).
type Store[Tx any] interface {
	WithVessel(ctx context.Context, vesselID uuid.UUID, fn func(Tx) error) error
}

// A Plan wraps a Store to inject one failure at a chosen point, to re-run
// every transaction callback as a store retrying after a deadlock may, and
// to count what its callers do. It is safe for concurrent use; counts then
// follow the order in which calls reach it.
type Plan[Tx any] struct {
	inner    Store[Tx]
	wrap     func(Tx, *Guard) Tx
	prefix   string // of messages: the name of the package the Plan serves
	injected error

	mu      sync.Mutex
	fault   Fault
	at      int
	fired   bool
	rerun   bool
	ops     int
	commits int
	calls   map[string]int
}

// New returns a Plan over inner that injects nothing until Inject is
// called. wrap makes the transaction a callback gets from inner's: it must
// pass every method call through the Guard's Op first. The Plan's errors
// wrap injected and its messages start with prefix.
func New[Tx any](inner Store[Tx], prefix string, injected error, wrap func(Tx, *Guard) Tx) *Plan[Tx] {
	return &Plan[Tx]{inner: inner, wrap: wrap, prefix: prefix, injected: injected, calls: make(map[string]int)}
}

// Inject arms one fault at the nth operation (FailOp) or the nth commit
// point (FailCommit, LoseAck), counted from 1 since the Plan was made. It
// fires once.
func (p *Plan[Tx]) Inject(fault Fault, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fault, p.at, p.fired = fault, n, false
}

// Rerun makes every WithVessel run its callback twice: first in a
// transaction that is then rolled back, and then for real.
func (p *Plan[Tx]) Rerun(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rerun = on
}

// Fired reports whether the armed fault was injected.
func (p *Plan[Tx]) Fired() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fired
}

// Counts returns how many operations and commit points the Plan has seen
// since it was made, whether or not a fault fired.
func (p *Plan[Tx]) Counts() (ops, commits int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ops, p.commits
}

// Calls returns the weight of the operations, by name, that the Plan has
// seen, rolled-back transactions included.
func (p *Plan[Tx]) Calls() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.calls)
}

// ResetCalls clears what Calls returns.
func (p *Plan[Tx]) ResetCalls() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.calls)
}

// errRerun rolls back the first run of a callback under Rerun.
var errRerun = errors.New("fault: rolled back to run the callback again")

// WithVessel runs fn in a transaction of the wrapped store, as the Plan
// says: first in a run that is rolled back under Rerun, then for real,
// with the armed fault injected where it falls.
func (p *Plan[Tx]) WithVessel(ctx context.Context, vesselID uuid.UUID, fn func(Tx) error) error {
	p.mu.Lock()
	rerun := p.rerun
	p.mu.Unlock()
	if rerun {
		err := p.inner.WithVessel(ctx, vesselID, func(tx Tx) error {
			if err := p.run(tx, fn); err != nil {
				return err
			}
			return errRerun
		})
		if !errors.Is(err, errRerun) {
			return err // the callback failed on its first run: no retry
		}
	}
	lost := false
	err := p.inner.WithVessel(ctx, vesselID, func(tx Tx) error {
		lost = false
		if err := p.run(tx, fn); err != nil {
			return err
		}
		switch n, fault := p.commitPoint(); fault {
		case FailCommit:
			return fmt.Errorf("%s: commit %d failed: %w", p.prefix, n, p.injected)
		case LoseAck:
			lost = true
		}
		return nil
	})
	if err == nil && lost {
		return fmt.Errorf("%s: commit acknowledgement lost: %w", p.prefix, p.injected)
	}
	return err
}

// run calls fn with the wrapped tx, which is unusable once fn returns.
func (p *Plan[Tx]) run(tx Tx, fn func(Tx) error) error {
	g := &Guard{op: p.op, prefix: p.prefix}
	err := fn(p.wrap(tx, g))
	g.close()
	return err
}

// commitPoint counts a commit point and returns the fault to inject there.
func (p *Plan[Tx]) commitPoint() (int, Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.commits++
	if !p.fired && (p.fault == FailCommit || p.fault == LoseAck) && p.commits == p.at {
		p.fired = true
		return p.commits, p.fault
	}
	return p.commits, NoFault
}

// op counts an operation and returns the error to inject there, if any.
func (p *Plan[Tx]) op(name string, n int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ops++
	p.calls[name] += n
	if !p.fired && p.fault == FailOp && p.ops == p.at {
		p.fired = true
		return fmt.Errorf("%s: operation %d (%s) failed: %w", p.prefix, p.ops, name, p.injected)
	}
	return nil
}

// A Guard stands behind one wrapped transaction: it counts its operations
// and panics when the transaction is used after its callback returned.
type Guard struct {
	op     func(name string, n int) error
	prefix string

	mu   sync.Mutex
	done bool
}

func (g *Guard) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.done = true
}

// Op counts an operation called name, of weight n (1, or the number of
// items it writes), and returns the error to inject there, if any; the
// wrapped transaction must return that error without calling the store's.
func (g *Guard) Op(name string, n int) error {
	g.mu.Lock()
	done := g.done
	g.mu.Unlock()
	if done {
		panic(g.prefix + ": Tx." + name + " used after its callback returned")
	}
	return g.op(name, n)
}
