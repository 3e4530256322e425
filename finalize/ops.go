package finalize

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
)

// Reconcile finalizes every complete staged snapshot of a vessel, such as
// one whose last receipt was issued just before a crash, highest revision
// first, and returns their outcomes. Incomplete snapshots are left staging.
// It stops at the first error, which it returns with the outcomes so far.
func (r *Receiver) Reconcile(ctx context.Context, vesselID uuid.UUID) ([]Outcome, error) {
	var complete []Snapshot
	err := r.withVessel(ctx, "Reconcile", vesselID, func(tx Tx) error {
		all, err := tx.Snapshots(ctx)
		if err != nil {
			return err
		}
		complete = complete[:0]
		for _, s := range all {
			if s.State == StateStaging && s.Manifest != nil && s.ChunksStaged >= s.ChunkCount {
				complete = append(complete, s)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(complete, func(a, b Snapshot) int { return cmp.Compare(b.Revision, a.Revision) })
	var outs []Outcome
	for _, s := range complete {
		out, err := r.Finalize(ctx, vesselID, s.ID)
		if err != nil && !errors.Is(err, sourcecatalog.ErrRevisionConflict) {
			return outs, err
		}
		outs = append(outs, out)
	}
	return outs, nil
}

// Discard removes one staged snapshot, in any state, with its chunks. The
// active snapshot is refused with ErrActiveSnapshot (wrapping sourcecatalog.ErrConflict);
// an unknown snapshot, uuid.Nil included, is not an error. The inventory is
// never touched.
func (r *Receiver) Discard(ctx context.Context, vesselID, snapshotID uuid.UUID) error {
	return r.withVessel(ctx, "Discard", vesselID, func(tx Tx) error {
		v, err := tx.Vessel(ctx)
		if err != nil {
			return err
		}
		if snapshotID == v.ActiveSnapshot && snapshotID != uuid.Nil {
			return ErrActiveSnapshot
		}
		return tx.DeleteSnapshot(ctx, snapshotID)
	})
}

// Prune removes finalized snapshots beyond the newest keep (by revision),
// never the active one and never a snapshot still staging. The inventory is
// never touched. A negative keep is refused with ErrInvalidValue.
func (r *Receiver) Prune(ctx context.Context, vesselID uuid.UUID, keep int) error {
	if keep < 0 {
		return sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "Prune: keep must not be negative")
	}
	return r.withVessel(ctx, "Prune", vesselID, func(tx Tx) error {
		v, err := tx.Vessel(ctx)
		if err != nil {
			return err
		}
		return prune(ctx, tx, v, keep)
	})
}

func prune(ctx context.Context, tx Tx, v VesselState, keep int) error {
	all, err := tx.Snapshots(ctx)
	if err != nil {
		return err
	}
	var finalized []Snapshot
	for _, s := range all {
		if s.State != StateStaging {
			finalized = append(finalized, s)
		}
	}
	slices.SortFunc(finalized, func(a, b Snapshot) int { return cmp.Compare(b.Revision, a.Revision) })
	for i, s := range finalized {
		if i < keep || s.ID == v.ActiveSnapshot {
			continue
		}
		if err := tx.DeleteSnapshot(ctx, s.ID); err != nil {
			return err
		}
	}
	return nil
}

// A Catalog is a vessel's active catalog: the active snapshot and the whole
// inventory, in canonical order.
type Catalog struct {
	VesselID     uuid.UUID
	SnapshotID   uuid.UUID // uuid.Nil when nothing was activated yet
	Revision     int64
	DiscoveredAt time.Time
	// Document is the SHA-256 of the active snapshot's document, its
	// records' canonical bytes in order (SPEC.md §6.4).
	Document canonical.Digest
	Items    []Item // LastSeen filled in for every item
}

// Active returns the vessel's active catalog. Last-seen of a currently
// observed item is the active snapshot.
func (r *Receiver) Active(ctx context.Context, vesselID uuid.UUID) (Catalog, error) {
	var c Catalog
	err := r.withVessel(ctx, "Active", vesselID, func(tx Tx) error {
		v, err := tx.Vessel(ctx)
		if err != nil {
			return err
		}
		items, err := tx.Items(ctx)
		if err != nil {
			return err
		}
		c = Catalog{VesselID: vesselID, SnapshotID: v.ActiveSnapshot, Revision: v.ActiveRevision, DiscoveredAt: v.ActiveDiscoveredAt, Document: v.ActiveDocument}
		active := Seen{Revision: v.ActiveRevision, At: v.ActiveDiscoveredAt}
		c.Items = slices.Clone(items) // the Tx's slice is not ours to change
		for i := range c.Items {
			if c.Items[i].CurrentlyObserved {
				c.Items[i].LastSeen = active
			}
		}
		return nil
	})
	if err != nil {
		return Catalog{}, err
	}
	slices.SortFunc(c.Items, func(a, b Item) int { return a.Key.Compare(b.Key) })
	return c, nil
}
