package envelope

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
)

// Fixed identities used throughout the tests.
var (
	testVessel    = uuid.MustParse("0f8fad5b-d9cb-469f-a165-70867728950e") // v4, but any non-nil UUID is a vessel
	testVessel2   = uuid.MustParse("16fd2706-8baf-433b-82eb-8c7fada847da")
	testSnapshot  = uuid.MustParse("7c9e6679-7425-40de-944b-e07fc1f90ae7") // v4, RFC 4122 variant
	testSnapshot2 = uuid.MustParse("f47ac10b-58cc-4372-a567-0e02b2c3d479")
	testTime      = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
)

// ---- records --------------------------------------------------------------

func mkPath(t testing.TB, path, meta string) *catalog.Record {
	t.Helper()
	p := catalog.Path{Path: path, Unit: catalog.UnitOf("m/s")}
	if meta != "" {
		p.Meta = []byte(meta)
	}
	r, err := catalog.NewPath(p)
	require.NoError(t, err)
	return r
}

func mkSource(t testing.TB, ref string) *catalog.Record {
	t.Helper()
	label := "can0"
	r, err := catalog.NewSource(catalog.Source{SourceRef: ref, Label: &label})
	require.NoError(t, err)
	return r
}

func mkObs(t testing.TB, path, ref string) *catalog.Record {
	t.Helper()
	r, err := catalog.NewObservation(catalog.Observation{Path: path, SourceRef: ref, ValueType: catalog.Number})
	require.NoError(t, err)
	return r
}

func pathName(i int) string  { return fmt.Sprintf("navigation.p%05d", i) }
func sourceRef(k int) string { return fmt.Sprintf("can0.src%03d", k) } // dots: opaque refs

// metaJSON returns a meta object {"d":s} as JSON text.
func metaJSON(s string) string {
	b, err := json.Marshal(map[string]string{"d": s})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// makeCatalog returns an integrity-valid catalog in canonical order: n paths,
// k sources (k <= n) and n observations, path i observed from source i%k.
// meta(i), when not nil, gives the meta JSON text of path i ("" for none).
// The result holds 2n+k records.
func makeCatalog(t testing.TB, n, k int, meta func(i int) string) []*catalog.Record {
	t.Helper()
	require.LessOrEqual(t, k, n)
	recs := make([]*catalog.Record, 0, 2*n+k)
	for i := 0; i < n; i++ {
		m := ""
		if meta != nil {
			m = meta(i)
		}
		recs = append(recs, mkPath(t, pathName(i), m))
	}
	for j := 0; j < k; j++ {
		recs = append(recs, mkSource(t, sourceRef(j)))
	}
	for i := 0; i < n; i++ {
		recs = append(recs, mkObs(t, pathName(i), sourceRef(i%k)))
	}
	require.True(t, catalog.IsSorted(recs), "fixture must be in canonical order")
	require.NoError(t, catalog.Check(recs), "fixture must be integrity-valid")
	return recs
}

func shuffled(recs []*catalog.Record, seed uint64) []*catalog.Record {
	out := slices.Clone(recs)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func input(recs []*catalog.Record) Input {
	return Input{VesselID: testVessel, SnapshotID: testSnapshot, Revision: 7, DiscoveredAt: testTime, Records: recs}
}

func mustBuild(t testing.TB, in Input, opts ...Option) *Snapshot {
	t.Helper()
	s, err := Build(in, opts...)
	require.NoError(t, err)
	require.NotNil(t, s)
	return s
}

// ---- independent encodings -------------------------------------------------

// bodyText builds the canonical {"records":[...]} of records by plain string
// concatenation, independently of the package's writer.
func bodyText(recs []*catalog.Record) string {
	parts := make([]string, len(recs))
	for i, r := range recs {
		parts[i] = string(r.Canonical())
	}
	return `{"records":[` + strings.Join(parts, ",") + `]}`
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func allRecords(s *Snapshot) []*catalog.Record {
	var out []*catalog.Record
	for _, c := range s.Chunks {
		out = append(out, c.Records()...)
	}
	return out
}

// ---- limits -----------------------------------------------------------------

// wrappedLen is the size of c's outbox request as measured by w. For the
// DefaultWrapper it builds the real bytes and checks WrappedSize against them.
func wrappedLen(t testing.TB, w Wrapper, c *Chunk) int {
	t.Helper()
	key := ChunkKey(c.SnapshotID(), c.Index())
	n := w.WrappedSize(sourcecatalog.ChunkEntityType, key, c.Canonical())
	if dw, ok := w.(DefaultWrapper); ok {
		real := len(dw.Wrap(nil, sourcecatalog.ChunkEntityType, key, c.Canonical()))
		require.Equal(t, real, n, "DefaultWrapper.WrappedSize must equal len(Wrap)")
	}
	return n
}

// closedBy reports which limit the next record would break if it were added
// to chunk c: "records", "body" or "wrapped" (the first that applies, in that
// order), or "" when it would fit, i.e. the chunk is not maximal.
func closedBy(t testing.TB, w Wrapper, c *Chunk, next *catalog.Record) string {
	t.Helper()
	ext := append(slices.Clone(c.Records()), next)
	if len(ext) > sourcecatalog.MaxRecordsPerChunk {
		return "records"
	}
	if len(bodyText(ext)) > sourcecatalog.MaxChunkBody {
		return "body"
	}
	h := newChunkHeader(c.VesselID(), c.SnapshotID(), c.Revision())
	if wrappedLen(t, w, newChunk(h, c.Index(), ext)) > sourcecatalog.MaxRequest {
		return "wrapped"
	}
	return ""
}

// checkSnapshot asserts everything Build promises about s, for records want
// in canonical order cut with wrapper w, and returns for each closed chunk
// (all but the last) the limit that closed it.
func checkSnapshot(t testing.TB, s *Snapshot, want []*catalog.Record, w Wrapper) []string {
	t.Helper()
	m := s.Manifest
	require.Equal(t, len(s.Chunks), m.ChunkCount)
	require.Equal(t, len(want), m.RecordCount)
	require.LessOrEqual(t, m.ChunkCount, sourcecatalog.MaxChunks)
	require.Equal(t, sha(bodyText(want)), m.DocumentSHA256.String(), "document_sha256")

	// Records in canonical order, contiguous across chunks, nothing lost.
	got := allRecords(s)
	require.Len(t, got, len(want))
	for i := range want {
		require.Equal(t, string(want[i].Canonical()), string(got[i].Canonical()), "record %d", i)
	}

	var closed []string
	for i, c := range s.Chunks {
		require.Equal(t, i, c.Index())
		require.Equal(t, m.VesselID, c.VesselID())
		require.Equal(t, m.SnapshotID, c.SnapshotID())
		require.Equal(t, m.Revision, c.Revision())
		if len(want) > 0 {
			require.NotEmpty(t, c.Records(), "chunk %d of a non-empty snapshot is empty", i)
		}
		body := bodyText(c.Records())
		require.Equal(t, len(body), c.BodyLen(), "chunk %d BodyLen", i)
		require.LessOrEqual(t, c.BodyLen(), sourcecatalog.MaxChunkBody, "chunk %d body", i)
		require.LessOrEqual(t, len(c.Records()), sourcecatalog.MaxRecordsPerChunk, "chunk %d records", i)
		require.LessOrEqual(t, wrappedLen(t, w, c), sourcecatalog.MaxRequest, "chunk %d wrapped", i)
		require.Equal(t, sha(body), c.PayloadSHA256().String(), "chunk %d payload_sha256", i)

		// The canonical bytes are canonical and say what the accessors say.
		canon, err := canonical.Transform(c.Canonical())
		require.NoError(t, err)
		require.Equal(t, string(c.Canonical()), string(canon), "chunk %d is not a fixed point of Transform", i)
		checkChunkJSON(t, c)

		if i+1 < len(s.Chunks) {
			by := closedBy(t, w, c, s.Chunks[i+1].Records()[0])
			require.NotEmpty(t, by, "chunk %d is not maximal: the next record fits", i)
			closed = append(closed, by)
		}
	}
	return closed
}

// checkChunkJSON decodes c's canonical bytes with encoding/json and compares
// every member with the accessors.
func checkChunkJSON(t testing.TB, c *Chunk) {
	t.Helper()
	var w struct {
		ChunkIndex    *int              `json:"chunk_index"`
		PayloadSHA256 string            `json:"payload_sha256"`
		Protocol      string            `json:"protocol"`
		Records       []json.RawMessage `json:"records"`
		Revision      *int64            `json:"revision"`
		SnapshotID    string            `json:"snapshot_id"`
		VesselID      string            `json:"vessel_id"`
	}
	dec := json.NewDecoder(strings.NewReader(string(c.Canonical())))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&w))
	require.NotNil(t, w.ChunkIndex)
	require.Equal(t, c.Index(), *w.ChunkIndex)
	require.Equal(t, c.PayloadSHA256().String(), w.PayloadSHA256)
	require.Equal(t, sourcecatalog.Protocol, w.Protocol)
	require.NotNil(t, w.Revision)
	require.Equal(t, c.Revision(), *w.Revision)
	require.Equal(t, c.SnapshotID().String(), w.SnapshotID)
	require.Equal(t, c.VesselID().String(), w.VesselID)
	require.Len(t, w.Records, len(c.Records()))
	for i, raw := range w.Records {
		require.Equal(t, string(c.Records()[i].Canonical()), string(raw))
	}
}

// ---- errors -------------------------------------------------------------------

// where is an expected problem: class and location.
type where struct {
	class  error
	chunk  int
	record int
	field  string
}

func at(class error, chunk, record int, field string) where {
	return where{class: class, chunk: chunk, record: record, field: field}
}

func (w where) String() string {
	return fmt.Sprintf("%v@chunk=%d,record=%d,field=%q", w.class, w.chunk, w.record, w.field)
}

func whereOf(p *sourcecatalog.Error) where {
	return where{class: p.Class, chunk: p.Chunk, record: p.Record, field: p.Field}
}

// requireOne asserts that err is exactly one located problem w.
func requireOne(t testing.TB, err error, w where) *sourcecatalog.Error {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, w.class)
	var e *sourcecatalog.Error
	require.True(t, errors.As(err, &e), "not a *sourcecatalog.Error: %v", err)
	ps := sourcecatalog.Problems(err)
	require.Len(t, ps, 1, "problems: %v", ps)
	require.Equal(t, w.String(), whereOf(ps[0]).String(), "error: %v", err)
	checkBounded(t, err)
	return ps[0]
}

// requireProblems asserts that err holds exactly the problems ws, in any
// order.
func requireProblems(t testing.TB, err error, ws ...where) {
	t.Helper()
	require.Error(t, err)
	var got, want []string
	for _, p := range sourcecatalog.Problems(err) {
		got = append(got, whereOf(p).String())
	}
	for _, w := range ws {
		want = append(want, w.String())
		require.ErrorIs(t, err, w.class)
	}
	require.ElementsMatch(t, want, got, "error: %v", err)
	checkBounded(t, err)
}

// checkBounded asserts that an error text stays short: errors never echo
// unbounded input.
func checkBounded(t testing.TB, err error) {
	t.Helper()
	for _, p := range sourcecatalog.Problems(err) {
		require.Less(t, len(p.Error()), 600, "error text too long: %.200q", p.Error())
	}
}

// newChunk assembles a chunk of records: its canonical bytes and its
// payload hash, computed over the records as they sit in those bytes. It
// is the tests' own assembly, independent of Build's assembleChunk, which
// a test holds equal to it.
// bodyLen returns the length of the canonical body of records.
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
