package canonical

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
)

func TestTransformValid(t *testing.T) {
	for _, tc := range validCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Transform([]byte(tc.in))
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(got))
			again, err := Transform(got)
			require.NoError(t, err, "canonical output must parse again")
			assert.Equal(t, string(got), string(again), "canonical output must be a fixed point")
		})
	}
}

func TestTransformInvalid(t *testing.T) {
	for _, tc := range invalidCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Transform([]byte(tc.in))
			require.Error(t, err)
			assert.Nil(t, got)
			assert.ErrorIs(t, err, tc.err)
			assert.ErrorIs(t, err, sourcecatalog.ErrMalformedJSON)
			var se *SyntaxError
			require.True(t, errors.As(err, &se))
			assert.Equal(t, tc.off, se.Offset, "offset")
			assert.NotContains(t, err.Error(), tc.in[:min(len(tc.in), 8)]+"\"", "error must not echo input")
		})
	}
}

// TestRFC8785Numbers checks the number table of RFC 8785 Appendix B: IEEE-754
// bit patterns and their canonical text.
func TestRFC8785Numbers(t *testing.T) {
	cases := []struct {
		bits uint64
		want string // "" for NaN and infinity, which must be refused
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x7fffffffffffffff, ""},
		{0x7ff0000000000000, ""},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	}
	for _, tc := range cases {
		f := math.Float64frombits(tc.bits)
		got, err := AppendFloat(nil, f)
		if tc.want == "" {
			assert.ErrorIs(t, err, ErrInvalidFloat, "%016x", tc.bits)
			continue
		}
		require.NoError(t, err, "%016x", tc.bits)
		assert.Equal(t, tc.want, string(got), "%016x", tc.bits)

		// The canonical text is a fixed point of Transform and parses back
		// to the same double.
		v, err := Parse(got)
		require.NoError(t, err, tc.want)
		assert.Equal(t, tc.want, v.NumberText())
		assert.Equal(t, math.Abs(f), math.Abs(v.Float()), tc.want)
	}
}

func TestAppendString(t *testing.T) {
	got, err := AppendString([]byte("x"), "a\"\\\n\x01\u2028😀")
	require.NoError(t, err)
	assert.Equal(t, `x"a\"\\\n\u0001`+"\u2028😀\"", string(got))
	assert.Equal(t, len(got)-1, EscapedLen("a\"\\\n\x01\u2028😀"))

	got, err = AppendString([]byte("keep"), "ok\xffno")
	assert.ErrorIs(t, err, ErrInvalidUTF8)
	var se *SyntaxError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, int64(2), se.Offset)
	assert.Equal(t, "keep", string(got), "dst unchanged on error")
}

func TestAppendInt(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0", -7: "-7", 1 << 53: "9007199254740992",
		1<<53 + 1: "9007199254740992", math.MaxInt64: "9223372036854776000",
	} {
		assert.Equal(t, want, string(AppendInt(nil, n)), "%d", n)
	}
}

func TestDigest(t *testing.T) {
	d := Sum([]byte(`{"records":[]}`))
	s := d.String()
	require.Len(t, s, 64)
	back, err := ParseDigest(s)
	require.NoError(t, err)
	assert.Equal(t, d, back)
	assert.Equal(t, s, string(d.AppendHex(nil)))
	for _, bad := range []string{"", s[:63], s + "0", "A" + s[1:], "g" + s[1:]} {
		_, err := ParseDigest(bad)
		assert.ErrorIs(t, err, sourcecatalog.ErrInvalidValue, bad)
	}
}

func TestValueAccessors(t *testing.T) {
	v, err := Parse([]byte(`{"b":[true,null,"s"],"a":42.5,"c":7}`))
	require.NoError(t, err)
	require.Equal(t, KindObject, v.Kind())
	m := v.Members()
	require.Len(t, m, 3)
	assert.Equal(t, "a", m[0].Name)
	assert.Equal(t, KindNumber, m[0].Value.Kind())
	assert.False(t, m[0].Value.IsIntegerLiteral())
	assert.Equal(t, 42.5, m[0].Value.Float())
	arr := m[1].Value.Elems()
	require.Len(t, arr, 3)
	assert.True(t, arr[0].Bool())
	assert.Equal(t, KindNull, arr[1].Kind())
	assert.Equal(t, "s", arr[2].Str())
	assert.Equal(t, "", arr[0].Str())
	assert.True(t, m[2].Value.IsIntegerLiteral())
	assert.Equal(t, "7", m[2].Value.NumberText())
	assert.Equal(t, "object", v.Kind().String())
}

func TestSameDecimal(t *testing.T) {
	same := [][2]string{{"100", "1e+2"}, {"0", "-0"}, {"1.50", "15e-1"}, {"18446744073709552000", "1.8446744073709552e+19"}}
	differ := [][2]string{{"1", "-1"}, {"1", "10"}, {"9007199254740993", "9007199254740992"}}
	for _, c := range same {
		assert.True(t, sameDecimal(c[0], c[1]), c)
	}
	for _, c := range differ {
		assert.False(t, sameDecimal(c[0], c[1]), c)
	}
}
