package canonical

import (
	"bytes"
	"strconv"
	"strings"
	"unsafe"
)

// Parse parses the JSON text src into a Value. It returns a *SyntaxError
// when src breaks any rule of the package documentation. The Value does not
// refer to src, which the caller may reuse.
//
// The tree is built from the canonical form of src: one copy of the text,
// which every number and every string without escapes refers to, and 16
// bytes a value.
func Parse(src []byte) (Value, error) {
	canon, flips, err := canonicalize(src, true)
	if err != nil {
		return Value{}, err
	}
	b := builder{s: canon, counts: countElements(canon), flips: flips}
	return b.value(), nil
}

// A builder reads a Value tree from canonical text, which it trusts.
type builder struct {
	s      []byte
	i      int
	counts []int32 // elements or members of each array and object, in order
	flips  []int   // see canonicalize
}

func (b *builder) value() Value {
	s := b.s
	switch s[b.i] {
	case '[':
		n := b.count()
		b.i++ // '['
		if n == 0 {
			b.i++ // ']'
			return newValue(KindArray, 0, nil, 0)
		}
		elems := make([]Value, n)
		for k := range elems {
			elems[k] = b.value()
			b.i++ // ',' or ']'
		}
		return newValue(KindArray, 0, unsafe.Pointer(&elems[0]), n)
	case '{':
		n := b.count()
		b.i++ // '{'
		if n == 0 {
			b.i++ // '}'
			return newValue(KindObject, 0, nil, 0)
		}
		mems := make([]Member, n)
		for k := range mems {
			mems[k].Name, _ = b.str()
			b.i++ // ':'
			mems[k].Value = b.value()
			b.i++ // ',' or '}'
		}
		return newValue(KindObject, 0, unsafe.Pointer(&mems[0]), n)
	case '"':
		text, plain := b.str()
		var flags uint8
		if plain {
			flags = flagPlain
		}
		return newValue(KindString, flags, unsafe.Pointer(unsafe.StringData(text)), len(text))
	case 't':
		b.i += len("true")
		return newValue(KindBool, flagTrue, nil, 0)
	case 'f':
		b.i += len("false")
		return newValue(KindBool, 0, nil, 0)
	case 'n':
		b.i += len("null")
		return newValue(KindNull, 0, nil, 0)
	}
	start := b.i
	for b.i < len(s) && s[b.i] != ',' && s[b.i] != ']' && s[b.i] != '}' {
		b.i++
	}
	text := s[start:b.i]
	isInt := isDigits(text)
	if len(b.flips) > 0 && b.flips[0] == start {
		isInt = !isInt
		b.flips = b.flips[1:]
	}
	var flags uint8
	if isInt {
		flags = flagInteger
	}
	return newValue(KindNumber, flags, unsafe.Pointer(&text[0]), len(text))
}

func (b *builder) count() int {
	n := b.counts[0]
	b.counts = b.counts[1:]
	return int(n)
}

// str reads the string at b.i and returns its decoded text, and whether it
// had no escapes: then the text is a part of b.s.
func (b *builder) str() (string, bool) {
	start := b.i + 1
	end := skipString(b.s, b.i)
	b.i = end
	raw := b.s[start : end-1]
	if strings.IndexByte(bytesString(raw), '\\') < 0 {
		return bytesString(raw), true
	}
	buf := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		var c byte
		c, i = nameByte(raw, i)
		buf = append(buf, c)
	}
	return unsafe.String(unsafe.SliceData(buf), len(buf)), false
}

// countElements returns the number of elements or members of each array
// and object in the canonical text s, in the order they open.
func countElements(s []byte) []int32 {
	// A bracket of each container, and a few inside strings: enough room.
	counts := make([]int32, 0, bytes.Count(s, []byte("["))+bytes.Count(s, []byte("{")))
	var open [maxNesting]int // indexes in counts
	top := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			i = skipString(s, i) - 1
		case '[', '{':
			open[top] = len(counts)
			top++
			counts = append(counts, 0)
		case ',':
			counts[open[top-1]]++
		case ']', '}':
			top--
			if c := s[i-1]; c != '[' && c != '{' {
				counts[open[top]]++ // the last element
			}
		}
	}
	return counts
}

const maxNesting = 64 // sourcecatalog.MaxDepth, as an array length

// skipString returns the offset after the canonical string at s[i].
func skipString(s []byte, i int) int {
	for i++; ; i++ {
		switch s[i] {
		case '\\':
			i++ // the escaped byte; \u00xx goes on with hex digits
		case '"':
			return i + 1
		}
	}
}

// skipValue returns the offset after the canonical value at s[i].
func skipValue(s []byte, i int) int {
	depth := 0
	for ; i < len(s); i++ {
		switch s[i] {
		case '"':
			i = skipString(s, i) - 1
		case '[', '{':
			depth++
			continue
		case ']', '}':
			if depth == 0 {
				return i // after a scalar
			}
			depth--
		case ',':
			if depth == 0 {
				return i
			}
			continue
		default:
			continue // inside a scalar, or a colon
		}
		if depth == 0 {
			return i + 1
		}
	}
	return i
}

// nameByte decodes one byte of the text of a canonical string, s[i:], and
// returns it and the offset of the next. Canonical escapes stand for one
// byte each: a control character, quotation mark or reverse solidus.
func nameByte(s []byte, i int) (byte, int) {
	if s[i] != '\\' {
		return s[i], i + 1
	}
	switch e := s[i+1]; e {
	case 'b':
		return '\b', i + 2
	case 'f':
		return '\f', i + 2
	case 'n':
		return '\n', i + 2
	case 'r':
		return '\r', i + 2
	case 't':
		return '\t', i + 2
	case 'u':
		return unhex(s[i+4])<<4 | unhex(s[i+5]), i + 6
	default:
		return e, i + 2 // quotation mark, reverse solidus
	}
}

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}

// compareNames compares the texts of two canonical strings, escapes
// decoded, by their UTF-16 code units, as compareUTF16 does.
func compareNames(a, b []byte) int {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		var ca, cb byte
		ca, i = nameByte(a, i)
		cb, j = nameByte(b, j)
		if ca != cb {
			return utf16Order(ca, cb)
		}
	}
	switch {
	case i < len(a):
		return 1
	case j < len(b):
		return -1
	}
	return 0
}

// compareUTF16 compares two valid UTF-8 strings by their UTF-16 code units,
// the order RFC 8785 sorts object members in.
func compareUTF16(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return len(a) - len(b)
	}
	return utf16Order(a[i], b[i])
}

// utf16Order orders two valid UTF-8 strings by the first byte in which
// they differ. UTF-8 byte order equals code point order, which differs from
// UTF-16 order only between supplementary characters (surrogate pairs,
// 0xD800...) and U+E000–U+FFFF; those are told apart by their lead bytes.
func utf16Order(ca, cb byte) int {
	if ca >= 0xF0 && (cb == 0xEE || cb == 0xEF) {
		return -1
	}
	if cb >= 0xF0 && (ca == 0xEE || ca == 0xEF) {
		return 1
	}
	return int(ca) - int(cb)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isNameByte reports bytes that may not directly follow a literal or number.
func isNameByte(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '.' || c == '_' || c == '+' || c == '-'
}

func hasNonZeroMantissa(lit []byte) bool {
	for _, c := range lit {
		switch {
		case c == 'e' || c == 'E':
			return false
		case c >= '1' && c <= '9':
			return true
		}
	}
	return false
}

// sameDecimal reports whether two JSON number texts denote the same decimal
// value. It compares significant digits and decimal exponents.
func sameDecimal(a, b string) bool {
	da, ea, na := decimal(a)
	db, eb, nb := decimal(b)
	if da == "" && db == "" {
		return true // both zero, whatever the sign
	}
	if na != nb || ea != eb {
		return false
	}
	i, j := 0, 0
	for {
		if i < len(da) && da[i] == '.' {
			i++
		}
		if j < len(db) && db[j] == '.' {
			j++
		}
		if i == len(da) || j == len(db) {
			return i == len(da) && j == len(db)
		}
		if da[i] != db[j] {
			return false
		}
		i++
		j++
	}
}

// decimal splits a JSON number text into its significant digits — from the
// first non-zero digit to the last, with the decimal point if it falls
// between them — the decimal exponent of the last of them, and the sign.
func decimal(s string) (digits string, exp int, neg bool) {
	if s != "" && s[0] == '-' {
		neg, s = true, s[1:]
	}
	mant := s
	if k := strings.IndexAny(s, "eE"); k >= 0 {
		mant = s[:k]
		exp, _ = strconv.Atoi(s[k+1:]) // a sign '+' is accepted by Atoi
	}
	if dot := strings.IndexByte(mant, '.'); dot >= 0 {
		exp -= len(mant) - dot - 1
	}
	first := strings.IndexAny(mant, "123456789")
	if first < 0 {
		return "", 0, neg
	}
	last := strings.LastIndexAny(mant, "123456789")
	for _, c := range mant[last+1:] {
		if c != '.' {
			exp++ // a trailing zero
		}
	}
	return mant[first : last+1], exp, neg
}
