package canonical

import (
	"strconv"
	"unsafe"
)

// A Kind is the JSON type of a Value.
type Kind uint8

// The JSON types.
const (
	KindNull Kind = iota + 1
	KindBool
	KindNumber
	KindString
	KindArray
	KindObject
)

var kindNames = [...]string{"invalid", "null", "boolean", "number", "string", "array", "object"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return kindNames[0]
}

const (
	flagTrue    uint8 = 1 << iota // Bool: the value is true
	flagPlain                     // String: the text needs no escaping
	flagInteger                   // Number: the literal had no fraction or exponent
)

// A Value is one parsed JSON value. Values are produced by [Parse]; the zero
// Value is invalid. A Value is immutable and safe for concurrent reads.
//
// A Value takes 16 bytes: a tree costs little more than the text it was
// parsed from.
type Value struct {
	// p is the first byte of the text of a String (decoded) or a Number
	// (canonical), the first element of an Array or the first member of an
	// Object; nil when there is none.
	p unsafe.Pointer
	// bits is kind<<56 | flags<<48 | n, where n is the length of the text
	// or the number of elements or members.
	bits uint64
}

// A Member is one member of a JSON object.
type Member struct {
	Name  string
	Value Value
}

const lenMask = 1<<48 - 1

func newValue(k Kind, flags uint8, p unsafe.Pointer, n int) Value {
	return Value{p: p, bits: uint64(k)<<56 | uint64(flags)<<48 | uint64(n)}
}

func (v *Value) flags() uint8 { return uint8(v.bits >> 48) }
func (v *Value) n() int       { return int(v.bits & lenMask) }
func (v *Value) text() string { return unsafe.String((*byte)(v.p), v.n()) }

// Kind returns the JSON type of v.
func (v *Value) Kind() Kind { return Kind(v.bits >> 56) }

// Bool returns the value of a Bool; false for other kinds.
func (v *Value) Bool() bool { return v.Kind() == KindBool && v.flags()&flagTrue != 0 }

// Str returns the decoded text of a String; "" for other kinds.
func (v *Value) Str() string {
	if v.Kind() != KindString {
		return ""
	}
	return v.text()
}

// Float returns the value of a Number as an IEEE-754 double; 0 for other
// kinds.
func (v *Value) Float() float64 {
	if v.Kind() != KindNumber {
		return 0
	}
	s := v.text()
	if n, ok := smallInt(s); ok {
		return float64(n)
	}
	f, _ := strconv.ParseFloat(s, 64) // canonical text reads back exactly
	return f
}

// smallInt reads s when it is an integer of at most 15 digits, which a
// double holds exactly.
func smallInt(s string) (int64, bool) {
	neg := s != "" && s[0] == '-'
	digits := s
	if neg {
		digits = s[1:]
	}
	if len(digits) == 0 || len(digits) > 15 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(digits); i++ {
		if !isDigit(digits[i]) {
			return 0, false
		}
		n = n*10 + int64(digits[i]-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// NumberText returns the canonical text of a Number, "" for other kinds.
func (v *Value) NumberText() string {
	if v.Kind() != KindNumber {
		return ""
	}
	return v.text()
}

// IsIntegerLiteral reports whether v is a Number written without fraction or
// exponent in the input ("42", not "42.0" or "4.2e1"). Protocol integers
// must be written so.
func (v *Value) IsIntegerLiteral() bool { return v.Kind() == KindNumber && v.flags()&flagInteger != 0 }

// Elems returns the elements of an Array, nil for other kinds. The caller
// must not modify the slice.
func (v *Value) Elems() []Value {
	if v.Kind() != KindArray {
		return nil
	}
	if v.p == nil {
		return []Value{}
	}
	return unsafe.Slice((*Value)(v.p), v.n())
}

// Members returns the members of an Object in canonical order (sorted by the
// UTF-16 code units of their names, no duplicates), nil for other kinds. The
// caller must not modify the slice.
func (v *Value) Members() []Member {
	if v.Kind() != KindObject {
		return nil
	}
	if v.p == nil {
		return []Member{}
	}
	return unsafe.Slice((*Member)(v.p), v.n())
}

// AppendCanonical appends the RFC 8785 canonical encoding of v to dst.
func (v *Value) AppendCanonical(dst []byte) []byte {
	switch v.Kind() {
	case KindNull:
		return append(dst, "null"...)
	case KindBool:
		if v.Bool() {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case KindNumber:
		return append(dst, v.text()...)
	case KindString:
		return appendQuoted(dst, v.text(), v.flags()&flagPlain != 0)
	case KindArray:
		dst = append(dst, '[')
		for i, e := range v.Elems() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = e.AppendCanonical(dst)
		}
		return append(dst, ']')
	case KindObject:
		dst = append(dst, '{')
		for i, m := range v.Members() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendQuoted(dst, m.Name, false)
			dst = append(dst, ':')
			dst = m.Value.AppendCanonical(dst)
		}
		return append(dst, '}')
	}
	panic("canonical: AppendCanonical of an invalid Value")
}

func appendQuoted(dst []byte, s string, plain bool) []byte {
	dst = append(dst, '"')
	if plain {
		dst = append(dst, s...)
	} else {
		dst = appendEscaped(dst, s)
	}
	return append(dst, '"')
}
