package vectors

import "strings"

// settledVectors pin rules that an independent implementation had to guess
// from the Go code: the RFC 4122 variant of a snapshot_id, the unset
// instant, leading zeros in a message, and which problem comes first when a
// message has several (SPEC.md §10.3). They come last so that the numbers
// of the older vectors stay as they are.
func settledVectors() ([]vector, error) {
	small, multi, _, err := threeBases()
	if err != nil {
		return nil, err
	}
	m := small.manifest
	badM := func(name string, o object, class string, where ...string) vector {
		return fail(apiManifest, name, o.compact(), class).at(where...)
	}
	leadingZero := m.with("revision", "07").compact()
	badRecord := append(append([]string(nil), smallRecords[:5]...), `{"kind":"path","path":"navigation..log"}`)
	mm, c0, c1 := multi.manifest, multi.chunks[0], multi.chunks[1]

	return []vector{
		badM("snapshot-variant-not-rfc4122", m.with("snapshot_id", `"8d3f2a61-4b7c-4e9d-11f0-2c6b5e7d9a38"`),
			"invalid-value", "field=snapshot_id").
			note("version 4, but not the RFC 4122 variant: the fourth group must start with 8, 9, a or b"),
		badM("time-zero-instant", m.with("discovered_at_utc", `"0001-01-01T00:00:00Z"`),
			"invalid-value", "field=discovered_at_utc").
			note("0001-01-01T00:00:00Z stands for an unset time and is refused"),
		fail(apiRecord, "first-problem-type-before-domain",
			`{"kind":"observation","path":"","source_ref":"s","value_type":"integer"}`, "invalid-value").
			at("field=value_type").
			note("member names, JSON types and value_type are checked first, in name order; the empty path only afterwards"),
		badM("first-problem-counts-last", m.with("chunk_count", "0").with("revision", "0"),
			"invalid-value", "field=revision").
			note("chunk_count sorts first, but the ranges of chunk_count and record_count are checked after every member"),
		fail(apiChunk, "first-problem-header-before-records",
			small.chunkOf(0, badRecord).with("protocol", `"yachtmemory.source-catalog.v1"`).compact(), "unsupported").
			at("chunk=0 record=- field=protocol").
			note("the members around the records array are checked before any record"),
		fail(apiSnapshot, "two-messages-undecodable",
			snapshotPayload(mm.with("revision", `"7"`), []object{c0, c1.with("revision", `"7"`)}), "invalid-value").
			at("chunk=- record=- field=revision", "chunk=1 record=- field=revision").
			note("every message that does not decode is reported, the manifest first; the set is then not verified"),
		fail(apiManifest, "revision-leading-zero", leadingZero, "malformed-json").at("none").
			syntax("invalid-number", strings.Index(leadingZero, "07")).
			note("no number in any message has a leading zero"),
	}, nil
}
