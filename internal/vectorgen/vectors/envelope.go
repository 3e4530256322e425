package vectors

import (
	"fmt"
	"strconv"
	"strings"
)

// A base is a built snapshot taken apart into editable JSON objects.
type base struct {
	manifest object
	chunks   []object
	records  [][]string // canonical records of each chunk
}

func newBase(records []string) (*base, error) {
	s, err := build(records)
	if err != nil {
		return nil, err
	}
	b := &base{}
	if b.manifest, err = parseObject(s.Manifest.Canonical()); err != nil {
		return nil, err
	}
	for _, c := range s.Chunks {
		o, err := parseObject(c.Canonical())
		if err != nil {
			return nil, err
		}
		b.chunks = append(b.chunks, o)
		var rs []string
		for _, r := range c.Records() {
			rs = append(rs, string(r.Canonical()))
		}
		b.records = append(b.records, rs)
	}
	return b, nil
}

// chunkOf returns a chunk of the base's snapshot with the given index and
// records, and the payload hash those records have.
func (b *base) chunkOf(index int, records []string) object {
	return b.chunks[0].
		with("chunk_index", strconv.Itoa(index)).
		with("records", "["+strings.Join(records, ",")+"]").
		with("payload_sha256", quote(bodyHash(records)))
}

// manifestOf returns the base's manifest describing the given chunks of
// records, with a matching document hash.
func (b *base) manifestOf(chunks ...[]string) object {
	var all []string
	for _, c := range chunks {
		all = append(all, c...)
	}
	return b.manifest.
		with("chunk_count", strconv.Itoa(len(chunks))).
		with("record_count", strconv.Itoa(len(all))).
		with("document_sha256", quote(bodyHash(all)))
}

// respell writes a canonical record with its members reversed and spaces.
func respell(record string) string {
	o, err := parseObject([]byte(record))
	if err != nil {
		panic(err)
	}
	return "      " + o.reversed().indent("      ")
}

// pretty writes a chunk with reversed members, one per line, its records
// respelled.
func prettyChunk(c object, records []string, prefix string) string {
	var rs []string
	for _, r := range records {
		rs = append(rs, respell(r))
	}
	return c.with("records", "[\n"+strings.Join(rs, ",\n")+"\n"+prefix+"  ]").reversed().indent(prefix)
}

func manifestVectors() ([]vector, error) {
	b, err := newBase(smallRecords)
	if err != nil {
		return nil, err
	}
	m := b.manifest
	okM := func(name string, o object) vector { return ok(apiManifest, name, o.compact()) }
	badM := func(name string, o object, class string, where ...string) vector {
		return fail(apiManifest, name, o.compact(), class).at(where...)
	}
	withM := m.with // a method value: m is unchanged
	dup := `{"revision":7,` + m.compact()[1:]

	return []vector{
		okM("canonical", m),
		ok(apiManifest, "pretty-reordered", m.reversed().indent("")+"\n").
			note("member order and whitespace are free; the canonical bytes are those of manifest-canonical"),
		okM("boundaries", m.with("revision", "9007199254740991").with("chunk_count", "256").
			with("record_count", "25600").with("discovered_at_utc", `"2026-05-01T12:00:00.25Z"`)).
			note("revision 2^53-1, 256 chunks, 25,600 records, a fraction of a second"),

		badM("unknown-field", withM("note", `"hello"`), "unknown-field", "field=note"),
		badM("missing-scope", m.without("scope"), "missing-field", "field=scope"),
		badM("missing-document-sha256", m.without("document_sha256"), "missing-field", "field=document_sha256"),
		badM("revision-float", withM("revision", "7.0"), "invalid-value", "field=revision").
			note("7.0 is not the integer 7, although both canonicalise to 7"),
		badM("revision-exponent", withM("revision", "7e0"), "invalid-value", "field=revision"),
		badM("revision-true", withM("revision", "true"), "invalid-value", "field=revision"),
		badM("revision-string", withM("revision", `"7"`), "invalid-value", "field=revision"),
		badM("revision-zero", withM("revision", "0"), "invalid-value", "field=revision"),
		badM("revision-negative", withM("revision", "-1"), "invalid-value", "field=revision"),
		badM("revision-2p53", withM("revision", "9007199254740992"), "invalid-value", "field=revision"),
		fail(apiManifest, "revision-2p53-plus-1", withM("revision", "9007199254740993").compact(), "malformed-json").at("none").
			syntax("lossy-number", strings.Index(withM("revision", "9007199254740993").compact(), "9007199254740993")).
			note("a number that would change its value is refused by the JSON layer, before any field check"),
		badM("chunk-count-zero", withM("chunk_count", "0"), "invalid-value", "field=chunk_count").
			note("an empty snapshot still has one chunk"),
		badM("chunk-count-257", withM("chunk_count", "257"), "limit-exceeded", "field=chunk_count").
			note("257 chunks exceed the hard limit of 256, the same class envelope.Manifest.Check and Build use"),
		badM("record-count-25601", withM("record_count", "25601"), "limit-exceeded", "field=record_count").
			note("25,601 records exceed the hard limit of 25,600, the same class envelope.Manifest.Check and Build use"),
		badM("record-count-negative", withM("record_count", "-1"), "invalid-value", "field=record_count"),
		badM("chunk-count-float", withM("chunk_count", "1.0"), "invalid-value", "field=chunk_count"),
		badM("vessel-uppercase", withM("vessel_id", quote(strings.ToUpper(Vessel))), "invalid-value", "field=vessel_id"),
		badM("vessel-nil", withM("vessel_id", `"00000000-0000-0000-0000-000000000000"`), "invalid-value", "field=vessel_id"),
		badM("vessel-no-hyphens", withM("vessel_id", quote(strings.ReplaceAll(Vessel, "-", ""))), "invalid-value", "field=vessel_id"),
		badM("snapshot-braces", withM("snapshot_id", quote("{"+Snapshot+"}")), "invalid-value", "field=snapshot_id"),
		badM("snapshot-not-v4", withM("snapshot_id", `"8d3f2a61-4b7c-1e9d-a1f0-2c6b5e7d9a38"`), "invalid-value", "field=snapshot_id").
			note("a version 1 UUID: snapshot_id must be random (version 4)"),
		badM("time-offset-zero", withM("discovered_at_utc", `"2026-05-01T12:00:00+00:00"`), "invalid-value", "field=discovered_at_utc").
			note("UTC is spelled Z"),
		badM("time-offset", withM("discovered_at_utc", `"2026-05-01T14:00:00+02:00"`), "invalid-value", "field=discovered_at_utc"),
		badM("time-space", withM("discovered_at_utc", `"2026-05-01 12:00:00Z"`), "invalid-value", "field=discovered_at_utc"),
		badM("time-trailing-zeros", withM("discovered_at_utc", `"2026-05-01T12:00:00.000Z"`), "invalid-value", "field=discovered_at_utc").
			note("one instant has one spelling: a fraction of a second has no trailing zeros"),
		badM("protocol-other", withM("protocol", `"yachtmemory.source-catalog.v3"`), "unsupported", "field=protocol"),
		badM("protocol-not-string", withM("protocol", "2"), "invalid-value", "field=protocol"),
		badM("scope-other", withM("scope", `"all-sources"`), "unsupported", "field=scope"),
		badM("coverage-other", withM("inventory_coverage", `"all-sources"`), "unsupported", "field=inventory_coverage"),
		badM("transport-incomplete", withM("transport_complete", "false"), "incomplete-scan", "field=transport_complete"),
		badM("transport-string", withM("transport_complete", `"true"`), "invalid-value", "field=transport_complete"),
		badM("document-hash-uppercase", withM("document_sha256", strings.ToUpper(m.get("document_sha256"))), "invalid-value", "field=document_sha256"),
		badM("document-hash-short", withM("document_sha256", `"e3b0c44298fc1c149afbf4c8996fb924"`), "invalid-value", "field=document_sha256"),
		fail(apiManifest, "duplicate-member", dup, "malformed-json").at("none").
			syntax("duplicate-name", strings.LastIndex(dup, `"revision"`)),
		fail(apiManifest, "trailing-data", m.compact()+"\n{}", "malformed-json").at("none").
			syntax("trailing-data", len(m.compact())+1),
		fail(apiManifest, "not-an-object", `[]`, "invalid-value").at("none"),
	}, nil
}

// threeBases returns the snapshots that chunk and snapshot vectors alter:
// a small one, one of two chunks, and the empty one.
func threeBases() (small, multi, empty *base, err error) {
	if small, err = newBase(smallRecords); err != nil {
		return nil, nil, nil, err
	}
	if multi, err = newBase(sensorRecords(51, 1)); err != nil {
		return nil, nil, nil, err
	}
	empty, err = newBase(nil)
	return small, multi, empty, err
}

func chunkVectors() ([]vector, error) {
	small, multi, empty, err := threeBases()
	if err != nil {
		return nil, err
	}
	c := small.chunks[0]
	okC := func(name string, o object) vector { return ok(apiChunk, name, o.compact()) }
	badC := func(name string, o object, class string, where ...string) vector {
		return fail(apiChunk, name, o.compact(), class).at(where...)
	}
	withC := c.with

	// Chunk 1 of multi with one record changed after hashing.
	tampered := multi.chunks[1].with("records", strings.Replace(multi.chunks[1].get("records"), `"number"`, `"string"`, 1))

	badRecord := append(append([]string(nil), smallRecords[:5]...), `{"kind":"path","path":"navigation..log"}`)
	unknownRecord := []string{smallRecords[0], `{"colour":"red","kind":"path","path":"navigation.speedOverGround"}`}

	var bigPaths [][2]string
	for i := 0; i < 6; i++ {
		bigPaths = append(bigPaths, [2]string{fmt.Sprintf("p%d", i), `{"text":"` + strings.Repeat("x", 3000) + `"}`})
	}
	big := withObservations(bigPaths, "s", "number")[:6]

	deep := c.with("records", `[{"kind":"path","meta":`+nestedMeta(62)+`,"path":"a"}]`).compact()

	return []vector{
		okC("canonical", c),
		ok(apiChunk, "pretty-respelled", prettyChunk(c, small.records[0], "")+"\n").
			note("members reversed, whitespace, records respelled: payload_sha256 covers the canonical body, not this text"),
		okC("index-255-revision-max", withC("chunk_index", "255").with("revision", "9007199254740991")).
			note("a chunk decodes alone; its index is checked against chunk_count only with the manifest"),
		okC("empty", empty.chunks[0]).note(`the chunk of an empty snapshot: payload_sha256 is the hash of {"records":[]}`),

		badC("unknown-field", withC("note", `"hello"`), "unknown-field", "chunk=- field=note"),
		badC("missing-payload-sha256", c.without("payload_sha256"), "missing-field", "chunk=- field=payload_sha256"),
		badC("missing-chunk-index", c.without("chunk_index"), "missing-field", "chunk=- field=chunk_index"),
		badC("missing-records", c.without("records"), "missing-field", "chunk=- field=records"),
		badC("index-float", withC("chunk_index", "0.0"), "invalid-value", "chunk=- field=chunk_index"),
		badC("index-negative", withC("chunk_index", "-1"), "invalid-value", "chunk=- field=chunk_index"),
		badC("index-256", withC("chunk_index", "256"), "invalid-value", "chunk=- field=chunk_index"),
		badC("revision-string", withC("chunk_index", "3").with("revision", `"7"`), "invalid-value", "chunk=3 field=revision"),
		badC("protocol-other", withC("protocol", `"yachtmemory.source-catalog.v1"`), "unsupported", "chunk=0 field=protocol"),
		badC("records-not-array", withC("records", `{}`), "invalid-value", "chunk=0 field=records"),
		badC("vessel-uppercase", withC("vessel_id", quote(strings.ToUpper(Vessel))), "invalid-value", "chunk=0 field=vessel_id"),
		badC("snapshot-nil", withC("snapshot_id", `"00000000-0000-0000-0000-000000000000"`), "invalid-value", "chunk=0 field=snapshot_id"),
		badC("payload-hash-uppercase", withC("payload_sha256", strings.ToUpper(c.get("payload_sha256"))), "invalid-value", "chunk=0 field=payload_sha256"),
		badC("payload-hash-mismatch", tampered, "hash-mismatch", "chunk=1 record=- field=payload_sha256").
			note("one value_type changed after hashing"),
		badC("invalid-record", small.chunkOf(2, badRecord), "invalid-value", "chunk=2 record=5 field=path"),
		badC("record-unknown-field", small.chunkOf(0, unknownRecord), "unknown-field", "chunk=0 record=1 field=colour"),
		badC("101-records", small.chunkOf(0, sensorRecords(50, 1)), "limit-exceeded", "chunk=0 record=- field=records"),
		badC("body-too-large", small.chunkOf(0, big), "limit-exceeded", "chunk=0 record=- field=records").
			note("six records whose canonical body exceeds 16,384 bytes"),
		fail(apiChunk, "record-too-deep", deep, "malformed-json").at("none").
			syntax("too-deep", strings.Index(deep, "{}")).
			note("a record nesting 63 levels makes its chunk nest 65: the chunk is not JSON this protocol accepts"),
		fail(apiChunk, "byte-order-mark", "\xEF\xBB\xBF"+c.compact(), "malformed-json").at("none").
			syntax("byte-order-mark", 0),
	}, nil
}

// snapshotPayload writes {"manifest":...,"chunks":[...]} compactly, chunks
// in the given order.
func snapshotPayload(m object, chunks []object) string {
	var cs []string
	for _, c := range chunks {
		cs = append(cs, c.compact())
	}
	return `{"manifest":` + m.compact() + `,"chunks":[` + strings.Join(cs, ",") + "]}\n"
}

func snapshotVectors() ([]vector, error) {
	small, multi, empty, err := threeBases()
	if err != nil {
		return nil, err
	}
	mm, c0, c1 := multi.manifest, multi.chunks[0], multi.chunks[1]
	okS := func(name string, m object, chunks ...object) vector {
		return ok(apiSnapshot, name, snapshotPayload(m, chunks))
	}
	badS := func(name string, class string, m object, chunks ...object) vector {
		return fail(apiSnapshot, name, snapshotPayload(m, chunks), class)
	}

	pretty := "{\n  \"chunks\" : [\n" +
		"    " + prettyChunk(c1, multi.records[1], "    ") + ",\n" +
		"    " + prettyChunk(c0, multi.records[0], "    ") + "\n  ],\n" +
		"  \"manifest\" : " + mm.reversed().indent("  ") + "\n}\n"

	recs := small.records[0]
	paths, sources, obs := recs[:3], recs[3:6], recs[6:]
	withSpare := append(append(append([]string(nil), recs[:6]...), `{"kind":"source","source_ref":"spare.0"}`), recs[6:]...)
	dupChunk1 := append(append([]string{paths[2]}, sources...), obs...)

	tampered := c1.with("records", strings.Replace(c1.get("records"), `"number"`, `"string"`, 1))

	return []vector{
		ok(apiSnapshot, "shuffled-pretty", pretty).
			note("chunks in reverse order before the manifest, members reversed, whitespace, records respelled"),
		okS("single-chunk", small.manifest, small.chunks[0]),
		okS("empty", empty.manifest, empty.chunks[0]),

		badS("missing-chunk", "integrity", mm, c0).at("chunk=1 record=- field=chunk_index"),
		badS("no-chunks", "integrity", small.manifest).at("chunk=0 record=- field=chunk_index"),
		badS("wrong-record-count", "integrity", mm.with("record_count", "104"), c0, c1).
			at("chunk=- record=- field=record_count"),
		badS("wrong-document-hash", "hash-mismatch", mm.with("document_sha256", small.manifest.get("document_sha256")), c0, c1).
			at("chunk=- record=- field=document_sha256"),
		badS("revision-mismatch", "integrity", mm, c0, c1.with("revision", "8")).
			at("chunk=1 record=- field=revision").note("payload_sha256 does not cover the revision; Verify does"),
		badS("vessel-mismatch", "integrity", mm, c1, c0.with("vessel_id", quote(OtherVessel))).
			at("chunk=0 record=- field=vessel_id"),
		badS("snapshot-mismatch", "integrity", mm, c0, c1.with("snapshot_id", quote(OtherSnapshot))).
			at("chunk=1 record=- field=snapshot_id"),
		badS("duplicate-index", "integrity", mm, c0, c0).
			at("chunk=0 record=- field=chunk_index", "chunk=1 record=- field=chunk_index").
			note("two problems: a second chunk 0, and chunk 1 missing"),
		badS("index-beyond-count", "integrity", mm.with("chunk_count", "1"), c0, c1).
			at("chunk=1 record=- field=chunk_index"),
		badS("empty-two-chunks", "integrity", empty.manifest.with("chunk_count", "2"),
			empty.chunks[0], empty.chunks[0].with("chunk_index", "1")).
			at("chunk=1 record=- field=records").note("an empty snapshot is exactly one chunk with no records"),
		badS("empty-chunk", "integrity", small.manifestOf(recs, nil), small.chunkOf(0, recs), small.chunkOf(1, nil)).
			at("chunk=1 record=- field=records").note("only an empty snapshot may have an empty chunk"),
		badS("order-across-chunks", "integrity",
			small.manifestOf(obs, append(append([]string(nil), paths...), sources...)),
			small.chunkOf(1, append(append([]string(nil), paths...), sources...)), small.chunkOf(0, obs)).
			at("chunk=1 record=0 field=-").note("each chunk is sorted, but chunk 0 holds the observations"),
		badS("duplicate-across-chunks", "integrity", small.manifestOf(paths, dupChunk1),
			small.chunkOf(0, paths), small.chunkOf(1, dupChunk1)).
			at("chunk=1 record=0 field=path"),
		badS("unreferenced-source-in-chunk", "integrity", small.manifestOf(withSpare[:5], withSpare[5:]),
			small.chunkOf(0, withSpare[:5]), small.chunkOf(1, withSpare[5:])).
			at("chunk=1 record=1 field=source_ref").note("record indexes count within the chunk"),
		badS("chunk-hash-mismatch", "hash-mismatch", mm, c0, tampered).
			at("chunk=1 record=- field=payload_sha256"),
		badS("manifest-incomplete", "incomplete-scan", mm.with("transport_complete", "false"), c0, c1).
			at("chunk=- field=transport_complete"),
	}, nil
}
