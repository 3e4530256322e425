package canonical

import (
	"math"
	"strconv"
	"testing"

	"github.com/gowebpki/jcs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkSpan fails t unless Span(in) keeps its promise: what it accepts,
// Transform returns unchanged, with the nesting depth it reports; and
// IsCanonical agrees with it.
func checkSpan(t *testing.T, in []byte) {
	t.Helper()
	n, depth, ok := span(in)
	if IsCanonical(in) != (ok && n == len(in)) {
		t.Fatalf("IsCanonical(%q) disagrees with Span = %d, %v", in, n, ok)
	}
	if !ok {
		return
	}
	if n <= 0 || n > len(in) {
		t.Fatalf("Span(%q) = %d", in, n)
	}
	got, err := Transform(in[:n])
	if err != nil {
		t.Fatalf("Span accepts %q, Transform refuses it: %v", in[:n], err)
	}
	if string(got) != string(in[:n]) {
		t.Fatalf("Span accepts %q, but its canonical form is %q", in[:n], got)
	}
	v, _ := Parse(in[:n])
	if got := nestingOf(&v); got != depth {
		t.Fatalf("Span(%q) depth = %d, want %d", in[:n], depth, got)
	}
}

func nestingOf(v *Value) int {
	d := 0
	for i := range v.Elems() {
		d = max(d, nestingOf(&v.Elems()[i]))
	}
	for i := range v.Members() {
		d = max(d, nestingOf(&v.Members()[i].Value))
	}
	if v.Kind() == KindArray || v.Kind() == KindObject {
		d++
	}
	return d
}

// escapedName reports whether v has a member name that needs escaping, the
// canonical texts IsCanonical is allowed to refuse.
func escapedName(v *Value) bool {
	for i := range v.Elems() {
		if escapedName(&v.Elems()[i]) {
			return true
		}
	}
	for i, m := range v.Members() {
		if EscapedLen(m.Name) != len(m.Name)+2 || escapedName(&v.Members()[i].Value) {
			return true
		}
	}
	return false
}

// checkComplete fails t when in is valid JSON whose canonical form
// IsCanonical refuses without the documented excuse.
func checkComplete(t *testing.T, in []byte) {
	t.Helper()
	v, err := Parse(in)
	if err != nil {
		return
	}
	out := v.AppendCanonical(nil)
	if !IsCanonical(out) && !escapedName(&v) {
		t.Fatalf("IsCanonical refuses the canonical %q", out)
	}
	if string(out) == string(in) != IsCanonical(in) && !escapedName(&v) {
		t.Fatalf("IsCanonical(%q) = %v, canonical form %q", in, IsCanonical(in), out)
	}
}

func TestIsCanonical(t *testing.T) {
	for _, tc := range validCases {
		t.Run(tc.name, func(t *testing.T) {
			checkSpan(t, []byte(tc.in))
			checkSpan(t, []byte(tc.want))
			checkComplete(t, []byte(tc.in))
			v, err := Parse([]byte(tc.want))
			require.NoError(t, err)
			assert.Equal(t, tc.in == tc.want, IsCanonical([]byte(tc.in)))
			assert.Equal(t, !escapedName(&v), IsCanonical([]byte(tc.want)))
		})
	}
	for _, tc := range invalidCases {
		t.Run(tc.name, func(t *testing.T) {
			assert.False(t, IsCanonical([]byte(tc.in)))
			checkSpan(t, []byte(tc.in))
		})
	}
	for in, want := range map[string]bool{
		`{"a":1,"b":2}`:                     true,
		`{"b":1,"a":2}`:                     false,
		`{"a":1,"a":2}`:                     false,
		`{"a":{"b":1,"c":2},"b":[{"a":0}]}`: true,
		`{"a":{"c":1,"b":2}}`:               false,
		`{"\n":1}`:                          false, // conservative: escaped name
		`"\u001f\u0000\n\"\\"`:              true,
		`"\u001F"`:                          false,
		`"\u000a"`:                          false,
		`"\u0041"`:                          false,
		`"\/"`:                              false,
		`"\u2028"`:                          false,
		"\"\u2028\"":                        true,
		`[0,-1,123456789012345,-0]`:         false,
		`[0,-1,123456789012345]`:            true,
		`[1e+30,1e-7,0.5,-2.5,100000000000000000000,9007199254740993]`: false,
		`[1e+30,1e-7,0.5,-2.5,100000000000000000000,9007199254740992]`: true,
		`[1E+30]`:                          false,
		`[1e30]`:                           false,
		`[1.0]`:                            false,
		`[0.0]`:                            false,
		`[5e-324,1.7976931348623157e+308]`: true,
		`[1e-400]`:                         false,
		`[true,false,null]`:                true,
		`[true ]`:                          false,
		`{"a":1} `:                         false,
		`{"a":1}x`:                         false,
		"\xef\xbb\xbf{}":                   false,
		"\"\xff\"":                         false,
		"{\"\xff\":1}":                     false,
		`{"a":1,}`:                         false,
		`[1,]`:                             false,
		`{"a":1]`:                          false,
		`[1}`:                              false,
		`{"a"}`:                            false,
		``:                                 false,
		"{\"\ue000\":1,\"\U00010000\":2}":  false,
		"{\"\U00010000\":2,\"\ue000\":1}":  true,
		repeat("[", 64) + repeat("]", 64):  true,
		repeat("[", 65) + repeat("]", 65):  false,
	} {
		assert.Equal(t, want, IsCanonical([]byte(in)), "%q", in)
		checkSpan(t, []byte(in))
		checkComplete(t, []byte(in))
	}
}

func TestSpanPrefix(t *testing.T) {
	for in, want := range map[string]int{
		`{"a":[1,{}]},"b"`: 12,
		`12,3`:             2,
		`"x"}`:             3,
		`[]]`:              2,
		`0123`:             1, // only "0" is a value
	} {
		n, _, ok := span([]byte(in))
		assert.True(t, ok, in)
		assert.Equal(t, want, n, in)
	}
	_, depth, _ := span([]byte(`{"a":[[1],{"b":{}}],"c":2}`))
	assert.Equal(t, 4, depth)
}

// TestIsCanonicalNumber compares the allocation-free number check with
// jcs.NumberToJSON, which Parse uses.
func TestIsCanonicalNumber(t *testing.T) {
	for _, f := range []float64{1, -1, 0.1, 1e-6, 9.999999999999999e-7, 1e21, 9.999999999999999e20,
		1e-7, 5e-324, math.MaxFloat64, 1e9, 1e-9, 1e100, 123.456, 1 << 53, 1<<53 + 2, 1e300, 4.35} {
		checkNumber(t, f)
		checkNumber(t, -f)
	}
}

func checkNumber(t *testing.T, f float64) {
	t.Helper()
	text, err := jcs.NumberToJSON(f)
	require.NoError(t, err)
	assert.Equal(t, f != 0, isCanonicalNumber([]byte(text)), text)
	for _, other := range []string{strconv.FormatFloat(f, 'e', -1, 64), strconv.FormatFloat(f, 'g', -1, 64), strconv.FormatFloat(f, 'E', 20, 64)} {
		if other != text {
			assert.False(t, isCanonicalNumber([]byte(other)), "%s for %s", other, text)
		}
	}
}

func TestSpanAllocations(t *testing.T) {
	in := []byte(`{"a":[1,-2,"x\n\u0000y",true,null,{"b":{"c":[]}}],"d":"é😀","e":0.5,"f":1e+30}`)
	require.True(t, IsCanonical(in))
	assert.Zero(t, testing.AllocsPerRun(100, func() { IsCanonical(in) }))
}

// FuzzIsCanonical checks, for any input, that whatever Span and IsCanonical
// accept, Transform returns unchanged; and that IsCanonical accepts every
// canonical text but those with escaped member names.
func FuzzIsCanonical(f *testing.F) {
	seedTransform(f)
	for _, tc := range validCases {
		f.Add([]byte(tc.want))
	}
	f.Add([]byte(`{"kind":"path","meta":{"description":"x","zones":[{"lower":318.15,"state":"alarm"}]},"path":"a.b","unit":"K"}`))
	f.Add([]byte(`[1e+30,1e-7,0.5,-2.5,100000000000000000000,9007199254740992,5e-324]`))
	f.Fuzz(func(t *testing.T, in []byte) {
		checkSpan(t, in)
		checkComplete(t, in)
	})
}

// FuzzNumberText compares isCanonicalNumber with jcs.NumberToJSON.
func FuzzNumberText(f *testing.F) {
	f.Add(1.5)
	f.Add(1e21)
	f.Add(5e-324)
	f.Add(-1e-7)
	f.Fuzz(func(t *testing.T, x float64) {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return
		}
		checkNumber(t, x)
	})
}
