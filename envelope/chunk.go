package envelope

import (
	"crypto/sha256"
	"errors"
	"hash"
	"strconv"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
)

// A Chunk is one contiguous run of a snapshot's records. Chunks come from
// Build and DecodeChunk, which guarantee that the payload hash matches the
// records; a Chunk is immutable and safe for concurrent use.
type Chunk struct {
	vesselID   uuid.UUID
	snapshotID uuid.UUID
	revision   int64
	index      int
	records    []*catalog.Record
	payload    canonical.Digest
	canon      []byte
	// canon[recStart:recEnd] is the records array's content: the chunk's
	// body without its brackets.
	recStart, recEnd int
}

// VesselID returns the chunk's vessel_id.
func (c *Chunk) VesselID() uuid.UUID { return c.vesselID }

// SnapshotID returns the chunk's snapshot_id.
func (c *Chunk) SnapshotID() uuid.UUID { return c.snapshotID }

// Revision returns the chunk's revision.
func (c *Chunk) Revision() int64 { return c.revision }

// Index returns the chunk's zero-based chunk_index.
func (c *Chunk) Index() int { return c.index }

// Records returns the chunk's records in canonical order. The caller must
// not modify the slice.
func (c *Chunk) Records() []*catalog.Record { return c.records }

// PayloadSHA256 returns the hash of the chunk's canonical body.
func (c *Chunk) PayloadSHA256() canonical.Digest { return c.payload }

// Canonical returns the chunk's canonical bytes, the payload of its outbox
// entity. The caller must not modify them.
func (c *Chunk) Canonical() []byte { return c.canon }

// BodyLen returns the length of the chunk's canonical body,
// {"records":[...]}, which MaxChunkBody bounds.
func (c *Chunk) BodyLen() int { return bodyLen(c.records) }

const (
	bodyOpen  = `{"records":[`
	bodyClose = `]}`
)

func bodyLen(records []*catalog.Record) int {
	n := len(bodyOpen) + len(bodyClose)
	for i, r := range records {
		if i > 0 {
			n++
		}
		n += len(r.Canonical())
	}
	return n
}

// writeBody writes the canonical {"records":[...]} of records to h.
func writeBody(h hash.Hash, records []*catalog.Record) {
	h.Write([]byte(bodyOpen))
	for i, r := range records {
		if i > 0 {
			h.Write([]byte{','})
		}
		h.Write(r.Canonical())
	}
	h.Write([]byte(bodyClose))
}

// BodyDigest returns the SHA-256 of the canonical {"records":[...]} of
// records: a chunk's payload_sha256 or, over all records of a snapshot in
// canonical order, its document_sha256.
func BodyDigest(records []*catalog.Record) canonical.Digest {
	h := sha256.New()
	writeBody(h, records)
	var d canonical.Digest
	h.Sum(d[:0])
	return d
}

var zeroHex [2 * sha256.Size]byte

// writeBody writes the chunk's canonical body to h: the records as they sit
// in the chunk's canonical bytes, between the body's brackets.
func (c *Chunk) writeBody(h hash.Hash) {
	h.Write([]byte(bodyOpen))
	h.Write(c.canon[c.recStart:c.recEnd])
	h.Write([]byte(bodyClose))
}

// chunkHeader holds what every chunk of a snapshot shares, with the
// canonical text that follows the records array.
type chunkHeader struct {
	vesselID   uuid.UUID
	snapshotID uuid.UUID
	revision   int64
	tail       []byte // ,"revision":R,"snapshot_id":"S","vessel_id":"V"}
}

func newChunkHeader(vessel, snapshot uuid.UUID, revision int64) *chunkHeader {
	t := make([]byte, 0, 112)
	t = append(t, `,"revision":`...)
	t = strconv.AppendInt(t, revision, 10)
	t = append(t, `,"snapshot_id":"`...)
	t = append(t, snapshot.String()...)
	t = append(t, `","vessel_id":"`...)
	t = append(t, vessel.String()...)
	t = append(t, `"}`...)
	return &chunkHeader{vesselID: vessel, snapshotID: snapshot, revision: revision, tail: t}
}

var chunkFields = []string{"chunk_index", "payload_sha256", "protocol", "records", "revision", "snapshot_id", "vessel_id"}

// DecodeChunk strictly decodes a chunk from JSON text in any member order
// and whitespace, with the rules of DecodeManifest. It also refuses more than
// MaxRecordsPerChunk records or a body over MaxChunkBody bytes
// (ErrLimitExceeded), any invalid record (located by record index), and a
// payload_sha256 that does not match the canonical body (ErrHashMismatch),
// reporting the first problem in the order of SPEC.md §10.3. Errors found
// after chunk_index was read carry it.
//
// The chunk keeps the one canonical copy of raw that decoding makes; its
// records are views of it.
func DecodeChunk(raw []byte) (*Chunk, error) {
	msg, err := parseMessage(raw)
	if err != nil {
		return nil, err
	}
	var vals [7]int
	if err := msg.members(chunkFields, vals[:]); err != nil {
		return nil, err
	}
	// Read chunk_index first so later errors can say where they are.
	n, err := msg.integer(vals[0], "chunk_index", 0, sourcecatalog.MaxChunks-1)
	if err != nil {
		return nil, err
	}
	c, err := decodeChunk(&msg, int(n), vals)
	if err != nil {
		return nil, inChunk(err, int(n))
	}
	return c, nil
}

// decodeChunk reads the members of a chunk after its chunk_index, index;
// vals holds their offsets, in the order of chunkFields.
func decodeChunk(msg *message, index int, vals [7]int) (*Chunk, error) {
	payload, err := msg.digest(vals[1], "payload_sha256")
	if err != nil {
		return nil, err
	}
	if err := msg.constant(vals[2], "protocol", sourcecatalog.Protocol); err != nil {
		return nil, err
	}
	records := vals[3]
	if msg.b[records] != '[' {
		return nil, invalid("records", "must be an array")
	}
	revision, err := msg.integer(vals[4], "revision", 1, sourcecatalog.MaxRevision)
	if err != nil {
		return nil, err
	}
	snapshot, err := msg.uuid(vals[5], "snapshot_id")
	if err == nil {
		err = checkSnapshotID(snapshot)
	}
	if err != nil {
		return nil, err
	}
	vessel, err := msg.uuid(vals[6], "vessel_id")
	if err != nil {
		return nil, err
	}
	// The records array ends where the revision member, next in canonical
	// order, begins.
	recEnd := vals[4] - len(`,"revision":`)
	recs, err := catalog.DecodeCanonicalList(msg.b[records:recEnd], sourcecatalog.MaxRecordsPerChunk)
	if err != nil {
		if e := (*sourcecatalog.Error)(nil); errors.As(err, &e) && e.Record == sourcecatalog.NoIndex {
			return nil, e.AtField("records") // too many records: the only error without a record index
		}
		return nil, err
	}
	if bodyLen(recs) > sourcecatalog.MaxChunkBody {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, "canonical body larger than 16384 bytes").AtField("records")
	}
	c := &Chunk{
		vesselID: vessel, snapshotID: snapshot, revision: revision, index: index,
		records: recs, canon: msg.b, recStart: records + 1, recEnd: recEnd - 1,
	}
	d := sha256.New()
	c.writeBody(d)
	d.Sum(c.payload[:0])
	if c.payload != payload {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrHashMismatch, "payload_sha256 does not match the canonical body").AtField("payload_sha256")
	}
	return c, nil
}
