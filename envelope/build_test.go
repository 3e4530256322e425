package envelope

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
)

func TestBuildEmptySnapshot(t *testing.T) {
	for _, recs := range [][]*catalog.Record{nil, {}} {
		s := mustBuild(t, input(recs))
		require.Len(t, s.Chunks, 1)
		c := s.Chunks[0]
		assert.Empty(t, c.Records())
		assert.Equal(t, 0, c.Index())
		assert.Equal(t, 1, s.Manifest.ChunkCount)
		assert.Equal(t, 0, s.Manifest.RecordCount)

		empty := sha(`{"records":[]}`)
		assert.Equal(t, empty, s.Manifest.DocumentSHA256.String())
		assert.Equal(t, empty, c.PayloadSHA256().String())
		assert.Equal(t, len(`{"records":[]}`), c.BodyLen())

		// The exact wire bytes, spelled out independently.
		assert.Equal(t, `{"chunk_index":0,"payload_sha256":"`+empty+`","protocol":"yachtmemory.source-catalog.v2",`+
			`"records":[],"revision":7,"snapshot_id":"7c9e6679-7425-40de-944b-e07fc1f90ae7",`+
			`"vessel_id":"0f8fad5b-d9cb-469f-a165-70867728950e"}`, string(c.Canonical()))
		assert.Equal(t, `{"chunk_count":1,"discovered_at_utc":"2026-05-01T12:00:00Z","document_sha256":"`+empty+
			`","inventory_coverage":"selected-only","protocol":"yachtmemory.source-catalog.v2","record_count":0,`+
			`"revision":7,"scope":"current-selected-sources","snapshot_id":"7c9e6679-7425-40de-944b-e07fc1f90ae7",`+
			`"transport_complete":true,"vessel_id":"0f8fad5b-d9cb-469f-a165-70867728950e"}`, string(s.Manifest.Canonical()))
		checkSnapshot(t, s, nil, DefaultWrapper{})
		require.NoError(t, Verify(&s.Manifest, s.Chunks))
	}
}

func TestBuildSmallCatalog(t *testing.T) {
	want := makeCatalog(t, 5, 2, func(i int) string {
		return fmt.Sprintf(`{"description":"path %d","displayScale":{"upper":1.5E1,"lower":0.0}}`, i)
	})
	for seed := uint64(0); seed < 20; seed++ {
		recs := shuffled(want, seed)
		orig := slices.Clone(recs)
		in := input(recs)
		in.DiscoveredAt = time.Date(2026, 5, 1, 14, 30, 0, 500_000_000, time.FixedZone("CEST", 2*3600))
		s := mustBuild(t, in)

		// The caller's slice is untouched.
		for i := range orig {
			require.Same(t, orig[i], recs[i], "input slice modified at %d", i)
		}

		m := s.Manifest
		assert.Equal(t, testVessel, m.VesselID)
		assert.Equal(t, testSnapshot, m.SnapshotID)
		assert.Equal(t, int64(7), m.Revision)
		assert.True(t, m.DiscoveredAt.Equal(in.DiscoveredAt))
		assert.Equal(t, time.UTC, m.DiscoveredAt.Location())
		assert.Equal(t, 1, m.ChunkCount)
		assert.Equal(t, len(want), m.RecordCount)
		checkSnapshot(t, s, want, DefaultWrapper{})
		checkManifestJSON(t, &m)

		// Decoding the messages gives back the same snapshot.
		raw := make([][]byte, len(s.Chunks))
		for i, c := range s.Chunks {
			raw[i] = c.Canonical()
		}
		d, err := DecodeSnapshot(m.Canonical(), raw)
		require.NoError(t, err)
		assert.Equal(t, m, d.Manifest)
		require.Len(t, d.Chunks, len(s.Chunks))
		for i := range s.Chunks {
			assert.Equal(t, string(s.Chunks[i].Canonical()), string(d.Chunks[i].Canonical()))
		}
	}
}

// checkManifestJSON decodes m's canonical bytes with encoding/json and
// compares every member, and checks they are a fixed point of Transform.
func checkManifestJSON(t *testing.T, m *Manifest) {
	t.Helper()
	b := m.Canonical()
	canon, err := canonical.Transform(b)
	require.NoError(t, err)
	require.Equal(t, string(b), string(canon))
	var w map[string]any
	require.NoError(t, json.Unmarshal(b, &w))
	require.Len(t, w, 11)
	assert.Equal(t, float64(m.ChunkCount), w["chunk_count"])
	assert.Equal(t, FormatTime(m.DiscoveredAt), w["discovered_at_utc"])
	assert.True(t, strings.HasSuffix(w["discovered_at_utc"].(string), "Z"))
	assert.Equal(t, m.DocumentSHA256.String(), w["document_sha256"])
	assert.Equal(t, sourcecatalog.Coverage, w["inventory_coverage"])
	assert.Equal(t, sourcecatalog.Protocol, w["protocol"])
	assert.Equal(t, float64(m.RecordCount), w["record_count"])
	assert.Equal(t, float64(m.Revision), w["revision"])
	assert.Equal(t, sourcecatalog.Scope, w["scope"])
	assert.Equal(t, m.SnapshotID.String(), w["snapshot_id"])
	assert.Equal(t, true, w["transport_complete"])
	assert.Equal(t, m.VesselID.String(), w["vessel_id"])
	back, err := DecodeManifest(b)
	require.NoError(t, err)
	assert.Equal(t, *m, back)
}

func TestBuildCutByRecordLimit(t *testing.T) {
	// 150 paths + 1 source + 150 observations = 301 small records.
	want := makeCatalog(t, 150, 1, nil)
	require.Len(t, want, 301)
	s := mustBuild(t, input(shuffled(want, 1)))
	closed := checkSnapshot(t, s, want, DefaultWrapper{})
	var sizes []int
	for _, c := range s.Chunks {
		sizes = append(sizes, len(c.Records()))
	}
	assert.Equal(t, []int{100, 100, 100, 1}, sizes)
	assert.Equal(t, []string{"records", "records", "records"}, closed)
	require.NoError(t, Verify(&s.Manifest, s.Chunks))
}

func TestBuildCutByBodyLimit(t *testing.T) {
	// Paths with ~1 KB of plain meta: about 15 to a chunk by body size.
	want := makeCatalog(t, 60, 3, func(i int) string { return metaJSON(strings.Repeat("x", 1000+i)) })
	s := mustBuild(t, input(shuffled(want, 2)))
	closed := checkSnapshot(t, s, want, DefaultWrapper{})
	require.Greater(t, len(s.Chunks), 4)
	for i, by := range closed {
		if len(s.Chunks[i].Records()) < sourcecatalog.MaxRecordsPerChunk && s.Chunks[i].Records()[0].Kind() == catalog.KindPath {
			assert.Equal(t, "body", by, "chunk %d", i)
		}
	}
	assert.Contains(t, closed, "body")
	require.NoError(t, Verify(&s.Manifest, s.Chunks))
}

// escapeHeavyMeta returns a meta object whose canonical record body is close
// to target bytes and made almost only of escapes (each `"` and `\` is two
// canonical bytes and four wrapped ones).
func escapeHeavyRecord(t testing.TB, path string, target int) *catalog.Record {
	t.Helper()
	base := len(mkPath(t, path, metaJSON("")).Canonical())
	n := (target - base) / 2
	require.Positive(t, n)
	s := strings.Repeat(`"\`, n/2+1)[:n]
	return mkPath(t, path, metaJSON(s))
}

func TestBuildCutByDefaultWrapper(t *testing.T) {
	// Records of ~5,440 canonical bytes made almost only of escapes: three
	// fill ~16,336 body bytes, so the body limit would allow three per
	// chunk, but the DefaultWrapper escapes them once more (~2x) and the
	// 32,768-byte request limit closes each chunk after two.
	const n = 12
	recs := make([]*catalog.Record, 0, 2*n+1)
	for i := 0; i < n; i++ {
		recs = append(recs, escapeHeavyRecord(t, pathName(i), 5440))
	}
	recs = append(recs, mkSource(t, sourceRef(0)))
	for i := 0; i < n; i++ {
		recs = append(recs, mkObs(t, pathName(i), sourceRef(0)))
	}
	require.NoError(t, catalog.Check(recs))

	s := mustBuild(t, input(shuffled(recs, 3)))
	closed := checkSnapshot(t, s, recs, DefaultWrapper{})
	wrapped := 0
	for i, by := range closed {
		c := s.Chunks[i]
		if by != "wrapped" {
			continue
		}
		wrapped++
		// The wrapper, not the body or the record count, closed it.
		next := s.Chunks[i+1].Records()[0]
		assert.Less(t, c.BodyLen(), sourcecatalog.MaxChunkBody)
		assert.LessOrEqual(t, c.BodyLen()+1+len(next.Canonical()), sourcecatalog.MaxChunkBody)
		assert.Less(t, len(c.Records()), sourcecatalog.MaxRecordsPerChunk)
		assert.LessOrEqual(t, wrappedLen(t, DefaultWrapper{}, c), sourcecatalog.MaxRequest)
	}
	require.GreaterOrEqual(t, wrapped, n/2-1, "the fixture no longer makes the wrapper the binding limit: %v", closed)
	for i := 0; i < n/2; i++ {
		rs := s.Chunks[i].Records()
		assert.Same(t, recs[2*i], rs[0], "chunk %d", i)
		assert.Same(t, recs[2*i+1], rs[1], "chunk %d", i)
		if len(rs) > 2 {
			assert.NotEqual(t, catalog.KindPath, rs[2].Kind(), "chunk %d holds three big records", i)
		}
	}
	require.NoError(t, Verify(&s.Manifest, s.Chunks))
}

// overheadWrapper frames every payload (or, with chunksOnly, every chunk's)
// with a fixed number of bytes.
type overheadWrapper struct {
	overhead   int
	chunksOnly bool
}

func (w overheadWrapper) WrappedSize(typ, _ string, payload []byte) int {
	if w.chunksOnly && typ != sourcecatalog.ChunkEntityType {
		return len(payload)
	}
	return w.overhead + len(payload)
}

// recordingWrapper records what it was asked to measure.
type recordingWrapper struct {
	mu    sync.Mutex
	calls map[string]string // entity key -> entity type
}

func (w *recordingWrapper) WrappedSize(typ, key string, payload []byte) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.calls == nil {
		w.calls = map[string]string{}
	}
	w.calls[key] = typ
	return DefaultWrapper{}.WrappedSize(typ, key, payload)
}

// entityWrapper returns size for one entity type and 0 for the others.
type entityWrapper struct {
	typ  string
	size int
}

func (w entityWrapper) WrappedSize(typ, _ string, _ []byte) int {
	if typ == w.typ {
		return w.size
	}
	return 0
}

func TestBuildCustomWrapper(t *testing.T) {
	want := makeCatalog(t, 150, 1, nil)
	def := mustBuild(t, input(want))
	require.Len(t, def.Chunks, 4)

	// A transport with ~29.7 KB of framing leaves 3 KB per chunk.
	w := overheadWrapper{overhead: sourcecatalog.MaxRequest - 3000}
	s := mustBuild(t, input(shuffled(want, 4)), WithWrapper(w))
	closed := checkSnapshot(t, s, want, w)
	assert.Greater(t, len(s.Chunks), len(def.Chunks))
	for i, by := range closed {
		assert.Equal(t, "wrapped", by, "chunk %d", i)
	}
	for _, c := range s.Chunks {
		assert.LessOrEqual(t, len(c.Canonical()), 3000)
	}
	// The document does not depend on the cut.
	assert.Equal(t, def.Manifest.DocumentSHA256, s.Manifest.DocumentSHA256)
	require.NoError(t, Verify(&s.Manifest, s.Chunks))

	// The wrapper is asked about every chunk under its key and type, and
	// about the manifest.
	rw := &recordingWrapper{}
	s = mustBuild(t, input(want), WithWrapper(rw))
	assert.Equal(t, sourcecatalog.ManifestEntityType, rw.calls[ManifestKey(testSnapshot)])
	for i := range s.Chunks {
		assert.Equal(t, sourcecatalog.ChunkEntityType, rw.calls[ChunkKey(testSnapshot, i)], "chunk %d", i)
	}

	// The last option wins.
	s = mustBuild(t, input(want), WithWrapper(w), WithWrapper(DefaultWrapper{}))
	assert.Len(t, s.Chunks, 4)
}

func TestBuildManifestTooLargeWrapped(t *testing.T) {
	w := entityWrapper{typ: sourcecatalog.ManifestEntityType, size: sourcecatalog.MaxRequest + 1}
	s, err := Build(input(makeCatalog(t, 2, 1, nil)), WithWrapper(w))
	assert.Nil(t, s)
	requireOne(t, err, at(sourcecatalog.ErrLimitExceeded, sourcecatalog.NoIndex, sourcecatalog.NoIndex, ""))

	w.size = sourcecatalog.MaxRequest
	mustBuild(t, input(makeCatalog(t, 2, 1, nil)), WithWrapper(w))
}

func TestBuildEmptyChunkDoesNotFitWrapper(t *testing.T) {
	// Not even an empty chunk fits: a limit error, not a record error (there
	// is no record to blame), and no panic.
	w := entityWrapper{typ: sourcecatalog.ChunkEntityType, size: sourcecatalog.MaxRequest + 1}
	s, err := Build(input(nil), WithWrapper(w))
	assert.Nil(t, s)
	require.Error(t, err)
	for _, p := range sourcecatalog.Problems(err) {
		assert.Equal(t, sourcecatalog.NoIndex, p.Record, "%v", p)
	}

	// With records, the first record in canonical order is the one that
	// cannot fit, located in the input.
	want := makeCatalog(t, 2, 1, nil) // p0 p1 s0 o0 o1
	in := []*catalog.Record{want[3], want[4], want[2], want[1], want[0]}
	s, err = Build(input(in), WithWrapper(w))
	assert.Nil(t, s)
	requireOne(t, err, at(sourcecatalog.ErrRecordTooLarge, sourcecatalog.NoIndex, 4, ""))
}

func TestBuildRecordTooLarge(t *testing.T) {
	type tc struct {
		name string
		big  func(t *testing.T, path string) *catalog.Record
	}
	cases := []tc{
		{"body", func(t *testing.T, path string) *catalog.Record {
			// Plain text: the body is over the limit, the wrapped request
			// is not the reason.
			r := mkPath(t, path, metaJSON(strings.Repeat("y", sourcecatalog.MaxChunkBody)))
			require.Greater(t, len(bodyText([]*catalog.Record{r})), sourcecatalog.MaxChunkBody)
			return r
		}},
		{"body-by-one", func(t *testing.T, path string) *catalog.Record {
			base := len(bodyText([]*catalog.Record{mkPath(t, path, metaJSON(""))}))
			r := mkPath(t, path, metaJSON(strings.Repeat("y", sourcecatalog.MaxChunkBody-base+1)))
			require.Equal(t, sourcecatalog.MaxChunkBody+1, len(bodyText([]*catalog.Record{r})))
			return r
		}},
		{"wrapped-only", func(t *testing.T, path string) *catalog.Record {
			// The body fits alone, its escaped form does not.
			r := escapeHeavyRecord(t, path, sourcecatalog.MaxChunkBody-len(`{"records":[]}`))
			body := []*catalog.Record{r}
			require.LessOrEqual(t, len(bodyText(body)), sourcecatalog.MaxChunkBody)
			c := newChunk(newChunkHeader(testVessel, testSnapshot, 7), 0, body)
			require.Greater(t, wrappedLen(t, DefaultWrapper{}, c), sourcecatalog.MaxRequest)
			return r
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := makeCatalog(t, 8, 2, nil)
			big := c.big(t, pathName(3))
			// Put the big record at input position 11 of a shuffled set.
			var in []*catalog.Record
			for _, r := range shuffled(want, 5) {
				if r.Kind() == catalog.KindPath && r.PathName() == pathName(3) {
					continue
				}
				in = append(in, r)
			}
			in = slices.Insert(in, 11, big)
			s, err := Build(input(in))
			assert.Nil(t, s)
			requireOne(t, err, at(sourcecatalog.ErrRecordTooLarge, sourcecatalog.NoIndex, 11, ""))
		})
	}

	// A record exactly at the body limit fits alone.
	t.Run("body-exact", func(t *testing.T) {
		want := makeCatalog(t, 2, 1, nil)
		base := len(bodyText([]*catalog.Record{mkPath(t, pathName(0), metaJSON(""))}))
		want[0] = mkPath(t, pathName(0), metaJSON(strings.Repeat("y", sourcecatalog.MaxChunkBody-base)))
		s := mustBuild(t, input(want))
		assert.Equal(t, sourcecatalog.MaxChunkBody, s.Chunks[0].BodyLen())
		assert.Len(t, s.Chunks[0].Records(), 1)
		checkSnapshot(t, s, want, DefaultWrapper{})
	})
}

func TestBuildLimits(t *testing.T) {
	t.Run("25600 records in exactly 256 chunks", func(t *testing.T) {
		want := makeCatalog(t, 12799, 2, nil)
		require.Len(t, want, sourcecatalog.MaxRecords)
		s := mustBuild(t, input(shuffled(want, 6)))
		assert.Len(t, s.Chunks, sourcecatalog.MaxChunks)
		closed := checkSnapshot(t, s, want, DefaultWrapper{})
		for _, by := range closed {
			assert.Equal(t, "records", by)
		}
		require.NoError(t, Verify(&s.Manifest, s.Chunks))
	})
	t.Run("25601 records", func(t *testing.T) {
		want := makeCatalog(t, 12799, 3, nil)
		require.Len(t, want, sourcecatalog.MaxRecords+1)
		s, err := Build(input(want))
		assert.Nil(t, s)
		requireOne(t, err, at(sourcecatalog.ErrLimitExceeded, sourcecatalog.NoIndex, sourcecatalog.NoIndex, "records"))
	})
	t.Run("257 chunks", func(t *testing.T) {
		// Paths of ~9 KB: one to a chunk.
		meta := metaJSON(strings.Repeat("z", 9000))
		want := makeCatalog(t, 257, 1, func(int) string { return meta })
		s, err := Build(input(want))
		assert.Nil(t, s)
		requireOne(t, err, at(sourcecatalog.ErrLimitExceeded, sourcecatalog.NoIndex, sourcecatalog.NoIndex, ""))
	})
	t.Run("257 chunks by wrapper", func(t *testing.T) {
		// A transport that only takes one record per request.
		h := newChunkHeader(testVessel, testSnapshot, 7)
		size := func(idx int, recs ...*catalog.Record) int {
			return len(newChunk(h, idx, recs).Canonical())
		}
		for _, n := range []int{127, 128} { // 2n+1 records, one chunk each
			want := makeCatalog(t, n, 1, nil)
			capacity, pair := 0, sourcecatalog.MaxRequest
			for i, r := range want {
				capacity = max(capacity, size(255, r))
				if i > 0 {
					pair = min(pair, size(0, want[i-1], r))
				}
			}
			require.Less(t, capacity, pair)
			w := overheadWrapper{overhead: sourcecatalog.MaxRequest - capacity, chunksOnly: true}
			s, err := Build(input(want), WithWrapper(w))
			if 2*n+1 <= sourcecatalog.MaxChunks {
				require.NoError(t, err)
				assert.Len(t, s.Chunks, 2*n+1)
				checkSnapshot(t, s, want, w)
				continue
			}
			assert.Nil(t, s)
			requireOne(t, err, at(sourcecatalog.ErrLimitExceeded, sourcecatalog.NoIndex, sourcecatalog.NoIndex, ""))
		}
	})
}

func TestBuildRefuses(t *testing.T) {
	recs := makeCatalog(t, 3, 1, nil)
	none := sourcecatalog.NoIndex
	cases := []struct {
		name   string
		mutate func(*Input)
		want   where
	}{
		{"truncated", func(in *Input) { in.Truncated = true }, at(sourcecatalog.ErrIncompleteScan, none, none, "")},
		{"pagination uncertain", func(in *Input) { in.PaginationUncertain = true }, at(sourcecatalog.ErrIncompleteScan, none, none, "")},
		{"both", func(in *Input) { in.Truncated, in.PaginationUncertain = true, true }, at(sourcecatalog.ErrIncompleteScan, none, none, "")},
		{"truncated empty", func(in *Input) { in.Truncated, in.Records = true, nil }, at(sourcecatalog.ErrIncompleteScan, none, none, "")},
		{"nil vessel", func(in *Input) { in.VesselID = uuid.Nil }, at(sourcecatalog.ErrInvalidValue, none, none, "vessel_id")},
		{"nil snapshot", func(in *Input) { in.SnapshotID = uuid.Nil }, at(sourcecatalog.ErrInvalidValue, none, none, "snapshot_id")},
		{"v1 snapshot", func(in *Input) { in.SnapshotID = uuid.MustParse("6ba7b810-9dad-11d1-80b4-00c04fd430c8") }, at(sourcecatalog.ErrInvalidValue, none, none, "snapshot_id")},
		{"v7 snapshot", func(in *Input) { in.SnapshotID = uuid.MustParse("01890a5d-ac96-774b-bcce-b302099a8057") }, at(sourcecatalog.ErrInvalidValue, none, none, "snapshot_id")},
		{"v4 wrong variant", func(in *Input) { in.SnapshotID = uuid.MustParse("7c9e6679-7425-40de-c44b-e07fc1f90ae7") }, at(sourcecatalog.ErrInvalidValue, none, none, "snapshot_id")},
		{"revision 0", func(in *Input) { in.Revision = 0 }, at(sourcecatalog.ErrInvalidValue, none, none, "revision")},
		{"revision -1", func(in *Input) { in.Revision = -1 }, at(sourcecatalog.ErrInvalidValue, none, none, "revision")},
		{"revision 2^53", func(in *Input) { in.Revision = 1 << 53 }, at(sourcecatalog.ErrInvalidValue, none, none, "revision")},
		{"zero time", func(in *Input) { in.DiscoveredAt = time.Time{} }, at(sourcecatalog.ErrInvalidValue, none, none, "discovered_at_utc")},
		{"year 10000", func(in *Input) { in.DiscoveredAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }, at(sourcecatalog.ErrInvalidValue, none, none, "discovered_at_utc")},
		{"year -1", func(in *Input) { in.DiscoveredAt = time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC) }, at(sourcecatalog.ErrInvalidValue, none, none, "discovered_at_utc")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := input(slices.Clone(recs))
			c.mutate(&in)
			s, err := Build(in)
			assert.Nil(t, s)
			requireOne(t, err, c.want)
		})
	}

	t.Run("accepted extremes", func(t *testing.T) {
		in := input(recs)
		in.Revision = sourcecatalog.MaxRevision
		in.VesselID = uuid.MustParse("00000000-0000-0000-0000-000000000001") // any non-nil UUID
		in.DiscoveredAt = time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC)
		s := mustBuild(t, in)
		assert.Equal(t, int64(sourcecatalog.MaxRevision), s.Manifest.Revision)
		checkManifestJSON(t, &s.Manifest)
	})
}

func TestBuildIntegrity(t *testing.T) {
	p0, p1 := mkPath(t, pathName(0), ""), mkPath(t, pathName(1), "")
	s0, s1 := mkSource(t, sourceRef(0)), mkSource(t, sourceRef(1))
	o0, o1 := mkObs(t, pathName(0), sourceRef(0)), mkObs(t, pathName(1), sourceRef(0))
	o1s1 := mkObs(t, pathName(1), sourceRef(1))
	oX := mkObs(t, "navigation.unknown", sourceRef(0))
	oY := mkObs(t, pathName(1), "can0.unknown")
	none := sourcecatalog.NoIndex
	integrity := sourcecatalog.ErrIntegrity
	cases := []struct {
		name string
		in   []*catalog.Record
		want []where
	}{
		{"path without observation", []*catalog.Record{o0, s0, p1, p0}, []where{at(integrity, none, 2, "path")}},
		{"observation without path", []*catalog.Record{o0, oX, s0, p0}, []where{at(integrity, none, 1, "path")}},
		{"observation of unknown source", []*catalog.Record{oY, p1, p0, s0, o0}, []where{at(integrity, none, 0, "source_ref")}},
		{"unreferenced source", []*catalog.Record{o1, p0, s1, s0, p1, o0}, []where{at(integrity, none, 2, "source_ref")}},
		{"two observations of a path", []*catalog.Record{o1s1, p0, s1, s0, p1, o0, o1}, []where{at(integrity, none, 0, "path")}},
		{"several", []*catalog.Record{s1, oX, p0, s0, p1, o0}, []where{
			at(integrity, none, 4, "path"),       // p1 has no observation
			at(integrity, none, 1, "path"),       // oX has no path
			at(integrity, none, 0, "source_ref"), // s1 unreferenced
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Build(input(c.in))
			assert.Nil(t, s)
			requireProblems(t, err, c.want...)
		})
	}

	// Duplicates: sorting is not stable, so either input position may be
	// blamed, but it is one of the two.
	t.Run("duplicate path", func(t *testing.T) {
		dup := mkPath(t, pathName(0), `{"other":1}`)
		s, err := Build(input([]*catalog.Record{p0, o0, s0, dup}))
		assert.Nil(t, s)
		require.ErrorIs(t, err, integrity)
		ps := sourcecatalog.Problems(err)
		require.Len(t, ps, 1)
		assert.Contains(t, []int{0, 3}, ps[0].Record)
		assert.Equal(t, "path", ps[0].Field)
	})
	t.Run("duplicate source", func(t *testing.T) {
		s, err := Build(input([]*catalog.Record{s0, p0, o0, mkSource(t, sourceRef(0))}))
		assert.Nil(t, s)
		require.ErrorIs(t, err, integrity)
		ps := sourcecatalog.Problems(err)
		require.NotEmpty(t, ps)
		for _, p := range ps {
			assert.Contains(t, []int{0, 3}, p.Record)
			assert.Equal(t, "source_ref", p.Field)
		}
	})
}

func TestBuildConcurrent(t *testing.T) {
	// Records and chunks are shared, immutable values.
	want := makeCatalog(t, 150, 3, nil)
	var wg sync.WaitGroup
	results := make([]*Snapshot, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Build(input(shuffled(want, uint64(i))))
			if err == nil {
				err = Verify(&s.Manifest, s.Chunks)
			}
			assert.NoError(t, err)
			results[i] = s
		}()
	}
	wg.Wait()
	for _, s := range results[1:] {
		require.NotNil(t, s)
		assert.Equal(t, results[0].Manifest, s.Manifest)
	}
}
