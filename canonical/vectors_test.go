package canonical

// The test tables of this package. Unit tests, the differential and
// round-trip fuzz targets and the fuzz seeds all read them.

// validCases map JSON text to its canonical bytes.
var validCases = []struct {
	name string
	in   string
	want string
}{
	// Structure and whitespace.
	{"empty object", `{}`, `{}`},
	{"empty array", ` [ ] `, `[]`},
	{"literals", "[true,false,null]", "[true,false,null]"},
	{"top-level scalar", " \t\r\n42\n", "42"},
	{"top-level string", `"x"`, `"x"`},
	{"whitespace everywhere", "{ \"b\" : [ 1 , 2 ] ,\n\t\"a\" : { } }", `{"a":{},"b":[1,2]}`},
	{"nested sort", `{"b":{"z":1,"y":2},"a":[{"d":0,"c":0}]}`, `{"a":[{"c":0,"d":0}],"b":{"y":2,"z":1}}`},
	{"depth 64", repeat("[", 64) + repeat("]", 64), repeat("[", 64) + repeat("]", 64)},

	// Member order: UTF-16 code units, not code points or UTF-8 bytes.
	{"order by utf-16 with non-BMP names",
		`{"\u20ac":"Euro","\r":"CR","\ufb33":"Dalet","1":"One","\ud83d\ude00":"Grin","\u0080":"C1","\u00f6":"o-umlaut"}`,
		"{\"\\r\":\"CR\",\"1\":\"One\",\"\u0080\":\"C1\",\"\u00f6\":\"o-umlaut\",\"\u20ac\":\"Euro\",\"\U0001F600\":\"Grin\",\"\ufb33\":\"Dalet\"}"},
	{"supplementary sorts before U+E000", "{\"\ue000\":1,\"\U00010000\":2}", "{\"\U00010000\":2,\"\ue000\":1}"},
	{"prefix sorts first", `{"ab":1,"a":2,"":3}`, `{"":3,"a":2,"ab":1}`},
	{"case is significant", `{"a":1,"B":2,"A":3}`, `{"A":3,"B":2,"a":1}`},
	{"escaped names sorted decoded", `{"a\"":1,"a":2,"a\n":3,"\u0000":4}`, `{"\u0000":4,"a":2,"a\n":3,"a\"":1}`},
	{"escaped name sorts before a plain one", `{"A":1,"\n":2}`, `{"\n":2,"A":1}`},
	{"sorted inside sorted", `{"b":{"d":[{"f":1,"e":2}],"c":3},"a":0}`, `{"a":0,"b":{"c":3,"d":[{"e":2,"f":1}]}}`},
	{"order broken late", "{\"a\":1,\"b\":[2, 3],\"d\":\"\\\"}\",\n\"c\":4}", `{"a":1,"b":[2,3],"c":4,"d":"\"}"}`},

	// Strings: minimal escaping, everything else verbatim.
	{"short escapes", `"\b\f\n\r\t\"\\"`, `"\b\f\n\r\t\"\\"`},
	{"solidus unescaped", `"\/"`, `"/"`},
	{"control as \\u00xx lowercase", `"\u001F\u0000\u000B"`, `"\u001f\u0000\u000b"`},
	{"DEL verbatim", "\"\u007f\"", "\"\u007f\""},
	{"line separator verbatim", `"\u2028\u2029"`, "\"\u2028\u2029\""},
	{"combining not normalised", `"A\u030a"`, "\"A\u030a\""},
	{"escaped ASCII unescaped", `"\u0041\u0062"`, `"Ab"`},
	{"surrogate pair", `"\uD83D\uDE00"`, "\"\U0001F600\""},
	{"raw UTF-8 kept", "\"€ö😀\"", "\"€ö😀\""},

	// Numbers: ECMAScript shortest form.
	{"integer", `[0,-1,123456789012345]`, `[0,-1,123456789012345]`},
	{"minus zero", `[-0,-0.0,0e5,-0e-5]`, `[0,0,0,0]`},
	{"trailing fraction zeros", `[56.0,4.50,1.000]`, `[56,4.5,1]`},
	{"exponent forms", `[1E30,1e+30,1e-7,1.5E-7,2e21,1e20]`, `[1e+30,1e+30,1e-7,1.5e-7,2e+21,100000000000000000000]`},
	{"small fractions", `[0.000001,0.0000001,123.456]`, `[0.000001,1e-7,123.456]`},
	{"subnormal", `5e-324`, `5e-324`},
	{"largest double", `1.7976931348623157e308`, `1.7976931348623157e+308`},
	{"2^53 exact", `9007199254740992`, `9007199254740992`},
	{"1e20 as digits", `100000000000000000000`, `100000000000000000000`},
	{"2^64 in canonical spelling", `18446744073709552000`, `18446744073709552000`},
	{"1e21 as digits", `1000000000000000000000`, `1e+21`},
	{"negative 2^53", `-9007199254740992`, `-9007199254740992`},
	{"fraction read as double", `0.30000000000000000001`, `0.3`},
	{"long fraction rounds", `1.00000000000000000000000001`, `1`},
	{"exponent on integer", `123e-2`, `1.23`},
	{"zero mantissa with exponent", `0.0000e1 `, `0`},
}

// invalidCases are rejected with the given detail sentinel at the offset.
var invalidCases = []struct {
	name string
	in   string
	err  error
	off  int64
}{
	{"empty input", ``, ErrUnexpectedEnd, 0},
	{"only space", "  ", ErrUnexpectedEnd, 2},
	{"byte-order mark", "\xEF\xBB\xBF{}", ErrByteOrderMark, 0},
	{"trailing value", `{} {}`, ErrTrailingData, 3},
	{"trailing comma array", `[1,]`, ErrSyntax, 3},
	{"trailing comma object", `{"a":1,}`, ErrSyntax, 7},
	{"missing colon", `{"a" 1}`, ErrSyntax, 5},
	{"unquoted name", `{a:1}`, ErrSyntax, 1},
	{"single quotes", `['a']`, ErrSyntax, 1},
	{"unterminated array", `[1`, ErrUnexpectedEnd, 2},
	{"unterminated string", `"abc`, ErrUnexpectedEnd, 4},
	{"raw control in string", "\"a\nb\"", ErrSyntax, 2},
	{"bad escape", `"\x"`, ErrSyntax, 1},
	{"short unicode escape", `"\u12"`, ErrSyntax, 5},
	{"truncated literal", `tru`, ErrUnexpectedEnd, 3},
	{"misspelled literal", `nul1`, ErrSyntax, 3},
	{"capital literal", `True`, ErrSyntax, 0},
	{"comment", `[1 /* x */]`, ErrSyntax, 3},

	{"duplicate name", `{"a":1,"b":2,"a":3}`, ErrDuplicateName, 13},
	{"duplicate via escape", `{"a":1,"\u0061":2}`, ErrDuplicateName, 7},
	{"duplicate via surrogate escape", "{\"\U0001F600\":1,\"\\ud83d\\ude00\":2}", ErrDuplicateName, 10},
	{"duplicate nested", `[{"x":{"k":1,"k":1}}]`, ErrDuplicateName, 13},
	{"duplicate of a name in order", `{"a":1,"b":2,"c":3,"\u0062":4}`, ErrDuplicateName, 19},
	{"duplicate after the order broke", `{"c":1,"b":2,"b":3}`, ErrDuplicateName, 13},
	{"duplicate after a value with brackets", `{"b": [ "}" ] ,"a":1 ,"b":2}`, ErrDuplicateName, 22},
	{"duplicate before a syntax error", `{"b":1,"b":2,]`, ErrDuplicateName, 7},
	{"duplicate before a lossy number", `{"a":1,"a":2,"b":1e400}`, ErrDuplicateName, 7},
	{"duplicate before the end", `{"a":1,"a":2`, ErrDuplicateName, 7},
	{"duplicate name before its bad value", `{"a":1,"a":tru`, ErrDuplicateName, 7},
	{"duplicate before a missing colon", `{"a":1,"a" 2}`, ErrDuplicateName, 7},
	{"duplicate before invalid UTF-8", "{\"a\":1,\"a\":\"\xff\"}", ErrDuplicateName, 7},
	{"duplicate before a bad surrogate", `{"a":1,"a":2,"b":"\ud800"}`, ErrDuplicateName, 7},
	{"duplicate before too deep", `{"a":1,"a":` + repeat("[", 64) + repeat("]", 64) + `}`, ErrDuplicateName, 7},
	{"first duplicate in text order", `{"b":1,"b":2,"a":3,"a":4}`, ErrDuplicateName, 7},
	{"third of three names", `{"a":1,"a":2,"a":3}`, ErrDuplicateName, 7},
	{"outer duplicate before inner problems", `{"a":1,"a":[{"k":1,"k":2,"z":1e400}]}`, ErrDuplicateName, 7},
	{"inner duplicate before outer problem", `{"a":[{"k":1,"k":2,"z":1e400}],"a":1}`, ErrDuplicateName, 13},
	{"inner duplicate closed before outer", `{"x":{"k":1,"k":2},"x":1}`, ErrDuplicateName, 12},
	{"sorted names then a problem", `{"a":1,"b":2,"c":1e400}`, ErrLossyNumber, 17},
	{"unsorted distinct names then a problem", `{"c":1,"b":2,"a":1e400}`, ErrLossyNumber, 17},
	{"duplicate in an escape name then a problem", `{"\u0061":1,"a":[nul`, ErrDuplicateName, 12},

	{"invalid UTF-8 in string", "\"a\xffb\"", ErrInvalidUTF8, 2},
	{"overlong UTF-8", "\"\xc0\xaf\"", ErrInvalidUTF8, 1},
	{"UTF-8 encoded surrogate", "\"\xed\xa0\x80\"", ErrInvalidUTF8, 1},
	{"truncated UTF-8", "\"\xe2\x82\"", ErrInvalidUTF8, 1},
	{"invalid UTF-8 outside string", "[\xff]", ErrInvalidUTF8, 1},
	{"invalid UTF-8 in name", "{\"\xfe\":1}", ErrInvalidUTF8, 2},
	{"lone high surrogate", `"\uD800"`, ErrInvalidSurrogate, 1},
	{"lone high surrogate then text", `"\uD800abcdef"`, ErrInvalidSurrogate, 1},
	{"lone low surrogate", `"\uDC00"`, ErrInvalidSurrogate, 1},
	{"reversed surrogates", `"\uDE00\uD83D"`, ErrInvalidSurrogate, 1},
	{"high then non-surrogate", `"\uD83D\u0041"`, ErrInvalidSurrogate, 7},
	{"high then high", `"\uD83D\uD83D"`, ErrInvalidSurrogate, 7},
	{"high then short escape", `"\ud83d\n"`, ErrInvalidSurrogate, 1},
	{"high then quote", `"\ud83d"`, ErrInvalidSurrogate, 1},
	{"high at the end", `"\ud83d`, ErrInvalidSurrogate, 1},
	{"high then reverse solidus at the end", `"\ud83d\`, ErrInvalidSurrogate, 1},
	{"high then cut escape", `"\ud83d\u00`, ErrUnexpectedEnd, 11},
	{"high then bad hex", `"\ud83d\uzzzz"`, ErrSyntax, 9},

	{"NaN", `NaN`, ErrInvalidNumber, 0},
	{"Infinity", `[Infinity]`, ErrInvalidNumber, 1},
	{"negative Infinity", `-Infinity`, ErrInvalidNumber, 0},
	{"leading zero", `0123`, ErrInvalidNumber, 0},
	{"negative leading zero", `-01`, ErrInvalidNumber, 0},
	{"plus sign", `+1`, ErrInvalidNumber, 0},
	{"leading dot", `.5`, ErrInvalidNumber, 0},
	{"trailing dot", `1.`, ErrInvalidNumber, 0},
	{"trailing dot exponent", `1.e5`, ErrInvalidNumber, 0},
	{"hex", `0x1F`, ErrInvalidNumber, 0},
	{"empty exponent", `1e`, ErrInvalidNumber, 0},
	{"exponent sign only", `[1e+]`, ErrInvalidNumber, 1},
	{"double dot", `1.2.3`, ErrInvalidNumber, 0},
	{"bare minus", `-`, ErrInvalidNumber, 0},
	{"minus at the end", `[-`, ErrInvalidNumber, 1},
	{"dot at the end", `[0.`, ErrInvalidNumber, 1},
	{"exponent sign at the end", `{"n":1e+`, ErrInvalidNumber, 5},
	{"literal then letter", `nullx`, ErrSyntax, 4},
	{"literal then digit in array", `[true1]`, ErrSyntax, 5},
	{"literal then space then letter", `null x`, ErrTrailingData, 5},
	{"minus space", `- 1`, ErrInvalidNumber, 0},

	{"overflow", `1e400`, ErrLossyNumber, 0},
	{"negative overflow", `[-1e400]`, ErrLossyNumber, 1},
	{"underflow", `1e-400`, ErrLossyNumber, 0},
	{"2^53+1", `9007199254740993`, ErrLossyNumber, 0},
	{"negative 2^53+1", `-9007199254740993`, ErrLossyNumber, 0},
	{"2^64", `18446744073709551616`, ErrLossyNumber, 0},
	{"1e21 plus one", `1000000000000000000001`, ErrLossyNumber, 0},
	{"long integer", `123456789012345678901234567890`, ErrLossyNumber, 0},

	{"depth 65 arrays", repeat("[", 65) + repeat("]", 65), ErrTooDeep, 64},
	{"depth 65 objects", repeat(`{"a":`, 64) + "{}" + repeat("}", 64), ErrTooDeep, 320},
}

func repeat(s string, n int) string {
	out := make([]byte, 0, len(s)*n)
	for range n {
		out = append(out, s...)
	}
	return string(out)
}
