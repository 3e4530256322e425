package canonical

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/gowebpki/jcs"
)

// needsEscape[c] is true for the bytes RFC 8785 escapes inside strings:
// control characters, quotation mark and reverse solidus.
var needsEscape = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

const hexDigits = "0123456789abcdef"

// appendEscaped appends s with RFC 8785 string escaping and no quotes. s must
// be valid UTF-8.
func appendEscaped(dst []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; needsEscape[c] {
			dst = appendEscapedByte(append(dst, s[start:i]...), c)
			start = i + 1
		}
	}
	return append(dst, s[start:]...)
}

// appendEscapedByte appends the escape of a byte that needsEscape.
func appendEscapedByte(dst []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(dst, '\\', c)
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	}
	return append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
}

// EscapedLen returns the number of bytes AppendString adds for s, quotes
// included, without writing them.
func EscapedLen[T string | []byte](s T) int {
	var str string
	switch v := any(s).(type) {
	case string:
		str = v
	case []byte:
		str = unsafe.String(unsafe.SliceData(v), len(v)) // read only
	}
	return len(str) + 2 + escapeExtra(str)
}

const (
	highs = 0x8080808080808080
	lows  = 0x7f7f7f7f7f7f7f7f
)

// escapeExtra returns how many bytes escaping adds to s: one for each
// quotation mark and reverse solidus, counted by strings.Count, which uses
// vector instructions, and one or five for each control character, which a
// pass over blocks of s looks for eight bytes at a time.
func escapeExtra(s string) int {
	extra := strings.Count(s, `"`) + strings.Count(s, `\`)
	const block = 256
	for len(s) > 0 {
		b := s[:min(block, len(s))]
		s = s[len(b):]
		if hasControl(b) {
			extra += controlExtra(b)
		}
	}
	return extra
}

// hasControl reports whether s has a byte below 0x20.
func hasControl(s string) bool {
	var control uint64
	for len(s) >= 32 {
		a, b := le64(s[0:8]), le64(s[8:16])
		c, d := le64(s[16:24]), le64(s[24:32])
		control |= below20(a) | below20(b) | below20(c) | below20(d)
		s = s[32:]
	}
	for ; len(s) >= 8; s = s[8:] {
		control |= below20(le64(s[:8]))
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 {
			return true
		}
	}
	return control != 0
}

// le64 returns the first eight bytes of s, little-endian.
func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// below20 has the high bit set in the bytes of v below 0x20, and only
// there.
func below20(v uint64) uint64 { return ^((v&lows + 0x6060606060606060) | v) & highs }

// controlExtra returns how many bytes escaping adds to the control
// characters of s.
func controlExtra(s string) int {
	extra := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 0x20:
		case c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
			extra++
		default:
			extra += 5
		}
	}
	return extra
}

// AppendString appends s as a canonical JSON string, quotes included. It
// returns a *SyntaxError wrapping ErrInvalidUTF8, with the offset in s, when
// s is not valid UTF-8; dst is then returned unchanged.
func AppendString(dst []byte, s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return dst, syntaxErr(invalidUTF8At(s), ErrInvalidUTF8)
	}
	return appendQuoted(dst, s, false), nil
}

func invalidUTF8At(s string) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size <= 1 {
				return i
			}
		}
	}
	return len(s)
}

// AppendInt appends n in canonical number form. Integers beyond ±2^53 are
// printed as the IEEE-754 double they round to, as RFC 8785 requires.
func AppendInt(dst []byte, n int64) []byte {
	const exact = 1 << 53
	if n >= -exact && n <= exact {
		return strconv.AppendInt(dst, n, 10)
	}
	s, _ := jcs.NumberToJSON(float64(n))
	return append(dst, s...)
}

// AppendFloat appends f in canonical (ECMAScript shortest round-trip) number
// form. NaN and infinities have no JSON form: AppendFloat returns dst
// unchanged and an error wrapping ErrInvalidFloat.
func AppendFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, ErrInvalidFloat
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return strconv.AppendInt(dst, int64(f), 10), nil
	}
	s, err := jcs.NumberToJSON(f)
	if err != nil {
		return dst, ErrInvalidFloat
	}
	return append(dst, s...), nil
}
