package vectors

import (
	"crypto/sha256"
	"fmt"
	"strings"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
)

// The canonical examples of SPEC.md §9.1 and §9.4, which the vectors
// receipt-chunk-canonical and refusal-full-location pin byte for byte.
const (
	specReceipt = `{"chunk_index":3,"complete":false,"entity_type":"signalk_catalog_chunk_v2","protocol":"yachtmemory.source-catalog.v2","revision":7,"sha256":"e913bc922bc5c9af0b44c22dd5105c5049b7dbc81e444226ad28fc8cb5c19ef9","snapshot_id":"8d3f2a61-4b7c-4e9d-a1f0-2c6b5e7d9a38","status":"staged","vessel_id":"5b0c7f6e-2d1a-4c3b-9e8f-0a1b2c3d4e5f"}`
	specRefusal = `{"chunk_index":2,"error":"invalid_value","field":"path","message":"empty path segment","protocol":"yachtmemory.source-catalog.v2","record_index":5}`
)

// canonicalOK is a valid vector whose payload is its own canonical text.
func canonicalOK(api, name, payload string) vector {
	v := ok(api, name, payload)
	v.want, v.hasWant = payload, true
	return v
}

// padTo pads a JSON text with trailing spaces to n bytes.
func padTo(text string, n int) string {
	if len(text) > n {
		panic(fmt.Sprintf("padTo: %d bytes already", len(text)))
	}
	return text + strings.Repeat(" ", n-len(text))
}

// receiptVectors are the receipt answers of SPEC.md §9.1 and §9.2.
func receiptVectors() ([]vector, error) {
	small, err := newBase(smallRecords)
	if err != nil {
		return nil, err
	}
	c, err := parseObject([]byte(specReceipt))
	if err != nil {
		return nil, err
	}
	manifestSum := sha256.Sum256([]byte(small.manifest.compact()))
	m := c.without("chunk_index").
		with("entity_type", quote(sourcecatalog.ManifestEntityType)).
		with("sha256", quote(fmt.Sprintf("%x", manifestSum)))
	okR := func(name string, o object) vector { return ok(apiReceipt, name, o.compact()) }
	badR := func(name string, o object, class string, where ...string) vector {
		return fail(apiReceipt, name, o.compact(), class).at(where...)
	}
	at := func(field string) string { return "chunk=- record=- field=" + field }
	withC := c.with
	malformed := strings.TrimSuffix(c.compact(), "}") + ",}"
	dup := `{"status":"staged",` + c.compact()[1:]
	padded := c.reversed().indent("") + "\n"

	return []vector{
		canonicalOK(apiReceipt, "chunk-canonical", specReceipt).
			note("the chunk receipt of SPEC.md 9.1, byte for byte"),
		canonicalOK(apiReceipt, "manifest-canonical", m.compact()).
			note("a manifest's receipt has no chunk_index; sha256 is that of the manifest's canonical bytes"),
		okR("already-received-complete", withC("chunk_index", "255").with("status", `"already_received"`).
			with("complete", "true").with("revision", "9007199254740991")).
			note("a retry's receipt: chunk 255, revision 2^53-1, the set now complete"),
		ok(apiReceipt, "pretty-reordered", c.reversed().indent("")+"\n").
			note("member order and whitespace are free; the canonical bytes are those of receipt-chunk-canonical"),
		ok(apiReceipt, "padded-4096-bytes", padTo(padded, envelope.MaxAnswerSize)).
			note("exactly 4,096 bytes of text, most of them trailing spaces, is within the limit"),

		fail(apiReceipt, "text-4097-bytes", padTo(padded, envelope.MaxAnswerSize+1), "limit-exceeded").at("none").
			note("the limit is on the text as received, before parsing: a valid receipt padded to 4,097 bytes"),
		fail(apiReceipt, "malformed", malformed, "malformed-json").at("none").
			syntax("syntax", len(malformed)-1),
		fail(apiReceipt, "duplicate-member", dup, "malformed-json").at("none").
			syntax("duplicate-name", strings.LastIndex(dup, `"status"`)),
		fail(apiReceipt, "not-an-object", `["staged"]`, "invalid-value").at("none"),
		badR("entity-type-missing", c.without("entity_type"), "missing-field", at("entity_type")),
		badR("entity-type-not-string", withC("entity_type", "1"), "invalid-value", at("entity_type")),
		badR("entity-type-unknown", withC("entity_type", `"signalk_catalog"`), "unsupported", at("entity_type")),
		badR("entity-type-before-names", withC("entity_type", `"signalk_catalog"`).with("aaa", "1"), "unsupported", at("entity_type")).
			note("the entity type chooses the member set, so it is checked before the member names"),
		badR("unknown-member", withC("error", `"conflict"`), "unknown-field", at("error")).
			note("a receipt is never a refusal"),
		badR("manifest-chunk-index", m.with("chunk_index", "0"), "unknown-field", at("chunk_index")).
			note("a manifest's receipt has no chunk_index, not even 0"),
		badR("chunk-index-missing", c.without("chunk_index"), "missing-field", at("chunk_index")),
		badR("chunk-index-null", withC("chunk_index", "null"), "invalid-value", at("chunk_index")).
			note("an absent chunk_index is never spelled null"),
		badR("chunk-index-256", withC("chunk_index", "256"), "invalid-value", at("chunk_index")),
		badR("chunk-index-float", withC("chunk_index", "3.0"), "invalid-value", at("chunk_index")),
		badR("complete-not-boolean", withC("complete", `"false"`), "invalid-value", at("complete")),
		badR("protocol-other", withC("protocol", `"yachtmemory.source-catalog.v1"`), "unsupported", at("protocol")),
		badR("revision-zero", withC("revision", "0"), "invalid-value", at("revision")),
		badR("sha256-uppercase", withC("sha256", strings.ToUpper(c.get("sha256"))), "invalid-value", at("sha256")),
		badR("snapshot-not-v4", withC("snapshot_id", `"8d3f2a61-4b7c-1e9d-a1f0-2c6b5e7d9a38"`), "invalid-value", at("snapshot_id")),
		badR("status-other", withC("status", `"activated"`), "invalid-value", at("status")).
			note("a receipt acknowledges staging, never activation"),
		badR("vessel-nil", withC("vessel_id", `"00000000-0000-0000-0000-000000000000"`), "invalid-value", at("vessel_id")),
		badR("names-before-values", withC("revision", "0").with("zzz", "1"), "unknown-field", at("zzz")).
			note("every member name is checked before any value: zzz sorts last, revision 0 is not reported"),
		badR("missing-before-values", withC("revision", "0").without("vessel_id"), "missing-field", at("vessel_id")),
		badR("values-in-name-order", withC("status", `"x"`).with("complete", "1"), "invalid-value", at("complete")).
			note("values are checked in canonical name order: complete before status"),
	}, nil
}

// refusalVectors are the refusal answers of SPEC.md §9.4.
func refusalVectors() ([]vector, error) {
	f, err := parseObject([]byte(specRefusal))
	if err != nil {
		return nil, err
	}
	none := f.without("chunk_index").without("field").without("record_index")
	at := func(field string) string { return "chunk=- record=- field=" + field }
	okF := func(name string, o object) vector { return ok(apiRefusal, name, o.compact()) }
	badF := func(name string, o object, class string, where ...string) vector {
		return fail(apiRefusal, name, o.compact(), class).at(where...)
	}
	malformed := `{"error":"conflict","message":"conflict","protocol":"yachtmemory.source-catalog.v2"`
	padded := f.reversed().indent("") + "\n"

	vs := []vector{
		canonicalOK(apiRefusal, "full-location", specRefusal).
			note("the refusal of SPEC.md 9.4, byte for byte: chunk, record and field"),
		okF("no-location", none.with("error", `"store_unavailable"`).with("message", `"store unavailable"`)).
			note("a problem with no location has no chunk_index, record_index or field member"),
		ok(apiRefusal, "pretty-reordered", none.with("error", `"conflict"`).with("chunk_index", "0").
			with("message", `"other bytes for \u0063hunk 0: \"x\"\t\u00e9"`).reversed().indent("")+"\n").
			note("member order, whitespace and string escapes are free; the canonical bytes escape only what RFC 8785 escapes"),
		okF("message-empty", none.with("error", `"staging_exhausted"`).with("message", `""`)).
			note("message is required but may be empty"),
		okF("boundaries", f.with("chunk_index", "255").with("record_index", "99").
			with("field", quote(strings.Repeat("f", 67))).
			with("message", quote(strings.Repeat("\u00e9", 128)))).
			note("chunk 255, record 99, a 67-byte field and a 256-byte message (128 characters) are within bounds"),
	}
	for _, cv := range []struct {
		class error
		loc   object
	}{
		{sourcecatalog.ErrMalformedJSON, nil},
		{sourcecatalog.ErrUnknownField, object{{"chunk_index", "0"}, {"field", `"colour"`}, {"record_index", "1"}}},
		{sourcecatalog.ErrMissingField, object{{"field", `"scope"`}}},
		{sourcecatalog.ErrLimitExceeded, object{{"chunk_index", "0"}, {"field", `"records"`}}},
		{sourcecatalog.ErrRecordTooLarge, object{{"field", `"records"`}}},
		{sourcecatalog.ErrHashMismatch, object{{"chunk_index", "1"}, {"field", `"payload_sha256"`}}},
		{sourcecatalog.ErrIntegrity, object{{"chunk_index", "1"}, {"record_index", "0"}, {"field", `"path"`}}},
		{sourcecatalog.ErrUnsupported, object{{"field", `"protocol"`}}},
		{sourcecatalog.ErrIncompleteScan, object{{"field", `"transport_complete"`}}},
		{sourcecatalog.ErrForeignVessel, object{{"field", `"vessel_id"`}}},
		{sourcecatalog.ErrUnregisteredVessel, nil},
		{sourcecatalog.ErrConflict, object{{"chunk_index", "2"}}},
		{sourcecatalog.ErrRevisionConflict, object{{"field", `"revision"`}}},
	} {
		wire := sourcecatalog.WireName(cv.class)
		o := none.with("error", quote(wire)).with("message", quote(cv.class.Error()))
		for _, m := range cv.loc {
			o = o.with(m.name, m.raw)
		}
		vs = append(vs, okF("class-"+strings.ReplaceAll(wire, "_", "-"), o))
	}

	long := strings.Repeat("\u00e9", 128) + "a"
	return append(vs,
		fail(apiRefusal, "text-4097-bytes", padTo(padded, envelope.MaxAnswerSize+1), "limit-exceeded").at("none").
			note("the limit is on the text as received, before parsing: a valid refusal padded to 4,097 bytes"),
		fail(apiRefusal, "malformed", malformed, "malformed-json").at("none").
			syntax("unexpected-end", len(malformed)),
		fail(apiRefusal, "not-an-object", `"conflict"`, "invalid-value").at("none"),
		badF("error-missing", f.without("error"), "missing-field", at("error")),
		badF("error-missing-before-names", f.without("error").with("aaa", "1"), "missing-field", at("error")).
			note("a missing error member is reported before the other member names"),
		badF("error-not-string", f.with("error", "5"), "invalid-value", at("error")),
		badF("error-unknown-class", f.with("error", `"oops"`), "invalid-value", at("error")),
		badF("error-hyphen-spelling", f.with("error", `"malformed-json"`), "invalid-value", at("error")).
			note("the wire name is malformed_json; the vectors' error: header spelling is not a wire name"),
		badF("unknown-member-detail", f.with("detail", `"syntax"`), "unknown-field", at("detail")).
			note("a refusal does not carry the detail of a syntax error"),
		badF("unknown-member-status", f.with("status", `"staged"`), "unknown-field", at("status")).
			note("a refusal is never a receipt"),
		badF("message-missing", f.without("message"), "missing-field", at("message")),
		badF("protocol-missing", f.without("protocol"), "missing-field", at("protocol")),
		badF("protocol-other", f.with("protocol", `"yachtmemory.source-catalog.v1"`), "unsupported", at("protocol")),
		badF("chunk-index-256", f.with("chunk_index", "256"), "invalid-value", at("chunk_index")),
		badF("record-index-100", f.with("record_index", "100"), "invalid-value", at("record_index")),
		badF("record-index-without-chunk", f.without("chunk_index"), "invalid-value", at("record_index")).
			note("a record index counts within a chunk"),
		badF("field-empty", f.with("field", `""`), "invalid-value", at("field")),
		badF("field-68-bytes", f.with("field", quote(strings.Repeat("f", 68))), "limit-exceeded", at("field")),
		badF("message-257-bytes", f.with("message", quote(long)), "limit-exceeded", at("message")).
			note("129 characters, 257 bytes: the bound counts bytes"),
		badF("message-not-string", f.with("message", "null"), "invalid-value", at("message")),
		badF("values-in-name-order", f.with("chunk_index", "256").with("error", `"oops"`), "invalid-value", at("chunk_index")).
			note("values are checked in canonical name order: chunk_index before error"),
		badF("record-index-without-chunk-last", f.without("chunk_index").with("message", quote(long)), "limit-exceeded", at("message")).
			note("a record_index without chunk_index is checked after every value"),
	), nil
}
