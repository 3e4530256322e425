package vectors

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
)

// The APIs of chunk references (SPEC.md §6.6).
const (
	apiChunkRef = "chunkref" // decode one reference
	apiResolve  = "resolve"  // resolve a reference against a stored chunk
)

// The first vector numbers of the chunk reference groups: 360–399 are
// theirs, whatever the groups before them number.
const (
	firstChunkRef = 360
	firstResolve  = 370
	firstRefusal  = 380
)

func init() {
	specSections["6.6"] = []string{
		"chunkref/canonical", "chunkref/pretty-reordered", "chunkref/records-member", "chunkref/record-count-member",
		"chunkref/missing-payload-sha256", "chunkref/index-256", "chunkref/payload-uppercase", "chunkref/protocol-other",
		"chunkref/snapshot-not-v4", "chunkref/duplicate-member",
		"resolve/other-snapshot", "resolve/empty", "resolve/other-records", "resolve/stored-records-edited",
		"resolve/stored-not-a-chunk", "resolve/stored-other-vessel",
		"resolve/stored-other-vessel-other-records", "resolve/stored-payload-member-stale",
		"resolve/stored-protocol-other", "resolve/stored-not-a-chunk-other-vessel",
	}
	specSections["9.4"] = append(specSections["9.4"],
		"refusal/class-reference-unavailable", "refusal/reference-unavailable-no-location",
		"refusal/reference-unavailable-hyphen-spelling")
}

// chunkRefVectors decode references (SPEC.md §6.6): the chunk's members but
// records, checked as a chunk's, located at the chunk once chunk_index is
// read.
func chunkRefVectors() ([]vector, error) {
	_, multi, _, err := threeBases()
	if err != nil {
		return nil, err
	}
	c := multi.chunks[1]
	r := c.without("records")
	okR := func(name string, o object) vector { return ok(apiChunkRef, name, o.compact()) }
	badR := func(name string, o object, class string, where ...string) vector {
		return fail(apiChunkRef, name, o.compact(), class).at(where...)
	}
	dup := `{"revision":8,` + r.compact()[1:]
	return []vector{
		okR("canonical", r).note("the reference of chunk 1 of a two-chunk snapshot: the chunk's members but records"),
		ok(apiChunkRef, "pretty-reordered", r.reversed().indent("")+"\n").
			note("member order and whitespace are free; the canonical bytes are those of chunkref-canonical"),
		badR("records-member", c, "unknown-field", "chunk=- field=records").
			note("a whole chunk is not a reference: records is no member of it"),
		badR("record-count-member", r.with("record_count", "51"), "unknown-field", "chunk=- field=record_count").
			note("a reference carries no record count: the digest names the records"),
		badR("missing-payload-sha256", r.without("payload_sha256"), "missing-field", "chunk=- field=payload_sha256"),
		badR("index-256", r.with("chunk_index", "256"), "invalid-value", "chunk=- field=chunk_index"),
		badR("payload-uppercase", r.with("payload_sha256", strings.ToUpper(r.get("payload_sha256"))), "invalid-value", "chunk=1 field=payload_sha256"),
		badR("protocol-other", r.with("protocol", `"yachtmemory.source-catalog.v3"`), "unsupported", "chunk=1 field=protocol"),
		badR("snapshot-not-v4", r.with("snapshot_id", `"8d3f2a61-4b7c-1e9d-a1f0-2c6b5e7d9a38"`), "invalid-value", "chunk=1 field=snapshot_id"),
		fail(apiChunkRef, "duplicate-member", dup, "malformed-json").at("none").
			syntax("duplicate-name", strings.LastIndex(dup, `"revision"`)),
	}, nil
}

// resolveVectors resolve a reference against the bytes of a stored chunk
// (SPEC.md §6.6). The payload is {"reference":REF,"stored":CHUNK}.
func resolveVectors() ([]vector, error) {
	_, multi, empty, err := threeBases()
	if err != nil {
		return nil, err
	}
	stored := multi.chunks[1]
	// The reference of the same records at index 4 of another snapshot, of
	// another revision.
	ref := stored.without("records").with("chunk_index", "4").
		with("snapshot_id", quote(OtherSnapshot)).with("revision", "12")
	pair := func(r, s object) string {
		return object{{"reference", r.compact()}, {"stored", s.compact()}}.compact()
	}
	emptyRef := empty.chunks[0].without("records").with("snapshot_id", quote(OtherSnapshot)).with("revision", "8")
	edited := stored.with("records", strings.Replace(stored.get("records"), `"number"`, `"string"`, 1))
	return []vector{
		ok(apiResolve, "other-snapshot", pair(ref, stored)).
			note("chunk 1 of snapshot " + Snapshot + " revision 7 resolves a reference at index 4 of snapshot " + OtherSnapshot + " revision 12").
			note("the staged chunk is that chunk whole, with the reference's members"),
		ok(apiResolve, "empty", pair(emptyRef, empty.chunks[0])).
			note("the empty chunk too: its payload_sha256 is that of {\"records\":[]}"),
		fail(apiResolve, "other-records", pair(ref, multi.chunks[0]), "hash-mismatch").at("chunk=4 record=- field=payload_sha256").
			note("the stored chunk's records are another body: never trusted, refused, nothing staged"),
		fail(apiResolve, "stored-records-edited", pair(ref, edited), "hash-mismatch").at("chunk=4 record=- field=payload_sha256").
			note("stored bytes whose records were edited but whose payload_sha256 member was kept"),
		fail(apiResolve, "stored-not-a-chunk", pair(ref, multi.manifest), "hash-mismatch").at("chunk=4 record=- field=payload_sha256").
			note("stored bytes that are not a chunk's canonical bytes"),
		fail(apiResolve, "stored-other-vessel", pair(ref, stored.with("vessel_id", quote(OtherVessel))), "reference-unavailable").
			at("chunk=4 record=- field=payload_sha256").
			note("another vessel's chunk with the same records is never resolved from: as if no records were held"),
		// Resolving reads the held bytes in the order of SPEC.md §6.6: their
		// form, then their vessel_id, then their records' digest.
		fail(apiResolve, "stored-other-vessel-other-records", pair(ref, multi.chunks[0].with("vessel_id", quote(OtherVessel))), "reference-unavailable").
			at("chunk=4 record=- field=payload_sha256").
			note("another vessel's chunk whose records are another body: the vessel is checked before the digest, so the answer says nothing of another vessel's records"),
		ok(apiResolve, "stored-payload-member-stale", pair(ref, stored.with("payload_sha256", multi.chunks[0].get("payload_sha256")))).
			note("of the held chunk only the records and vessel_id are read: its payload_sha256 member, like its chunk_index, revision and snapshot_id, is replaced by the reference's",
				"the records' body is hashed again and has the reference's digest, so the chunk is that of resolve-other-snapshot"),
		fail(apiResolve, "stored-protocol-other", pair(ref, stored.with("protocol", `"yachtmemory.source-catalog.v1"`)), "hash-mismatch").
			at("chunk=4 record=- field=payload_sha256").
			note("held bytes with another protocol are not a chunk's canonical bytes, whatever their records"),
		fail(apiResolve, "stored-not-a-chunk-other-vessel", pair(ref, multi.manifest.with("vessel_id", quote(OtherVessel))), "hash-mismatch").
			at("chunk=4 record=- field=payload_sha256").
			note("held bytes that are not a chunk's are refused for their form before their vessel_id is read"),
	}, nil
}

// refRefusalVectors are the refusals of class reference_unavailable
// (SPEC.md §9.4, §10.1).
func refRefusalVectors() ([]vector, error) {
	f, err := parseObject([]byte(specRefusal))
	if err != nil {
		return nil, err
	}
	o := f.without("record_index").with("error", `"reference_unavailable"`).with("field", `"payload_sha256"`).
		with("message", quote(sourcecatalog.ErrReferenceUnavailable.Error()))
	return []vector{
		ok(apiRefusal, "class-reference-unavailable", o.compact()).
			note("a reference whose records the receiver does not hold: send the whole chunk"),
		ok(apiRefusal, "reference-unavailable-no-location", o.without("chunk_index").without("field").compact()),
		fail(apiRefusal, "reference-unavailable-hyphen-spelling", o.with("error", `"reference-unavailable"`).compact(), "invalid-value").
			at("chunk=- record=- field=error"),
	}, nil
}

// chunkRefOutputs are the outputs of a valid chunkref vector.
func chunkRefOutputs(v vector) ([]field, error) {
	r, err := envelope.DecodeChunkRef(v.payload)
	if err != nil {
		return nil, fmt.Errorf("the library rejects a valid vector: %w", err)
	}
	return append(canonicalFields(r.Canonical()),
		field{"chunk-index", strconv.Itoa(r.Index())}, field{"payload-sha256", r.PayloadSHA256().String()}), nil
}

// resolveOutputs are the outputs of a valid resolve vector: the staged
// chunk's.
func resolveOutputs(v vector) ([]field, error) {
	o, err := parseObject(v.payload)
	if err != nil || len(o) != 2 {
		return nil, fmt.Errorf("a resolve payload is {\"reference\":...,\"stored\":...}")
	}
	r, err := envelope.DecodeChunkRef([]byte(o.get("reference")))
	if err != nil {
		return nil, fmt.Errorf("the library rejects a valid vector: %w", err)
	}
	c, err := r.Resolve([]byte(o.get("stored")))
	if err != nil {
		return nil, fmt.Errorf("the library rejects a valid vector: %w", err)
	}
	return append(canonicalFields(c.Canonical()),
		field{"record-count", strconv.Itoa(len(c.Records()))}, field{"payload-sha256", c.PayloadSHA256().String()}), nil
}
