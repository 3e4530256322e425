package envelope

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/catalog"
)

// fiveChunks returns a snapshot of 403 records in five chunks.
func fiveChunks(t testing.TB, in Input) *Snapshot {
	t.Helper()
	s := mustBuild(t, in)
	require.Len(t, s.Chunks, 5)
	return s
}

// handSnapshot cuts records, in the given order and without any check, into
// chunks of the given sizes, and returns a manifest that agrees with them
// (counts and document hash over the concatenation).
func handSnapshot(t testing.TB, records []*catalog.Record, sizes ...int) (Manifest, []*Chunk) {
	t.Helper()
	h := newChunkHeader(testVessel, testSnapshot, 7)
	var chunks []*Chunk
	start := 0
	for i, n := range sizes {
		rs := records[start : start+n : start+n]
		chunks = append(chunks, newChunk(h, i, rs))
		start += n
	}
	require.Equal(t, len(records), start, "sizes must cover the records")
	m := Manifest{
		VesselID: testVessel, SnapshotID: testSnapshot, Revision: 7, DiscoveredAt: testTime,
		ChunkCount: len(chunks), RecordCount: len(records), DocumentSHA256: BodyDigest(records),
	}
	return m, chunks
}

func TestVerifyAnyOrder(t *testing.T) {
	want := makeCatalog(t, 200, 3, nil)
	s := fiveChunks(t, input(want))
	var orders [][]*Chunk
	for r := range s.Chunks { // every rotation
		orders = append(orders, append(slices.Clone(s.Chunks[r:]), s.Chunks[:r]...))
	}
	rev := slices.Clone(s.Chunks)
	slices.Reverse(rev)
	orders = append(orders, rev)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		o := slices.Clone(s.Chunks)
		rng.Shuffle(len(o), func(i, j int) { o[i], o[j] = o[j], o[i] })
		orders = append(orders, o)
	}
	for _, o := range orders {
		require.NoError(t, Verify(&s.Manifest, o))

		raw := make([][]byte, len(o))
		for i, c := range o {
			raw[i] = c.Canonical()
		}
		d, err := DecodeSnapshot(s.Manifest.Canonical(), raw)
		require.NoError(t, err)
		assert.Equal(t, s.Manifest, d.Manifest)
		require.Len(t, d.Chunks, len(s.Chunks))
		for i, c := range d.Chunks {
			assert.Equal(t, i, c.Index(), "chunks are returned in index order")
			assert.Equal(t, string(s.Chunks[i].Canonical()), string(c.Canonical()))
		}
		checkSnapshot(t, d, want, DefaultWrapper{})
	}
}

func TestVerifyProblems(t *testing.T) {
	none := sourcecatalog.NoIndex
	integrity := sourcecatalog.ErrIntegrity
	want := makeCatalog(t, 200, 3, nil)
	s := fiveChunks(t, input(want))
	c := s.Chunks
	otherVessel := fiveChunks(t, Input{VesselID: testVessel2, SnapshotID: testSnapshot, Revision: 7, DiscoveredAt: testTime, Records: want})
	otherSnapshot := fiveChunks(t, Input{VesselID: testVessel, SnapshotID: testSnapshot2, Revision: 7, DiscoveredAt: testTime, Records: want})
	otherRevision := fiveChunks(t, Input{VesselID: testVessel, SnapshotID: testSnapshot, Revision: 8, DiscoveredAt: testTime, Records: want})
	h := newChunkHeader(testVessel, testSnapshot, 7)
	beyond := newChunk(h, 5, want[:1])
	withManifest := func(f func(*Manifest)) Manifest { m := s.Manifest; f(&m); return m }

	cases := []struct {
		name   string
		m      Manifest
		chunks []*Chunk
		want   []where
	}{
		{"missing chunk 2", s.Manifest, []*Chunk{c[4], c[0], c[3], c[1]}, []where{at(integrity, 2, none, "chunk_index")}},
		{"missing first", s.Manifest, c[1:], []where{at(integrity, 0, none, "chunk_index")}},
		{"missing last", s.Manifest, c[:4], []where{at(integrity, 4, none, "chunk_index")}},
		{"no chunks", s.Manifest, nil, []where{
			at(integrity, 0, none, "chunk_index"), at(integrity, 1, none, "chunk_index"), at(integrity, 2, none, "chunk_index"),
			at(integrity, 3, none, "chunk_index"), at(integrity, 4, none, "chunk_index"),
		}},
		{"duplicate index", s.Manifest, []*Chunk{c[0], c[1], c[2], c[1], c[3], c[4]}, []where{at(integrity, 1, none, "chunk_index")}},
		{"index beyond chunk_count", s.Manifest, append(slices.Clone(c), beyond), []where{at(integrity, 5, none, "chunk_index")}},
		{"vessel mismatch", s.Manifest, []*Chunk{c[0], otherVessel.Chunks[1], c[2], c[3], c[4]}, []where{
			at(integrity, 1, none, "vessel_id"), at(integrity, 1, none, "chunk_index"), // and so chunk 1 is missing
		}},
		{"snapshot mismatch", s.Manifest, []*Chunk{c[0], c[1], c[2], otherSnapshot.Chunks[3], c[4]}, []where{
			at(integrity, 3, none, "snapshot_id"), at(integrity, 3, none, "chunk_index"),
		}},
		{"revision mismatch", s.Manifest, []*Chunk{otherRevision.Chunks[0], c[1], c[2], c[3], c[4]}, []where{
			at(integrity, 0, none, "revision"), at(integrity, 0, none, "chunk_index"),
		}},
		{"record_count too high", withManifest(func(m *Manifest) { m.RecordCount++ }), c, []where{at(integrity, none, none, "record_count")}},
		{"record_count too low", withManifest(func(m *Manifest) { m.RecordCount-- }), c, []where{at(integrity, none, none, "record_count")}},
		{"document hash", withManifest(func(m *Manifest) { m.DocumentSHA256[31] ^= 1 }), c, []where{at(sourcecatalog.ErrHashMismatch, none, none, "document_sha256")}},
		{"document hash of another cut", withManifest(func(m *Manifest) { m.DocumentSHA256 = BodyDigest(want[:100]) }), c, []where{at(sourcecatalog.ErrHashMismatch, none, none, "document_sha256")}},
		{"chunk_count too high", withManifest(func(m *Manifest) { m.ChunkCount = 6 }), c, []where{at(integrity, 5, none, "chunk_index")}},
		{"chunk_count too low", withManifest(func(m *Manifest) { m.ChunkCount = 4 }), c, []where{at(integrity, 4, none, "chunk_index")}},
		{"invalid manifest", withManifest(func(m *Manifest) { m.ChunkCount = 0 }), c, []where{at(sourcecatalog.ErrInvalidValue, none, none, "chunk_count")}},
		{"nil vessel in manifest", withManifest(func(m *Manifest) { m.VesselID = uuid.Nil }), c, []where{at(sourcecatalog.ErrInvalidValue, none, none, "vessel_id")}},
		{"several at once", s.Manifest, []*Chunk{c[0], c[1], c[1], otherVessel.Chunks[2]}, []where{
			at(integrity, 1, none, "chunk_index"), // duplicate
			at(integrity, 2, none, "vessel_id"),
			at(integrity, 2, none, "chunk_index"), // missing
			at(integrity, 3, none, "chunk_index"), // missing
			at(integrity, 4, none, "chunk_index"), // missing
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			requireProblems(t, Verify(&tc.m, tc.chunks), tc.want...)
		})
	}
}

func TestVerifyContent(t *testing.T) {
	none := sourcecatalog.NoIndex
	integrity := sourcecatalog.ErrIntegrity
	sorted := makeCatalog(t, 150, 1, nil) // 301 records

	t.Run("chunks swapped", func(t *testing.T) {
		// Each chunk is in order, but chunk 0 holds the second hundred.
		recs := slices.Concat(sorted[100:200], sorted[0:100], sorted[200:])
		m, chunks := handSnapshot(t, recs, 100, 100, 100, 1)
		requireProblems(t, Verify(&m, chunks), at(integrity, 1, 0, ""))
		// Received in any order, the report is the same.
		slices.Reverse(chunks)
		requireProblems(t, Verify(&m, chunks), at(integrity, 1, 0, ""))
	})
	t.Run("out of order across a boundary", func(t *testing.T) {
		// Two neighbours swapped where chunk 1 meets chunk 2.
		recs := slices.Clone(sorted)
		recs[199], recs[200] = recs[200], recs[199]
		m, chunks := handSnapshot(t, recs, 100, 100, 100, 1)
		ps := sourcecatalog.Problems(Verify(&m, chunks))
		require.NotEmpty(t, ps)
		assert.Equal(t, at(integrity, 2, 0, "").String(), whereOf(ps[0]).String())
		for _, p := range ps {
			assert.ErrorIs(t, p, integrity)
			assert.Contains(t, []int{1, 2}, p.Chunk)
		}
	})
	t.Run("out of order inside a chunk", func(t *testing.T) {
		recs := slices.Clone(sorted)
		recs[150], recs[151] = recs[151], recs[150] // the source and the first observation, in chunk 1
		m, chunks := handSnapshot(t, recs, 100, 100, 100, 1)
		ps := sourcecatalog.Problems(Verify(&m, chunks))
		require.NotEmpty(t, ps)
		assert.Equal(t, at(integrity, 1, 51, "").String(), whereOf(ps[0]).String())
	})
	t.Run("document hash of the canonical order", func(t *testing.T) {
		recs := slices.Concat(sorted[100:200], sorted[0:100], sorted[200:])
		m, chunks := handSnapshot(t, recs, 100, 100, 100, 1)
		m.DocumentSHA256 = BodyDigest(sorted)
		requireProblems(t, Verify(&m, chunks), at(integrity, 1, 0, ""), at(sourcecatalog.ErrHashMismatch, none, none, "document_sha256"))
	})
	t.Run("unreferenced source", func(t *testing.T) {
		extra := mkSource(t, "can0.src999")
		recs := slices.Insert(slices.Clone(sorted), 151, extra) // after can0.src000
		require.True(t, catalog.IsSorted(recs))
		m, chunks := handSnapshot(t, recs, 100, 100, 100, 2)
		requireProblems(t, Verify(&m, chunks), at(integrity, 1, 51, "source_ref"))
	})
	t.Run("observation of unknown source and path without observation", func(t *testing.T) {
		recs := slices.Clone(sorted)
		recs[250] = mkObs(t, recs[250].PathName(), "can0.zzz") // observation of path 99
		recs = slices.Delete(recs, 260, 261)                   // observation of path 109
		m, chunks := handSnapshot(t, recs, 100, 100, 100)
		requireProblems(t, Verify(&m, chunks),
			at(integrity, 2, 50, "source_ref"),
			at(integrity, 1, 9, "path"), // path 109 has no observation
		)
	})
	t.Run("duplicate across chunks", func(t *testing.T) {
		recs := slices.Insert(slices.Clone(sorted), 100, sorted[99]) // path 99 twice, at the end of chunk 0 and start of chunk 1
		m, chunks := handSnapshot(t, recs, 100, 100, 100, 2)
		requireProblems(t, Verify(&m, chunks), at(integrity, 1, 0, "path"))
	})
	t.Run("empty chunk in a non-empty snapshot", func(t *testing.T) {
		m, chunks := handSnapshot(t, sorted, 100, 0, 100, 100, 1)
		requireProblems(t, Verify(&m, chunks), at(integrity, 1, none, "records"))
		m, chunks = handSnapshot(t, sorted, 0, 100, 100, 100, 1)
		requireProblems(t, Verify(&m, chunks), at(integrity, 0, none, "records"))
		small := makeCatalog(t, 3, 1, nil)
		m, chunks = handSnapshot(t, small, 7, 0)
		requireProblems(t, Verify(&m, chunks), at(integrity, 1, none, "records"))
	})
	t.Run("empty snapshot", func(t *testing.T) {
		m, chunks := handSnapshot(t, nil, 0)
		require.NoError(t, Verify(&m, chunks))
		// An empty snapshot is exactly one chunk with no records.
		m, chunks = handSnapshot(t, nil, 0, 0)
		requireProblems(t, Verify(&m, chunks), at(integrity, 1, none, "records"))
	})
	t.Run("over the record limit", func(t *testing.T) {
		m, chunks := handSnapshot(t, sorted, 101, 100, 100)
		requireProblems(t, Verify(&m, chunks), at(sourcecatalog.ErrLimitExceeded, 0, none, "records"))
	})
	t.Run("over the body limit", func(t *testing.T) {
		big := makeCatalog(t, 3, 1, func(int) string { return metaJSON(strings.Repeat("q", 6000)) })
		m, chunks := handSnapshot(t, big, 3, 4)
		requireProblems(t, Verify(&m, chunks), at(sourcecatalog.ErrLimitExceeded, 0, none, "records"))
	})
	t.Run("many problems", func(t *testing.T) {
		recs := slices.Insert(slices.Clone(sorted), 151, mkSource(t, "can0.src999"))
		m, chunks := handSnapshot(t, recs, 100, 0, 100, 100, 2)
		m.RecordCount = 7
		m.DocumentSHA256 = BodyDigest(sorted)
		requireProblems(t, Verify(&m, chunks),
			at(integrity, 1, none, "records"),
			at(integrity, none, none, "record_count"),
			at(integrity, 2, 51, "source_ref"),
			at(sourcecatalog.ErrHashMismatch, none, none, "document_sha256"),
		)
	})
}

func TestDecodeSnapshotProblems(t *testing.T) {
	none := sourcecatalog.NoIndex
	s := fiveChunks(t, input(makeCatalog(t, 200, 3, nil)))
	raw := func() [][]byte {
		out := make([][]byte, len(s.Chunks))
		for i, c := range s.Chunks {
			out[i] = c.Canonical()
		}
		// Arrival order: 3 4 0 1 2.
		return append(out[3:], out[:3]...)
	}
	man := s.Manifest.Canonical()
	badHash := strings.Replace(string(s.Chunks[1].Canonical()), s.Chunks[1].PayloadSHA256().String(), strings.Repeat("0", 64), 1)

	type detail struct {
		where
		prefix string
	}
	cases := []struct {
		name     string
		manifest []byte
		chunks   func([][]byte) [][]byte
		want     []detail
	}{
		{"garbage at position 2", man, func(r [][]byte) [][]byte { r[2] = []byte("{"); return r },
			[]detail{{at(sourcecatalog.ErrMalformedJSON, none, none, ""), "chunks[2]"}}},
		{"bad hash at position 3", man, func(r [][]byte) [][]byte { r[3] = []byte(badHash); return r },
			[]detail{{at(sourcecatalog.ErrHashMismatch, 1, none, "payload_sha256"), "chunks[3]"}}},
		{"oversized message", man, func(r [][]byte) [][]byte { r[4] = make([]byte, MaxMessageSize+1); return r },
			[]detail{{at(sourcecatalog.ErrLimitExceeded, none, none, ""), "chunks[4]"}}},
		{"manifest and a chunk", []byte(`{"protocol":"x"}`), func(r [][]byte) [][]byte { r[0] = []byte(badHash); return r },
			[]detail{
				{at(sourcecatalog.ErrMissingField, none, none, "chunk_count"), "manifest"},
				{at(sourcecatalog.ErrHashMismatch, 1, none, "payload_sha256"), "chunks[0]"},
			}},
		{"manifest unsupported", []byte(strings.Replace(string(man), sourcecatalog.Scope, "all-sources", 1)), func(r [][]byte) [][]byte { return r },
			[]detail{{at(sourcecatalog.ErrUnsupported, none, none, "scope"), "manifest"}}},
		{"missing chunk", man, func(r [][]byte) [][]byte { return r[1:] },
			[]detail{{at(sourcecatalog.ErrIntegrity, 3, none, "chunk_index"), ""}}},
		{"retried duplicate", man, func(r [][]byte) [][]byte { return append(r, r[0]) },
			[]detail{{at(sourcecatalog.ErrIntegrity, 3, none, "chunk_index"), ""}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeSnapshot(tc.manifest, tc.chunks(raw()))
			assert.Nil(t, got)
			var ws []where
			for _, w := range tc.want {
				ws = append(ws, w.where)
			}
			requireProblems(t, err, ws...)
			ps := sourcecatalog.Problems(err)
			for i, w := range tc.want {
				if w.prefix != "" {
					assert.True(t, strings.HasPrefix(ps[i].Detail, w.prefix), "detail %q does not name %s", ps[i].Detail, w.prefix)
					assert.Contains(t, ps[i].Error(), w.prefix)
				}
			}
		})
	}
}
