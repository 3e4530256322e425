package httpbinding

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

// A VesselLister returns the vessels that may have staging work: at least
// every vessel with a snapshot still staging. Listing more is harmless
// (Reconcile of a vessel with nothing complete does nothing).
type VesselLister func(ctx context.Context) ([]uuid.UUID, error)

// DefaultReconcileInterval is how often a Reconciler runs by default.
const DefaultReconcileInterval = 5 * time.Minute

// A Reconciler runs finalize's Reconcile for every listed vessel at
// start-up and on an interval (SPEC.md §8.6, §11.4), so that a snapshot
// whose last receipt was issued just before a crash, or whose Finalize
// after the receipt failed, is still finalized.
type Reconciler struct {
	Receiver *finalize.Receiver // the receiver whose vessels are reconciled
	// Vessels lists the vessels to reconcile; when nil, the Receiver's
	// Vessels with staging true, which needs a store that is a
	// finalize.VesselLister (SPEC.md §11.4).
	Vessels VesselLister
	// Interval between passes; DefaultReconcileInterval when zero or less.
	Interval time.Duration
	// Observer, when not nil, gets an EventReconcile per vessel and an
	// EventFinalize per outcome.
	Observer Observer
}

// Run runs a pass at once and then every Interval until ctx is done, and
// returns nil then. A failing pass is reported to the Observer and does
// not stop the loop. It returns an error wrapping
// sourcecatalog.ErrInvalidValue, running nothing, when Receiver is nil.
func (rc *Reconciler) Run(ctx context.Context) error {
	if rc.Receiver == nil {
		return sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "httpbinding: a Reconciler needs a Receiver")
	}
	interval := orDefault(rc.Interval, DefaultReconcileInterval)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		_ = rc.Once(ctx) // reported to the Observer
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Once runs one pass: Reconcile for every listed vessel, each reported to
// the Observer. A vessel's failure does not stop the others; Once returns
// the first failure, naming the vessel, wrapping its class
// (ErrStoreUnavailable for a failing store or lister, ErrUnsupported for
// a store that cannot list, ErrStagingExhausted for a vessel whose
// retained bound is full), or nil.
func (rc *Reconciler) Once(ctx context.Context) error {
	if rc.Receiver == nil {
		return sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "httpbinding: a Reconciler needs a Receiver")
	}
	list := rc.Vessels
	if list == nil {
		list = func(ctx context.Context) ([]uuid.UUID, error) { return rc.Receiver.Vessels(ctx, true) }
	}
	observe := rc.Observer
	if observe == nil {
		observe = func(Event) {}
	}
	start := time.Now()
	vessels, err := list(ctx)
	if err != nil {
		if sourcecatalog.Class(err) == nil {
			err = sourcecatalog.Wrap(sourcecatalog.ErrStoreUnavailable, err)
		}
		observe(Event{Kind: EventReconcile, Err: err, Duration: time.Since(start)})
		return fmt.Errorf("httpbinding: listing the vessels to reconcile: %w", err)
	}
	var first error
	for _, v := range vessels {
		start := time.Now()
		outs, err := rc.Receiver.Reconcile(ctx, v)
		observe(Event{Kind: EventReconcile, Vessel: v, Outcomes: outs, Err: err, Duration: time.Since(start)})
		for i := range outs {
			observe(Event{Kind: EventFinalize, Vessel: v, Snapshot: outs[i].SnapshotID, Trigger: TriggerReconcile, Finalize: &outs[i]})
		}
		if err != nil && first == nil {
			first = fmt.Errorf("httpbinding: reconciling vessel %s: %w", v, err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	return first
}
