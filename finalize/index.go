package finalize

import (
	"context"
	"errors"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/envelope"
)

// ReceiveManifestIndex strictly decodes a manifest index (SPEC.md §6.7),
// stages the manifest it carries exactly as ReceiveManifest stages it, and
// in the same transaction stages every chunk whose records the store
// already holds for the vessel, resolved as ReceiveChunkRef resolves a
// reference. The receipt has entity type
// sourcecatalog.ManifestIndexEntityType and names in Missing the chunk
// indices still not staged, which the sender sends whole; an identical
// retry is envelope.AlreadyReceived with Missing read again.
//
// Held bytes that are not a chunk's, of another vessel, or without the
// listed digest, like bytes not held at all, leave their chunk missing:
// no refusal tells one vessel what another sent. A store whose Tx is no
// PayloadTx resolves nothing. Errors are ReceiveManifest's, and
// sourcecatalog.ErrConflict at payload_sha256s, located at the chunk, for
// a listed digest other than the payload_sha256 of a chunk already staged
// at its index.
func (r *Receiver) ReceiveManifestIndex(ctx context.Context, origin Origin, raw []byte) (envelope.Receipt, error) {
	st, err := r.StageManifestIndex(ctx, origin, raw)
	return st.Receipt, err
}

// StageManifestIndex is ReceiveManifestIndex, returning also whether the
// snapshot was already finalized. The Observer sees it as
// ReceiveManifestIndex.
func (r *Receiver) StageManifestIndex(ctx context.Context, origin Origin, raw []byte) (Staged, error) {
	return r.receive("ReceiveManifestIndex", origin, func() (Staged, *Usage, error) {
		x, err := envelope.DecodeManifestIndex(raw)
		if err != nil {
			return Staged{}, nil, err
		}
		return r.receiveIndex(ctx, origin, x)
	})
}

// receiveIndex stages a decoded index under the steps of SPEC.md §6.7.
func (r *Receiver) receiveIndex(ctx context.Context, origin Origin, x *envelope.ManifestIndex) (st Staged, u *Usage, err error) {
	m := x.Manifest()
	canon := m.Canonical()
	digest := canonical.Sum(canon)
	rc := &st.Receipt
	*rc = envelope.Receipt{
		Status: envelope.Staged, EntityType: sourcecatalog.ManifestIndexEntityType,
		VesselID: m.VesselID, SnapshotID: m.SnapshotID, Revision: m.Revision,
		ChunkIndex: sourcecatalog.NoIndex, Digest: canonical.Sum(x.Canonical()),
	}
	if err := r.admit(ctx, origin, m.VesselID); err != nil {
		return st, nil, err
	}
	err = r.staging(ctx, "ReceiveManifestIndex", m.VesselID, &st, func(tx Tx) error {
		rc.Status, rc.Complete, rc.Missing, st.Finalized, u = envelope.Staged, false, envelope.ChunkSet{}, false, nil
		s, err := tx.Snapshot(ctx, m.SnapshotID)
		fresh := errors.Is(err, sourcecatalog.ErrNotFound)
		var held []StagedChunk
		switch {
		case fresh:
			s = Snapshot{ID: m.SnapshotID, Revision: m.Revision, State: StateStaging}
		case err != nil:
			return err
		case s.Manifest != nil && s.ManifestDigest != digest:
			return conflict("another manifest was staged for this snapshot")
		case s.Manifest == nil && s.Revision != m.Revision:
			return conflict("chunks of another revision were staged for this snapshot")
		case s.Manifest == nil && s.State != StateStaging:
			return conflict("the snapshot was finalized without this manifest")
		default:
			if held, err = tx.Chunks(ctx, s.ID); err != nil {
				return err
			}
			if len(held) > 0 && held[len(held)-1].Index >= m.ChunkCount {
				return conflict("a chunk staged for this snapshot has an index beyond the manifest's chunk_count").AtField("chunk_count")
			}
		}
		var staged envelope.ChunkSet
		for _, c := range held {
			if c.Payload != x.PayloadSHA256(c.Index) {
				return conflict("the listed digest is not that of the chunk staged at its index").AtField("payload_sha256s").InChunk(c.Index)
			}
			staged.Add(c.Index)
		}
		if s.Manifest != nil {
			rc.Status, st.Finalized = envelope.AlreadyReceived, s.State != StateStaging
			rc.Missing = unstaged(m.ChunkCount, staged)
			rc.Complete = complete(s)
			return nil
		}
		resolved, size, err := resolveHeld(ctx, tx, x, staged)
		if err != nil {
			return err
		}
		size += int64(len(canon))
		var use Usage
		if fresh {
			use, err = r.admitNewSnapshot(ctx, tx, size)
		} else {
			use, err = r.admitBytes(ctx, tx, size)
		}
		if err != nil {
			return err
		}
		for _, c := range resolved {
			if err := tx.PutChunk(ctx, StagedChunk{Snapshot: s.ID, Index: c.Index(), Canonical: c.Canonical(), Payload: c.PayloadSHA256()}); err != nil {
				return err
			}
			staged.Add(c.Index())
		}
		s.Manifest, s.ManifestDigest = canon, digest
		s.ChunkCount, s.RecordCount = m.ChunkCount, m.RecordCount
		s.ChunksStaged += len(resolved)
		s.StagedBytes += size
		rc.Missing = unstaged(m.ChunkCount, staged)
		rc.Complete, u = complete(s), &use
		return tx.PutSnapshot(ctx, s)
	})
	return st, u, err
}

// resolveHeld resolves, for every index of x not in staged, the chunk the
// store holds for the vessel with the listed digest, and returns the
// resolved chunks and their canonical bytes' total. Bytes it cannot
// resolve from leave the chunk missing; only a store failure is an error.
func resolveHeld(ctx context.Context, tx Tx, x *envelope.ManifestIndex, staged envelope.ChunkSet) ([]*envelope.Chunk, int64, error) {
	ptx, ok := tx.(PayloadTx)
	if !ok {
		return nil, 0, nil
	}
	var out []*envelope.Chunk
	var size int64
	for i := range x.Manifest().ChunkCount {
		if staged.Has(i) {
			continue
		}
		held, err := ptx.ChunkByPayload(ctx, x.PayloadSHA256(i))
		switch {
		case errors.Is(err, sourcecatalog.ErrNotFound), errors.Is(err, sourcecatalog.ErrHashMismatch):
			continue // none held, or only bytes the store found damaged: missing
		case err != nil:
			return nil, 0, err
		}
		c, err := x.ChunkRef(i).Resolve(held.Canonical)
		if err != nil {
			continue // not a chunk's bytes, another vessel's, or another digest: missing
		}
		out = append(out, c)
		size += int64(len(c.Canonical()))
	}
	return out, size, nil
}

// unstaged returns the indices below count that staged does not hold.
func unstaged(count int, staged envelope.ChunkSet) envelope.ChunkSet {
	var m envelope.ChunkSet
	for i := range count {
		if !staged.Has(i) {
			m.Add(i)
		}
	}
	return m
}
