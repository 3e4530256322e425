package vectors

import "strings"

// readingVectors settle questions on which two careful readings of SPEC.md
// differed: which problem of a JSON text is the first (§3.4), the bound on
// a message's canonical text (§6.1), which indexes a set misses (§6.5) and
// how records that share a key break the other integrity rules (§5.2).
// They come after every older group so that no number changes.
func readingVectors() ([]vector, error) {
	small, multi, _, err := threeBases()
	if err != nil {
		return nil, err
	}
	badT := func(name, in, detail string, offset int) vector {
		return fail(apiTransform, name, in, "malformed-json").syntax(detail, offset)
	}

	// A path record whose meta holds numbers written 1e20, 21 bytes each
	// in canonical text: the chunk's text is 7.7 KB, its canonical text
	// over 32,768 bytes.
	big := []string{
		`{"kind":"path","meta":{"n":[` + strings.TrimSuffix(strings.Repeat("1e20,", 1500), ",") + `]},"path":"a"}`,
		`{"kind":"source","source_ref":"s"}`,
		`{"kind":"observation","path":"a","source_ref":"s","value_type":"number"}`,
	}
	mm, c0, c1 := multi.manifest, multi.chunks[0], multi.chunks[1]

	return []vector{
		badT("duplicate-name-before-lossy-number", `{"a":1,"a":2,"b":1e400}`, "duplicate-name", 7).
			note("the duplicate name comes first in the text, before the number that overflows"),
		badT("duplicate-name-first-in-text-order", `{"b":1,"b":2,"a":3,"a":4}`, "duplicate-name", 7).
			note("of two repeated names, the one repeated first in the text, not the one that sorts first"),
		badT("duplicate-name-outer-before-inner", `{"a":1,"a":[{"k":1,"k":2}]}`, "duplicate-name", 7).
			note("the outer object's repeated name comes before the inner object's"),
		badT("duplicate-name-before-end", `{"a":1,"a":2,"b":"`, "duplicate-name", 7).
			note("the text ends in the object after its repeated name: the name comes first"),
		badT("number-minus-at-end", `-`, "invalid-number", 0).
			note("a number cut off by the end of the text is outside the number grammar"),
		badT("number-exponent-at-end", `[1e`, "invalid-number", 1).
			note("a number cut off by the end of the text is outside the number grammar"),
		badT("high-surrogate-then-short-escape", `"\ud83d\n"`, "invalid-surrogate", 1).
			note("a high surrogate not followed by a \\u escape is lone: the offset is the high surrogate's"),
		badT("high-surrogate-at-end", `"\ud83d`, "invalid-surrogate", 1).
			note("the text ends after a high surrogate: it is lone, at its own offset"),
		badT("literal-then-letter", `nullx`, "syntax", 4).
			note("a literal directly followed by a letter is misspelt, not followed by trailing data"),
		fail(apiChunk, "canonical-text-over-32768", small.chunkOf(0, big).compact(), "limit-exceeded").at("none").
			note("7.7 KB of text whose canonical form is over 32,768 bytes: refused before any member is read"),
		fail(apiSnapshot, "refused-chunk-index-missing", snapshotPayload(mm, []object{c0, c1.with("revision", "8")}), "integrity").
			at("chunk=1 record=- field=revision", "chunk=1 record=- field=chunk_index").
			note("a chunk refused for its revision does not hold its index: index 1 is missing too"),
		failB("duplicate-path-without-observation", []string{
			`{"kind":"path","path":"b"}`,
			`{"kind":"path","path":"a"}`,
			`{"kind":"source","source_ref":"s"}`,
			`{"kind":"path","path":"b","unit":"m"}`,
			`{"kind":"observation","path":"a","source_ref":"s","value_type":"number"}`,
		}, "integrity", "record=3 field=path", "record=0 field=path").
			note("two problems: the duplicate at the later record, and one missing observation at the earlier"),
		failB("duplicate-observation-unknown-source", []string{
			`{"kind":"path","path":"a"}`,
			`{"kind":"observation","path":"a","source_ref":"t","value_type":"number"}`,
			`{"kind":"source","source_ref":"s"}`,
			`{"kind":"observation","path":"a","source_ref":"t","value_type":"number"}`,
		}, "integrity", "record=3 field=path", "record=1 field=source_ref", "record=2 field=source_ref").
			note("three problems: the duplicate, one unknown source at the earlier observation, the unreferenced source"),
	}, nil
}
