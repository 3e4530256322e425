package finalize

import (
	"bytes"
	"cmp"
	"context"
	"slices"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
)

// A VesselLister is a Store that can list its vessels, for a server's
// reconciliation loop and its operators. Stores should implement it;
// memstore and the database stores of this module do.
type VesselLister interface {
	// Vessels returns, each once and in any order, every vessel with a
	// staged snapshot or an active snapshot; with staging true, only the
	// vessels with a snapshot in StateStaging. A vessel whose
	// transactions only read is not listed. It reads committed state
	// and takes no vessel's lock for longer than a read.
	Vessels(ctx context.Context, staging bool) ([]uuid.UUID, error)
}

// Vessels returns the vessels of the Store in byte order of their ids:
// every vessel with a staged or an active snapshot, or with staging true
// only those with a snapshot still staging — the vessels Reconcile may
// have work for. It returns an error wrapping sourcecatalog.ErrUnsupported
// when the Store is not a [VesselLister], and store errors classed as
// every method's.
func (r *Receiver) Vessels(ctx context.Context, staging bool) ([]uuid.UUID, error) {
	l, ok := r.store.(VesselLister)
	if !ok {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrUnsupported, "the store cannot list its vessels")
	}
	if err := ctx.Err(); err != nil {
		return nil, unavailable(err, "listing the vessels")
	}
	ids, err := l.Vessels(ctx, staging)
	if err != nil {
		return nil, unavailable(err, "the store failed listing the vessels")
	}
	ids = slices.Clone(ids)
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
	return slices.Compact(ids), nil
}

// A VesselStatus is what an operator needs to know of one vessel: its
// active snapshot, every staged snapshot and its usage of the staging
// bounds, read in one transaction.
type VesselStatus struct {
	VesselID uuid.UUID
	Active   VesselState
	// Snapshots holds every staged snapshot, highest revision first (of
	// equal revisions, by id).
	Snapshots []SnapshotStatus
	Usage     Usage
	// SupersededByActive counts the staged snapshots that the active
	// snapshot superseded since it was activated, as
	// Outcome.SupersededByActive does: more than a few, growing, flag a
	// vessel whose revisions went backwards (SPEC.md §8.4).
	SupersededByActive int
}

// A SnapshotStatus describes one staged snapshot.
type SnapshotStatus struct {
	ID       uuid.UUID
	Revision int64
	State    SnapshotState
	// Final is the outcome that finalized the snapshot, "" while
	// staging; Reason says why it was rejected, or which active snapshot
	// superseded it.
	Final  OutcomeStatus
	Reason string

	ChunkCount   int // from the manifest; 0 until it arrives
	RecordCount  int // from the manifest
	ChunksStaged int
	StagedBytes  int64

	// For a snapshot still staging: whether its manifest is missing, and
	// which chunk indexes are (known once the manifest is staged).
	// Complete reports that nothing is missing, so that Finalize or
	// Reconcile would finalize it.
	MissingManifest bool
	MissingChunks   []int
	Complete        bool
}

// LastFinalized returns the finalized snapshot of the highest revision —
// the outcome a vessel's last cycle came to — and false when no snapshot
// was finalized (or all were pruned).
func (s VesselStatus) LastFinalized() (SnapshotStatus, bool) {
	for _, sn := range s.Snapshots {
		if sn.State != StateStaging {
			return sn, true
		}
	}
	return SnapshotStatus{}, false
}

// Status returns the vessel's status. A vessel the store knows nothing of
// has the zero Active state and no snapshots. Errors: ErrInvalidValue for
// uuid.Nil; Store errors.
func (r *Receiver) Status(ctx context.Context, vesselID uuid.UUID) (VesselStatus, error) {
	var st VesselStatus
	err := r.withVessel(ctx, "Status", vesselID, func(tx Tx) error {
		st = VesselStatus{VesselID: vesselID}
		var err error
		if st.Active, err = tx.Vessel(ctx); err != nil {
			return err
		}
		u, all, err := r.usage(ctx, tx)
		if err != nil {
			return err
		}
		st.Usage = u
		for _, s := range all {
			ss := SnapshotStatus{
				ID: s.ID, Revision: s.Revision, State: s.State, Final: s.Final, Reason: s.Reason,
				ChunkCount: s.ChunkCount, RecordCount: s.RecordCount, ChunksStaged: s.ChunksStaged, StagedBytes: s.StagedBytes,
			}
			if s.State == StateStaging {
				var chunks []StagedChunk
				if s.Manifest != nil {
					if chunks, err = tx.Chunks(ctx, s.ID); err != nil {
						return err
					}
				}
				var out Outcome
				ss.Complete = !missing(&out, s, chunks)
				ss.MissingManifest, ss.MissingChunks = out.MissingManifest, out.MissingChunks
			}
			st.Snapshots = append(st.Snapshots, ss)
		}
		st.SupersededByActive = supersededByActive(all, st.Active.ActiveRevision, st.Active.ActiveSnapshot)
		return nil
	})
	if err != nil {
		return VesselStatus{}, err
	}
	slices.SortFunc(st.Snapshots, func(a, b SnapshotStatus) int {
		if c := cmp.Compare(b.Revision, a.Revision); c != 0 {
			return c
		}
		return bytes.Compare(a.ID[:], b.ID[:])
	})
	return st, nil
}
