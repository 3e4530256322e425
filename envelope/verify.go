package envelope

import (
	"errors"
	"slices"
	"sort"
	"strconv"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/catalog"
)

// Verify checks that chunks, in any order, are exactly the complete chunk
// set of the snapshot m describes: every field of m in its domain; every
// chunk of the same vessel, snapshot and revision; the index set exactly
// 0..chunk_count-1; the record count; each chunk within the limits and
// non-empty unless the snapshot is; the records in canonical global order
// across chunks and satisfying every integrity rule; and the document hash.
//
// It returns nil or an error that joins one *sourcecatalog.Error per problem
// found, each with its class and location: chunk index, record index within
// the chunk, field. After 400 problems one more says that further problems
// were not reported. sourcecatalog.Problems lists them.
func Verify(m *Manifest, chunks []*Chunk) error {
	var v verifier
	v.run(m, chunks)
	return joinErrors(v.problems)
}

type verifier struct {
	problems []error
}

// maxProblems bounds what Verify reports.
const maxProblems = 4 * catalog.MaxProblems

func (v *verifier) add(e *sourcecatalog.Error) {
	switch n := len(v.problems); {
	case n < maxProblems:
		v.problems = append(v.problems, e)
	case n == maxProblems:
		v.problems = append(v.problems, sourcecatalog.Errorf(e.Class, "further problems not reported"))
	}
}

func integrity(detail string) *sourcecatalog.Error {
	return sourcecatalog.Errorf(sourcecatalog.ErrIntegrity, detail)
}

func (v *verifier) run(m *Manifest, chunks []*Chunk) {
	if err := m.Check(); err != nil {
		var e *sourcecatalog.Error
		if !errors.As(err, &e) { // Check returns only *sourcecatalog.Error
			e = sourcecatalog.Wrap(sourcecatalog.ErrInvalidValue, err)
		}
		v.add(e)
		return
	}
	byIndex := make([]*Chunk, m.ChunkCount)
	complete := true
	for i, c := range chunks {
		switch {
		case c == nil:
			v.add(sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "nil chunk at position "+strconv.Itoa(i)))
			complete = false
			continue
		case c.vesselID != m.VesselID:
			v.add(integrity("vessel_id differs from the manifest").InChunk(c.index).AtField("vessel_id"))
		case c.snapshotID != m.SnapshotID:
			v.add(integrity("snapshot_id differs from the manifest").InChunk(c.index).AtField("snapshot_id"))
		case c.revision != m.Revision:
			v.add(integrity("revision differs from the manifest").InChunk(c.index).AtField("revision"))
		case c.index >= m.ChunkCount:
			v.add(integrity("chunk_index beyond chunk_count " + strconv.Itoa(m.ChunkCount)).InChunk(c.index).AtField("chunk_index"))
		case byIndex[c.index] != nil:
			v.add(integrity("more than one chunk with this chunk_index").InChunk(c.index).AtField("chunk_index"))
		default:
			byIndex[c.index] = c
			continue
		}
		complete = false
	}
	for i, c := range byIndex {
		if c == nil {
			v.add(integrity("chunk missing").InChunk(i).AtField("chunk_index"))
			complete = false
		}
	}
	if !complete {
		return
	}

	total := 0
	starts := make([]int, len(byIndex))
	for i, c := range byIndex {
		n := c.Len()
		starts[i] = total
		total += n
		switch {
		case n > sourcecatalog.MaxRecordsPerChunk:
			v.add(sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, "more than 100 records").InChunk(i).AtField("records"))
		case c.BodyLen() > sourcecatalog.MaxChunkBody:
			v.add(sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, "canonical body larger than 16384 bytes").InChunk(i).AtField("records"))
		case n == 0 && m.RecordCount > 0:
			v.add(integrity("empty chunk in a non-empty snapshot").InChunk(i).AtField("records"))
		case n == 0 && i > 0:
			// An empty snapshot is exactly one chunk with no records.
			v.add(integrity("an empty snapshot has exactly one chunk").InChunk(i).AtField("records"))
		}
	}
	if total != m.RecordCount {
		v.add(integrity("the chunks hold " + strconv.Itoa(total) + " records, the manifest says " + strconv.Itoa(m.RecordCount)).AtField("record_count"))
	}
	for _, p := range sourcecatalog.Problems(catalog.CheckKeys(recordKeys(byIndex, total))) {
		if p.Record != sourcecatalog.NoIndex {
			c := sort.SearchInts(starts, p.Record+1) - 1
			p = p.InChunk(c).AtRecord(p.Record - starts[c])
		}
		v.add(p)
	}
	if documentDigest(byIndex) != m.DocumentSHA256 {
		v.add(sourcecatalog.Errorf(sourcecatalog.ErrHashMismatch, "document_sha256 does not match the records").AtField("document_sha256"))
	}
}

// recordKeys returns the keys of the records of chunks, which hold total
// records, in order. When the chunks kept their keys one after the other
// in one array, as DecodeStaged does for chunks staged in index order, that
// array is returned, not a copy.
func recordKeys(chunks []*Chunk, total int) []catalog.Key {
	if total > 0 && keptInOrder(chunks) && cap(chunks[0].keys) >= total {
		return chunks[0].keys[:total]
	}
	keys := make([]catalog.Key, 0, total)
	for _, c := range chunks {
		for i := range c.Len() {
			keys = append(keys, c.Entry(i).Key)
		}
	}
	return keys
}

// keptInOrder reports whether every chunk kept its keys, each chunk's
// right after the previous one's in the same array.
func keptInOrder(chunks []*Chunk) bool {
	for i, c := range chunks {
		if len(c.keys) == 0 {
			return false
		}
		if i > 0 {
			p := chunks[i-1].keys
			if len(p) == cap(p) || &p[:len(p)+1][len(p)] != &c.keys[0] {
				return false
			}
		}
	}
	return true
}

// DecodeSnapshot decodes a manifest and its chunk messages, in any order,
// and verifies the set. It returns the snapshot with its chunks in index
// order, or an error joining every problem found. A message that cannot be
// decoded is reported with its position in chunks (and its chunk index when
// that could be read); the set is verified only when every message decoded.
func DecodeSnapshot(manifest []byte, chunks [][]byte) (*Snapshot, error) {
	return decodeSnapshot(manifest, chunks, &chunkDecoder{keep: keepRecords})
}

// DecodeStaged is DecodeSnapshot for messages held immutable, such as a
// receiver's staged bytes, with the same checks and problems reported. A
// chunk message that is canonical already is read in place, not copied:
// the chunk's bytes, and its records' bytes and strings, are views of it,
// which the caller must not modify afterwards. The chunks keep each
// record's Entry, not its catalog.Record, which Records materialises on
// demand.
func DecodeStaged(manifest []byte, chunks [][]byte) (*Snapshot, error) {
	n := min(sourcecatalog.MaxRecords, len(chunks)*sourcecatalog.MaxRecordsPerChunk)
	d := &chunkDecoder{inPlace: true, keep: keepEntries, keys: make([]catalog.Key, 0, n), bytes: make([][]byte, 0, n)}
	return decodeSnapshot(manifest, chunks, d)
}

// decodeSnapshot is DecodeSnapshot with the chunks decoded by d.
func decodeSnapshot(manifest []byte, chunks [][]byte, d *chunkDecoder) (*Snapshot, error) {
	var problems []error
	m, err := DecodeManifest(manifest)
	if err != nil {
		problems = append(problems, describe(err, "manifest"))
	}
	decoded := make([]*Chunk, 0, len(chunks))
	for i, raw := range chunks {
		c, err := d.decode(raw)
		if err != nil {
			problems = append(problems, describe(err, "chunks["+strconv.Itoa(i)+"]"))
			continue
		}
		decoded = append(decoded, c)
	}
	if len(problems) > 0 {
		return nil, joinErrors(problems)
	}
	if err := Verify(&m, decoded); err != nil {
		return nil, err
	}
	slices.SortFunc(decoded, func(a, b *Chunk) int { return a.index - b.index })
	return &Snapshot{Manifest: m, Chunks: decoded}, nil
}

// describe prefixes the detail of a decoding error with the message it came
// from.
func describe(err error, message string) error {
	var e *sourcecatalog.Error
	if !errors.As(err, &e) {
		e = sourcecatalog.Wrap(sourcecatalog.ErrMalformedJSON, err)
	}
	c := *e
	if c.Detail == "" {
		c.Detail = message
	} else {
		c.Detail = message + ": " + c.Detail
	}
	return &c
}
