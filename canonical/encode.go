package canonical

import (
	"math"
	"strconv"
	"unicode/utf8"

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
		c := s[i]
		if !needsEscape[c] {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	return append(dst, s[start:]...)
}

// EscapedLen returns the number of bytes AppendString adds for s, quotes
// included.
func EscapedLen[T string | []byte](s T) int {
	n := len(s) + 2
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !needsEscape[c] {
			continue
		}
		switch c {
		case '"', '\\', '\b', '\f', '\n', '\r', '\t':
			n++
		default:
			n += 5
		}
	}
	return n
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
