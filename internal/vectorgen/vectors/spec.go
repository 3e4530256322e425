package vectors

import (
	"fmt"
	"regexp"
	"sort"
)

// specSections maps each section of SPEC.md to the vectors it is the home
// of, as api/short-name. Every vector has exactly one home, written into its
// spec: header; that section of SPEC.md cites the vector by number (the
// root test TestSpecVectorSections checks both directions).
var specSections = map[string][]string{
	// 2. Identities
	"2.1": {"manifest/vessel-uppercase", "manifest/vessel-no-hyphens", "manifest/snapshot-braces",
		"chunk/vessel-uppercase", "chunk/snapshot-nil"},
	"2.2": {"build/vessel-nil", "manifest/vessel-nil"},
	"2.3": {"build/snapshot-not-v4", "manifest/snapshot-not-v4", "manifest/snapshot-variant-not-rfc4122"},
	"2.4": {"build/revision-zero", "build/revision-2p53", "manifest/revision-float", "manifest/revision-exponent",
		"manifest/revision-true", "manifest/revision-string", "manifest/revision-zero", "manifest/revision-negative",
		"manifest/revision-2p53", "chunk/revision-string"},
	"2.5": {"manifest/time-offset-zero", "manifest/time-offset", "manifest/time-space", "manifest/time-trailing-zeros",
		"manifest/time-zero-instant"},

	// 3. Canonical JSON
	"3.1": {"transform/key-order-rfc8785", "transform/key-order-supplementary-before-e000",
		"transform/key-order-prefix-and-case", "transform/rfc8785-sample", "transform/whitespace-and-nesting",
		"transform/top-level-scalar", "transform/depth-64"},
	"3.2": {"transform/string-escapes", "transform/line-separators-verbatim", "transform/combining-not-normalised",
		"transform/non-bmp-raw-and-escaped"},
	"3.3": {"transform/number-trailing-zeros", "transform/number-exponents", "transform/number-minus-zero",
		"transform/number-subnormal", "transform/number-1e21-digits", "transform/number-exact-large-integers",
		"transform/number-fraction-read-as-double"},
	"3.4": {"transform/duplicate-name", "transform/duplicate-name-escaped", "transform/duplicate-name-surrogate-escape",
		"transform/duplicate-name-nested", "transform/invalid-utf8", "transform/invalid-utf8-overlong",
		"transform/invalid-utf8-encoded-surrogate", "transform/invalid-utf8-in-name", "transform/lone-high-surrogate",
		"transform/lone-low-surrogate", "transform/reversed-surrogates", "transform/high-surrogate-then-bmp",
		"transform/nan", "transform/infinity", "transform/negative-infinity", "transform/overflow-1e400",
		"transform/underflow-1e-400", "transform/integer-2p53-plus-1", "transform/integer-2p64",
		"transform/depth-65", "transform/trailing-data", "transform/byte-order-mark", "transform/leading-zero",
		"transform/plus-sign", "transform/leading-dot", "transform/trailing-dot", "transform/hexadecimal",
		"transform/trailing-comma", "transform/single-quotes", "transform/raw-control-in-string",
		"transform/unexpected-end", "transform/empty-input",
		"record/duplicate-member", "record/invalid-utf8-in-path", "manifest/revision-2p53-plus-1",
		"manifest/duplicate-member", "manifest/trailing-data", "chunk/byte-order-mark", "manifest/revision-leading-zero",
		"transform/duplicate-name-before-lossy-number", "transform/duplicate-name-first-in-text-order",
		"transform/duplicate-name-outer-before-inner", "transform/duplicate-name-before-end",
		"transform/number-minus-at-end", "transform/number-exponent-at-end",
		"transform/high-surrogate-then-short-escape", "transform/high-surrogate-at-end", "transform/literal-then-letter"},
	"3.5": {"manifest/document-hash-uppercase", "manifest/document-hash-short", "chunk/payload-hash-uppercase"},

	// 4. Records
	"4.1": {"record/unknown-field", "record/unknown-field-of-kind", "record/missing-kind", "record/not-an-object",
		"record/kind-unknown", "record/kind-not-string"},
	"4.2": {"record/path-unit-absent", "record/path-unit-null", "record/path-unit-string", "record/missing-path",
		"record/path-not-string", "record/unit-not-string", "record/unit-empty", "record/unit-256-bytes"},
	"4.3": {"record/source-full", "record/source-label-control-characters", "record/missing-source-ref",
		"record/label-null", "record/label-256-bytes", "record/type-256-bytes"},
	"4.4": {"record/observation", "record/missing-value-type", "record/value-type-unknown", "record/value-type-case",
		"records/value-types"},
	"4.5": {"record/path-unicode-identifier", "record/path-512-bytes", "record/source-ref-opaque",
		"record/source-ref-255-bytes", "record/path-empty", "record/path-leading-dot", "record/path-trailing-dot",
		"record/path-double-dot", "record/path-control-character", "record/path-del", "record/path-c1-control",
		"record/source-ref-empty", "record/source-ref-tab", "record/path-513-bytes", "record/source-ref-256-bytes"},
	"4.6": {"record/path-meta-depth-61", "record/meta-not-object", "record/meta-null", "record/meta-depth-62",
		"chunk/record-too-deep"},
	"4.7": {"records/empty", "records/any-order-no-integrity", "records/bad-third-record",
		"records/element-not-object", "records/unknown-field-second", "records/not-an-array"},

	// 5. Snapshot content
	"5.1": {"build/single-chunk-shuffled", "build/record-order-bytewise", "snapshot/order-across-chunks"},
	"5.2": {"build/duplicate-path", "build/duplicate-source", "build/two-observations-one-path",
		"build/observation-of-unknown-path", "build/observation-of-unknown-source", "build/unreferenced-source",
		"build/path-without-observation", "snapshot/duplicate-across-chunks", "snapshot/unreferenced-source-in-chunk",
		"build/duplicate-path-without-observation", "build/duplicate-observation-unknown-source"},

	// 6. Messages
	"6.1": {"manifest/unknown-field", "manifest/missing-scope", "manifest/missing-document-sha256",
		"manifest/not-an-object", "chunk/unknown-field", "chunk/missing-payload-sha256", "chunk/missing-chunk-index",
		"chunk/missing-records", "chunk/canonical-text-over-32768"},
	"6.2": {"manifest/canonical", "manifest/pretty-reordered", "manifest/boundaries", "manifest/chunk-count-zero",
		"manifest/chunk-count-257", "manifest/record-count-25601", "manifest/record-count-negative",
		"manifest/chunk-count-float", "manifest/protocol-other", "manifest/protocol-not-string", "manifest/scope-other",
		"manifest/coverage-other", "manifest/transport-incomplete", "manifest/transport-string"},
	"6.3": {"chunk/canonical", "chunk/pretty-respelled", "chunk/index-255-revision-max", "chunk/empty",
		"chunk/index-float", "chunk/index-negative", "chunk/index-256", "chunk/protocol-other",
		"chunk/records-not-array", "chunk/invalid-record", "chunk/record-unknown-field", "chunk/101-records",
		"chunk/body-too-large"},
	"6.4": {"chunk/payload-hash-mismatch", "snapshot/wrong-document-hash", "snapshot/chunk-hash-mismatch"},
	"6.5": {"snapshot/shuffled-pretty", "snapshot/single-chunk", "snapshot/empty", "snapshot/missing-chunk",
		"snapshot/no-chunks", "snapshot/wrong-record-count", "snapshot/revision-mismatch", "snapshot/vessel-mismatch",
		"snapshot/snapshot-mismatch", "snapshot/duplicate-index", "snapshot/index-beyond-count",
		"snapshot/empty-two-chunks", "snapshot/empty-chunk", "snapshot/manifest-incomplete",
		"snapshot/refused-chunk-index-missing"},

	// 7. Building a snapshot
	"7.1": {"build/empty-snapshot", "build/single-chunk", "build/unicode-and-escapes",
		"build/revision-max-fractional-time", "build/truncated-scan", "build/pagination-uncertain"},
	"7.2": {"build/exactly-100-records", "build/101-records", "build/multi-chunk-record-limit",
		"build/multi-chunk-body-limit", "build/record-too-large-body"},
	"7.3": {"build/multi-chunk-wrapper-limit", "build/record-too-large-wrapped"},

	// 9. Receipts and refusals
	"9.1": {"receipt/chunk-canonical", "receipt/manifest-canonical", "receipt/already-received-complete"},
	"9.2": {"receipt/pretty-reordered", "receipt/padded-4096-bytes", "receipt/text-4097-bytes", "receipt/malformed",
		"receipt/duplicate-member", "receipt/not-an-object", "receipt/entity-type-missing",
		"receipt/entity-type-not-string", "receipt/entity-type-unknown", "receipt/entity-type-before-names",
		"receipt/unknown-member", "receipt/manifest-chunk-index", "receipt/chunk-index-missing",
		"receipt/chunk-index-null", "receipt/chunk-index-256", "receipt/chunk-index-float",
		"receipt/complete-not-boolean", "receipt/protocol-other", "receipt/revision-zero", "receipt/sha256-uppercase",
		"receipt/snapshot-not-v4", "receipt/status-other", "receipt/vessel-nil", "receipt/names-before-values",
		"receipt/missing-before-values", "receipt/values-in-name-order"},
	"9.4": {"refusal/full-location", "refusal/no-location", "refusal/pretty-reordered", "refusal/message-empty",
		"refusal/boundaries", "refusal/class-malformed-json", "refusal/class-unknown-field",
		"refusal/class-missing-field", "refusal/class-limit-exceeded", "refusal/class-record-too-large",
		"refusal/class-hash-mismatch", "refusal/class-integrity", "refusal/class-unsupported",
		"refusal/class-incomplete-scan", "refusal/class-foreign-vessel", "refusal/class-unregistered-vessel",
		"refusal/class-conflict", "refusal/class-revision-conflict",
		"refusal/text-4097-bytes", "refusal/malformed", "refusal/not-an-object", "refusal/error-missing",
		"refusal/error-missing-before-names", "refusal/error-not-string", "refusal/error-unknown-class",
		"refusal/error-hyphen-spelling", "refusal/unknown-member-detail", "refusal/unknown-member-status",
		"refusal/message-missing", "refusal/protocol-missing", "refusal/protocol-other", "refusal/chunk-index-256",
		"refusal/record-index-100", "refusal/record-index-without-chunk", "refusal/field-empty",
		"refusal/field-68-bytes", "refusal/message-257-bytes", "refusal/message-not-string",
		"refusal/values-in-name-order", "refusal/record-index-without-chunk-last"},

	// 11. HTTP binding
	"11.7": {"declaration/v2-no-capability", "declaration/both-capabilities", "declaration/unknown-names-kept",
		"declaration/pretty-reordered", "declaration/other-protocol-only", "declaration/padded-4096-bytes",
		"declaration/text-4097-bytes", "declaration/malformed", "declaration/duplicate-member",
		"declaration/not-an-object", "declaration/unknown-member", "declaration/protocols-missing",
		"declaration/capabilities-not-an-array", "declaration/name-not-a-string", "declaration/name-uppercase",
		"declaration/name-65-bytes", "declaration/name-repeated", "declaration/names-out-of-order",
		"declaration/capabilities-65", "declaration/protocols-empty"},

	// 12. Discovery from a Signal K server
	"12.1": {"signalk/sample-boat", "signalk/sample-boat-server-selection", "signalk/sample-boat-can-names"},
	"12.3": {"signalk/units-and-meta", "signalk/self-bare-key", "signalk/self-names-nothing", "signalk/self-missing",
		"signalk/member-name-with-dot", "signalk/units-not-a-string"},
	"12.4": {"signalk/null-is-not-live", "signalk/lowest-ref", "signalk/lowest-ref-after-flap", "signalk/server-selection",
		"signalk/server-selection-not-live", "signalk/position-null-altitude", "signalk/no-source",
		"signalk/values-not-an-object"},
	"12.5": {"signalk/nmea2000-identity", "signalk/nmea0183-talker", "signalk/can-name-ref",
		"signalk/dotted-label-and-providers", "signalk/source-not-listed", "signalk/source-ambiguous"},
	"12.6": {"signalk/not-strict-json"},

	// 10. Errors
	"10.3": {"record/first-problem-type-before-domain", "manifest/first-problem-counts-last",
		"chunk/first-problem-header-before-records", "snapshot/two-messages-undecodable"},
}

var sectionNumber = regexp.MustCompile(`^[1-9][0-9]*(\.[1-9][0-9]*)?$`)

// assignSections sets each vector's spec from specSections, and fails
// unless every vector has exactly one section and every entry names a
// vector.
func assignSections(all []vector) error {
	home := map[string]string{}
	for sec, names := range specSections {
		if !sectionNumber.MatchString(sec) {
			return fmt.Errorf("specSections: bad section number %q", sec)
		}
		for _, n := range names {
			if prev, dup := home[n]; dup {
				return fmt.Errorf("specSections: %s is in both %s and %s", n, prev, sec)
			}
			home[n] = sec
		}
	}
	used := map[string]bool{}
	for i := range all {
		key := all[i].api + "/" + all[i].name
		if used[key] {
			return fmt.Errorf("two vectors are named %s", key)
		}
		used[key] = true
		sec, ok := home[key]
		if !ok {
			return fmt.Errorf("vector %s has no SPEC.md section in specSections", key)
		}
		all[i].spec = sec
	}
	var unknown []string
	for n := range home {
		if !used[n] {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("specSections names vectors that do not exist: %v", unknown)
	}
	return nil
}
