package envelope

import (
	"crypto/sha256"
	"errors"
	"hash"
	"strconv"
	"sync"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
)

// A Chunk is one contiguous run of a snapshot's records. Chunks come from
// Build and the decoders, which guarantee that the payload hash matches the
// records; a Chunk is immutable and safe for concurrent use.
type Chunk struct {
	vesselID   uuid.UUID
	snapshotID uuid.UUID
	revision   int64
	index      int
	payload    canonical.Digest
	canon      []byte
	// canon[recStart:recEnd] is the records array's content: the chunk's
	// body without its brackets.
	recStart, recEnd int

	// A chunk from Build or DecodeSnapshot holds its records. One from
	// DecodeChunk or DecodeStaged holds none, only lazy, which decodes
	// them from canon on first use; one from DecodeStaged also holds each
	// record's key and canonical bytes, in keys and bytes. Those are parts
	// of arrays shared by the chunks decoded together, in the order
	// decoded: their capacity extends to the arrays' end.
	records []*catalog.Record
	keys    []catalog.Key
	bytes   [][]byte
	lazy    *lazyRecords
}

// lazyRecords are the records of a chunk decoded without them.
type lazyRecords struct {
	once    sync.Once
	records []*catalog.Record
}

// An Entry is one record of a chunk known by its key and canonical bytes,
// as DecodeStaged keeps it, without the catalog.Record.
type Entry struct {
	Key       catalog.Key
	Canonical []byte
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
// not modify the slice. A chunk from DecodeChunk or DecodeStaged, which
// validated its records without keeping them, decodes them again on the
// first call.
func (c *Chunk) Records() []*catalog.Record {
	if c.lazy == nil {
		return c.records
	}
	c.lazy.once.Do(func() {
		// The records array validated once already: it cannot fail.
		c.lazy.records, _ = catalog.DecodeCanonicalList(c.canon[c.recStart-1:c.recEnd+1], -1)
	})
	return c.lazy.records
}

// Len returns the number of the chunk's records, without materialising
// them when the chunk kept their entries.
func (c *Chunk) Len() int {
	if c.keys != nil {
		return len(c.keys)
	}
	return len(c.Records())
}

// Entry returns the key and canonical bytes of the chunk's record i, in
// canonical order: kept by a chunk from DecodeStaged, read from Records
// for the others.
func (c *Chunk) Entry(i int) Entry {
	if c.keys != nil {
		return Entry{Key: c.keys[i], Canonical: c.bytes[i]}
	}
	r := c.Records()[i]
	return Entry{Key: r.Key(), Canonical: r.Canonical()}
}

// PayloadSHA256 returns the hash of the chunk's canonical body.
func (c *Chunk) PayloadSHA256() canonical.Digest { return c.payload }

// Canonical returns the chunk's canonical bytes, the payload of its outbox
// entity. The caller must not modify them.
func (c *Chunk) Canonical() []byte { return c.canon }

// BodyLen returns the length of the chunk's canonical body,
// {"records":[...]}, which MaxChunkBody bounds.
func (c *Chunk) BodyLen() int { return len(bodyOpen) + c.recEnd - c.recStart + len(bodyClose) }

const (
	bodyOpen  = `{"records":[`
	bodyClose = `]}`
)

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
func (c *Chunk) writeBody(h hash.Hash) { writeRecordsBody(h, c.canon[c.recStart:c.recEnd]) }

// writeRecordsBody writes to h the canonical body {"records":[...]} whose
// array content is records.
func writeRecordsBody(h hash.Hash, records []byte) {
	h.Write([]byte(bodyOpen))
	h.Write(records)
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
// The chunk keeps the one canonical copy of raw that decoding makes. It
// validates the records without keeping them: Records decodes them again,
// as views of that copy, on its first call.
func DecodeChunk(raw []byte) (*Chunk, error) {
	var d chunkDecoder
	return d.decode(raw)
}

// A chunkDecoder decodes chunk messages. With inPlace, a message that is
// canonical already is read in place instead of copied. keep says what the
// chunks keep of their records.
type chunkDecoder struct {
	inPlace bool
	keep    keep
	// With keepEntries, non-nil: every chunk's keys and record bytes, in
	// the order decoded.
	keys  []catalog.Key
	bytes [][]byte
}

// keep says what decoding a chunk keeps of its records.
type keep uint8

const (
	keepNone    keep = iota // nothing: Records decodes them on first use
	keepRecords             // the records
	keepEntries             // each record's Entry: Records decodes them on first use
)

func (d *chunkDecoder) decode(raw []byte) (*Chunk, error) {
	msg, err := parseMessage(raw, d.inPlace)
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
	c, err := d.decodeChunk(&msg, int(n), vals)
	if err != nil {
		return nil, inChunk(err, int(n))
	}
	return c, nil
}

// decodeChunk reads the members of a chunk after its chunk_index, index;
// vals holds their offsets, in the order of chunkFields.
func (d *chunkDecoder) decodeChunk(msg *message, index int, vals [7]int) (*Chunk, error) {
	payload, err := msg.chunkHead(vals[1], vals[2])
	if err != nil {
		return nil, err
	}
	records := vals[3]
	if msg.b[records] != '[' {
		return nil, invalid("records", "must be an array")
	}
	revision, snapshot, vessel, err := msg.chunkTail(vals[4], vals[5], vals[6])
	if err != nil {
		return nil, err
	}
	// The records array ends where the revision member, next in canonical
	// order, begins.
	recEnd := vals[4] - len(`,"revision":`)
	c := &Chunk{
		vesselID: vessel, snapshotID: snapshot, revision: revision, index: index,
		canon: msg.b, recStart: records + 1, recEnd: recEnd - 1,
	}
	if err := d.readRecords(c); err != nil {
		if e := (*sourcecatalog.Error)(nil); errors.As(err, &e) && e.Record == sourcecatalog.NoIndex {
			return nil, e.AtField("records") // too many records: the only error without a record index
		}
		return nil, err
	}
	if c.BodyLen() > sourcecatalog.MaxChunkBody {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, "canonical body larger than 16384 bytes").AtField("records")
	}
	h := sha256.New()
	c.writeBody(h)
	h.Sum(c.payload[:0])
	if c.payload != payload {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrHashMismatch, "payload_sha256 does not match the canonical body").AtField("payload_sha256")
	}
	return c, nil
}

// chunkHead reads the members a chunk and its reference share before the
// records member, payload_sha256 and protocol, at offsets payload and
// protocol, returning the digest.
func (m *message) chunkHead(payload, protocol int) (canonical.Digest, error) {
	d, err := m.digest(payload, "payload_sha256")
	if err != nil {
		return d, err
	}
	return d, m.constant(protocol, "protocol", sourcecatalog.Protocol)
}

// chunkTail reads the members a chunk and its reference share after the
// records member, revision, snapshot_id and vessel_id, at offsets rev,
// snap and ves.
func (m *message) chunkTail(rev, snap, ves int) (revision int64, snapshot, vessel uuid.UUID, err error) {
	if revision, err = m.integer(rev, "revision", 1, sourcecatalog.MaxRevision); err != nil {
		return 0, uuid.Nil, uuid.Nil, err
	}
	if snapshot, err = m.uuid(snap, "snapshot_id"); err == nil {
		err = checkSnapshotID(snapshot)
	}
	if err != nil {
		return 0, uuid.Nil, uuid.Nil, err
	}
	if vessel, err = m.uuid(ves, "vessel_id"); err != nil {
		return 0, uuid.Nil, uuid.Nil, err
	}
	return revision, snapshot, vessel, nil
}

// readRecords decodes the records array of c and keeps of the records what
// d keeps.
func (d *chunkDecoder) readRecords(c *Chunk) error {
	b := c.canon[c.recStart-1 : c.recEnd+1]
	var err error
	switch d.keep {
	case keepRecords:
		c.records, err = catalog.DecodeCanonicalList(b, sourcecatalog.MaxRecordsPerChunk)
		return err
	case keepEntries:
		start := len(d.keys)
		_, err = catalog.ScanCanonicalList(b, sourcecatalog.MaxRecordsPerChunk, func(r *catalog.Record) {
			d.keys, d.bytes = append(d.keys, r.Key()), append(d.bytes, r.Canonical())
		})
		c.keys, c.bytes = d.keys[start:], d.bytes[start:]
	default:
		_, err = catalog.ScanCanonicalList(b, sourcecatalog.MaxRecordsPerChunk, nil)
	}
	c.lazy = new(lazyRecords)
	return err
}
