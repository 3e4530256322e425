package finalize

import (
	"context"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
)

var (
	// ErrActiveSnapshot is returned by Discard for the active snapshot,
	// which is never removed. It wraps sourcecatalog.ErrConflict.
	ErrActiveSnapshot error = sourcecatalog.Errorf(sourcecatalog.ErrConflict, "the active snapshot cannot be removed")
)

// unavailable classes err as sourcecatalog.ErrStoreUnavailable, keeping it as the cause,
// unless it already wraps a class: a cancelled context, a failed statement
// or registry answer stays errors.Is-able and gets a class.
func unavailable(err error, detail string) error {
	if err == nil || sourcecatalog.Class(err) != nil {
		return err
	}
	e := sourcecatalog.Wrap(sourcecatalog.ErrStoreUnavailable, err)
	e.Detail = detail
	return e
}

// withVessel runs fn in a store transaction on the vessel for the method
// op, reporting an EventRetry each time the store runs fn again. uuid.Nil,
// which no message can name, is refused with ErrInvalidValue; errors of
// the store are classed by unavailable.
func (r *Receiver) withVessel(ctx context.Context, op string, vesselID uuid.UUID, fn func(tx Tx) error) error {
	if vesselID == uuid.Nil {
		return sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "the vessel id must not be nil").AtField("vessel_id")
	}
	runs := 0
	err := r.store.WithVessel(ctx, vesselID, func(tx Tx) error {
		if runs++; runs > 1 {
			r.report(Event{Kind: EventRetry, Op: op, Vessel: vesselID})
		}
		return fn(tx)
	})
	return unavailable(err, "the store failed")
}

// Origin is what the integrator's authentication established about the
// sender of a message.
type Origin struct {
	VesselID uuid.UUID
}

// A VesselRegistry answers whether a vessel is a registered telemetry
// vessel. It must be safe for concurrent use.
type VesselRegistry interface {
	IsRegistered(ctx context.Context, vesselID uuid.UUID) (bool, error)
}

// Limits bound what one vessel may keep staged. Exceeding any of them fails
// closed with sourcecatalog.ErrStagingExhausted and changes nothing; a bound of zero or
// less admits nothing. [Usage] reports how full each bound is.
type Limits struct {
	IncompleteSnapshots int   // snapshots still staging
	IncompleteBytes     int64 // their staged bytes
	RetainedSnapshots   int   // finalized snapshots kept (activated, superseded, rejected)
	RetainedBytes       int64 // their staged bytes
}

// DefaultLimits allow a few snapshots in flight and keep the history of
// dozens of activations. A maximal snapshot stages about 4.3 MB.
//
// Nothing is pruned by default, so the retained bound fills: after 32
// finalized snapshots — about eight hours of 15-minute cycles — Finalize
// fails with sourcecatalog.ErrStagingExhausted until an operator prunes or discards, or
// [WithRetention] prunes after each activation. Watch [Usage] to warn
// before then.
var DefaultLimits = Limits{
	IncompleteSnapshots: 8,
	IncompleteBytes:     64 << 20,
	RetainedSnapshots:   32,
	RetainedBytes:       256 << 20,
}

// An Option configures a Receiver.
type Option func(*Receiver)

// WithRegistry makes the Receiver refuse messages of vessels r does not
// know. Without it every vessel is taken as registered.
func WithRegistry(r VesselRegistry) Option { return func(rc *Receiver) { rc.registry = r } }

// WithLimits replaces DefaultLimits.
func WithLimits(l Limits) Option { return func(rc *Receiver) { rc.limits = l } }

// WithRetention opts in to pruning after each activation, keeping the
// newest keep finalized snapshots (and always the active one), and to
// pruning the oldest when the retained bounds are full. By default, and
// with a negative keep, nothing is pruned automatically.
func WithRetention(keep int) Option { return func(rc *Receiver) { rc.retain = keep } }

// WithFinalizeWhenComplete makes a receive call whose message completes a
// snapshot's set run Finalize in the transaction that staged the message,
// as the server policy of SPEC.md §8.6 allows: the set is staged and
// finalized in one commit, and Staged.FinalizeRun reports the outcome, the
// Finalize a server would otherwise run after the receipt. An identical
// cycle that a manifest index resolves in full is then one transaction.
// That Finalize has half of the time left to the receive call's context,
// when it has a deadline. When it fails with an error that would end its
// transaction (the retained bounds, a damaged row, that half of the time
// run out), the message is staged alone, as without the option, and
// Staged.NeedsFinalize reports that Finalize is still to run; a store
// failure that leaves the store unavailable (a sqlitestore handle
// poisoned by a full disk) fails the staging alone too, and the receive
// call returns it, as any store failure. The receive call's Event
// Duration covers the Finalize run with it. Without the option a receive
// call never finalizes.
func WithFinalizeWhenComplete() Option { return func(rc *Receiver) { rc.finalizeWhenComplete = true } }

// A Receiver runs the receiver's state machine over a Store. It keeps no
// state of its own, so any number of Receivers, in any number of processes,
// may share a Store. It is safe for concurrent use.
//
// Every error a method returns wraps exactly one class of package
// sourcecatalog. A method refusing its input changes nothing; one failing
// with sourcecatalog.ErrStoreUnavailable may be retried (Reconcile keeps what it
// finalized before the failure). Methods taking a vessel id refuse
// uuid.Nil, which no message can name, with ErrInvalidValue. When ctx is
// done, or the store or the registry fails with an error of no class, the
// error wraps sourcecatalog.ErrStoreUnavailable and that cause, so errors.Is(err,
// context.Canceled) holds for a cancelled call.
type Receiver struct {
	store    Store
	registry VesselRegistry
	limits   Limits
	retain   int // < 0: no automatic pruning
	observe  Observer

	finalizeWhenComplete bool
}

// NewReceiver returns a Receiver over store. It panics if store is nil.
func NewReceiver(store Store, opts ...Option) *Receiver {
	if store == nil {
		panic("finalize: NewReceiver with a nil Store")
	}
	r := &Receiver{store: store, limits: DefaultLimits, retain: -1}
	for _, o := range opts {
		o(r)
	}
	return r
}

func (r *Receiver) admit(ctx context.Context, origin Origin, vessel uuid.UUID) error {
	if vessel != origin.VesselID {
		return sourcecatalog.Errorf(sourcecatalog.ErrForeignVessel, "the message names another vessel than its origin").AtField("vessel_id")
	}
	if r.registry == nil {
		return nil
	}
	ok, err := r.registry.IsRegistered(ctx, vessel)
	if err != nil {
		return unavailable(err, "the vessel registry failed")
	}
	if !ok {
		return sourcecatalog.Errorf(sourcecatalog.ErrUnregisteredVessel, "not a registered telemetry vessel").AtField("vessel_id")
	}
	return nil
}
