package catalog

import (
	"github.com/yachtmemory/sourcecatalog"
)

// A Kind is the kind of a record, the value of its "kind" member.
type Kind uint8

// The record kinds, in canonical global order.
const (
	KindPath Kind = iota + 1
	KindSource
	KindObservation
)

var kindNames = [...]string{"", "path", "source", "observation"}

// String returns the wire name of k.
func (k Kind) String() string {
	if k >= KindPath && k <= KindObservation {
		return kindNames[k]
	}
	return "invalid"
}

// A ValueType is the type of the values an observation carries.
type ValueType uint8

// The eight value types of protocol v2.
const (
	Number ValueType = iota + 1
	String
	Boolean
	Position
	Object
	Array
	Null
	Unknown
)

var valueTypeNames = [...]string{"", "number", "string", "boolean", "position", "object", "array", "null", "unknown"}

// String returns the wire name of t.
func (t ValueType) String() string {
	if t >= Number && t <= Unknown {
		return valueTypeNames[t]
	}
	return "invalid"
}

// ValueTypes lists every value type in declaration order.
func ValueTypes() []ValueType {
	return []ValueType{Number, String, Boolean, Position, Object, Array, Null, Unknown}
}

// ParseValueType returns the value type named s. Any other text is an
// error wrapping sourcecatalog.ErrInvalidValue.
func ParseValueType(s string) (ValueType, error) {
	for t := Number; t <= Unknown; t++ {
		if valueTypeNames[t] == s {
			return t, nil
		}
	}
	return 0, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "unknown value type").AtField("value_type")
}

type unitState uint8

const (
	unitUnknown unitState = iota // absent on the wire
	unitNone                     // null on the wire
	unitSymbol                   // a string on the wire
)

// A Unit is the tri-state unit of a path record. The zero Unit is unknown:
// the "unit" member is absent. [NoUnit] is the explicit null — the path has
// no unit, which is meaningful (strings, for instance). [UnitOf] is an SI
// unit symbol such as "m/s". The three survive decoding and encoding
// unchanged.
type Unit struct {
	state  unitState
	symbol string
}

// NoUnit returns the explicit "no unit" (null) Unit.
func NoUnit() Unit { return Unit{state: unitNone} }

// UnitOf returns the Unit with the given symbol. Validation (1 to 255 bytes)
// happens when the record is constructed.
func UnitOf(symbol string) Unit { return Unit{state: unitSymbol, symbol: symbol} }

// IsUnknown reports whether the unit is absent (unknown).
func (u Unit) IsUnknown() bool { return u.state == unitUnknown }

// IsNone reports whether the unit is the explicit null (no unit).
func (u Unit) IsNone() bool { return u.state == unitNone }

// Symbol returns the unit symbol, or "" when the unit is unknown or none.
func (u Unit) Symbol() string { return u.symbol }

// String renders u for people: the symbol, "null" or "(absent)".
func (u Unit) String() string {
	switch u.state {
	case unitNone:
		return "null"
	case unitSymbol:
		return u.symbol
	}
	return "(absent)"
}

// Path is the content of a path record: measurement metadata of one Signal K
// path.
type Path struct {
	Path string // required, 1–512 bytes, dot-separated, no empty segment
	Unit Unit
	Meta []byte // JSON text of an object, or nil when absent
}

// Source is the content of a source record: interface or device metadata.
type Source struct {
	SourceRef string  // required, 1–255 bytes, opaque (never split on dots)
	Label     *string // optional, at most 255 bytes
	Type      *string // optional, at most 255 bytes
	Meta      []byte  // JSON text of an object, or nil when absent
}

// Observation is the content of an observation record: the selected source
// of one path.
type Observation struct {
	Path      string
	SourceRef string
	ValueType ValueType
}
