package finalize

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"strconv"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/envelope"
)

// decodeStaged decodes and verifies a staged set; a variable so that the
// package's tests can count the sets decoded.
var decodeStaged = envelope.DecodeStaged

// verifyIdentical verifies a complete staged set by identity with the
// active snapshot, without decoding its chunks (SPEC.md §8.4): it returns
// the set's manifest, with no chunks, when the set is the active one's
// but for its manifest's own members and each chunk's header — the same
// document_sha256, record_count and chunk_count, and at every index a
// chunk whose payload_sha256 is the active chunk's, whose records' body
// is hashed again to that digest, and whose other bytes are exactly those
// the manifest gives it. A set that verifies so would verify decoded too:
// its records are, byte for byte, those the active snapshot had verified
// when it activated, cut into the same chunks.
//
// It returns nil when the set is not such a set, or when anything read
// disagrees, and the caller then decodes and verifies the set in full,
// which finds and reports the problem; err is a store failure only.
func verifyIdentical(ctx context.Context, tx Tx, vessel uuid.UUID, v VesselState, s Snapshot, staged []StagedChunk) (*envelope.Snapshot, error) {
	if v.ActiveSnapshot == uuid.Nil || s.Manifest == nil || canonical.Sum(s.Manifest) != s.ManifestDigest {
		return nil, nil
	}
	m, err := envelope.DecodeManifest(s.Manifest)
	if err != nil || m.DocumentSHA256 != v.ActiveDocument || m.VesselID != vessel || m.SnapshotID != s.ID ||
		m.Revision != s.Revision || m.ChunkCount != len(staged) {
		return nil, nil
	}
	active, err := tx.Snapshot(ctx, v.ActiveSnapshot)
	switch {
	case errors.Is(err, sourcecatalog.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	case active.State != StateActivated || active.RecordCount != m.RecordCount || active.ChunkCount != m.ChunkCount:
		return nil, nil
	}
	held, err := chunkDigests(ctx, tx, active.ID)
	if err != nil || len(held) != len(staged) {
		return nil, err
	}
	tail := chunkTail(m.Revision, m.SnapshotID, m.VesselID)
	h := sha256.New()
	var head []byte
	var sum canonical.Digest
	for i, c := range staged {
		if c.Index != i || held[i].Index != i || c.Payload != held[i].Payload {
			return nil, nil
		}
		head = chunkHead(head[:0], i, c.Payload)
		b := c.Canonical
		if len(b) < len(head)+len(tail) || !bytes.HasPrefix(b, head) || !bytes.HasSuffix(b, tail) {
			return nil, nil
		}
		h.Reset()
		h.Write([]byte(`{"records":[`))
		h.Write(b[len(head) : len(b)-len(tail)])
		h.Write([]byte(`]}`))
		if h.Sum(sum[:0]); sum != c.Payload {
			return nil, nil
		}
	}
	return &envelope.Snapshot{Manifest: m}, nil
}

// A DigestTx is a Tx that reads a snapshot's chunk digests without their
// bytes: verifying a set by identity (SPEC.md §8.4) compares each staged
// chunk's payload_sha256 with the active snapshot's at its index, and
// needs no more of the active chunks. It is optional: over a Tx without
// it, Finalize reads the active snapshot's chunks whole (Tx.Chunks).
type DigestTx interface {
	Tx
	// ChunkDigests returns the chunks staged for snapshot as Chunks does,
	// in index order and with the same Snapshot, Index and Payload, but
	// with Canonical nil. It sees the writes made earlier in the
	// transaction. A Payload it reports wrongly cannot make a set verify
	// by identity that would not verify decoded: the staged chunk's
	// records are hashed to their own digest, which must equal it, so a
	// wrong digest only sends the set to be decoded in full.
	ChunkDigests(ctx context.Context, snapshot uuid.UUID) ([]StagedChunk, error)
}

// chunkDigests returns snapshot's chunks with at least their Index and
// Payload: DigestTx's when tx is one, Chunks' otherwise.
func chunkDigests(ctx context.Context, tx Tx, snapshot uuid.UUID) ([]StagedChunk, error) {
	if dtx, ok := tx.(DigestTx); ok {
		return dtx.ChunkDigests(ctx, snapshot)
	}
	return tx.Chunks(ctx, snapshot)
}

// chunkHead appends to dst the canonical bytes of a chunk up to its
// records' content (SPEC.md §6.3).
func chunkHead(dst []byte, index int, payload canonical.Digest) []byte {
	dst = append(dst, `{"chunk_index":`...)
	dst = strconv.AppendInt(dst, int64(index), 10)
	dst = append(dst, `,"payload_sha256":"`...)
	dst = payload.AppendHex(dst)
	return append(dst, `","protocol":"`+sourcecatalog.Protocol+`","records":[`...)
}

// chunkTail returns the canonical bytes of a chunk after its records'
// content (SPEC.md §6.3).
func chunkTail(revision int64, snapshot, vessel uuid.UUID) []byte {
	b := []byte(`],"revision":`)
	b = strconv.AppendInt(b, revision, 10)
	b = append(b, `,"snapshot_id":"`...)
	b = append(b, snapshot.String()...)
	b = append(b, `","vessel_id":"`...)
	b = append(b, vessel.String()...)
	return append(b, `"}`...)
}
