package canonical

import (
	"errors"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
	"github.com/yachtmemory/sourcecatalog"
)

// intentionalDifferences are the detail errors for which this package
// rejects input that gowebpki/jcs accepts, by design:
//   - ErrLossyNumber: jcs silently rounds integer literals beyond 2^53
//     ("9007199254740993" becomes "9007199254740992") and turns non-zero
//     literals that underflow ("1e-400") into 0;
//   - ErrTooDeep: jcs allows 10,000 levels of nesting, the protocol 64.
var intentionalDifferences = []error{ErrLossyNumber, ErrTooDeep}

func seedTransform(f *testing.F) {
	n := 0
	for _, tc := range validCases {
		f.Add([]byte(tc.in))
		n++
	}
	for _, tc := range invalidCases {
		f.Add([]byte(tc.in))
		n++
	}
	if n < 50 {
		f.Fatalf("only %d seeds", n)
	}
}

// FuzzTransform checks, for any input, that
//   - whatever Transform accepts, it returns as a fixed point, and
//     gowebpki/jcs accepts too and produces the identical bytes;
//   - whatever gowebpki/jcs accepts and Transform refuses is refused for one
//     of the documented intentional differences.
func FuzzTransform(f *testing.F) {
	seedTransform(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := Transform(in)
		ref, refErr := jcs.Transform(in)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Offset < 0 || se.Offset > int64(len(in)) {
				t.Fatalf("error %v is not a located *SyntaxError", err)
			}
			if refErr == nil && !isIntentional(err) {
				t.Fatalf("Transform(%q) = %v, but jcs accepts it as %q", in, err, ref)
			}
			if refErr == nil && !reallyIntentional(in, se) {
				t.Fatalf("Transform(%q) = %v, but the input is not what that error says", in, err)
			}
			return
		}
		again, err := Transform(got)
		if err != nil || string(again) != string(got) {
			t.Fatalf("canonical %q is not a fixed point: %q, %v", got, again, err)
		}
		if refErr != nil {
			t.Fatalf("Transform(%q) = %q, but jcs refuses it: %v", in, got, refErr)
		}
		if string(ref) != string(got) {
			t.Fatalf("Transform(%q) = %q, jcs = %q", in, got, ref)
		}
	})
}

// reallyIntentional checks an intentional refusal of input that jcs
// accepts (so valid JSON) without the parser's own code: a too-deep input
// nests more than sourcecatalog.MaxDepth levels; a lossy number at the error's offset is
// a non-zero literal that underflows to 0, or an integer literal whose
// exact value differs from that of the shortest decimal of its double.
func reallyIntentional(in []byte, se *SyntaxError) bool {
	if errors.Is(se, ErrTooDeep) {
		depth, deepest, inString := 0, 0, false
		for i := 0; i < len(in); i++ {
			switch c := in[i]; {
			case inString && c == '\\':
				i++
			case c == '"':
				inString = !inString
			case inString:
			case c == '[' || c == '{':
				depth++
				deepest = max(deepest, depth)
			case c == ']' || c == '}':
				depth--
			}
		}
		return deepest > sourcecatalog.MaxDepth
	}
	end := se.Offset
	for end < int64(len(in)) && strings.IndexByte("+-.0123456789eE", in[end]) >= 0 {
		end++
	}
	lit := string(in[se.Offset:end])
	// big.Rat refuses exponents beyond about a million: decide far
	// overflow and underflow by the magnitude alone. Doubles lie between
	// 4.9e-324 and 1.8e308.
	switch e, zero := magnitude(lit); {
	case zero:
		return false
	case e > 310, e < -330:
		return true
	}
	exact, ok := new(big.Rat).SetString(lit)
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return true // out of range of a double
	}
	if f == 0 {
		return exact.Sign() != 0
	}
	if strings.ContainsAny(lit, ".eE") {
		return false // a fraction or exponent is rounded to the nearest double, by design
	}
	shortest, _ := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
	return exact.Cmp(shortest) != 0
}

// magnitude returns, for a JSON number literal, the decimal exponent e
// with 10^(e-1) <= |value| < 10^e, or reports that the value is zero.
// Exponents beyond ±10^9 saturate there.
func magnitude(lit string) (e int64, zero bool) {
	lit = strings.TrimPrefix(lit, "-")
	mant, exp, _ := strings.Cut(strings.ToLower(lit), "e")
	x, err := strconv.ParseInt(exp, 10, 64)
	if exp == "" {
		x = 0
	} else if err != nil || x > 1e9 || x < -1e9 {
		x = 1e9
		if exp[0] == '-' {
			x = -1e9
		}
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	first := strings.IndexAny(digits, "123456789")
	if first < 0 {
		return 0, true
	}
	return int64(len(intPart)-first) + x, false
}

func isIntentional(err error) bool {
	for _, d := range intentionalDifferences {
		if errors.Is(err, d) {
			return true
		}
	}
	return false
}

// TestIntentionalDifferences pins each documented difference from
// gowebpki/jcs to an input: jcs accepts it, Transform refuses it.
func TestIntentionalDifferences(t *testing.T) {
	for in, want := range map[string]error{
		`9007199254740993`:                ErrLossyNumber,
		`18446744073709551616`:            ErrLossyNumber,
		`[1e-400]`:                        ErrLossyNumber,
		`1e-1010000`:                      ErrLossyNumber,
		repeat("[", 65) + repeat("]", 65): ErrTooDeep,
	} {
		if _, err := jcs.Transform([]byte(in)); err != nil {
			t.Errorf("jcs refuses %.20q (%v): the difference is gone, update the docs", in, err)
		}
		if _, err := Transform([]byte(in)); !errors.Is(err, want) {
			t.Errorf("Transform(%.20q) = %v, want %v", in, err, want)
		}
	}
}

// FuzzEncoder checks that whatever the Append functions emit, Transform
// accepts and returns unchanged.
func FuzzEncoder(f *testing.F) {
	f.Add("", 0.0, int64(0))
	f.Add("a\"\\\x00\x1f\u2028😀", -0.0, int64(-1))
	f.Add("\xff", 1e21, int64(1)<<60)
	f.Add("A\u030a", 5e-324, int64(9007199254740993))
	f.Fuzz(func(t *testing.T, s string, x float64, n int64) {
		out := []byte(`{"a":`)
		out, err := AppendString(out, s)
		if err != nil {
			if utf8.ValidString(s) {
				t.Fatalf("AppendString(%q): %v", s, err)
			}
			return
		}
		out = append(out, `,"b":`...)
		out, err = AppendFloat(out, x)
		if err != nil {
			return // NaN or infinity
		}
		out = append(out, `,"c":`...)
		out = AppendInt(out, n)
		out = append(out, '}')
		got, err := Transform(out)
		if err != nil || string(got) != string(out) {
			t.Fatalf("encoder output %q: Transform = %q, %v", out, got, err)
		}
	})
}

// FuzzEscapedLen checks the word-at-a-time EscapedLen against the length of
// what AppendString writes.
func FuzzEscapedLen(f *testing.F) {
	f.Add([]byte(`{"a":"b\\"c"}`))
	f.Add([]byte("\x00\x1f\x7f\"\\\u2028 plain text, long enough for words"))
	// One control character at each place of the scan — the thirty-two-
	// and eight-byte steps and the tail — in the first block and the next,
	// among quotation marks and reverse solidi.
	for _, lead := range []string{"", strings.Repeat(`"q\`, 100)} {
		for k := range 41 {
			f.Add([]byte(lead + strings.Repeat("x", k) + "\x1f" + strings.Repeat("y", 40-k)))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !utf8.Valid(b) {
			return
		}
		out, err := AppendString(nil, string(b))
		if err != nil {
			t.Fatal(err)
		}
		if got := EscapedLen(b); got != len(out) {
			t.Fatalf("EscapedLen(%q) = %d, AppendString wrote %d", b, got, len(out))
		}
		if got := EscapedLen(string(b)); got != len(out) {
			t.Fatalf("EscapedLen(string %q) = %d, want %d", b, got, len(out))
		}
	})
}
