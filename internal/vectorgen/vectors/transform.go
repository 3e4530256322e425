package vectors

import "strings"

// transformVectors are RFC 8785 cases: JSON text and, written by hand, its
// canonical text or the detail sentinel and byte offset of its rejection.
func transformVectors() ([]vector, error) {
	okT := func(name, in, want string) vector {
		v := ok(apiTransform, name, in)
		v.want, v.hasWant = want, true
		return v
	}
	badT := func(name, in, detail string, offset int) vector {
		return fail(apiTransform, name, in, "malformed-json").syntax(detail, offset)
	}
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	return []vector{
		// Member order: UTF-16 code units, not code points or UTF-8 bytes.
		okT("key-order-rfc8785",
			`{"\u20ac":"Euro","\r":"CR","\ufb33":"Dalet","1":"One","\ud83d\ude00":"Grin","\u0080":"C1","\u00f6":"o-umlaut"}`,
			"{\"\\r\":\"CR\",\"1\":\"One\",\"\u0080\":\"C1\",\"\u00f6\":\"o-umlaut\",\"\u20ac\":\"Euro\",\"\U0001F600\":\"Grin\",\"\ufb33\":\"Dalet\"}").
			note("RFC 8785 section 3.2.3: names sort by UTF-16 code units; U+1F600 (surrogates D83D DE00) sorts before U+FB33"),
		okT("key-order-supplementary-before-e000",
			`{"\ue000":1,"\ud800\udc00":2}`,
			"{\"\U00010000\":2,\"\ue000\":1}").
			note("U+10000 is D800 DC00 in UTF-16 and sorts before U+E000, although its UTF-8 bytes sort after"),
		okT("key-order-prefix-and-case",
			`{"ab":1,"a":2,"":3,"B":4}`,
			`{"":3,"B":4,"a":2,"ab":1}`),
		okT("rfc8785-sample",
			`{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],"string":"\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/","literals":[null,true,false]}`,
			`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`).
			note("the example of RFC 8785 section 3.2.2"),
		okT("whitespace-and-nesting",
			" \t\r\n{ \"b\" : [ 1 , { \"z\" : null , \"y\" : true } ] ,\n\t\"a\" : { } }\n",
			`{"a":{},"b":[1,{"y":true,"z":null}]}`),
		okT("top-level-scalar", "\n 42 \n", `42`),
		okT("depth-64", deep(64), deep(64)).note("64 nested arrays is the deepest nesting accepted"),

		// Strings.
		okT("string-escapes",
			`"\u001F\u0000\b\f\n\r\t\"\\\/\u0041`+"\u007f"+`"`,
			`"\u001f\u0000\b\f\n\r\t\"\\/A`+"\u007f"+`"`).
			note("control characters use the short escapes or lowercase \\u00xx; solidus and DEL are not escaped"),
		okT("line-separators-verbatim",
			`["\u2028","\u2029"]`,
			"[\"\u2028\",\"\u2029\"]").
			note("U+2028 and U+2029 are written as raw UTF-8, never escaped"),
		okT("combining-not-normalised",
			`{"\u00c5":"precomposed","A\u030a":"decomposed"}`,
			"{\"A\u030a\":\"decomposed\",\"\u00c5\":\"precomposed\"}").
			note("no Unicode normalisation: U+00C5 and A U+030A are different names"),
		okT("non-bmp-raw-and-escaped",
			`["€ö😀","\ud83d\ude00","\uD83C\uDF0A"]`,
			`["€ö😀","😀","🌊"]`).
			note("surrogate pair escapes (either case) become raw UTF-8"),

		// Numbers: ECMAScript shortest round-trip form.
		okT("number-trailing-zeros", `[56.0,4.50,1.000,100]`, `[56,4.5,1,100]`),
		okT("number-exponents", `[1E30,1e+30,2e-3,1.5E-7,0.000001,123e-2]`, `[1e+30,1e+30,0.002,1.5e-7,0.000001,1.23]`),
		okT("number-minus-zero", `[-0,-0.0,-0e10,0e-400]`, `[0,0,0,0]`).
			note("-0 canonicalises to 0; a zero mantissa with any exponent is zero, not an underflow"),
		okT("number-subnormal", `[5e-324,4.9406564584124654e-324]`, `[5e-324,5e-324]`).
			note("the smallest subnormal double is accepted"),
		okT("number-1e21-digits", `[1000000000000000000000,100000000000000000000]`, `[1e+21,100000000000000000000]`).
			note("ECMAScript switches to exponent form at 1e21; both literals are exact"),
		okT("number-exact-large-integers",
			`[9007199254740992,-9007199254740992,18446744073709552000,1.7976931348623157e308]`,
			`[9007199254740992,-9007199254740992,18446744073709552000,1.7976931348623157e+308]`).
			note("integer literals whose value equals the value of their canonical form are accepted"),
		okT("number-fraction-read-as-double",
			`[9007199254740993.0,0.30000000000000000001]`,
			`[9007199254740992,0.3]`).
			note("literals with a fraction or exponent are read as IEEE-754 doubles (RFC 8785); only digits-only literals must be exact"),

		// Rejections.
		badT("duplicate-name", `{"a":1,"b":2,"a":3}`, "duplicate-name", 13).
			note("the offset is that of the later duplicate name"),
		badT("duplicate-name-escaped", `{"a":1,"\u0061":2}`, "duplicate-name", 7),
		badT("duplicate-name-surrogate-escape", "{\"\U0001F600\":1,\"\\ud83d\\ude00\":2}", "duplicate-name", 10),
		badT("duplicate-name-nested", `[{"x":{"k":1,"k":1}}]`, "duplicate-name", 13),
		badT("invalid-utf8", "\"a\xffb\"", "invalid-utf8", 2),
		badT("invalid-utf8-overlong", "\"\xc0\xaf\"", "invalid-utf8", 1),
		badT("invalid-utf8-encoded-surrogate", "\"\xed\xa0\x80\"", "invalid-utf8", 1).
			note("a surrogate code point encoded directly in UTF-8 (CESU-8) is invalid UTF-8"),
		badT("invalid-utf8-in-name", "{\"\xfe\":1}", "invalid-utf8", 2),
		badT("lone-high-surrogate", `"\uD800"`, "invalid-surrogate", 1),
		badT("lone-low-surrogate", `"\uDC00x"`, "invalid-surrogate", 1),
		badT("reversed-surrogates", `"\uDE00\uD83D"`, "invalid-surrogate", 1),
		badT("high-surrogate-then-bmp", `"\uD83D\u0041"`, "invalid-surrogate", 7).
			note("the offset is that of the escape that should have been a low surrogate"),
		badT("nan", `NaN`, "invalid-number", 0),
		badT("infinity", `[Infinity]`, "invalid-number", 1),
		badT("negative-infinity", `-Infinity`, "invalid-number", 0),
		badT("overflow-1e400", `1e400`, "lossy-number", 0),
		badT("underflow-1e-400", `{"n":1e-400}`, "lossy-number", 5).
			note("a non-zero literal that parses to 0 would silently change"),
		badT("integer-2p53-plus-1", `9007199254740993`, "lossy-number", 0).
			note("would print as 9007199254740992"),
		badT("integer-2p64", `[18446744073709551616]`, "lossy-number", 1).
			note("would print as 18446744073709552000"),
		badT("depth-65", deep(65), "too-deep", 64).
			note("the offset is that of the 65th opening bracket"),
		badT("trailing-data", `{} {}`, "trailing-data", 3),
		badT("byte-order-mark", "\xEF\xBB\xBF{}", "byte-order-mark", 0),
		badT("leading-zero", `{"n":0123}`, "invalid-number", 5),
		badT("plus-sign", `[+1]`, "invalid-number", 1),
		badT("leading-dot", `.5`, "invalid-number", 0),
		badT("trailing-dot", `[1.]`, "invalid-number", 1),
		badT("hexadecimal", `0x1F`, "invalid-number", 0),
		badT("trailing-comma", `[1,]`, "syntax", 3),
		badT("single-quotes", `{'a':1}`, "syntax", 1),
		badT("raw-control-in-string", "[\"a\tb\"]", "syntax", 3).
			note("a raw TAB inside a string must be escaped"),
		badT("unexpected-end", `{"a":`, "unexpected-end", 5),
		badT("empty-input", ``, "unexpected-end", 0).
			note("the payload is empty: the file ends right after the blank line"),
	}, nil
}
