package vectors

import (
	"crypto/sha256"
	"fmt"
	"strconv"
	"strings"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
)

// The API of manifest indexes (SPEC.md §6.7).
const apiIndex = "index" // decode one manifest index

// The first vector numbers of the manifest index groups: 700–739 are
// theirs, whatever the groups before them number.
const (
	firstIndex        = 700
	firstIndexReceipt = 720
)

func init() {
	specSections["6.7"] = []string{
		"index/canonical", "index/pretty-reordered", "index/repeated-digest", "index/missing-payload-sha256s",
		"index/digests-not-array", "index/count-below", "index/count-above", "index/digest-uppercase",
		"index/digest-short", "index/digest-null", "index/over-256-digests", "index/records-member",
		"index/duplicate-member", "index/digest-before-chunk-count-range",
	}
	specSections["9.2"] = append(specSections["9.2"],
		"receipt/index-canonical", "receipt/index-none-missing", "receipt/index-missing-unsorted",
		"receipt/index-missing-repeated", "receipt/index-missing-256", "receipt/index-missing-float",
		"receipt/index-missing-absent", "receipt/manifest-with-missing-chunks", "receipt/index-with-chunk-index")
	specSections["11.7"] = append(specSections["11.7"], "declaration/manifest-index")
}

// indexOf returns the manifest index of a base: its manifest with the
// chunks' payload digests.
func indexOf(b *base) object {
	var ds []string
	for _, c := range b.chunks {
		ds = append(ds, c.get("payload_sha256"))
	}
	return b.manifest.with("payload_sha256s", "["+strings.Join(ds, ",")+"]")
}

// indexVectors decode manifest indexes (SPEC.md §6.7).
func indexVectors() ([]vector, error) {
	_, multi, _, err := threeBases()
	if err != nil {
		return nil, err
	}
	x := indexOf(multi)
	d0, d1 := multi.chunks[0].get("payload_sha256"), multi.chunks[1].get("payload_sha256")
	okX := func(name string, o object) vector { return ok(apiIndex, name, o.compact()) }
	badX := func(name string, o object, class string, where ...string) vector {
		return fail(apiIndex, name, o.compact(), class).at(where...)
	}
	digests := func(ds ...string) string { return "[" + strings.Join(ds, ",") + "]" }
	dup := `{"payload_sha256s":[],` + x.compact()[1:]
	return []vector{
		okX("canonical", x).note("the index of a two-chunk snapshot: its manifest's members and payload_sha256s before protocol"),
		ok(apiIndex, "pretty-reordered", x.reversed().indent("")+"\n").
			note("member order and whitespace are free; the canonical bytes are those of index-canonical"),
		okX("repeated-digest", x.with("payload_sha256s", digests(d0, d0))).
			note("digests are positional: two chunks of identical records list the same digest, which is no problem"),
		badX("missing-payload-sha256s", x.without("payload_sha256s"), "missing-field", "chunk=- field=payload_sha256s").
			note("a manifest is not an index"),
		badX("digests-not-array", x.with("payload_sha256s", d0), "invalid-value", "chunk=- field=payload_sha256s"),
		badX("count-below", x.with("payload_sha256s", digests(d0)), "integrity", "chunk=- field=payload_sha256s").
			note("one digest for chunk_count 2"),
		badX("count-above", x.with("payload_sha256s", digests(d0, d1, d1)), "integrity", "chunk=- field=payload_sha256s"),
		badX("digest-uppercase", x.with("payload_sha256s", digests(d0, strings.ToUpper(d1))), "invalid-value", "chunk=1 field=payload_sha256s").
			note("a digest's problem is located at the chunk of its position"),
		badX("digest-short", x.with("payload_sha256s", digests(d0[:64]+`"`, d1)), "invalid-value", "chunk=0 field=payload_sha256s"),
		badX("digest-null", x.with("payload_sha256s", digests(d0, "null")), "invalid-value", "chunk=1 field=payload_sha256s"),
		badX("over-256-digests", x.with("payload_sha256s", digests(slicesOf(d0, 257)...)), "limit-exceeded", "chunk=- field=payload_sha256s").
			note("257 digests: over the limit of 256 chunks before any count is compared"),
		badX("records-member", x.with("records", "[]"), "unknown-field", "chunk=- field=records"),
		fail(apiIndex, "duplicate-member", dup, "malformed-json").at("none").
			syntax("duplicate-name", strings.LastIndex(dup, `"payload_sha256s"`)),
		badX("digest-before-chunk-count-range", x.with("chunk_count", "0").with("payload_sha256s", digests(`"00"`)),
			"invalid-value", "chunk=0 field=payload_sha256s").
			note("the values in canonical name order come first, the range of chunk_count after every member (SPEC.md 10.3)"),
	}, nil
}

func slicesOf(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// indexReceiptVectors are the receipts of manifest indexes (SPEC.md §9.1,
// §9.2): missing_chunks.
func indexReceiptVectors() ([]vector, error) {
	_, multi, _, err := threeBases()
	if err != nil {
		return nil, err
	}
	c, err := parseObject([]byte(specReceipt))
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(indexOf(multi).compact()))
	r := c.without("chunk_index").
		with("entity_type", quote(sourcecatalog.ManifestIndexEntityType)).
		with("missing_chunks", "[1]").
		with("sha256", quote(fmt.Sprintf("%x", sum)))
	okR := func(name string, o object) vector { return ok(apiReceipt, name, o.compact()) }
	badR := func(name string, o object, class, field string) vector {
		return fail(apiReceipt, name, o.compact(), class).at("chunk=- record=- field=" + field)
	}
	m := c.without("chunk_index").with("entity_type", quote(sourcecatalog.ManifestEntityType))
	return []vector{
		okR("index-canonical", r).note("an index's receipt: chunk 1 is still needed; sha256 is that of the index's canonical bytes"),
		okR("index-none-missing", r.with("missing_chunks", "[]").with("complete", "true")).
			note("every chunk held: none missing, the set complete"),
		badR("index-missing-unsorted", r.with("missing_chunks", "[3,1]"), "integrity", "missing_chunks"),
		badR("index-missing-repeated", r.with("missing_chunks", "[1,1]"), "integrity", "missing_chunks"),
		badR("index-missing-256", r.with("missing_chunks", "[1,"+strconv.Itoa(sourcecatalog.MaxChunks)+"]"), "invalid-value", "missing_chunks"),
		badR("index-missing-float", r.with("missing_chunks", "[1.0]"), "invalid-value", "missing_chunks"),
		badR("index-missing-absent", r.without("missing_chunks"), "missing-field", "missing_chunks"),
		badR("manifest-with-missing-chunks", m.with("missing_chunks", "[]"), "unknown-field", "missing_chunks").
			note("only an index's receipt names missing chunks"),
		badR("index-with-chunk-index", r.with("chunk_index", "0"), "unknown-field", "chunk_index"),
		canonicalOK(apiDeclaration, "manifest-index",
			`{"capabilities":["chunk_reference","manifest_index","request_gzip"],"protocols":["yachtmemory.source-catalog.v2"]}`).
			note("manifest_index is a capability the protocol defines (SPEC.md 6.7), not an unknown name"),
	}, nil
}

// indexOutputs computes the outputs of a valid index vector.
func indexOutputs(v vector) ([]field, error) {
	x, err := envelope.DecodeManifestIndex(v.payload)
	if err != nil {
		return nil, fmt.Errorf("the library rejects a valid vector: %w", err)
	}
	m := x.Manifest()
	var ds []string
	for i := range m.ChunkCount {
		ds = append(ds, x.PayloadSHA256(i).String())
	}
	return append(canonicalFields(x.Canonical()),
		field{"chunk-count", strconv.Itoa(m.ChunkCount)},
		field{"record-count", strconv.Itoa(m.RecordCount)},
		field{"document-sha256", m.DocumentSHA256.String()},
		field{"payload-sha256", strings.Join(ds, ",")},
		field{"manifest-sha256", sum(m.Canonical())},
	), nil
}

// indexList writes chunk indices as a vector's missing-chunks: a comma
// list, or - for none.
func indexList(is []int) string {
	if len(is) == 0 {
		return "-"
	}
	s := make([]string, len(is))
	for k, i := range is {
		s[k] = strconv.Itoa(i)
	}
	return strings.Join(s, ",")
}
