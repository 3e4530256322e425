package finalize

import (
	"context"
	"errors"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/envelope"
)

// ReceiveManifest strictly decodes a manifest and stages it durably.
//
// It returns a Staged receipt, or AlreadyReceived with an equal receipt when
// identical bytes were staged before. It stages nothing and returns an
// error wrapping: the decoder's classes for a malformed manifest;
// ErrForeignVessel when the manifest names another vessel than origin;
// ErrUnregisteredVessel for a vessel the registry refuses; ErrConflict when
// another manifest, or chunks of another revision, were staged for the
// snapshot; ErrStagingExhausted when a staging bound would be exceeded.
func (r *Receiver) ReceiveManifest(ctx context.Context, origin Origin, raw []byte) (Receipt, error) {
	m, err := envelope.DecodeManifest(raw)
	if err != nil {
		return Receipt{}, err
	}
	if err := r.admit(ctx, origin, m.VesselID); err != nil {
		return Receipt{}, err
	}
	canon := m.Canonical()
	rc := Receipt{
		Status: Staged, EntityType: sourcecatalog.ManifestEntityType,
		VesselID: m.VesselID, SnapshotID: m.SnapshotID, Revision: m.Revision,
		ChunkIndex: sourcecatalog.NoIndex, Digest: canonical.Sum(canon),
	}
	err = r.store.WithVessel(ctx, m.VesselID, func(tx Tx) error {
		rc.Status = Staged
		s, err := tx.Snapshot(ctx, m.SnapshotID)
		switch {
		case errors.Is(err, ErrNotFound):
			s = Snapshot{ID: m.SnapshotID, Revision: m.Revision, State: StateStaging}
			if err := r.admitNewSnapshot(ctx, tx, int64(len(canon))); err != nil {
				return err
			}
		case err != nil:
			return err
		case s.Manifest != nil:
			if s.ManifestDigest != rc.Digest {
				return conflict("another manifest was staged for this snapshot")
			}
			rc.Status = AlreadyReceived
			return nil
		case s.Revision != m.Revision:
			return conflict("chunks of another revision were staged for this snapshot")
		case s.State != StateStaging:
			return conflict("the snapshot was finalized without this manifest")
		default:
			if err := r.admitBytes(ctx, tx, int64(len(canon))); err != nil {
				return err
			}
		}
		s.Manifest, s.ManifestDigest = canon, rc.Digest
		s.ChunkCount, s.RecordCount = m.ChunkCount, m.RecordCount
		s.StagedBytes += int64(len(canon))
		return tx.PutSnapshot(ctx, s)
	})
	if err != nil {
		return Receipt{}, err
	}
	return rc, nil
}

// ReceiveChunk strictly decodes a chunk, checking its payload hash, and
// stages it durably. Chunks may arrive before their manifest.
//
// Receipts and errors are those of ReceiveManifest. ErrConflict here means
// other bytes were staged at the same snapshot and chunk index, the
// snapshot's messages disagree on the revision, or the chunk index is
// beyond the staged manifest's chunk_count.
func (r *Receiver) ReceiveChunk(ctx context.Context, origin Origin, raw []byte) (Receipt, error) {
	c, err := envelope.DecodeChunk(raw)
	if err != nil {
		return Receipt{}, err
	}
	if err := r.admit(ctx, origin, c.VesselID()); err != nil {
		return Receipt{}, err
	}
	rc := Receipt{
		Status: Staged, EntityType: sourcecatalog.ChunkEntityType,
		VesselID: c.VesselID(), SnapshotID: c.SnapshotID(), Revision: c.Revision(),
		ChunkIndex: c.Index(), Digest: c.PayloadSHA256(),
	}
	size := int64(len(c.Canonical()))
	err = r.store.WithVessel(ctx, c.VesselID(), func(tx Tx) error {
		rc.Status = Staged
		s, err := tx.Snapshot(ctx, c.SnapshotID())
		switch {
		case errors.Is(err, ErrNotFound):
			s = Snapshot{ID: c.SnapshotID(), Revision: c.Revision(), State: StateStaging}
			if err := r.admitNewSnapshot(ctx, tx, size); err != nil {
				return err
			}
		case err != nil:
			return err
		default:
			old, err := tx.Chunk(ctx, s.ID, c.Index())
			switch {
			case err == nil:
				if old.Payload != c.PayloadSHA256() || s.Revision != c.Revision() {
					return conflict("other bytes were staged at this chunk index")
				}
				rc.Status = AlreadyReceived
				return nil
			case !errors.Is(err, ErrNotFound):
				return err
			case s.Revision != c.Revision():
				return conflict("the snapshot's messages disagree on the revision")
			case s.State != StateStaging:
				return conflict("the snapshot was finalized without this chunk")
			case s.Manifest != nil && c.Index() >= s.ChunkCount:
				return conflict("chunk_index beyond the manifest's chunk_count")
			}
			if err := r.admitBytes(ctx, tx, size); err != nil {
				return err
			}
		}
		s.ChunksStaged++
		s.StagedBytes += size
		if err := tx.PutChunk(ctx, StagedChunk{Snapshot: s.ID, Index: c.Index(), Canonical: c.Canonical(), Payload: c.PayloadSHA256()}); err != nil {
			return err
		}
		return tx.PutSnapshot(ctx, s)
	})
	if err != nil {
		return Receipt{}, err
	}
	return rc, nil
}

func conflict(detail string) error {
	return sourcecatalog.Errorf(ErrConflict, detail)
}

// usage sums the staged snapshots of a vessel by class.
type usage struct {
	incomplete, retained           int
	incompleteBytes, retainedBytes int64
}

func stagingUsage(ctx context.Context, tx Tx) (usage, []Snapshot, error) {
	all, err := tx.Snapshots(ctx)
	if err != nil {
		return usage{}, nil, err
	}
	var u usage
	for _, s := range all {
		if s.State == StateStaging {
			u.incomplete++
			u.incompleteBytes += s.StagedBytes
		} else {
			u.retained++
			u.retainedBytes += s.StagedBytes
		}
	}
	return u, all, nil
}

// admitNewSnapshot checks that one more staging snapshot of size bytes fits.
func (r *Receiver) admitNewSnapshot(ctx context.Context, tx Tx, size int64) error {
	u, _, err := stagingUsage(ctx, tx)
	if err != nil {
		return err
	}
	if u.incomplete+1 > r.limits.IncompleteSnapshots {
		return sourcecatalog.Errorf(ErrStagingExhausted, "too many incomplete snapshots staged for the vessel")
	}
	if u.incompleteBytes+size > r.limits.IncompleteBytes {
		return sourcecatalog.Errorf(ErrStagingExhausted, "incomplete staging bytes exhausted for the vessel")
	}
	return nil
}

// admitBytes checks that size more bytes of incomplete staging fit.
func (r *Receiver) admitBytes(ctx context.Context, tx Tx, size int64) error {
	u, _, err := stagingUsage(ctx, tx)
	if err != nil {
		return err
	}
	if u.incompleteBytes+size > r.limits.IncompleteBytes {
		return sourcecatalog.Errorf(ErrStagingExhausted, "incomplete staging bytes exhausted for the vessel")
	}
	return nil
}
