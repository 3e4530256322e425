package vectors

import (
	"strings"
)

// nestedMeta returns a JSON object nesting n objects deep (n >= 1).
func nestedMeta(n int) string {
	return strings.Repeat(`{"a":`, n-1) + `{}` + strings.Repeat(`}`, n-1)
}

// recordVectors decode one record (catalog.Decode).
func recordVectors() ([]vector, error) {
	okR := func(name, in, want string) vector {
		v := ok(apiRecord, name, in)
		v.want, v.hasWant = want, true
		return v
	}
	badR := func(name, in, class string, where ...string) vector {
		return fail(apiRecord, name, in, class).at(where...)
	}
	long := func(n int) string { return strings.Repeat("x", n) }
	return []vector{
		// The tri-state unit.
		okR("path-unit-absent",
			`{"kind":"path","path":"navigation.position"}`,
			`{"kind":"path","path":"navigation.position"}`).
			note("unit absent: the unit is unknown"),
		okR("path-unit-null",
			`{"unit":null,"path":"navigation.state","kind":"path"}`,
			`{"kind":"path","path":"navigation.state","unit":null}`).
			note("unit null: the path has no unit (meaningful, e.g. a string value)"),
		okR("path-unit-string",
			"{\n  \"unit\": \"m/s\",\n  \"path\": \"navigation.speedOverGround\",\n  \"meta\": {\"displayName\": \"SOG\", \"description\": \"Speed over ground\", \"zones\": [{\"upper\": 2.50E1, \"lower\": -0, \"state\": \"alarm\"}]},\n  \"kind\": \"path\"\n}\n",
			`{"kind":"path","meta":{"description":"Speed over ground","displayName":"SOG","zones":[{"lower":0,"state":"alarm","upper":25}]},"path":"navigation.speedOverGround","unit":"m/s"}`).
			note("unit string: an SI unit symbol; meta is open and canonicalised like any JSON"),
		okR("path-unicode-identifier",
			`{"kind":"path","path":"environment.water.\ud83c\udf0a.\u00e9t\u00e9\u2028","unit":"\u00b0C"}`,
			"{\"kind\":\"path\",\"path\":\"environment.water.\U0001F30A.\u00e9t\u00e9\u2028\",\"unit\":\"\u00b0C\"}").
			note("identifiers may hold any Unicode except control characters (Cc); U+2028 is not Cc"),
		okR("path-512-bytes",
			`{"kind":"path","path":"`+long(508)+`.abc"}`,
			`{"kind":"path","path":"`+long(508)+`.abc"}`).
			note("a path of exactly 512 bytes"),
		okR("path-meta-depth-61",
			`{"kind":"path","path":"a","meta":`+nestedMeta(61)+`}`,
			`{"kind":"path","meta":`+nestedMeta(61)+`,"path":"a"}`).
			note("a record nests at most 62 levels, so that a chunk {\"records\":[record]} stays within 64"),
		okR("source-full",
			`{"type":"NMEA2000","meta":{"manufacturer":{"name":"Garmin","code":229},"canName":"c0788c00e7e04312","src":"3"},"source_ref":"can0.c0788c00e7e04312","label":"can0","kind":"source"}`,
			`{"kind":"source","label":"can0","meta":{"canName":"c0788c00e7e04312","manufacturer":{"code":229,"name":"Garmin"},"src":"3"},"source_ref":"can0.c0788c00e7e04312","type":"NMEA2000"}`),
		okR("source-ref-opaque",
			`{"kind":"source","source_ref":".ttyUSB0..GP.","label":"","type":""}`,
			`{"kind":"source","label":"","source_ref":".ttyUSB0..GP.","type":""}`).
			note("source_ref is opaque: dots, empty segments and all; empty label and type are kept"),
		okR("source-label-control-characters",
			`{"kind":"source","source_ref":"x","label":"a\u0000\n\u007f\u0085 \"q\" \\"}`,
			"{\"kind\":\"source\",\"label\":\"a\\u0000\\n\u007f\u0085 \\\"q\\\" \\\\\",\"source_ref\":\"x\"}").
			note("label and type are free text: only their length is bounded"),
		okR("source-ref-255-bytes",
			`{"kind":"source","source_ref":"`+long(255)+`","label":"`+long(255)+`","type":"`+long(255)+`"}`,
			`{"kind":"source","label":"`+long(255)+`","source_ref":"`+long(255)+`","type":"`+long(255)+`"}`),
		okR("observation",
			`{"value_type":"position","source_ref":"gps.GP","path":"navigation.position","kind":"observation"}`,
			`{"kind":"observation","path":"navigation.position","source_ref":"gps.GP","value_type":"position"}`),

		// Unknown and missing members.
		badR("unknown-field", `{"kind":"path","path":"a","colour":"red"}`, "unknown-field", "field=colour"),
		badR("unknown-field-of-kind", `{"kind":"observation","path":"a","source_ref":"s","value_type":"number","unit":"m"}`,
			"unknown-field", "field=unit").
			note("unit belongs to path records only"),
		badR("missing-kind", `{"path":"a"}`, "missing-field", "field=kind"),
		badR("missing-path", `{"kind":"path","unit":"m"}`, "missing-field", "field=path"),
		badR("missing-source-ref", `{"kind":"source","label":"can0"}`, "missing-field", "field=source_ref"),
		badR("missing-value-type", `{"kind":"observation","path":"a","source_ref":"s"}`, "missing-field", "field=value_type"),

		// Wrong types and values.
		badR("not-an-object", `["kind","path"]`, "invalid-value", "none"),
		badR("kind-unknown", `{"kind":"device","path":"a"}`, "invalid-value", "field=kind"),
		badR("kind-not-string", `{"kind":1,"path":"a"}`, "invalid-value", "field=kind"),
		badR("path-not-string", `{"kind":"path","path":5}`, "invalid-value", "field=path"),
		badR("unit-not-string", `{"kind":"path","path":"a","unit":5}`, "invalid-value", "field=unit"),
		badR("unit-empty", `{"kind":"path","path":"a","unit":""}`, "invalid-value", "field=unit").
			note("an empty unit symbol is refused: null says no unit"),
		badR("meta-not-object", `{"kind":"path","path":"a","meta":[]}`, "invalid-value", "field=meta"),
		badR("meta-null", `{"kind":"source","source_ref":"s","meta":null}`, "invalid-value", "field=meta"),
		badR("label-null", `{"kind":"source","source_ref":"s","label":null}`, "invalid-value", "field=label"),
		badR("value-type-unknown", `{"kind":"observation","path":"a","source_ref":"s","value_type":"integer"}`, "invalid-value", "field=value_type"),
		badR("value-type-case", `{"kind":"observation","path":"a","source_ref":"s","value_type":"Number"}`, "invalid-value", "field=value_type"),

		// Identifier rules.
		badR("path-empty", `{"kind":"path","path":""}`, "invalid-value", "field=path"),
		badR("path-leading-dot", `{"kind":"path","path":".navigation"}`, "invalid-value", "field=path"),
		badR("path-trailing-dot", `{"kind":"observation","path":"navigation.","source_ref":"s","value_type":"number"}`, "invalid-value", "field=path"),
		badR("path-double-dot", `{"kind":"path","path":"navigation..speedOverGround"}`, "invalid-value", "field=path"),
		badR("path-control-character", `{"kind":"path","path":"a\u0000b"}`, "invalid-value", "field=path"),
		badR("path-del", `{"kind":"path","path":"a`+"\u007f"+`b"}`, "invalid-value", "field=path").
			note("DEL (U+007F) is a control character"),
		badR("path-c1-control", `{"kind":"path","path":"a\u0085b"}`, "invalid-value", "field=path").
			note("C1 controls (U+0080-U+009F) are control characters"),
		badR("source-ref-empty", `{"kind":"source","source_ref":""}`, "invalid-value", "field=source_ref"),
		badR("source-ref-tab", `{"kind":"observation","path":"a","source_ref":"can0\tx","value_type":"number"}`, "invalid-value", "field=source_ref"),

		// Limits.
		badR("path-513-bytes", `{"kind":"path","path":"`+long(509)+`.abc"}`, "limit-exceeded", "field=path"),
		badR("source-ref-256-bytes", `{"kind":"source","source_ref":"`+long(256)+`"}`, "limit-exceeded", "field=source_ref"),
		badR("label-256-bytes", `{"kind":"source","source_ref":"s","label":"`+long(256)+`"}`, "limit-exceeded", "field=label"),
		badR("type-256-bytes", `{"kind":"source","source_ref":"s","type":"`+long(256)+`"}`, "limit-exceeded", "field=type"),
		badR("unit-256-bytes", `{"kind":"path","path":"a","unit":"`+long(256)+`"}`, "limit-exceeded", "field=unit").
			note("the reference implementation bounds a unit symbol like a label: 255 bytes"),
		badR("meta-depth-62", `{"kind":"path","path":"a","meta":`+nestedMeta(62)+`}`, "limit-exceeded", "field=meta").
			note("the record would nest 63 levels; its chunk 65"),

		// Not JSON at all.
		badR("duplicate-member", `{"kind":"path","path":"a","path":"b"}`, "malformed-json", "none").syntax("duplicate-name", 26),
		badR("invalid-utf8-in-path", "{\"kind\":\"path\",\"path\":\"a\xc3\"}", "malformed-json", "none").syntax("invalid-utf8", 24),
	}, nil
}

// recordsVectors decode a JSON array of records (catalog.DecodeList).
func recordsVectors() ([]vector, error) {
	allTypes := []string{}
	for _, t := range []string{"number", "string", "boolean", "position", "object", "array", "null", "unknown"} {
		allTypes = append(allTypes, `{"kind":"observation","path":"value.`+t+`","source_ref":"s","value_type":"`+t+`"}`)
	}
	return []vector{
		ok(apiRecords, "value-types", list(allTypes)).
			note("the eight value types of protocol v2"),
		ok(apiRecords, "empty", "[]"),
		ok(apiRecords, "any-order-no-integrity", list([]string{
			`{"kind":"observation","path":"b","source_ref":"nowhere","value_type":"unknown"}`,
			` { "path" : "a" , "kind" : "path" } `,
			`{"kind":"path","path":"a"}`,
		})).note("decoding a list checks each record, not order or integrity: that is Build's and Verify's job"),
		fail(apiRecords, "bad-third-record", list([]string{
			`{"kind":"path","path":"a"}`,
			`{"kind":"source","source_ref":"s"}`,
			`{"kind":"observation","path":"a","source_ref":"s","value_type":"float"}`,
		}), "invalid-value").at("record=2 field=value_type"),
		fail(apiRecords, "element-not-object", `[{"kind":"path","path":"a"},"path"]`, "invalid-value").at("record=1 field=-"),
		fail(apiRecords, "unknown-field-second", `[{"kind":"path","path":"a"},{"kind":"path","path":"b","units":"m"}]`, "unknown-field").
			at("record=1 field=units"),
		fail(apiRecords, "not-an-array", `{"kind":"path","path":"a"}`, "invalid-value").at("none"),
	}, nil
}
