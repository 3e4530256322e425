// Package canontext reads canonical JSON text (SPEC.md §3.1), as
// canonical.Transform writes it, for the one decoder of each message in
// catalog and envelope: they bring any input to canonical bytes first and
// read those here.
//
// It trusts its input. Canonical text is valid, strict JSON with no
// whitespace, members sorted and strings minimally escaped, so reading it
// needs no checks; on other text the results are unspecified.
package canontext

import (
	"bytes"
	"unsafe"

	"github.com/yachtmemory/sourcecatalog/canonical"
)

// KindAt returns the JSON type of the value at b[i].
func KindAt(b []byte, i int) canonical.Kind {
	switch b[i] {
	case '{':
		return canonical.KindObject
	case '[':
		return canonical.KindArray
	case '"':
		return canonical.KindString
	case 't', 'f':
		return canonical.KindBool
	case 'n':
		return canonical.KindNull
	}
	return canonical.KindNumber
}

// End returns the offset after the value at b[i], and its nesting depth:
// the levels of arrays and objects, 0 for a scalar.
func End(b []byte, i int) (end, depth int) {
	d := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			i = StringEnd(b, i) - 1
			if d == 0 {
				return i + 1, 0
			}
		case '{', '[':
			d++
			depth = max(depth, d)
		case '}', ']':
			if d == 0 {
				return i, 0 // after a number or literal
			}
			if d--; d == 0 {
				return i + 1, depth
			}
		case ',':
			if d == 0 {
				return i, 0
			}
		}
	}
	return i, depth
}

// StringEnd returns the offset after the string at b[i].
func StringEnd(b []byte, i int) int {
	for {
		k := bytes.IndexByte(b[i+1:], '"')
		if k < 0 {
			return len(b)
		}
		i += 1 + k
		// The quotation mark ends the string unless an odd number of
		// reverse solidi escapes it; the opening mark stops the count.
		n := 0
		for b[i-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return i + 1
		}
	}
}

// String returns the text of the string at b[i], escapes decoded, and the
// offset after it. Text without escapes is not copied: it is a view of b,
// which must not change while the text is in use.
func String(b []byte, i int) (string, int) {
	if k := bytes.IndexByte(b[i+1:], '"'); k >= 0 {
		raw := b[i+1 : i+1+k]
		if bytes.IndexByte(raw, '\\') < 0 {
			return unsafe.String(unsafe.SliceData(raw), len(raw)), i + 2 + k
		}
	}
	end := StringEnd(b, i)
	return unescape(b[i+1 : end-1]), end
}

// unescape decodes the escapes of canonical string text. Each stands for
// one byte: a control character, quotation mark or reverse solidus.
func unescape(raw []byte) string {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		switch e := raw[i]; e {
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		case 'u':
			c = unhex(raw[i+3])<<4 | unhex(raw[i+4])
			i += 4
		default:
			c = e // quotation mark, reverse solidus
		}
		out = append(out, c)
	}
	return unsafe.String(unsafe.SliceData(out), len(out))
}

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}

// An Object reads the members of a canonical object in their order, which
// is canonical name order.
//
//	for o := canontext.ObjectAt(b, i); o.More(); {
//		name, v := o.Member()
//		o.Next(end of the value at v)
//	}
type Object struct {
	b []byte
	i int // the next member's name, or the closing brace
}

// ObjectAt starts reading the object at b[i].
func ObjectAt(b []byte, i int) Object { return Object{b: b, i: i + 1} }

// More reports whether a member is left; after the last, End returns the
// offset after the object.
func (o *Object) More() bool { return o.b[o.i] != '}' }

// Member reads the next member's name, escapes decoded as by String, and
// returns it with the offset of its value. Next must follow.
func (o *Object) Member() (name string, value int) {
	name, end := String(o.b, o.i)
	return name, end + 1 // the colon
}

// Next moves past the member whose value ends at end.
func (o *Object) Next(end int) {
	if o.b[end] == ',' {
		end++
	}
	o.i = end
}

// End returns the offset after the object; More must have reported false.
func (o *Object) End() int { return o.i + 1 }
