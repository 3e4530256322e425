package envelope

import (
	"bytes"
	"crypto/sha256"
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

// newChunk assembles a chunk of records: its canonical bytes and its
// payload hash, computed over the records as they sit in those bytes.
func newChunk(h *chunkHeader, index int, records []*catalog.Record) *Chunk {
	c := &Chunk{
		vesselID: h.vesselID, snapshotID: h.snapshotID, revision: h.revision,
		index: index, records: records,
	}
	b := make([]byte, 0, bodyLen(records)+len(h.tail)+160)
	b = append(b, `{"chunk_index":`...)
	b = strconv.AppendInt(b, int64(index), 10)
	b = append(b, `,"payload_sha256":"`...)
	hashAt := len(b)
	b = append(b, zeroHex[:]...)
	b = append(b, `","protocol":"`+sourcecatalog.Protocol+`","records":[`...)
	c.recStart = len(b)
	for i, r := range records {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, r.Canonical()...)
	}
	c.recEnd = len(b)
	b = append(b, ']')
	c.canon = append(b, h.tail...)

	d := sha256.New()
	c.writeBody(d)
	d.Sum(c.payload[:0])
	c.payload.AppendHex(c.canon[hashAt:hashAt])
	return c
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
// payload_sha256 that does not match the canonical body (ErrHashMismatch).
// Errors found after chunk_index was read carry it.
func DecodeChunk(raw []byte) (*Chunk, error) {
	if c, ok := decodeCanonicalChunk(raw); ok {
		return c, nil
	}
	return decodeChunk(raw)
}

// decodeChunk is DecodeChunk through a Value tree, for any input.
func decodeChunk(raw []byte) (*Chunk, error) {
	v, err := parseMessage(raw)
	if err != nil {
		return nil, err
	}
	mems, err := object(&v, chunkFields)
	if err != nil {
		return nil, err
	}
	var (
		index    = sourcecatalog.NoIndex
		vessel   uuid.UUID
		snapshot uuid.UUID
		revision int64
		payload  canonical.Digest
		records  *canonical.Value
	)
	// Read chunk_index first so later errors can say where they are.
	n, err := integer(&mems[0].Value, "chunk_index", 0, sourcecatalog.MaxChunks-1)
	if err != nil {
		return nil, err
	}
	index = int(n)
	located := func(err error) error {
		if e, ok := err.(*sourcecatalog.Error); ok {
			return e.InChunk(index)
		}
		return err
	}
	for i := 1; i < len(mems); i++ {
		val := &mems[i].Value
		switch name := mems[i].Name; name {
		case "payload_sha256":
			err = digestField(val, name, &payload)
		case "protocol":
			err = constant(val, name, sourcecatalog.Protocol)
		case "records":
			if val.Kind() != canonical.Array {
				err = invalid(name, "must be an array")
			}
			records = val
		case "revision":
			revision, err = integer(val, name, 1, sourcecatalog.MaxRevision)
		case "snapshot_id":
			if snapshot, err = uuidField(val, name); err == nil {
				err = checkSnapshotID(snapshot)
			}
		case "vessel_id":
			vessel, err = uuidField(val, name)
		}
		if err != nil {
			return nil, located(err)
		}
	}
	elems := records.Elems()
	if len(elems) > sourcecatalog.MaxRecordsPerChunk {
		return nil, located(sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, "more than 100 records").AtField("records"))
	}
	recs := make([]*catalog.Record, len(elems))
	for i := range elems {
		r, err := catalog.FromValue(&elems[i])
		if err != nil {
			if e, ok := err.(*sourcecatalog.Error); ok {
				return nil, e.InChunk(index).AtRecord(i)
			}
			return nil, located(err)
		}
		recs[i] = r
	}
	if bodyLen(recs) > sourcecatalog.MaxChunkBody {
		return nil, located(sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, "canonical body larger than 16384 bytes").AtField("records"))
	}
	c := newChunk(newChunkHeader(vessel, snapshot, revision), index, recs)
	if c.payload != payload {
		return nil, located(sourcecatalog.Errorf(sourcecatalog.ErrHashMismatch, "payload_sha256 does not match the canonical body").AtField("payload_sha256"))
	}
	return c, nil
}

// decodeCanonicalChunk decodes raw when it is a valid chunk written exactly
// in canonical form, as Build writes chunks: the common case, decoded from
// the bytes without a Value tree. The chunk keeps one copy of raw as its
// canonical bytes, and its records sub-slices of that copy. It reports false
// for anything else, and for the few canonical chunks with escapes in their
// records' strings or meta member names; decodeChunk then decides, and
// reports the problem.
//
// The canonical member order is fixed: chunk_index, payload_sha256,
// protocol, records, revision, snapshot_id, vessel_id. Everything around the
// records array is read here, from the front up to the array and from the
// back down to it; catalog.DecodeCanonicalList checks the array. A chunk so
// accepted is exactly its own canonical form and passes every check of
// decodeChunk, which would return an equal Chunk with the same bytes.
func decodeCanonicalChunk(raw []byte) (*Chunk, bool) {
	const (
		head    = `{"chunk_index":`
		hash    = `,"payload_sha256":"`
		mid     = `","protocol":"` + sourcecatalog.Protocol + `","records":`
		rev     = `],"revision":`
		snap    = `,"snapshot_id":"`
		vess    = `","vessel_id":"`
		end     = `"}`
		uuidLen = 36
	)
	if len(raw) > MaxMessageSize || len(raw) < len(head)+1+len(hash)+2*sha256.Size+len(mid)+1+len(rev)+1+len(snap)+len(vess)+len(end)+2*uuidLen {
		return nil, false
	}

	// From the front: chunk_index, payload_sha256, protocol.
	if string(raw[:len(head)]) != head {
		return nil, false
	}
	i := len(head)
	index, i, ok := canonicalUint(raw, i, 3)
	if !ok || index > sourcecatalog.MaxChunks-1 {
		return nil, false
	}
	if !hasAt(raw, i, hash) {
		return nil, false
	}
	i += len(hash)
	if len(raw)-i < 2*sha256.Size {
		return nil, false
	}
	payload, err := canonical.ParseDigest(string(raw[i : i+2*sha256.Size]))
	if err != nil {
		return nil, false
	}
	i += 2 * sha256.Size
	if !hasAt(raw, i, mid) {
		return nil, false
	}
	open := i + len(mid) // the records array's '['

	// From the back: vessel_id, snapshot_id, revision.
	k := len(raw) - len(end)
	if string(raw[k:]) != end {
		return nil, false
	}
	k -= uuidLen
	vessel, err := ParseUUID(string(raw[k : k+uuidLen]))
	if err != nil {
		return nil, false
	}
	k -= len(vess)
	if !hasAt(raw, k, vess) {
		return nil, false
	}
	k -= uuidLen
	snapshot, err := ParseUUID(string(raw[k : k+uuidLen]))
	if err != nil || checkSnapshotID(snapshot) != nil {
		return nil, false
	}
	k -= len(snap)
	if k < open || !hasAt(raw, k, snap) {
		return nil, false
	}
	digits := k
	for digits > open && raw[digits-1] >= '0' && raw[digits-1] <= '9' {
		digits--
	}
	revision, j, ok := canonicalUint(raw, digits, 16)
	if !ok || j != k || revision < 1 || revision > sourcecatalog.MaxRevision {
		return nil, false
	}
	closing := digits - len(rev) // the records array's ']'
	if closing <= open || !hasAt(raw, closing, rev) {
		return nil, false
	}

	// The records between, kept in the copy.
	canon := bytes.Clone(raw)
	records, ok := catalog.DecodeCanonicalList(canon[open : closing+1])
	if !ok || len(records) > sourcecatalog.MaxRecordsPerChunk || bodyLen(records) > sourcecatalog.MaxChunkBody {
		return nil, false
	}
	c := &Chunk{
		vesselID: vessel, snapshotID: snapshot, revision: int64(revision), index: int(index),
		records: records, canon: canon, recStart: open + 1, recEnd: closing,
	}
	d := sha256.New()
	c.writeBody(d)
	d.Sum(c.payload[:0])
	if c.payload != payload {
		return nil, false
	}
	return c, true
}

func hasAt(b []byte, i int, s string) bool {
	return i >= 0 && len(b)-i >= len(s) && string(b[i:i+len(s)]) == s
}

// canonicalUint reads the canonical text of a non-negative integer of at
// most maxDigits digits at b[i:], and returns it and the offset after it.
func canonicalUint(b []byte, i, maxDigits int) (n uint64, end int, ok bool) {
	start := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		if i-start == maxDigits {
			return 0, 0, false
		}
		n = n*10 + uint64(b[i]-'0')
		i++
	}
	if i == start || b[start] == '0' && i > start+1 {
		return 0, 0, false
	}
	return n, i, true
}
