package envelope

import (
	"bytes"
	"math/bits"
	"strconv"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/internal/canontext"
)

// A ManifestIndex is a manifest sent with every chunk's payload_sha256 in
// index order (SPEC.md §6.7), so that a receiver stages the manifest and,
// in the same request, every chunk whose records it already holds for the
// vessel, and answers which chunks it still needs. A ManifestIndex comes
// from NewManifestIndex or DecodeManifestIndex; it is immutable and safe
// for concurrent use.
type ManifestIndex struct {
	manifest Manifest
	payloads []canonical.Digest
	canon    []byte
}

// Manifest returns the manifest the index carries: the one its receiver
// stages, whose canonical bytes are those of the manifest sent alone.
func (x *ManifestIndex) Manifest() Manifest { return x.manifest }

// PayloadSHA256 returns the payload_sha256 listed for chunk i, 0 ≤ i <
// the manifest's ChunkCount.
func (x *ManifestIndex) PayloadSHA256(i int) canonical.Digest { return x.payloads[i] }

// Canonical returns the index's canonical bytes, the payload of its outbox
// entity. The caller must not modify them.
func (x *ManifestIndex) Canonical() []byte { return x.canon }

// NewManifestIndex returns the index of m with the chunks' payload
// digests payloads, in index order. It returns the error DecodeManifestIndex
// would for a manifest outside its domains or a count of digests other
// than m.ChunkCount.
func NewManifestIndex(m Manifest, payloads []canonical.Digest) (*ManifestIndex, error) {
	if err := m.Check(); err != nil {
		return nil, err
	}
	if len(payloads) != m.ChunkCount {
		return nil, countMismatch()
	}
	x := &ManifestIndex{manifest: m, payloads: append([]canonical.Digest(nil), payloads...)}
	mc := m.Canonical()
	cut := bytes.Index(mc, []byte(`,"protocol":`)) // payload_sha256s sorts just before protocol
	b := make([]byte, 0, len(mc)+len(`,"payload_sha256s":[]`)+len(payloads)*67)
	b = append(b, mc[:cut]...)
	b = append(b, `,"payload_sha256s":[`...)
	for i, d := range payloads {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = d.AppendHex(b)
		b = append(b, '"')
	}
	b = append(b, ']')
	x.canon = append(b, mc[cut:]...)
	return x, nil
}

func countMismatch() error {
	return sourcecatalog.Errorf(sourcecatalog.ErrIntegrity, "the number of payload digests is not chunk_count").AtField("payload_sha256s")
}

var manifestIndexFields = []string{
	"chunk_count", "discovered_at_utc", "document_sha256", "inventory_coverage",
	"payload_sha256s", "protocol", "record_count", "revision", "scope", "snapshot_id",
	"transport_complete", "vessel_id",
}

// DecodeManifestIndex strictly decodes a manifest index from JSON text in
// any member order and whitespace (SPEC.md §6.7): the steps of §6.1 for
// its twelve members, each value checked in canonical name order as
// DecodeManifest checks it, payload_sha256s included — not an array
// (ErrInvalidValue), more than 256 elements (ErrLimitExceeded), then each
// element a digest (ErrInvalidValue, located at the chunk of its
// position) — then the manifest's ranges as DecodeManifest, and last a
// count of digests other than chunk_count (ErrIntegrity at
// payload_sha256s).
func DecodeManifestIndex(raw []byte) (*ManifestIndex, error) {
	msg, err := parseMessage(raw, false)
	if err != nil {
		return nil, err
	}
	var vals [12]int
	if err := msg.members(manifestIndexFields, vals[:]); err != nil {
		return nil, err
	}
	x := &ManifestIndex{canon: msg.b}
	for k, v := range vals {
		name := manifestIndexFields[k]
		if name == "payload_sha256s" {
			if x.payloads, err = msg.digests(v, name); err != nil {
				return nil, err
			}
			continue
		}
		if err := x.manifest.decodeField(&msg, name, v); err != nil {
			return nil, err
		}
	}
	if err := x.manifest.Check(); err != nil {
		return nil, err
	}
	if len(x.payloads) != x.manifest.ChunkCount {
		return nil, countMismatch()
	}
	return x, nil
}

// digests reads the array of at most MaxChunks digests at v; a problem of
// an element is located at the chunk of its position.
func (m *message) digests(v int, field string) ([]canonical.Digest, error) {
	if m.b[v] != '[' {
		return nil, invalid(field, "must be an array, not "+canontext.KindAt(m.b, v).String())
	}
	var out []canonical.Digest
	for i := v + 1; m.b[i] != ']'; {
		if len(out) == sourcecatalog.MaxChunks {
			return nil, sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, "more than 256 digests").AtField(field)
		}
		d, err := m.digest(i, field)
		if err != nil {
			return nil, inChunk(err, len(out))
		}
		out = append(out, d)
		i, _ = canontext.End(m.b, i)
		if m.b[i] == ',' {
			i++
		}
	}
	return out, nil
}

// A ChunkSet is a set of chunk indices, 0 to 255: the chunks a receiver
// still needs of a snapshot (SPEC.md §6.7, §9.1). The zero ChunkSet is
// empty; a ChunkSet is comparable.
type ChunkSet [sourcecatalog.MaxChunks / 64]uint64

// Add adds chunk index i, 0 ≤ i < 256, to s.
func (s *ChunkSet) Add(i int) { s[i/64] |= 1 << (i % 64) }

// Has reports whether s holds chunk index i.
func (s ChunkSet) Has(i int) bool {
	return i >= 0 && i < sourcecatalog.MaxChunks && s[i/64]&(1<<(i%64)) != 0
}

// Len returns the number of indices in s.
func (s ChunkSet) Len() int {
	n := 0
	for _, w := range s {
		n += bits.OnesCount64(w)
	}
	return n
}

// Indices returns the indices of s in ascending order.
func (s ChunkSet) Indices() []int {
	out := make([]int, 0, s.Len())
	for i := range sourcecatalog.MaxChunks {
		if s.Has(i) {
			out = append(out, i)
		}
	}
	return out
}

// appendJSON appends s as its canonical JSON array.
func (s ChunkSet) appendJSON(b []byte) []byte {
	b = append(b, '[')
	for k, i := range s.Indices() {
		if k > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(i), 10)
	}
	return append(b, ']')
}

// chunkSet reads missing_chunks at v: an array of chunk indices, each
// after the one before it.
func (m *message) chunkSet(v int, field string) (ChunkSet, error) {
	var s ChunkSet
	if m.b[v] != '[' {
		return s, invalid(field, "must be an array, not "+canontext.KindAt(m.b, v).String())
	}
	last := int64(-1)
	for i := v + 1; m.b[i] != ']'; {
		n, err := m.integer(i, field, 0, sourcecatalog.MaxChunks-1)
		if err != nil {
			return ChunkSet{}, err
		}
		if n <= last {
			return ChunkSet{}, sourcecatalog.Errorf(sourcecatalog.ErrIntegrity, "chunk indices must be ascending and unique").AtField(field)
		}
		last = n
		s.Add(int(n))
		i, _ = canontext.End(m.b, i)
		if m.b[i] == ',' {
			i++
		}
	}
	return s, nil
}

// ChunkRef returns the reference of chunk i of the index's snapshot
// (SPEC.md §6.6): the digest listed at i with the manifest's revision,
// snapshot_id and vessel_id. A receiver resolves it, with ChunkRef.Resolve,
// exactly as a reference sent alone (§6.7 step 6).
func (x *ManifestIndex) ChunkRef(i int) *ChunkRef {
	m := &x.manifest
	r := &ChunkRef{vesselID: m.VesselID, snapshotID: m.SnapshotID, revision: m.Revision, index: i, payload: x.payloads[i]}
	r.canon = appendRefHead(nil, i, r.payload)
	r.canon = append(r.canon, newChunkHeader(m.VesselID, m.SnapshotID, m.Revision).tail...)
	return r
}
