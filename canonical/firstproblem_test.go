package canonical

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/yachtmemory/sourcecatalog"
)

// A refScanner finds the first problem of a JSON text under SPEC.md §3.4 on
// its own, written from the rules and not from Transform: a plain
// recursive descent that checks every rule the moment its bytes are read
// and stops at the first problem, so that problem is the first in text
// order. Unlike Transform it keeps each object's names in a map, decoded,
// and finds a duplicate as soon as its name is read; numbers are judged
// with strconv and by their digits alone.
type refScanner struct {
	src   []byte
	i     int
	depth int
}

// refProblem is the offset and detail of a problem, or detail nil.
type refProblem struct {
	off    int
	detail error
}

// refFirstProblem returns the first problem of src, or detail nil when src
// is strict JSON.
func refFirstProblem(src []byte) refProblem {
	if strings.HasPrefix(string(src), "\xEF\xBB\xBF") {
		return refProblem{0, ErrByteOrderMark}
	}
	s := &refScanner{src: src}
	s.space()
	if p := s.value(); p.detail != nil {
		return p
	}
	s.space()
	if s.i < len(src) {
		return refProblem{s.i, ErrTrailingData} // whatever the byte
	}
	return refProblem{}
}

func (s *refScanner) space() {
	for s.i < len(s.src) && strings.IndexByte(" \t\n\r", s.src[s.i]) >= 0 {
		s.i++
	}
}

func (s *refScanner) end() bool { return s.i >= len(s.src) }

// stray reports the byte at s.i, which no rule expects there.
func (s *refScanner) stray() refProblem {
	if s.end() {
		return refProblem{s.i, ErrUnexpectedEnd}
	}
	if r, n := utf8.DecodeRune(s.src[s.i:]); r == utf8.RuneError && n <= 1 {
		return refProblem{s.i, ErrInvalidUTF8} // invalid UTF-8 anywhere
	}
	return refProblem{s.i, ErrSyntax} // a character, valid UTF-8, out of place
}

func (s *refScanner) value() refProblem {
	if s.end() {
		return refProblem{s.i, ErrUnexpectedEnd}
	}
	switch c := s.src[s.i]; {
	case c == '{':
		return s.object()
	case c == '[':
		return s.array()
	case c == '"':
		_, p := s.str()
		return p
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	case strings.IndexByte("+.NI", c) >= 0: // +1, .5, NaN, Infinity
		return refProblem{s.i, ErrInvalidNumber}
	}
	return s.stray()
}

// glued reports bytes that make a literal or a number before them
// malformed.
func glued(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || strings.IndexByte("._+-", c) >= 0
}

func (s *refScanner) literal(word string) refProblem {
	for k := range len(word) {
		switch {
		case s.end():
			return refProblem{s.i, ErrUnexpectedEnd}
		case s.src[s.i] != word[k]:
			return refProblem{s.i, ErrSyntax}
		}
		s.i++
	}
	if !s.end() && glued(s.src[s.i]) {
		return refProblem{s.i, ErrSyntax}
	}
	return refProblem{}
}

func (s *refScanner) number() refProblem {
	start := s.i
	digits := func() int {
		n := 0
		for !s.end() && s.src[s.i] >= '0' && s.src[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	bad := refProblem{start, ErrInvalidNumber}
	if s.src[s.i] == '-' {
		s.i++
	}
	intStart := s.i
	if n := digits(); n == 0 || n > 1 && s.src[intStart] == '0' {
		return bad
	}
	integer := true
	if !s.end() && s.src[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return bad
		}
		integer = false
	}
	if !s.end() && (s.src[s.i] == 'e' || s.src[s.i] == 'E') {
		s.i++
		if !s.end() && (s.src[s.i] == '+' || s.src[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return bad
		}
		integer = false
	}
	if !s.end() && glued(s.src[s.i]) {
		return bad
	}
	lit := string(s.src[start:s.i])
	f, err := strconv.ParseFloat(lit, 64)
	switch {
	case err != nil:
		return refProblem{start, ErrLossyNumber} // beyond a double
	case f == 0:
		mant, _, _ := strings.Cut(strings.ToLower(lit), "e")
		if strings.ContainsAny(mant, "123456789") {
			return refProblem{start, ErrLossyNumber} // underflow
		}
	case integer:
		// The literal's digits against those of the double's shortest
		// decimal, written out in full.
		full := strconv.FormatFloat(f, 'f', -1, 64)
		if strings.TrimPrefix(lit, "-") != strings.TrimPrefix(full, "-") {
			return refProblem{start, ErrLossyNumber}
		}
	}
	return refProblem{}
}

// str reads a string and returns its text, surrogate pairs decoded.
func (s *refScanner) str() (string, refProblem) {
	var text []rune
	s.i++ // the quotation mark
	for {
		if s.end() {
			return "", refProblem{s.i, ErrUnexpectedEnd}
		}
		c := s.src[s.i]
		switch {
		case c == '"':
			s.i++
			return string(text), refProblem{}
		case c < 0x20:
			return "", refProblem{s.i, ErrSyntax}
		case c == '\\':
			r, p := s.escape()
			if p.detail != nil {
				return "", p
			}
			text = append(text, r)
		case c < utf8.RuneSelf:
			text = append(text, rune(c))
			s.i++
		default:
			r, n := utf8.DecodeRune(s.src[s.i:])
			if r == utf8.RuneError && n <= 1 {
				return "", refProblem{s.i, ErrInvalidUTF8}
			}
			text = append(text, r)
			s.i += n
		}
	}
}

// escape reads the escape at s.i, a reverse solidus, and with a high
// surrogate the escape that must follow it.
func (s *refScanner) escape() (rune, refProblem) {
	at := s.i
	if at+1 >= len(s.src) {
		return 0, refProblem{at + 1, ErrUnexpectedEnd}
	}
	if e := strings.IndexByte(`"\/bfnrt`, s.src[at+1]); e >= 0 {
		s.i += 2
		return rune("\"\\/\b\f\n\r\t"[e]), refProblem{}
	}
	if s.src[at+1] != 'u' {
		return 0, refProblem{at, ErrSyntax}
	}
	r, p := s.hex(at)
	switch {
	case p.detail != nil:
		return 0, p
	case utf16.IsSurrogate(r) && r >= 0xDC00:
		return 0, refProblem{at, ErrInvalidSurrogate} // a low surrogate first
	case !utf16.IsSurrogate(r):
		return r, refProblem{}
	}
	// A high surrogate: lone unless "\u" follows.
	next := at + 6
	if next+1 >= len(s.src) || s.src[next] != '\\' || s.src[next+1] != 'u' {
		return 0, refProblem{at, ErrInvalidSurrogate}
	}
	low, p := s.hex(next)
	switch {
	case p.detail != nil:
		return 0, p
	case low < 0xDC00 || low > 0xDFFF:
		return 0, refProblem{next, ErrInvalidSurrogate}
	}
	return utf16.DecodeRune(r, low), refProblem{}
}

// hex reads the four hex digits of the \u escape at i and moves past it.
func (s *refScanner) hex(i int) (rune, refProblem) {
	for k := i + 2; k < i+6; k++ {
		if k >= len(s.src) {
			return 0, refProblem{k, ErrUnexpectedEnd}
		}
		if !strings.ContainsRune("0123456789abcdefABCDEF", rune(s.src[k])) {
			return 0, refProblem{k, ErrSyntax}
		}
	}
	v, _ := strconv.ParseUint(string(s.src[i+2:i+6]), 16, 32)
	s.i = i + 6
	return rune(v), refProblem{}
}

func (s *refScanner) open() refProblem {
	s.depth++
	if s.depth > sourcecatalog.MaxDepth {
		return refProblem{s.i, ErrTooDeep}
	}
	s.i++
	s.space()
	return refProblem{}
}

// close reads the byte c that ends the container at s.i, if it is there,
// and reports whether it was.
func (s *refScanner) close(c byte) bool {
	if s.end() || s.src[s.i] != c {
		return false
	}
	s.i++
	s.depth--
	return true
}

// next reads what follows a container's element: a comma and the space
// after it, or c, which ends the container (done).
func (s *refScanner) next(c byte) (done bool, p refProblem) {
	s.space()
	switch {
	case s.end():
		return false, refProblem{s.i, ErrUnexpectedEnd}
	case s.src[s.i] == ',':
		s.i++
		s.space()
		return false, refProblem{}
	case s.close(c):
		return true, refProblem{}
	default:
		return false, s.stray()
	}
}

func (s *refScanner) array() refProblem {
	if p := s.open(); p.detail != nil {
		return p
	}
	if s.close(']') {
		return refProblem{}
	}
	for {
		if p := s.value(); p.detail != nil {
			return p
		}
		if done, p := s.next(']'); done || p.detail != nil {
			return p
		}
	}
}

func (s *refScanner) object() refProblem {
	if p := s.open(); p.detail != nil {
		return p
	}
	if s.close('}') {
		return refProblem{}
	}
	names := map[string]bool{}
	for {
		if s.end() || s.src[s.i] != '"' {
			return s.stray()
		}
		at := s.i
		name, p := s.str()
		if p.detail != nil {
			return p
		}
		if names[name] {
			return refProblem{at, ErrDuplicateName}
		}
		names[name] = true
		s.space()
		if s.end() || s.src[s.i] != ':' {
			return s.stray()
		}
		s.i++
		s.space()
		if p := s.value(); p.detail != nil {
			return p
		}
		if done, p := s.next('}'); done || p.detail != nil {
			return p
		}
	}
}

// details are the detail sentinels a problem can have.
var details = []error{
	ErrSyntax, ErrUnexpectedEnd, ErrDuplicateName, ErrInvalidUTF8, ErrInvalidSurrogate,
	ErrInvalidNumber, ErrLossyNumber, ErrTooDeep, ErrTrailingData, ErrByteOrderMark,
}

// checkFirstProblem compares Transform's verdict on in with the reference
// scanner's: the same first problem, offset and detail, or none.
func checkFirstProblem(t *testing.T, in []byte) {
	t.Helper()
	want := refFirstProblem(in)
	_, err := Transform(in)
	if want.detail == nil {
		if err != nil {
			t.Fatalf("Transform(%q) = %v; the reference finds no problem", in, err)
		}
		return
	}
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("Transform(%q) = %v; the reference finds %v at offset %d", in, err, want.detail, want.off)
	}
	if se.Offset != int64(want.off) || !errors.Is(err, want.detail) {
		t.Fatalf("Transform(%q) = %v; the reference finds %v at offset %d", in, err, want.detail, want.off)
	}
}

// FuzzFirstProblem checks, for any input, that Transform reports the first
// problem in text order (SPEC.md §3.4, §10.3), as the reference scanner
// finds it.
func FuzzFirstProblem(f *testing.F) {
	seedTransform(f)
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		f.Add(malformedText(r))
	}
	f.Fuzz(checkFirstProblem)
}

// TestFirstProblemDifferential runs generated malformed texts through
// Transform and the reference scanner, and checks that each detail occurs
// among them, so that the comparison covers every rule.
func TestFirstProblemDifferential(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 5))
	seen := map[error]int{}
	for range 30_000 {
		in := malformedText(r)
		checkFirstProblem(t, in)
		if p := refFirstProblem(in); p.detail != nil {
			seen[p.detail]++
		}
	}
	for _, d := range details {
		if seen[d] < 20 {
			t.Errorf("only %d generated texts have the first problem %v", seen[d], d)
		}
	}
}

// malformedText writes a random JSON text that is likely to break rules of
// §3.4, often more than one: names repeat (also spelled with escapes),
// scalars are drawn from valid and broken spellings, nesting goes past the
// limit, and the text may be cut, or have a byte inserted or removed.
func malformedText(r *rand.Rand) []byte {
	var b []byte
	deep := r.IntN(20) == 0
	var value func(depth int)
	value = func(depth int) {
		limit := 4
		if deep {
			limit = sourcecatalog.MaxDepth + 2
		}
		k := r.IntN(10)
		if deep {
			k = r.IntN(5) // always a container, to the limit
		}
		switch {
		case depth < limit && k < 3:
			b = append(b, '{')
			n := r.IntN(5)
			if deep {
				n = 1
			}
			for m := range n {
				if m > 0 {
					b = append(b, pick(r, ",", ",", ",", " , ", "")...)
				}
				if deep {
					b = append(b, `"a":`...) // nothing but depth breaks a rule
				} else {
					b = append(b, pick(r, names...)...)
					b = append(b, pick(r, ":", ":", " : ", "")...)
				}
				value(depth + 1)
			}
			b = append(b, pick(r, "}", "}", "}", ",}", "")...)
		case depth < limit && k < 5:
			b = append(b, '[')
			n := r.IntN(4)
			if deep {
				n = 1
			}
			for m := range n {
				if m > 0 {
					b = append(b, pick(r, ",", ",", " ,", "")...)
				}
				value(depth + 1)
			}
			b = append(b, pick(r, "]", "]", "]", ",]", "")...)
		default:
			b = append(b, pick(r, scalars...)...)
		}
	}
	if r.IntN(50) == 0 {
		b = append(b, "\xEF\xBB\xBF"...)
	}
	b = append(b, pick(r, "", "", " ", "\n\t")...)
	value(0)
	b = append(b, pick(r, "", "", "", " ", " x", "{}", "\xff", "1")...)
	switch r.IntN(6) {
	case 0:
		b = b[:r.IntN(len(b)+1)]
	case 1:
		k := r.IntN(len(b) + 1)
		b = append(b[:k], append([]byte(pick(r, stray...)), b[k:]...)...)
	case 2:
		if len(b) > 0 {
			k := r.IntN(len(b))
			b = append(b[:k], b[k+1:]...)
		}
	}
	return b
}

func pick(r *rand.Rand, from ...string) string { return from[r.IntN(len(from))] }

// names are member names, several spellings of a few, so that they repeat.
var names = []string{
	`"a"`, `"a"`, `"\u0061"`, `"b"`, `"b"`, `"c"`, `"é"`, `"\u00e9"`, `"😀"`, `"\ud83d\ude00"`,
	`"\ud83d"`, `"a\xff"`, `"x\n"`, `a`, `"k`,
}

// scalars are values in valid and broken spellings.
var scalars = []string{
	`0`, `1`, `-1`, `1.5`, `1e5`, `-0`, `1e20`, `9007199254740992`, `5e-324`,
	`-`, `1e`, `1e+`, `0.`, `.5`, `+1`, `01`, `-01`, `1x`, `1.2.3`, `0x1F`, `NaN`, `Infinity`, `-Infinity`,
	`1e400`, `1e-400`, `9007199254740993`, `18446744073709551616`, `1e400x`,
	`true`, `false`, `null`, `nullx`, `nul`, `True`, `tru`, `null1`,
	`""`, `"x"`, `"\n"`, `"\u0041"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ud83d\n"`, `"\ud83d\u0041"`,
	`"\udc00"`, `"\ud83d\u00"`, `"\ud83d\uzzzz"`, `"\x"`, `"\u12"`, "\"a\tb\"", "\"\xff\"", "\"\xc0\xaf\"",
	"\"\xed\xa0\x80\"", `"abc`, `'a'`, "\xff", `é`,
}

// stray are bytes inserted anywhere.
var stray = []string{`"`, `\`, `,`, `:`, `{`, `}`, `[`, `]`, `-`, `e`, `0`, ` `, "\x00", "\xff", "\xc3", `u`}
