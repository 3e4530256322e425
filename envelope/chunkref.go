package envelope

import (
	"bytes"
	"crypto/sha256"
	"strconv"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
)

// A ChunkRef is a chunk sent by reference (SPEC.md §6.6): every member of
// the chunk but its records, which the receiver takes from a chunk with
// the same payload_sha256 that it already holds for the vessel. A ChunkRef
// comes from NewChunkRef or DecodeChunkRef; it is immutable and safe for
// concurrent use.
type ChunkRef struct {
	vesselID   uuid.UUID
	snapshotID uuid.UUID
	revision   int64
	index      int
	payload    canonical.Digest
	canon      []byte
}

// VesselID returns the reference's vessel_id.
func (r *ChunkRef) VesselID() uuid.UUID { return r.vesselID }

// SnapshotID returns the reference's snapshot_id.
func (r *ChunkRef) SnapshotID() uuid.UUID { return r.snapshotID }

// Revision returns the reference's revision.
func (r *ChunkRef) Revision() int64 { return r.revision }

// Index returns the reference's zero-based chunk_index.
func (r *ChunkRef) Index() int { return r.index }

// PayloadSHA256 returns the payload_sha256 the reference names: the
// digest of the records' body of the chunk it stands for (SPEC.md §6.4).
func (r *ChunkRef) PayloadSHA256() canonical.Digest { return r.payload }

// Canonical returns the reference's canonical bytes, the payload of its
// outbox entity. The caller must not modify them.
func (r *ChunkRef) Canonical() []byte { return r.canon }

// NewChunkRef returns the reference of c: c's members but its records.
func NewChunkRef(c *Chunk) *ChunkRef {
	r := &ChunkRef{vesselID: c.vesselID, snapshotID: c.snapshotID, revision: c.revision, index: c.index, payload: c.payload}
	r.canon = appendRefHead(nil, c.index, c.payload)
	r.canon = append(r.canon, newChunkHeader(c.vesselID, c.snapshotID, c.revision).tail...)
	return r
}

// appendRefHead appends the canonical text a reference and its chunk
// share before their records member:
// {"chunk_index":I,"payload_sha256":"H","protocol":"P".
func appendRefHead(dst []byte, index int, payload canonical.Digest) []byte {
	dst = append(dst, `{"chunk_index":`...)
	dst = strconv.AppendInt(dst, int64(index), 10)
	dst = append(dst, `,"payload_sha256":"`...)
	dst = append(dst, payload.String()...)
	dst = append(dst, `","protocol":"`...)
	dst = append(dst, sourcecatalog.Protocol...)
	return append(dst, '"')
}

var chunkRefFields = []string{"chunk_index", "payload_sha256", "protocol", "revision", "snapshot_id", "vessel_id"}

// DecodeChunkRef strictly decodes a chunk reference from JSON text in any
// member order and whitespace (SPEC.md §6.6), with the steps of §6.1 and
// the value checks of a chunk (§6.3) for its six members, reporting the
// first problem: ErrLimitExceeded, ErrMalformedJSON, ErrInvalidValue for a
// value that is not an object, ErrUnknownField (records included: a
// reference carries none) or ErrMissingField at the first name that
// differs, then each value's class at its member. Errors found after
// chunk_index was read carry it as the chunk location.
//
// Decoding checks no digest: a reference has no records. The receiver
// checks the records it resolves the reference to (ChunkRef.Resolve).
func DecodeChunkRef(raw []byte) (*ChunkRef, error) {
	msg, err := parseMessage(raw, false)
	if err != nil {
		return nil, err
	}
	var vals [6]int
	if err := msg.members(chunkRefFields, vals[:]); err != nil {
		return nil, err
	}
	n, err := msg.integer(vals[0], "chunk_index", 0, sourcecatalog.MaxChunks-1)
	if err != nil {
		return nil, err
	}
	r, err := decodeChunkRef(&msg, int(n), vals)
	if err != nil {
		return nil, inChunk(err, int(n))
	}
	return r, nil
}

// decodeChunkRef reads the members of a reference after its chunk_index.
func decodeChunkRef(msg *message, index int, vals [6]int) (*ChunkRef, error) {
	payload, err := msg.chunkHead(vals[1], vals[2])
	if err != nil {
		return nil, err
	}
	revision, snapshot, vessel, err := msg.chunkTail(vals[3], vals[4], vals[5])
	if err != nil {
		return nil, err
	}
	return &ChunkRef{vesselID: vessel, snapshotID: snapshot, revision: revision, index: index, payload: payload, canon: msg.b}, nil
}

// Resolve returns the whole chunk that r stands for, made of the records
// of stored — the canonical bytes of a chunk the receiver holds — and of
// r's own members: its chunk_index, revision, snapshot_id and vessel_id
// (SPEC.md §6.6). The chunk is exactly the one a sender would have sent
// whole, byte for byte.
//
// The stored bytes are never trusted: their records' body is hashed
// again, and when stored is not a chunk's canonical bytes or its records'
// body does not have r's payload_sha256, Resolve returns an error wrapping
// sourcecatalog.ErrHashMismatch at payload_sha256, located at r's chunk,
// and no chunk. A body with that digest is byte for byte the records the
// sender hashed, which the receiver decoded strictly when they first
// arrived; they are not decoded again here (Finalize verifies every staged
// set again, SPEC.md §8.4). Bytes of a chunk of another vessel are never
// resolved from: Resolve returns r.Unavailable() for them, whatever their
// records, so that no answer tells one vessel what another sent.
func (r *ChunkRef) Resolve(stored []byte) (*Chunk, error) {
	records, vessel, ok := heldRecords(stored)
	mismatch := func() error {
		return sourcecatalog.Errorf(sourcecatalog.ErrHashMismatch,
			"the records the receiver holds for this payload_sha256 do not have it").AtField("payload_sha256").InChunk(r.index)
	}
	switch {
	case !ok:
		return nil, mismatch()
	case vessel != r.vesselID:
		return nil, r.Unavailable()
	}
	h := sha256.New()
	writeRecordsBody(h, records)
	var sum canonical.Digest
	if h.Sum(sum[:0]); sum != r.payload {
		return nil, mismatch()
	}
	tail := newChunkHeader(r.vesselID, r.snapshotID, r.revision).tail
	canon := appendRefHead(make([]byte, 0, 128+len(records)+len(tail)), r.index, r.payload)
	canon = append(canon, `,"records":[`...)
	start := len(canon)
	canon = append(canon, records...)
	end := len(canon)
	canon = append(canon, ']')
	canon = append(canon, tail...)
	return &Chunk{
		vesselID: r.vesselID, snapshotID: r.snapshotID, revision: r.revision, index: r.index,
		payload: r.payload, canon: canon[:len(canon):len(canon)], recStart: start, recEnd: end,
		lazy: new(lazyRecords),
	}, nil
}

// heldRecords finds, in the canonical bytes of a chunk, the content of
// its records array and its vessel_id. A chunk's canonical bytes have
// nothing but its chunk_index and payload_sha256 before the records
// member, and nothing but its revision, snapshot_id and vessel_id, none
// holding a "]", after it: the records array ends at the last `],"revision":`.
// ok is false for bytes not of that form.
func heldRecords(stored []byte) (records []byte, vessel uuid.UUID, ok bool) {
	const (
		open = `,"protocol":"` + sourcecatalog.Protocol + `","records":[`
		end  = `],"revision":`
		ves  = `","vessel_id":"`
	)
	i := bytes.Index(stored, []byte(open))
	j := bytes.LastIndex(stored, []byte(end))
	k := len(stored) - len(ves) - 36 - len(`"}`)
	if !bytes.HasPrefix(stored, []byte(`{"chunk_index":`)) || i < 0 || j < i+len(open) || k < j ||
		!bytes.Equal(stored[k:k+len(ves)], []byte(ves)) || !bytes.HasSuffix(stored, []byte(`"}`)) ||
		len(bodyOpen)+j-(i+len(open))+len(bodyClose) > sourcecatalog.MaxChunkBody {
		return nil, uuid.Nil, false
	}
	v, err := ParseUUID(string(stored[k+len(ves) : len(stored)-2]))
	if err != nil {
		return nil, uuid.Nil, false
	}
	return stored[i+len(open) : j], v, true
}

// Unavailable returns the refusal of r when the receiver holds no records
// for r's payload and vessel (SPEC.md §6.6): an error wrapping
// sourcecatalog.ErrReferenceUnavailable at payload_sha256, located at r's
// chunk. The sender sends the whole chunk instead.
func (r *ChunkRef) Unavailable() error {
	return sourcecatalog.Errorf(sourcecatalog.ErrReferenceUnavailable,
		"no records with this payload_sha256 are held for the vessel; send the whole chunk").AtField("payload_sha256").InChunk(r.index)
}
