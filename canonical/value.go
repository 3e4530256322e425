package canonical

// A Kind is the JSON type of a Value.
type Kind uint8

// The JSON types.
const (
	Null Kind = iota + 1
	Bool
	Number
	String
	Array
	Object
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
type Value struct {
	kind  Kind
	flags uint8
	str   string // String: the decoded text; Number: the canonical text
	num   float64
	elems []Value
	mems  []Member
}

// A Member is one member of a JSON object.
type Member struct {
	Name  string
	Value Value
	plain bool // Name needs no escaping
	off   int  // byte offset of the name in the parsed input
}

// Kind returns the JSON type of v.
func (v *Value) Kind() Kind { return v.kind }

// Bool returns the value of a Bool; false for other kinds.
func (v *Value) Bool() bool { return v.flags&flagTrue != 0 }

// Str returns the decoded text of a String; "" for other kinds.
func (v *Value) Str() string {
	if v.kind != String {
		return ""
	}
	return v.str
}

// Float returns the value of a Number as an IEEE-754 double.
func (v *Value) Float() float64 { return v.num }

// NumberText returns the canonical text of a Number, "" for other kinds.
func (v *Value) NumberText() string {
	if v.kind != Number {
		return ""
	}
	return v.str
}

// IsIntegerLiteral reports whether v is a Number written without fraction or
// exponent in the input ("42", not "42.0" or "4.2e1"). Protocol integers
// must be written so.
func (v *Value) IsIntegerLiteral() bool { return v.kind == Number && v.flags&flagInteger != 0 }

// Elems returns the elements of an Array, nil for other kinds. The caller
// must not modify the slice.
func (v *Value) Elems() []Value { return v.elems }

// Members returns the members of an Object in canonical order (sorted by the
// UTF-16 code units of their names, no duplicates), nil for other kinds. The
// caller must not modify the slice.
func (v *Value) Members() []Member { return v.mems }

// AppendCanonical appends the RFC 8785 canonical encoding of v to dst.
func (v *Value) AppendCanonical(dst []byte) []byte {
	switch v.kind {
	case Null:
		return append(dst, "null"...)
	case Bool:
		if v.flags&flagTrue != 0 {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case Number:
		return append(dst, v.str...)
	case String:
		return appendQuoted(dst, v.str, v.flags&flagPlain != 0)
	case Array:
		dst = append(dst, '[')
		for i := range v.elems {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = v.elems[i].AppendCanonical(dst)
		}
		return append(dst, ']')
	case Object:
		dst = append(dst, '{')
		for i := range v.mems {
			m := &v.mems[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendQuoted(dst, m.Name, m.plain)
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
