package envelope

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
)

// chunkMembers returns the members of a hand-written chunk with the given
// index and records text (a JSON array) and payload hash.
func chunkMembers(index int, records, payload string) members {
	return members{
		{"chunk_index", fmt.Sprint(index)},
		{"payload_sha256", `"` + payload + `"`},
		{"protocol", `"yachtmemory.source-catalog.v2"`},
		{"records", records},
		{"revision", "7"},
		{"snapshot_id", `"7c9e6679-7425-40de-944b-e07fc1f90ae7"`},
		{"vessel_id", `"0f8fad5b-d9cb-469f-a165-70867728950e"`},
	}
}

// recordsText returns the JSON array of recs' canonical bytes.
func recordsText(recs []*catalog.Record) string {
	b := bodyText(recs)
	return b[len(`{"records":`) : len(b)-1]
}

// chunkOf returns the members of a valid chunk holding recs at index.
func chunkOf(index int, recs []*catalog.Record) members {
	return chunkMembers(index, recordsText(recs), sha(bodyText(recs)))
}

func TestDecodeChunkValid(t *testing.T) {
	recs := makeCatalog(t, 2, 1, func(i int) string { return `{"b":[1.0,2E3],"a":"\u00e9"}` })
	base := chunkOf(5, recs)
	h := newChunkHeader(testVessel, testSnapshot, 7)
	want := newChunk(h, 5, recs)
	require.Equal(t, string(want.Canonical()), base.String(), "base fixture must be canonical")

	// The same records with free member order and whitespace: the hash is
	// over the canonical form, so it still matches.
	loose := "[\n" + strings.Join([]string{
		`{ "path" : "navigation.p00000", "meta": {"a":"é","b":[1,2000]}, "unit":"m/s", "kind":"path" }`,
		`{"unit":"m/s","meta":{"b":[1e0,2000.0],"a":"\u00e9"},"kind":"path","path":"navigation.p00001"}`,
		`{"source_ref":"can0.src000","label":"can0","kind":"source"}`,
		"{\"value_type\":\"number\",\t\"source_ref\":\"can0.src000\",\"path\":\"navigation.p00000\",\"kind\":\"observation\"}",
		`{"kind":"observation","path":"navigation.p00001","source_ref":"can0.src000","value_type":"number"}`,
	}, ",\n") + "\n]"
	reversed := []int{6, 5, 4, 3, 2, 1, 0}

	empty := chunkOf(0, nil)
	hundred := makeCatalog(t, 33, 33, nil)[:99]
	hundred = append(hundred, mkObs(t, pathName(0), sourceRef(0)))
	require.Len(t, hundred, 100)

	exact := []*catalog.Record{mkPath(t, pathName(0), metaJSON(""))}
	exact = []*catalog.Record{mkPath(t, pathName(0), metaJSON(strings.Repeat("e", sourcecatalog.MaxChunkBody-len(bodyText(exact)))))}
	require.Len(t, bodyText(exact), sourcecatalog.MaxChunkBody)

	cases := []struct {
		name    string
		raw     string
		index   int
		records []*catalog.Record
	}{
		{"canonical", base.String(), 5, recs},
		{"reversed", base.render("", reversed), 5, recs},
		{"whitespace", base.render("\n  ", reversed), 5, recs},
		{"loose records", base.set("records", loose).render(" ", reversed), 5, recs},
		{"index 0", chunkOf(0, recs).String(), 0, recs},
		{"index 255", chunkOf(255, recs).String(), 255, recs},
		{"empty", empty.String(), 0, nil},
		{"100 records", chunkOf(1, hundred).String(), 1, hundred},
		{"body at the limit", chunkOf(2, exact).String(), 2, exact},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := DecodeChunk([]byte(c.raw))
			require.NoError(t, err)
			assert.Equal(t, c.index, got.Index())
			assert.Equal(t, testVessel, got.VesselID())
			assert.Equal(t, testSnapshot, got.SnapshotID())
			assert.Equal(t, int64(7), got.Revision())
			require.Len(t, got.Records(), len(c.records))
			for i := range c.records {
				assert.Equal(t, string(c.records[i].Canonical()), string(got.Records()[i].Canonical()))
			}
			assert.Equal(t, sha(bodyText(c.records)), got.PayloadSHA256().String())
			assert.Equal(t, len(bodyText(c.records)), got.BodyLen())
			// Re-encodes to the canonical form of the input.
			canon, err := canonical.Transform([]byte(c.raw))
			require.NoError(t, err)
			assert.Equal(t, string(canon), string(got.Canonical()))
			checkChunkJSON(t, got)
		})
	}
}

func TestDecodeChunkInvalid(t *testing.T) {
	none := sourcecatalog.NoIndex
	recs := makeCatalog(t, 2, 1, nil) // p0 p1 s0 o0 o1
	base := chunkOf(5, recs)
	in5 := func(class error, field string) where { return at(class, 5, none, field) }
	inv5 := func(field string) where { return in5(sourcecatalog.ErrInvalidValue, field) }
	malformed := at(sourcecatalog.ErrMalformedJSON, none, none, "")

	type tc struct {
		name string
		raw  string
		want where
	}
	var cases []tc
	add := func(name, raw string, w where) { cases = append(cases, tc{name, raw, w}) }

	// Members: before chunk_index is known, errors have no chunk.
	add("unknown field", base.with("extra", "1").String(), at(sourcecatalog.ErrUnknownField, none, none, "extra"))
	add("unknown field last", base.with("zz", "1").String(), at(sourcecatalog.ErrUnknownField, none, none, "zz"))
	add("manifest field", base.with("record_count", "5").String(), at(sourcecatalog.ErrUnknownField, none, none, "record_count"))
	for _, m := range base {
		add("missing "+m.name, base.without(m.name).String(), at(sourcecatalog.ErrMissingField, none, none, m.name))
		add("duplicate "+m.name, base.with(m.name, m.value).String(), malformed)
	}
	add("not an object", "["+base.String()+"]", at(sourcecatalog.ErrInvalidValue, none, none, ""))
	add("empty", "", malformed)
	add("trailing", base.String()+" 1", malformed)
	add("duplicate in a record", base.set("records", `[{"kind":"source","source_ref":"a","source_ref":"b"}]`).String(), malformed)
	add("lossy number in meta", base.set("records", `[{"kind":"path","path":"a","meta":{"n":9007199254740993}}]`).String(), malformed)

	// chunk_index.
	for _, v := range []string{"256", "1000", "-1", "5.0", "5e0", "true", `"5"`, "null", "[5]"} {
		add("chunk_index "+v, base.set("chunk_index", v).String(), at(sourcecatalog.ErrInvalidValue, none, none, "chunk_index"))
	}

	// Later members carry the chunk index.
	for _, v := range []string{"0", "-1", "9007199254740992", "7.0", "7e0", `"7"`, "true", "null"} {
		add("revision "+v, base.set("revision", v).String(), inv5("revision"))
	}
	for _, f := range []string{"vessel_id", "snapshot_id"} {
		good := strings.Trim(base.value(f), `"`)
		for name, v := range map[string]string{
			"uppercase": `"` + strings.ToUpper(good) + `"`,
			"braces":    `"{` + good + `}"`,
			"urn":       `"urn:uuid:` + good + `"`,
			"nil":       `"00000000-0000-0000-0000-000000000000"`,
			"number":    "1",
		} {
			add(f+" "+name, base.set(f, v).String(), inv5(f))
		}
	}
	add("snapshot_id v1", base.set("snapshot_id", `"6ba7b810-9dad-11d1-80b4-00c04fd430c8"`).String(), inv5("snapshot_id"))
	add("payload_sha256 uppercase", base.set("payload_sha256", `"`+strings.ToUpper(sha(bodyText(recs)))+`"`).String(), inv5("payload_sha256"))
	add("payload_sha256 short", base.set("payload_sha256", `"`+sha(bodyText(recs))[:63]+`"`).String(), inv5("payload_sha256"))
	add("payload_sha256 number", base.set("payload_sha256", "0").String(), inv5("payload_sha256"))
	add("protocol v1", base.set("protocol", `"yachtmemory.source-catalog.v1"`).String(), in5(sourcecatalog.ErrUnsupported, "protocol"))
	add("protocol null", base.set("protocol", "null").String(), inv5("protocol"))
	for _, v := range []string{"{}", `{"records":[]}`, "null", `"[]"`, "1", "true"} {
		add("records "+v, base.set("records", v).String(), inv5("records"))
	}

	// Limits.
	many := makeCatalog(t, 50, 1, nil)
	require.Len(t, many, sourcecatalog.MaxRecordsPerChunk+1)
	add("101 records", chunkOf(5, many).String(), in5(sourcecatalog.ErrLimitExceeded, "records"))
	bigBody := []*catalog.Record{mkPath(t, pathName(0), metaJSON(strings.Repeat("b", sourcecatalog.MaxChunkBody)))}
	add("body over the limit", chunkOf(5, bigBody).String(), in5(sourcecatalog.ErrLimitExceeded, "records"))
	overByOne := []*catalog.Record{mkPath(t, pathName(0), metaJSON(""))}
	overByOne = []*catalog.Record{mkPath(t, pathName(0), metaJSON(strings.Repeat("e", sourcecatalog.MaxChunkBody-len(bodyText(overByOne))+1)))}
	require.Len(t, bodyText(overByOne), sourcecatalog.MaxChunkBody+1)
	add("body over the limit by one", chunkOf(5, overByOne).String(), in5(sourcecatalog.ErrLimitExceeded, "records"))

	// An invalid record is located by chunk, record and field.
	bad := func(rec string) string {
		texts := []string{string(recs[0].Canonical()), string(recs[1].Canonical()), rec, string(recs[3].Canonical())}
		return base.set("records", "["+strings.Join(texts, ",")+"]").String()
	}
	rec := func(class error, field string) where { return at(class, 5, 2, field) }
	add("record unknown field", bad(`{"kind":"source","source_ref":"s","foo":1}`), rec(sourcecatalog.ErrUnknownField, "foo"))
	add("record missing value_type", bad(`{"kind":"observation","path":"a.b","source_ref":"s"}`), rec(sourcecatalog.ErrMissingField, "value_type"))
	add("record missing kind", bad(`{"path":"a.b"}`), rec(sourcecatalog.ErrMissingField, "kind"))
	add("record bad kind", bad(`{"kind":"device","path":"a.b"}`), rec(sourcecatalog.ErrInvalidValue, "kind"))
	add("record empty path segment", bad(`{"kind":"path","path":"a..b"}`), rec(sourcecatalog.ErrInvalidValue, "path"))
	add("record bad value_type", bad(`{"kind":"observation","path":"a.b","source_ref":"s","value_type":"float"}`), rec(sourcecatalog.ErrInvalidValue, "value_type"))
	add("record meta not an object", bad(`{"kind":"path","path":"a.b","meta":[]}`), rec(sourcecatalog.ErrInvalidValue, "meta"))
	add("record not an object", bad(`42`), rec(sourcecatalog.ErrInvalidValue, ""))
	add("record control character", bad(`{"kind":"source","source_ref":"s\u0001"}`), rec(sourcecatalog.ErrInvalidValue, "source_ref"))

	// Hashes.
	add("payload of other records", base.set("payload_sha256", `"`+sha(bodyText(recs[:4]))+`"`).String(), in5(sourcecatalog.ErrHashMismatch, "payload_sha256"))
	add("payload of all zeros", base.set("payload_sha256", `"`+strings.Repeat("0", 64)+`"`).String(), in5(sourcecatalog.ErrHashMismatch, "payload_sha256"))
	add("payload of the document shape", base.set("payload_sha256", `"`+sha(`{"records":`+recordsText(recs)+`,"x":1}`)+`"`).String(), in5(sourcecatalog.ErrHashMismatch, "payload_sha256"))
	spaced := "[ " + strings.Join(strings.Split(strings.Trim(recordsText(recs), "[]"), "},{"), "} , {") + " ]"
	add("payload over non-canonical text", base.set("records", spaced).set("payload_sha256", `"`+sha(`{"records":`+spaced+`}`)+`"`).String(), in5(sourcecatalog.ErrHashMismatch, "payload_sha256"))
	add("records reordered", chunkMembers(5, recordsText([]*catalog.Record{recs[1], recs[0], recs[2], recs[3], recs[4]}), sha(bodyText(recs))).String(), in5(sourcecatalog.ErrHashMismatch, "payload_sha256"))

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := DecodeChunk([]byte(c.raw))
			assert.Nil(t, got, "nothing partial is returned")
			requireOne(t, err, c.want)
		})
	}
}

func TestDecodeChunkSize(t *testing.T) {
	base := chunkOf(3, makeCatalog(t, 2, 1, nil)).String()
	pad := func(n int) []byte { return []byte(base + strings.Repeat("\n", n-len(base))) }
	c, err := DecodeChunk(pad(MaxMessageSize))
	require.NoError(t, err)
	assert.Equal(t, 3, c.Index())
	_, err = DecodeChunk(pad(MaxMessageSize + 1))
	requireOne(t, err, at(sourcecatalog.ErrLimitExceeded, sourcecatalog.NoIndex, sourcecatalog.NoIndex, ""))
}

func TestDecodeChunkRoundTrip(t *testing.T) {
	want := makeCatalog(t, 150, 4, func(i int) string {
		if i%3 == 0 {
			return metaJSON(strings.Repeat(`"\`+"\x01é", i))
		}
		return ""
	})
	s := mustBuild(t, input(want))
	for _, c := range s.Chunks {
		got, err := DecodeChunk(c.Canonical())
		require.NoError(t, err)
		assert.Equal(t, string(c.Canonical()), string(got.Canonical()))
		assert.Equal(t, c.PayloadSHA256(), got.PayloadSHA256())
		assert.Equal(t, c.Index(), got.Index())
		assert.Equal(t, c.BodyLen(), got.BodyLen())
	}
}
