package envelope

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
)

// Properties of the one chunk decoder: it decides as it does on the
// canonical form of its input, errors are classified and bounded, and a
// decoded chunk's bytes decode again to an equal chunk whose records are
// views of them.

// checkChunk checks those properties on in, and reports whether in decodes.
func checkChunk(t testing.TB, in []byte) bool {
	t.Helper()
	c, err := DecodeChunk(in)
	if canon, cerr := canonical.Transform(in); cerr == nil {
		again, aerr := DecodeChunk(canon)
		if !reflect.DeepEqual(c, again) || !reflect.DeepEqual(err, aerr) {
			t.Fatalf("DecodeChunk(%q) = %v, %v; of its canonical form %v, %v", in, c, err, again, aerr)
		}
	}
	if err != nil {
		checkError(t, err)
		return false
	}
	if len(in) > 0 && &c.canon[0] == &in[0] {
		t.Fatal("the chunk keeps the caller's bytes")
	}
	again, err := DecodeChunk(c.Canonical())
	if err != nil || !reflect.DeepEqual(c, again) {
		t.Fatalf("canonical %q decodes to %v, %v", c.Canonical(), again, err)
	}
	var joined []byte
	for i, r := range c.Records() {
		rc := r.Canonical()
		if cap(rc) != len(rc) || !within(rc, c.canon) {
			t.Fatalf("record %q is not a view of the chunk's bytes", rc)
		}
		if i > 0 {
			joined = append(joined, ',')
		}
		joined = append(joined, rc...)
	}
	if string(joined) != string(c.canon[c.recStart:c.recEnd]) {
		t.Fatalf("records %q are not the chunk's records array %q", joined, c.canon[c.recStart:c.recEnd])
	}
	return true
}

// checkError fails t unless err is one classified, bounded
// *sourcecatalog.Error.
func checkError(t testing.TB, err error) {
	t.Helper()
	var e *sourcecatalog.Error
	if !errors.As(err, &e) || sourcecatalog.WireName(e.Class) == "" {
		t.Fatalf("unclassified error %v", err)
	}
	if len(e.Detail) > 128 || len(e.Field) > maxFieldBytes || !utf8.ValidString(e.Detail) {
		t.Fatalf("unbounded error %q at %q", e.Detail, e.Field)
	}
}

func within(part, whole []byte) bool {
	p, w := uintptr(unsafe.Pointer(unsafe.SliceData(part))), uintptr(unsafe.Pointer(unsafe.SliceData(whole)))
	return p >= w && p+uintptr(len(part)) <= w+uintptr(len(whole))
}

// fastMetas are meta objects of every shape the fast path must take.
var fastMetas = []string{
	"",
	`{}`,
	`{"description":"Voltage of battery houseBank","displayName":"house V"}`,
	`{"zones":[{"lower":318.15,"state":"alarm"},{"upper":1e5,"state":"warn"}]}`,
	`{"n":[1,-2,0.5,1e-7,1e+30,9007199254740992,-0,true,false,null,"x"]}`,
	`{"d":"line\nbreak \"quoted\" back\\slash \u0001 é 😀 \u2028"}`,
	`{"a":{"b":{"c":[[[]]]}}}`,
}

func fastCatalog(t testing.TB, n int) []*catalog.Record {
	return makeCatalog(t, n, max(1, n/7), func(i int) string { return fastMetas[i%len(fastMetas)] })
}

func TestDecodeChunkProperties(t *testing.T) {
	for _, n := range []int{0, 1, 3, 60, 400} {
		recs := []*catalog.Record{}
		if n > 0 {
			recs = fastCatalog(t, n)
		}
		for _, rev := range []int64{1, 7, 1234567890123456, sourcecatalog.MaxRevision} {
			in := input(recs)
			in.Revision = rev
			s := mustBuild(t, in)
			for _, c := range s.Chunks {
				require.True(t, checkChunk(t, c.Canonical()), "chunk %d of %d records refused", c.Index(), n)
				for _, m := range mutations(c.Canonical()) {
					checkChunk(t, m)
				}
			}
		}
	}
	// Escaped meta member names and record strings.
	label := "a\tb"
	src, err := catalog.NewSource(catalog.Source{SourceRef: "s\"1", Label: &label})
	require.NoError(t, err)
	p, err := catalog.NewPath(catalog.Path{Path: "a.b", Meta: []byte(`{"\n":1}`)})
	require.NoError(t, err)
	o, err := catalog.NewObservation(catalog.Observation{Path: "a.b", SourceRef: "s\"1", ValueType: catalog.Number})
	require.NoError(t, err)
	s := mustBuild(t, input([]*catalog.Record{p, src, o}))
	require.True(t, checkChunk(t, s.Chunks[0].Canonical()))
}

// mutations returns variants of a canonical chunk, each breaking it in one
// place.
func mutations(c []byte) [][]byte {
	s := string(c)
	var out [][]byte
	add := func(v string) { out = append(out, []byte(v)) }
	for _, r := range [][2]string{
		{`{"chunk_index":`, `{"chunk_index":0`},
		{`{"chunk_index":`, `{"chunk_index":-`},
		{`{"chunk_index":`, `{ "chunk_index":`},
		{`{"chunk_index":`, `{"chunk_index":9`},
		{`{"chunk_index":`, `{"chunk_index":99`},
		{`"payload_sha256":"`, `"payload_sha256":"A`},
		{`"payload_sha256":"`, `"payload_sha256":"0`},
		{`"payload_sha256":"`, `"payload_sha25":"`},
		{`.v2"`, `.v3"`},
		{`"records":[`, `"records":[ `},
		{`"records":[`, `"records":[{"kind":"source","source_ref":"z"},`},
		{`"records":[{`, `"records":[{"kind":"path","path":"a..b"},{`},
		{`"records":[{"kind":"path"`, `"records":[{"kind":"path","path":"a..b"}],"x":[{"kind":"path"`},
		{`],"revision":`, `] ,"revision":`},
		{`],"revision":`, `],"revision":0`},
		{`],"revision":`, `],"revision":-`},
		{`],"revision":`, `],"revision":1`},
		{`],"revision":`, `],"revision":9007199254740991`},
		{`],"revision":`, `],"revision":1.5`},
		{`,"snapshot_id":"`, `,"snapshot_id":"0`},
		{`,"snapshot_id":"`, `,"snapshot_id":"A`},
		{`","vessel_id":"`, `","vessel_id":"0`},
		{`","vessel_id":"`, `","vessel_id":"A`},
		{`"}`, `"} `},
		{`"}`, `","x":1}`},
		{`"unit":"m/s"`, `"unit":"m/S"`},
		{`"unit":"m/s"`, `"unit":"m\/s"`},
		{`"unit":"m/s"`, `"unit":null`},
		{`"unit":"m/s"`, `"unit":""`},
		{`"value_type":"number"`, `"value_type":"numbers"`},
		{`"kind":"source"`, `"kind":"sources"`},
		{`,"label":"can0"`, ``},
		{`,"label":"can0"`, `,"label":null`},
		{`,"path":`, `,"path":"x",   "path":`},
	} {
		if strings.Contains(s, r[0]) {
			add(strings.Replace(s, r[0], r[1], 1))
			add(strings.Replace(s, r[0], r[1], -1))
		}
	}
	add(s[:len(s)-1])
	add(s + s)
	for _, cut := range []int{1, 2, 17, len(s) / 2, len(s) - 40, len(s) - 80, len(s) - 120} {
		if cut > 0 && cut < len(s) {
			add(s[:cut] + s[cut+1:])
			add(s[:cut] + "1" + s[cut:])
		}
	}
	// Another chunk index with the same hash is still valid.
	add(strings.Replace(s, `{"chunk_index":0,`, `{"chunk_index":255,`, 1))
	add(strings.Replace(s, `{"chunk_index":0,`, `{"chunk_index":256,`, 1))
	add(strings.Replace(s, `7c9e6679-7425-40de-944b-e07fc1f90ae7`, uuid.Nil.String(), 1))
	add(strings.Replace(s, `7c9e6679-7425-40de-944b-e07fc1f90ae7`, `7c9e6679-7425-10de-944b-e07fc1f90ae7`, 1))
	add(strings.Replace(s, `0f8fad5b-d9cb-469f-a165-70867728950e`, uuid.Nil.String(), 1))
	add(strings.Replace(s, `0f8fad5b-d9cb-469f-a165-70867728950e`, `0f8fad5b-d9cb-169f-a165-70867728950e`, 1))
	return out
}

func TestDecodeChunkLimits(t *testing.T) {
	// 101 records and an oversize body: canonical, and refused.
	recs := fastCatalog(t, 60)
	var body []byte
	for i, r := range recs[:101] {
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, r.Canonical()...)
	}
	big := mustBuild(t, input(makeCatalog(t, 1, 1, func(int) string { return metaJSON(strings.Repeat("x", 16000)) })))
	for _, c := range [][]byte{
		chunkText(0, body, 7),
		chunkText(3, []byte(`{"kind":"path","meta":{"d":"`+strings.Repeat("x", 16400)+`"},"path":"a"}`), 7),
	} {
		require.False(t, checkChunk(t, c))
	}
	require.True(t, checkChunk(t, big.Chunks[0].Canonical()))
	require.True(t, checkChunk(t, chunkText(3, body[:len(recs[0].Canonical())], 9007199254740991)))
	_, err := DecodeChunk(chunkText(0, body, 7))
	requireOne(t, err, at(sourcecatalog.ErrLimitExceeded, 0, sourcecatalog.NoIndex, "records"))
}

// chunkText writes a canonical chunk around the records array content body,
// with a matching payload hash.
func chunkText(index int, body []byte, revision int64) []byte {
	b := []byte(`{"chunk_index":` + strconv.Itoa(index) + `,"payload_sha256":"`)
	b = append(b, sha(bodyOpen+string(body)+bodyClose)...)
	b = append(b, `","protocol":"`+sourcecatalog.Protocol+`","records":[`...)
	b = append(b, body...)
	b = append(b, `],"revision":`+strconv.FormatInt(revision, 10)+`,"snapshot_id":"`+testSnapshot.String()+`","vessel_id":"`+testVessel.String()+`"}`...)
	return b
}

// FuzzDecodeChunkProperties checks the properties of checkChunk on any
// input, taken both as a whole chunk and as the content of the records
// array of a chunk with a matching payload hash.
func FuzzDecodeChunkProperties(f *testing.F) {
	s := mustBuild(f, input(fastCatalog(f, 12)))
	n := 0
	for _, c := range s.Chunks {
		f.Add(c.Canonical())
		f.Add(c.canon[c.recStart:c.recEnd])
		for _, m := range mutations(c.Canonical()) {
			f.Add(m)
			n++
		}
	}
	if n < 40 {
		f.Fatalf("%d mutation seeds", n)
	}
	f.Add(fuzzSnapshot(f).Chunks[0].Canonical())
	f.Fuzz(func(t *testing.T, in []byte) {
		checkChunk(t, in)
		checkChunk(t, chunkText(len(in)%300, in, int64(len(in))))
	})
}
