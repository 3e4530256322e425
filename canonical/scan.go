package canonical

import (
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/yachtmemory/sourcecatalog"
)

// IsCanonical reports whether src is exactly its own canonical form, so
// that Transform(src) returns src unchanged. It decides in one pass over src
// and allocates nothing for integers, strings and literals.
//
// IsCanonical is conservative: it reports false for the few canonical texts
// with an escape in a member name. A false result therefore means "use
// Parse or Transform", which also report what is wrong, if anything.
func IsCanonical(src []byte) bool {
	n, _, ok := span(src)
	return ok && n == len(src)
}

// span reports the length n of the JSON value that src starts with, and its
// nesting depth (the levels of arrays and objects; 0 for a scalar), when that
// value is written exactly in its canonical form: Transform(src[:n]) then
// returns src[:n] unchanged. What follows the value is not looked at. ok is
// false when src does not start with such a value, and in the conservative
// cases of IsCanonical.
func span(src []byte) (n, depth int, ok bool) {
	type frame struct {
		object bool
		// prev is the span in src of the previous member name, quotes
		// excluded; prev[1] == 0 before the first member.
		prev [2]int
	}
	var stack [sourcecatalog.MaxDepth]frame
	top, i := 0, 0
	for {
		// A value starts at i.
		if i >= len(src) {
			return 0, 0, false
		}
		switch c := src[i]; c {
		case '{', '[':
			if top == len(stack) {
				return 0, 0, false
			}
			stack[top] = frame{object: c == '{'}
			top++
			depth = max(depth, top)
			i++
			if i < len(src) && (c == '{' && src[i] == '}' || c == '[' && src[i] == ']') {
				i++
				top--
				break // an empty container is a complete value
			}
			if c == '{' {
				if i, ok = spanName(src, i, &stack[top-1].prev); !ok {
					return 0, 0, false
				}
			}
			continue
		case '"':
			if i, ok = spanString(src, i); !ok {
				return 0, 0, false
			}
		case 't':
			if i, ok = spanLiteral(src, i, "true"); !ok {
				return 0, 0, false
			}
		case 'f':
			if i, ok = spanLiteral(src, i, "false"); !ok {
				return 0, 0, false
			}
		case 'n':
			if i, ok = spanLiteral(src, i, "null"); !ok {
				return 0, 0, false
			}
		default:
			if i, ok = spanNumber(src, i); !ok {
				return 0, 0, false
			}
		}
		// A value ended at i: close containers until one continues.
	closing:
		for {
			if top == 0 {
				return i, depth, true
			}
			if i >= len(src) {
				return 0, 0, false
			}
			f := &stack[top-1]
			switch src[i] {
			case ',':
				i++
				if f.object {
					if i, ok = spanName(src, i, &f.prev); !ok {
						return 0, 0, false
					}
				}
				break closing
			case '}':
				if !f.object {
					return 0, 0, false
				}
			case ']':
				if f.object {
					return 0, 0, false
				}
			default:
				return 0, 0, false
			}
			i++
			top--
		}
	}
}

// spanName reads the member name at i and the colon after it, and returns
// the offset of the member's value. The name must sort strictly after the
// previous one, prev, which it replaces. Names with escapes are refused: their
// order would have to be compared after decoding.
func spanName(src []byte, i int, prev *[2]int) (int, bool) {
	if i >= len(src) || src[i] != '"' {
		return 0, false
	}
	start := i + 1
	i = start
	for i < len(src) {
		c := src[i]
		if plainASCII[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			if prev[1] != 0 && compareUTF16(bytesString(src[prev[0]:prev[1]]), bytesString(src[start:i])) >= 0 {
				return 0, false
			}
			*prev = [2]int{start, i}
			i++
			if i >= len(src) || src[i] != ':' {
				return 0, false
			}
			return i + 1, true
		case c < utf8.RuneSelf: // reverse solidus or control character
			return 0, false
		default:
			r, size := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && size <= 1 {
				return 0, false
			}
			i += size
		}
	}
	return 0, false
}

// plainASCII[c] is true for the ASCII bytes that stand for themselves in a
// canonical string: all but control characters, quotation mark and reverse
// solidus.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// spanString reads the string at i (a quotation mark) and returns the offset
// after it. Escapes must be exactly those appendEscaped writes.
func spanString(src []byte, i int) (int, bool) {
	i++
	for i < len(src) {
		c := src[i]
		if plainASCII[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			return i + 1, true
		case c == '\\':
			if i+1 >= len(src) {
				return 0, false
			}
			switch src[i+1] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				// \u00xx, lowercase, for the control characters without a
				// short escape.
				if i+5 >= len(src) || src[i+2] != '0' || src[i+3] != '0' {
					return 0, false
				}
				hi, lo := src[i+4], src[i+5]
				var v byte
				switch {
				case lo >= '0' && lo <= '9':
					v = lo - '0'
				case lo >= 'a' && lo <= 'f':
					v = lo - 'a' + 10
				default:
					return 0, false
				}
				switch hi {
				case '0':
				case '1':
					v += 16
				default:
					return 0, false
				}
				if v == '\b' || v == '\f' || v == '\n' || v == '\r' || v == '\t' {
					return 0, false
				}
				i += 6
			default:
				return 0, false
			}
		case c < utf8.RuneSelf: // control character
			return 0, false
		default:
			r, size := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && size <= 1 {
				return 0, false
			}
			i += size
		}
	}
	return 0, false
}

func spanLiteral(src []byte, i int, word string) (int, bool) {
	if len(src)-i < len(word) || string(src[i:i+len(word)]) != word {
		return 0, false
	}
	return i + len(word), true
}

// spanNumber reads the number at i and returns the offset after it when its
// literal is its canonical text.
func spanNumber(src []byte, i int) (int, bool) {
	start := i
	neg := src[i] == '-'
	if neg {
		i++
	}
	switch {
	case i >= len(src):
		return 0, false
	case src[i] == '0':
		i++
	case src[i] >= '1' && src[i] <= '9':
		for i < len(src) && isDigit(src[i]) {
			i++
		}
	default:
		return 0, false
	}
	intEnd := i
	if i < len(src) && src[i] == '.' {
		i++
		if i >= len(src) || !isDigit(src[i]) {
			return 0, false
		}
		for i < len(src) && isDigit(src[i]) {
			i++
		}
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		if i >= len(src) || !isDigit(src[i]) {
			return 0, false
		}
		for i < len(src) && isDigit(src[i]) {
			i++
		}
	}
	if i == intEnd {
		digits := intEnd - start
		if neg {
			digits--
		}
		if digits <= 15 {
			// As in parser.number: the literal is its own canonical text,
			// but for -0.
			return i, !(neg && src[start+1] == '0')
		}
	}
	return i, isCanonicalNumber(src[start:i])
}

// isCanonicalNumber reports whether the number literal lit (valid JSON
// syntax) parses without error to a double whose canonical text is lit.
// It allocates nothing; zero, whose only canonical text "0" spanNumber
// accepts itself, is refused here.
func isCanonicalNumber(lit []byte) bool {
	f, err := strconv.ParseFloat(bytesString(lit), 64)
	if err != nil || f == 0 {
		return false
	}
	var buf [40]byte
	return string(appendNumber(buf[:0], f)) == string(lit)
}

// appendNumber appends the canonical text of the finite double f, as
// jcs.NumberToJSON formats it: ECMAScript's shortest round-trip form.
func appendNumber(b []byte, f float64) []byte {
	if f == 0 {
		return append(b, '0') // and -0
	}
	if f < 0 {
		b = append(b, '-')
		f = -f
	}
	if f < 1e21 && f >= 1e-6 {
		return strconv.AppendFloat(b, f, 'f', -1, 64)
	}
	at := len(b)
	b = strconv.AppendFloat(b, f, 'e', -1, 64)
	// Go writes at least two exponent digits, "1e+09"; ECMAScript "1e+9".
	for k := len(b) - 1; k > at; k-- {
		if b[k] == 'e' {
			if b[k+2] == '0' {
				b = append(b[:k+2], b[k+3:]...)
			}
			break
		}
	}
	return b
}

// bytesString views b as a string for reading only; b must not change while
// the string is in use.
func bytesString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
