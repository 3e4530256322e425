package canonical

import (
	"bytes"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/yachtmemory/sourcecatalog"
)

// Transform returns the canonical encoding of the JSON text src. It returns
// a *SyntaxError when src breaks any rule of the package documentation.
//
// Transform allocates little beyond its result: text that is canonical
// already is checked and copied; other text is rewritten in one pass, and
// only the objects whose members are out of order are sorted, in place.
func Transform(src []byte) ([]byte, error) {
	out, _, err := canonicalize(src, false)
	return out, err
}

// canonicalize returns the canonical encoding of src. With flips, it also
// returns the offsets in the result of the numbers whose canonical text
// tells wrongly whether the input literal was an integer, that is, written
// with digits only: "4.0" becomes "4", "1000000000000000000000" becomes
// "1e+21". Parse needs them; every other number is an integer literal
// exactly when its canonical text has no fraction or exponent.
func canonicalize(src []byte, flips bool) ([]byte, []int, error) {
	if IsCanonical(src) {
		return bytes.Clone(src), nil, nil
	}
	if len(src) >= 3 && src[0] == 0xEF && src[1] == 0xBB && src[2] == 0xBF {
		return nil, nil, syntaxErr(0, ErrByteOrderMark)
	}
	t := transformer{src: src, out: make([]byte, 0, len(src)), recordFlips: flips}
	t.skipSpace()
	if err := t.value(); err != nil {
		return nil, nil, err
	}
	t.skipSpace()
	if t.i < len(src) {
		return nil, nil, syntaxErr(t.i, ErrTrailingData)
	}
	return t.out, t.flips, nil
}

// A transformer writes the canonical form of src to out while it checks src
// against every rule, in input order, so that the first problem in the
// input is the one reported.
type transformer struct {
	src   []byte
	i     int // the next byte of src
	depth int
	out   []byte

	// starts holds the positions in out of the members of the objects
	// being written, the innermost last: an object's members are found
	// where they were written, never by scanning its text again, so that
	// sorting costs the object's size once, not once per level it nests.
	starts []int
	// mems holds those of the object being sorted, in name order, and tmp
	// its bytes while they are put in order.
	mems []int
	tmp  []byte

	recordFlips bool
	flips       []int
	movedFlips  []int // scratch for sortMembers
}

func (t *transformer) skipSpace() {
	src, i := t.src, t.i
	for i < len(src) && (src[i] == ' ' || src[i] == '\n' || src[i] == '\t' || src[i] == '\r') {
		i++
	}
	t.i = i
}

func (t *transformer) value() error {
	src := t.src
	if t.i >= len(src) {
		return syntaxErr(t.i, ErrUnexpectedEnd)
	}
	switch c := src[t.i]; c {
	case '{':
		return t.object()
	case '[':
		return t.array()
	case '"':
		_, err := t.str()
		return err
	case 't':
		return t.literal("true")
	case 'f':
		return t.literal("false")
	case 'n':
		return t.literal("null")
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return t.number()
	case '+', '.', 'N', 'I':
		return syntaxErr(t.i, ErrInvalidNumber)
	default:
		return t.unexpected()
	}
}

// unexpected reports the byte at t.i, which cannot start or continue JSON.
func (t *transformer) unexpected() error {
	if t.i >= len(t.src) {
		return syntaxErr(t.i, ErrUnexpectedEnd)
	}
	if t.src[t.i] >= utf8.RuneSelf {
		if r, size := utf8.DecodeRune(t.src[t.i:]); r == utf8.RuneError && size <= 1 {
			return syntaxErr(t.i, ErrInvalidUTF8)
		}
	}
	return syntaxErr(t.i, ErrSyntax)
}

func (t *transformer) literal(word string) error {
	src, i := t.src, t.i
	if len(src)-i < len(word) || string(src[i:i+len(word)]) != word {
		for k := 0; k < len(word); k++ {
			if i+k >= len(src) {
				return syntaxErr(i+k, ErrUnexpectedEnd)
			}
			if src[i+k] != word[k] {
				return syntaxErr(i+k, ErrSyntax)
			}
		}
	}
	i += len(word)
	if i < len(src) && isNameByte(src[i]) {
		return syntaxErr(i, ErrSyntax)
	}
	t.i = i
	t.out = append(t.out, word...)
	return nil
}

func (t *transformer) number() error {
	src, start := t.src, t.i
	lit, isInt, err := scanNumber(src, start)
	if err != nil {
		return err
	}
	t.i = start + len(lit)
	at := len(t.out)
	digits := len(lit)
	if lit[0] == '-' {
		digits--
	}
	if isInt && digits <= 15 {
		// Every integer below 10^15 is exact in a double, and its literal
		// (no leading zeros) is already its shortest form.
		if lit[0] == '-' && lit[1] == '0' {
			t.out = append(t.out, '0')
		} else {
			t.out = append(t.out, lit...)
		}
		return nil
	}
	f, err := strconv.ParseFloat(bytesString(lit), 64)
	if err != nil {
		return syntaxErr(start, ErrLossyNumber) // overflow
	}
	if f == 0 && hasNonZeroMantissa(lit) {
		return syntaxErr(start, ErrLossyNumber) // underflow
	}
	t.out = appendNumber(t.out, f)
	text := t.out[at:]
	if isInt && !sameDecimal(bytesString(lit), bytesString(text)) {
		return syntaxErr(start, ErrLossyNumber)
	}
	if t.recordFlips && isInt != isDigits(text) {
		t.flips = append(t.flips, at)
	}
	return nil
}

// isDigits reports whether a number's text has no fraction or exponent.
func isDigits(text []byte) bool {
	return bytes.IndexByte(text, '.') < 0 && bytes.IndexByte(text, 'e') < 0 && bytes.IndexByte(text, 'E') < 0
}

// scanNumber reads the number literal at src[start] (a minus sign or a
// digit) and reports whether it is an integer literal: no fraction, no
// exponent. A literal outside the grammar, also one cut off by the end of
// the text, is ErrInvalidNumber at its start, never ErrUnexpectedEnd.
func scanNumber(src []byte, start int) (lit []byte, isInt bool, err error) {
	i := start
	if src[i] == '-' {
		i++
	}
	switch {
	case i < len(src) && src[i] == '0':
		i++
	case i < len(src) && src[i] >= '1' && src[i] <= '9':
		for i < len(src) && isDigit(src[i]) {
			i++
		}
	default:
		// "-x", and "-" at the end of the text: a number cut off is
		// not a number, as "1." and "1e" are not (SPEC.md §3.4).
		return nil, false, syntaxErr(start, ErrInvalidNumber)
	}
	intEnd := i
	if i < len(src) && src[i] == '.' {
		i++
		if i >= len(src) || !isDigit(src[i]) {
			return nil, false, syntaxErr(start, ErrInvalidNumber)
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
			return nil, false, syntaxErr(start, ErrInvalidNumber)
		}
		for i < len(src) && isDigit(src[i]) {
			i++
		}
	}
	if i < len(src) && isNameByte(src[i]) {
		// "0123", "1.2.3", "0x10", "1_000", "1e5e5"
		return nil, false, syntaxErr(start, ErrInvalidNumber)
	}
	return src[start:i], intEnd == i, nil
}

// str reads the string at t.i (a quotation mark) and writes it in canonical
// form. It reports whether the output holds an escape.
func (t *transformer) str() (escaped bool, err error) {
	src := t.src
	start := t.i + 1
	for i := start; i < len(src); {
		c := src[i]
		switch {
		case plainASCII[c]:
			i++
		case c == '"':
			t.out = append(t.out, src[t.i:i+1]...)
			t.i = i + 1
			return false, nil
		case c == '\\':
			t.out = append(t.out, src[t.i:i]...)
			return t.escapedStr(i)
		case c < utf8.RuneSelf:
			return false, syntaxErr(i, ErrSyntax) // control character
		default:
			r, size := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && size <= 1 {
				return false, syntaxErr(i, ErrInvalidUTF8)
			}
			i += size
		}
	}
	return false, syntaxErr(len(src), ErrUnexpectedEnd)
}

// escapedStr continues str at the first reverse solidus, i: what precedes it
// is written already.
func (t *transformer) escapedStr(i int) (escaped bool, err error) {
	src, out := t.src, t.out
	for i < len(src) {
		c := src[i]
		switch {
		case plainASCII[c]:
			out = append(out, c)
			i++
		case c == '"':
			t.out = append(out, '"')
			t.i = i + 1
			return escaped, nil
		case c == '\\':
			if i+1 >= len(src) {
				return false, syntaxErr(i+1, ErrUnexpectedEnd)
			}
			var r rune
			n := 2
			switch e := src[i+1]; e {
			case '"', '\\', '/':
				r = rune(e)
			case 'b':
				r = '\b'
			case 'f':
				r = '\f'
			case 'n':
				r = '\n'
			case 'r':
				r = '\r'
			case 't':
				r = '\t'
			case 'u':
				if r, n, err = unicodeEscape(src, i); err != nil {
					return false, err
				}
			default:
				return false, syntaxErr(i, ErrSyntax)
			}
			if r < utf8.RuneSelf && !plainASCII[r] {
				out = appendEscapedByte(out, byte(r))
				escaped = true
			} else {
				out = utf8.AppendRune(out, r)
			}
			i += n
		case c < utf8.RuneSelf:
			return false, syntaxErr(i, ErrSyntax) // control character
		default:
			r, size := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && size <= 1 {
				return false, syntaxErr(i, ErrInvalidUTF8)
			}
			out = append(out, src[i:i+size]...)
			i += size
		}
	}
	return false, syntaxErr(len(src), ErrUnexpectedEnd)
}

// unicodeEscape decodes the \uXXXX escape at i, and the low surrogate escape
// after it when the first is a high surrogate. It returns the rune and the
// number of input bytes consumed.
func unicodeEscape(src []byte, i int) (rune, int, error) {
	r1, err := hex4(src, i)
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
	if j+1 >= len(src) || src[j] != '\\' || src[j+1] != 'u' {
		return 0, 0, syntaxErr(i, ErrInvalidSurrogate) // lone high surrogate
	}
	r2, err := hex4(src, j)
	if err != nil {
		return 0, 0, err
	}
	if r2 < 0xDC00 || r2 > 0xDFFF {
		return 0, 0, syntaxErr(j, ErrInvalidSurrogate)
	}
	return utf16.DecodeRune(r1, r2), 12, nil
}

// hex4 reads the four hex digits of the \u escape at i.
func hex4(src []byte, i int) (rune, error) {
	var r rune
	for k := i + 2; k < i+6; k++ {
		if k >= len(src) {
			return 0, syntaxErr(k, ErrUnexpectedEnd)
		}
		c := src[k]
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

func (t *transformer) enter() error {
	t.depth++
	if t.depth > sourcecatalog.MaxDepth {
		return syntaxErr(t.i, ErrTooDeep)
	}
	return nil
}

func (t *transformer) array() error {
	if err := t.enter(); err != nil {
		return err
	}
	t.i++ // '['
	t.out = append(t.out, '[')
	t.skipSpace()
	if t.i < len(t.src) && t.src[t.i] == ']' {
		t.i++
		t.depth--
		t.out = append(t.out, ']')
		return nil
	}
	for {
		if err := t.value(); err != nil {
			return err
		}
		t.skipSpace()
		if t.i >= len(t.src) {
			return syntaxErr(t.i, ErrUnexpectedEnd)
		}
		switch t.src[t.i] {
		case ',':
			t.i++
			t.out = append(t.out, ',')
			t.skipSpace()
		case ']':
			t.i++
			t.depth--
			t.out = append(t.out, ']')
			return nil
		default:
			return t.unexpected()
		}
	}
}

// object writes the object at t.i. Members are written as they come, and
// each name is compared with the one before. When an object ends with its
// members out of order, they are sorted and the object rewritten in that
// order, in place.
//
// A name that repeats an earlier one is found when the object ends, or,
// when a problem comes first, at that problem: the repeated name precedes
// it in the text and is reported instead, so that the first problem in
// text order is the one reported (SPEC.md §10.3).
func (t *transformer) object() error {
	if err := t.enter(); err != nil {
		return err
	}
	in := t.i
	t.i++ // '{'
	open := len(t.out)
	t.out = append(t.out, '{')
	t.skipSpace()
	if t.i < len(t.src) && t.src[t.i] == '}' {
		t.i++
		t.depth--
		t.out = append(t.out, '}')
		return nil
	}
	base := len(t.starts)
	defer func() { t.starts = t.starts[:base] }()
	sorted, names, err := t.members()
	if err != nil {
		if !sorted {
			// A name among those read in full that repeats an earlier
			// one precedes the problem err reports in the text.
			if _, dup := t.duplicateName(base, in, names); dup != nil {
				return dup
			}
		}
		return err
	}
	t.depth--
	if !sorted {
		if err := t.sortMembers(open, in, base); err != nil {
			return err
		}
	}
	t.out = append(t.out, '}')
	return nil
}

// members reads and writes the members of the object whose '{' object
// has read, and its '}'. It reports whether their names came in strictly
// increasing order and how many names it read in full, also when it fails.
func (t *transformer) members() (sorted bool, names int, err error) {
	sorted = true
	var prev [2]int
	prevEscaped := false
	for {
		if t.i >= len(t.src) || t.src[t.i] != '"' {
			return sorted, names, t.unexpected()
		}
		if names > 0 {
			t.out = append(t.out, ',')
		}
		at := len(t.out)
		t.starts = append(t.starts, at)
		escaped, err := t.str()
		if err != nil {
			return sorted, names, err
		}
		name := [2]int{at + 1, len(t.out) - 1}
		if sorted && names > 0 && t.compare(prev, prevEscaped, name, escaped) >= 0 {
			sorted = false
		}
		names++
		prev, prevEscaped = name, escaped
		t.skipSpace()
		if t.i >= len(t.src) || t.src[t.i] != ':' {
			return sorted, names, t.unexpected()
		}
		t.i++
		t.out = append(t.out, ':')
		t.skipSpace()
		if err := t.value(); err != nil {
			return sorted, names, err
		}
		t.skipSpace()
		if t.i >= len(t.src) {
			return sorted, names, syntaxErr(t.i, ErrUnexpectedEnd)
		}
		switch t.src[t.i] {
		case ',':
			t.i++
			t.skipSpace()
		case '}':
			t.i++
			return sorted, names, nil
		default:
			return sorted, names, t.unexpected()
		}
	}
}

// compare compares two member names in the output by UTF-16 code units.
func (t *transformer) compare(a [2]int, aEscaped bool, b [2]int, bEscaped bool) int {
	x, y := t.out[a[0]:a[1]], t.out[b[0]:b[1]]
	if !aEscaped && !bEscaped {
		return compareUTF16(bytesString(x), bytesString(y))
	}
	return compareNames(x, y)
}

// sortMembers puts in canonical order the members of the object written
// to t.out from its '{' at open, whose own '{' is at t.src[in] and whose
// members start at t.starts[base:]. It rejects a name that repeats an
// earlier one, reporting the first such name in input order.
func (t *transformer) sortMembers(open, in, base int) error {
	out := t.out
	mems, err := t.duplicateName(base, in, -1)
	if err != nil {
		return err
	}
	written := t.starts[base:]                     // in input order: a member ends before the next starts
	first, _ := slices.BinarySearch(t.flips, open) // the object's flips
	n := len(t.flips) - first
	moved := slices.Grow(t.movedFlips[:0], n)[:n] // reused: nested objects must not allocate per level
	t.movedFlips = moved
	tmp := slices.Grow(t.tmp[:0], len(out)-open-1)
	for k, m := range mems {
		if k > 0 {
			tmp = append(tmp, ',')
		}
		end := len(out)
		if k, _ := slices.BinarySearch(written, m); k+1 < len(written) {
			end = written[k+1] - 1 // the comma
		}
		// The member's flips move with it.
		i, _ := slices.BinarySearch(t.flips, m)
		for ; i < len(t.flips) && t.flips[i] < end; i++ {
			moved[i-first] = t.flips[i] + open + 1 + len(tmp) - m
		}
		tmp = append(tmp, out[m:end]...)
	}
	copy(out[open+1:], tmp)
	t.tmp = tmp
	if moved != nil {
		slices.Sort(moved)
		copy(t.flips[first:], moved)
	}
	return nil
}

// duplicateName returns the starts of the object's first n members (all
// when n < 0), as memberStarts does, and an error of ErrDuplicateName at
// the first of their names, in input order, that repeats an earlier one.
func (t *transformer) duplicateName(base, in, n int) ([]int, error) {
	mems := t.memberStarts(base, n)
	if at := firstRepeat(t.out, mems); at >= 0 {
		return nil, syntaxErr(memberOffset(t.src, in, rank(mems, at)), ErrDuplicateName)
	}
	return mems, nil
}

// memberStarts returns the positions in t.out of the first n members, or
// of all when n < 0, of the object whose members start at t.starts[base:],
// in input order. Every member but the n-th must be complete; of the n-th
// only the name is read. The slice is t.mems, reused: the caller may sort
// it.
func (t *transformer) memberStarts(base, n int) []int {
	written := t.starts[base:]
	if n >= 0 {
		written = written[:n]
	}
	t.mems = append(t.mems[:0], written...)
	return t.mems
}

// firstRepeat sorts mems, the positions in out of an object's members, by
// name and then by position, and returns the position of the first member
// in input order whose name repeats an earlier member's, or -1.
func firstRepeat(out []byte, mems []int) int {
	slices.SortFunc(mems, func(a, b int) int {
		if c := compareAt(out, a, b); c != 0 {
			return c
		}
		return a - b
	})
	first := -1
	for k := 1; k < len(mems); k++ {
		// Members are written in input order: of equal names, the later
		// has the larger position, and sorts after.
		if (first < 0 || mems[k] < first) && compareAt(out, mems[k-1], mems[k]) == 0 {
			first = mems[k]
		}
	}
	return first
}

// rank returns the index in input order of the member at position at:
// the number of members written before it.
func rank(mems []int, at int) int {
	n := 0
	for _, m := range mems {
		if m < at {
			n++
		}
	}
	return n
}

// compareAt compares the names of the members at out[a] and out[b], escapes
// decoded, by their UTF-16 code units.
func compareAt(out []byte, a, b int) int {
	i, j := a+1, b+1
	for {
		// A quotation mark in a canonical name is escaped: a bare one
		// ends the name.
		if endA, endB := out[i] == '"', out[j] == '"'; endA || endB {
			switch {
			case endA && endB:
				return 0
			case endA:
				return -1
			}
			return 1
		}
		var ca, cb byte
		ca, i = nameByte(out, i)
		cb, j = nameByte(out, j)
		if ca != cb {
			return utf16Order(ca, cb)
		}
	}
}

// memberOffset returns the offset in src of the name of member k, from 0,
// of the object at src[open], which is valid JSON as far as it goes.
func memberOffset(src []byte, open, k int) int {
	depth, name := 0, true // name: the next string at depth 0 is a name
	for i := open + 1; i < len(src); i++ {
		switch src[i] {
		case '"':
			if depth == 0 && name {
				if k == 0 {
					return i
				}
				k--
				name = false
			}
			for i++; src[i] != '"'; i++ {
				if src[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case ',':
			name = name || depth == 0
		}
	}
	return open
}

// TransformNumbers is Transform that also returns Numbers, which tells for
// each number of the result whether src wrote it as an integer literal:
// digits only, without fraction or exponent. The canonical text alone does
// not tell: "4.0" and "4e1" become "4" and "40". TransformNumbers allocates
// as Transform does, and more only when such numbers occur.
func TransformNumbers(src []byte) ([]byte, Numbers, error) {
	out, flips, err := canonicalize(src, true)
	return out, Numbers{flips: flips}, err
}

// Numbers tells how the input of TransformNumbers wrote each number of its
// result. The zero Numbers describes canonical input.
type Numbers struct {
	// flips holds, in increasing order, the offsets of the numbers whose
	// canonical text tells wrongly whether their literal was an integer
	// literal (see canonicalize).
	flips []int
}

// IsIntegerLiteral reports whether the number whose canonical text starts at
// canon[off], canon being the result that came with n, was written as an
// integer literal. It reports false when no number starts there.
func (n Numbers) IsIntegerLiteral(canon []byte, off int) bool {
	if off < 0 || off >= len(canon) || canon[off] != '-' && !isDigit(canon[off]) {
		return false
	}
	end := off + 1
	for end < len(canon) && canon[end] != ',' && canon[end] != ']' && canon[end] != '}' {
		end++
	}
	_, flipped := slices.BinarySearch(n.flips, off)
	return isDigits(canon[off:end]) != flipped
}
