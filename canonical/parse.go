package canonical

import (
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
	"github.com/yachtmemory/sourcecatalog"
)

// Transform returns the canonical encoding of the JSON text src. It returns
// a *SyntaxError when src breaks any rule of the package documentation.
func Transform(src []byte) ([]byte, error) {
	v, err := Parse(src)
	if err != nil {
		return nil, err
	}
	return v.AppendCanonical(make([]byte, 0, len(src))), nil
}

// Parse parses the JSON text src into a Value. It returns a *SyntaxError
// when src breaks any rule of the package documentation. The Value does not
// refer to src, which the caller may reuse.
func Parse(src []byte) (Value, error) {
	if len(src) >= 3 && src[0] == 0xEF && src[1] == 0xBB && src[2] == 0xBF {
		return Value{}, syntaxErr(0, ErrByteOrderMark)
	}
	// One copy of the input: every plain string is a substring of it.
	p := parser{s: string(src)}
	p.skipSpace()
	v, err := p.value()
	if err != nil {
		return Value{}, err
	}
	p.skipSpace()
	if p.i < len(p.s) {
		return Value{}, syntaxErr(p.i, ErrTrailingData)
	}
	return v, nil
}

type parser struct {
	s     string
	i     int
	depth int
}

func (p *parser) skipSpace() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) value() (Value, error) {
	if p.i >= len(p.s) {
		return Value{}, syntaxErr(p.i, ErrUnexpectedEnd)
	}
	switch c := p.s[p.i]; c {
	case '{':
		return p.object()
	case '[':
		return p.array()
	case '"':
		s, plain, err := p.str()
		if err != nil {
			return Value{}, err
		}
		v := Value{kind: String, str: s}
		if plain {
			v.flags = flagPlain
		}
		return v, nil
	case 't':
		return p.literal("true", Value{kind: Bool, flags: flagTrue})
	case 'f':
		return p.literal("false", Value{kind: Bool})
	case 'n':
		return p.literal("null", Value{kind: Null})
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return p.number()
	case '+', '.', 'N', 'I':
		return Value{}, syntaxErr(p.i, ErrInvalidNumber)
	default:
		return Value{}, p.unexpected()
	}
}

// unexpected reports the byte at p.i, which cannot start or continue JSON.
func (p *parser) unexpected() error {
	if p.i >= len(p.s) {
		return syntaxErr(p.i, ErrUnexpectedEnd)
	}
	if p.s[p.i] >= utf8.RuneSelf {
		if r, size := utf8.DecodeRuneInString(p.s[p.i:]); r == utf8.RuneError && size <= 1 {
			return syntaxErr(p.i, ErrInvalidUTF8)
		}
	}
	return syntaxErr(p.i, ErrSyntax)
}

func (p *parser) literal(word string, v Value) (Value, error) {
	if len(p.s)-p.i < len(word) || p.s[p.i:p.i+len(word)] != word {
		for k := 0; k < len(word); k++ {
			if p.i+k >= len(p.s) {
				return Value{}, syntaxErr(p.i+k, ErrUnexpectedEnd)
			}
			if p.s[p.i+k] != word[k] {
				return Value{}, syntaxErr(p.i+k, ErrSyntax)
			}
		}
	}
	p.i += len(word)
	if p.i < len(p.s) && isNameByte(p.s[p.i]) {
		return Value{}, syntaxErr(p.i, ErrSyntax)
	}
	return v, nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isNameByte reports bytes that may not directly follow a literal or number.
func isNameByte(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '.' || c == '_' || c == '+' || c == '-'
}

func (p *parser) number() (Value, error) {
	s, start := p.s, p.i
	i := start
	if s[i] == '-' {
		i++
	}
	switch {
	case i >= len(s):
		return Value{}, syntaxErr(i, ErrUnexpectedEnd)
	case s[i] == '0':
		i++
	case s[i] >= '1' && s[i] <= '9':
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	default:
		return Value{}, syntaxErr(start, ErrInvalidNumber)
	}
	intEnd := i
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || !isDigit(s[i]) {
			return Value{}, syntaxErr(start, ErrInvalidNumber)
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || !isDigit(s[i]) {
			return Value{}, syntaxErr(start, ErrInvalidNumber)
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	if i < len(s) && isNameByte(s[i]) {
		// "0123", "1.2.3", "0x10", "1_000", "1e5e5"
		return Value{}, syntaxErr(start, ErrInvalidNumber)
	}
	p.i = i
	lit := s[start:i]
	isInt := intEnd == i
	digits := intEnd - start
	if s[start] == '-' {
		digits--
	}
	if isInt && digits <= 15 {
		// Every integer below 10^15 is exact in a double, and its literal
		// (no leading zeros) is already its shortest form.
		var n int64
		for k := intEnd - digits; k < intEnd; k++ {
			n = n*10 + int64(s[k]-'0')
		}
		if s[start] == '-' {
			if n == 0 {
				return Value{kind: Number, flags: flagInteger, str: "0"}, nil
			}
			n = -n
		}
		return Value{kind: Number, flags: flagInteger, str: lit, num: float64(n)}, nil
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return Value{}, syntaxErr(start, ErrLossyNumber) // overflow
	}
	if f == 0 && hasNonZeroMantissa(lit) {
		return Value{}, syntaxErr(start, ErrLossyNumber) // underflow
	}
	text, err := jcs.NumberToJSON(f)
	if err != nil {
		return Value{}, syntaxErr(start, ErrLossyNumber)
	}
	v := Value{kind: Number, str: text, num: f}
	if isInt {
		if !sameDecimal(lit, text) {
			return Value{}, syntaxErr(start, ErrLossyNumber)
		}
		v.flags = flagInteger
	}
	return v, nil
}

func hasNonZeroMantissa(lit string) bool {
	for i := 0; i < len(lit); i++ {
		switch c := lit[i]; {
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
	return na == nb && da == db && ea == eb
}

// decimal splits a JSON number text into its significant digits (no leading
// or trailing zeros), the decimal exponent of the last of them, and the sign.
func decimal(s string) (digits string, exp int, neg bool) {
	if s != "" && s[0] == '-' {
		neg, s = true, s[1:]
	}
	mant := s
	for i := 0; i < len(s); i++ {
		if s[i] == 'e' || s[i] == 'E' {
			mant = s[:i]
			exp, _ = strconv.Atoi(s[i+1:]) // a sign '+' is accepted by Atoi
			break
		}
	}
	buf := make([]byte, 0, len(mant))
	for i := 0; i < len(mant); i++ {
		switch c := mant[i]; c {
		case '.':
			exp -= len(mant) - i - 1
		default:
			buf = append(buf, c)
		}
	}
	for len(buf) > 0 && buf[0] == '0' {
		buf = buf[1:]
	}
	for len(buf) > 0 && buf[len(buf)-1] == '0' {
		buf = buf[:len(buf)-1]
		exp++
	}
	return string(buf), exp, neg
}

// str parses the string that starts at p.i (a quotation mark) and returns its
// decoded text and whether that text needs no escaping in canonical form.
func (p *parser) str() (string, bool, error) {
	s := p.s
	start := p.i + 1
	for i := start; i < len(s); {
		c := s[i]
		switch {
		case c == '"':
			p.i = i + 1
			return s[start:i], true, nil
		case c == '\\':
			return p.escapedStr(start, i)
		case c < 0x20:
			return "", false, syntaxErr(i, ErrSyntax)
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size <= 1 {
				return "", false, syntaxErr(i, ErrInvalidUTF8)
			}
			i += size
		}
	}
	return "", false, syntaxErr(len(s), ErrUnexpectedEnd)
}

// escapedStr continues str from the first reverse solidus at i.
func (p *parser) escapedStr(start, i int) (string, bool, error) {
	s := p.s
	buf := make([]byte, 0, len(s[start:i])+16)
	buf = append(buf, s[start:i]...)
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			p.i = i + 1
			plain := true
			for _, b := range buf {
				if needsEscape[b] {
					plain = false
					break
				}
			}
			return string(buf), plain, nil
		case c == '\\':
			if i+1 >= len(s) {
				return "", false, syntaxErr(i+1, ErrUnexpectedEnd)
			}
			switch e := s[i+1]; e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, n, err := p.unicodeEscape(i)
				if err != nil {
					return "", false, err
				}
				buf = utf8.AppendRune(buf, r)
				i += n
				continue
			default:
				return "", false, syntaxErr(i, ErrSyntax)
			}
			i += 2
		case c < 0x20:
			return "", false, syntaxErr(i, ErrSyntax)
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size <= 1 {
				return "", false, syntaxErr(i, ErrInvalidUTF8)
			}
			buf = append(buf, s[i:i+size]...)
			i += size
		}
	}
	return "", false, syntaxErr(len(s), ErrUnexpectedEnd)
}

// unicodeEscape decodes the \uXXXX escape at i, and the low surrogate escape
// after it when the first is a high surrogate. It returns the rune and the
// number of input bytes consumed.
func (p *parser) unicodeEscape(i int) (rune, int, error) {
	r1, err := p.hex4(i)
	if err != nil {
		return 0, 0, err
	}
	switch {
	case r1 >= 0xDC00 && r1 <= 0xDFFF:
		return 0, 0, syntaxErr(i, ErrInvalidSurrogate) // low surrogate first
	case r1 < 0xD800 || r1 > 0xDBFF:
		return r1, 6, nil
	}
	j := i + 6
	if j+1 >= len(p.s) || p.s[j] != '\\' || p.s[j+1] != 'u' {
		return 0, 0, syntaxErr(i, ErrInvalidSurrogate) // lone high surrogate
	}
	r2, err := p.hex4(j)
	if err != nil {
		return 0, 0, err
	}
	if r2 < 0xDC00 || r2 > 0xDFFF {
		return 0, 0, syntaxErr(j, ErrInvalidSurrogate)
	}
	return utf16.DecodeRune(r1, r2), 12, nil
}

// hex4 reads the four hex digits of the \u escape at i.
func (p *parser) hex4(i int) (rune, error) {
	var r rune
	for k := i + 2; k < i+6; k++ {
		if k >= len(p.s) {
			return 0, syntaxErr(k, ErrUnexpectedEnd)
		}
		c := p.s[k]
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, syntaxErr(k, ErrSyntax)
		}
	}
	return r, nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > sourcecatalog.MaxDepth {
		return syntaxErr(p.i, ErrTooDeep)
	}
	return nil
}

func (p *parser) array() (Value, error) {
	if err := p.enter(); err != nil {
		return Value{}, err
	}
	p.i++ // '['
	p.skipSpace()
	var elems []Value
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		p.depth--
		return Value{kind: Array, elems: []Value{}}, nil
	}
	for {
		v, err := p.value()
		if err != nil {
			return Value{}, err
		}
		elems = append(elems, v)
		p.skipSpace()
		if p.i >= len(p.s) {
			return Value{}, syntaxErr(p.i, ErrUnexpectedEnd)
		}
		switch p.s[p.i] {
		case ',':
			p.i++
			p.skipSpace()
		case ']':
			p.i++
			p.depth--
			return Value{kind: Array, elems: elems}, nil
		default:
			return Value{}, p.unexpected()
		}
	}
}

func (p *parser) object() (Value, error) {
	if err := p.enter(); err != nil {
		return Value{}, err
	}
	p.i++ // '{'
	p.skipSpace()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		p.depth--
		return Value{kind: Object, mems: []Member{}}, nil
	}
	var mems []Member
	sorted := true
	for {
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return Value{}, p.unexpected()
		}
		off := p.i
		name, plain, err := p.str()
		if err != nil {
			return Value{}, err
		}
		p.skipSpace()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return Value{}, p.unexpected()
		}
		p.i++
		p.skipSpace()
		v, err := p.value()
		if err != nil {
			return Value{}, err
		}
		if n := len(mems); n > 0 && sorted && compareUTF16(mems[n-1].Name, name) >= 0 {
			sorted = false
		}
		mems = append(mems, Member{Name: name, Value: v, plain: plain, off: off})
		p.skipSpace()
		if p.i >= len(p.s) {
			return Value{}, syntaxErr(p.i, ErrUnexpectedEnd)
		}
		switch p.s[p.i] {
		case ',':
			p.i++
			p.skipSpace()
		case '}':
			p.i++
			p.depth--
			if !sorted {
				if err := sortMembers(mems); err != nil {
					return Value{}, err
				}
			}
			return Value{kind: Object, mems: mems}, nil
		default:
			return Value{}, p.unexpected()
		}
	}
}

// sortMembers puts mems in canonical order and rejects duplicate names,
// reporting the later of two duplicates in input order.
func sortMembers(mems []Member) error {
	slices.SortStableFunc(mems, func(a, b Member) int { return compareUTF16(a.Name, b.Name) })
	for k := 1; k < len(mems); k++ {
		if mems[k-1].Name == mems[k].Name {
			return syntaxErr(max(mems[k-1].off, mems[k].off), ErrDuplicateName)
		}
	}
	return nil
}

// compareUTF16 compares two valid UTF-8 strings by their UTF-16 code units,
// the order RFC 8785 sorts object members in. UTF-8 byte order equals code
// point order, which differs from UTF-16 order only between supplementary
// characters (surrogate pairs, 0xD800...) and U+E000–U+FFFF; at the first
// differing byte those are told apart by their lead bytes.
func compareUTF16(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return len(a) - len(b)
	}
	ca, cb := a[i], b[i]
	if ca >= 0xF0 && (cb == 0xEE || cb == 0xEF) {
		return -1
	}
	if cb >= 0xF0 && (ca == 0xEE || ca == 0xEF) {
		return 1
	}
	return int(ca) - int(cb)
}
