package catalog

import (
	"bytes"
	"slices"
	"unicode/utf8"
	"unsafe"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
)

// Decode parses one record from JSON text. Member order and whitespace are
// free; the record keeps its canonical bytes.
func Decode(raw []byte) (*Record, error) {
	// The common case, text that is canonical already, needs no Value tree.
	var r Record
	if end, ok := decodeCanonical(raw, 0, &r, nil); ok && end == len(raw) {
		r.canon = bytes.Clone(raw)
		if r.meta != nil {
			r.meta = r.canon[r.metaSpan[0]:r.metaSpan[1]:r.metaSpan[1]]
		}
		return &r, nil
	}
	v, err := canonical.Parse(raw)
	if err != nil {
		return nil, sourcecatalog.Wrap(sourcecatalog.ErrMalformedJSON, err)
	}
	return FromValue(&v)
}

// DecodeList parses a JSON array of records, in any order. Errors carry the
// index of the offending record in the array.
func DecodeList(raw []byte) ([]*Record, error) {
	if len(raw) > 0 && raw[0] == '[' {
		// The common case, text that is canonical already: one copy of it
		// holds the canonical bytes of every record.
		if out, ok := decodeCanonicalList(bytes.Clone(raw)); ok {
			return out, nil
		}
	}
	v, err := canonical.Parse(raw)
	if err != nil {
		return nil, sourcecatalog.Wrap(sourcecatalog.ErrMalformedJSON, err)
	}
	if v.Kind() != canonical.Array {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "records must be a JSON array")
	}
	elems := v.Elems()
	out := make([]*Record, len(elems))
	for i := range elems {
		r, err := FromValue(&elems[i])
		if err != nil {
			return nil, locate(err, i)
		}
		out[i] = r
	}
	return out, nil
}

// locate sets the record index of a *sourcecatalog.Error.
func locate(err error, i int) error {
	if e, ok := err.(*sourcecatalog.Error); ok {
		return e.AtRecord(i)
	}
	return err
}

// recordFields lists the members each kind allows, "kind" included, and
// whether each is required.
var recordFields = [...][]struct {
	name     string
	required bool
}{
	KindPath:        {{"kind", true}, {"meta", false}, {"path", true}, {"unit", false}},
	KindSource:      {{"kind", true}, {"label", false}, {"meta", false}, {"source_ref", true}, {"type", false}},
	KindObservation: {{"kind", true}, {"path", true}, {"source_ref", true}, {"value_type", true}},
}

// lookupField reports whether kind allows the member name and whether it is
// required.
func lookupField(kind Kind, name string) (required, ok bool) {
	for _, f := range recordFields[kind] {
		if f.name == name {
			return f.required, true
		}
	}
	return false, false
}

// FromValue builds a record from a parsed JSON object. It rejects unknown
// and missing members, members of the wrong JSON type and every value the
// constructors reject.
func FromValue(v *canonical.Value) (*Record, error) {
	if v.Kind() != canonical.Object {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "a record must be a JSON object")
	}
	mems := v.Members()
	kind, err := recordKind(mems)
	if err != nil {
		return nil, err
	}
	r := &Record{kind: kind}
	var meta *canonical.Value
	seen := 0
	for i := range mems {
		m := &mems[i]
		required, ok := lookupField(kind, m.Name)
		if !ok {
			return nil, sourcecatalog.Errorf(sourcecatalog.ErrUnknownField, "not a member of "+article(kind)+" record").AtField(m.Name)
		}
		if required {
			seen++
		}
		val := &m.Value
		switch m.Name {
		case "kind":
		case "path":
			if r.path, err = str(val, "path"); err != nil {
				return nil, err
			}
		case "source_ref":
			if r.sourceRef, err = str(val, "source_ref"); err != nil {
				return nil, err
			}
		case "unit":
			if val.Kind() == canonical.Null {
				r.unit = NoUnit()
			} else if s, err := str(val, "unit"); err != nil {
				return nil, invalid("unit", "must be a string or null")
			} else {
				r.unit = UnitOf(s)
			}
		case "label", "type":
			s, err := str(val, m.Name)
			if err != nil {
				return nil, err
			}
			if m.Name == "label" {
				r.label = &s
			} else {
				r.typ = &s
			}
		case "meta":
			if err := checkMeta(val, 1); err != nil {
				return nil, err
			}
			meta = val
		case "value_type":
			s, err := str(val, "value_type")
			if err != nil {
				return nil, err
			}
			if r.valueType, err = ParseValueType(s); err != nil {
				return nil, err
			}
		}
	}
	if seen != countRequired(kind) {
		for _, f := range recordFields[kind] {
			if f.required && !has(mems, f.name) {
				return nil, sourcecatalog.Errorf(sourcecatalog.ErrMissingField, "required in "+article(kind)+" record").AtField(f.name)
			}
		}
	}
	if err := r.validate(); err != nil {
		return nil, err
	}
	r.encode(meta)
	return r, nil
}

func recordKind(mems []canonical.Member) (Kind, error) {
	for i := range mems {
		if mems[i].Name != "kind" {
			continue
		}
		v := &mems[i].Value
		if v.Kind() != canonical.String {
			return 0, invalid("kind", "must be a string")
		}
		for k := KindPath; k <= KindObservation; k++ {
			if v.Str() == kindNames[k] {
				return k, nil
			}
		}
		return 0, invalid("kind", "must be path, source or observation")
	}
	return 0, sourcecatalog.Errorf(sourcecatalog.ErrMissingField, "every record has a kind").AtField("kind")
}

func (r *Record) validate() error {
	switch r.kind {
	case KindPath:
		if err := checkPath(r.path, "path"); err != nil {
			return err
		}
		return checkUnit(r.unit)
	case KindSource:
		if err := checkSourceRef(r.sourceRef, "source_ref"); err != nil {
			return err
		}
		if err := checkLabel(r.label, "label"); err != nil {
			return err
		}
		return checkLabel(r.typ, "type")
	default:
		if err := checkPath(r.path, "path"); err != nil {
			return err
		}
		return checkSourceRef(r.sourceRef, "source_ref")
	}
}

func str(v *canonical.Value, field string) (string, error) {
	if v.Kind() != canonical.String {
		return "", invalid(field, "must be a string, not "+v.Kind().String())
	}
	return v.Str(), nil
}

func countRequired(kind Kind) int {
	n := 0
	for _, f := range recordFields[kind] {
		if f.required {
			n++
		}
	}
	return n
}

func has(mems []canonical.Member, name string) bool {
	for i := range mems {
		if mems[i].Name == name {
			return true
		}
	}
	return false
}

// article returns the kind's name with its indefinite article.
func article(k Kind) string {
	if k == KindObservation {
		return "an observation"
	}
	return "a " + k.String()
}

// DecodeCanonicalList decodes a JSON array of records that is written
// exactly in canonical form, such as the records array of a chunk this
// module built, without building a Value tree and without copying the
// records' bytes: their canonical bytes are sub-slices of b, which the
// caller must not modify afterwards.
//
// It reports ok false, and decodes nothing, when b is not such an array or
// DecodeList would refuse it; the caller then uses DecodeList, which reports
// the problem. It is conservative: it also reports false for a few valid
// canonical arrays, those with an escape in a record's strings or meta
// member names. When ok, the records equal those DecodeList(b) returns.
func DecodeCanonicalList(b []byte) (records []*Record, ok bool) {
	return decodeCanonicalList(b)
}

func decodeCanonicalList(b []byte) ([]*Record, bool) {
	if len(b) < 2 || b[0] != '[' {
		return nil, false
	}
	if len(b) == 2 && b[1] == ']' {
		return []*Record{}, true
	}
	var (
		ptrs  [128]*Record
		out   = ptrs[:0]
		block []Record
		text  textArena
	)
	for i := 1; ; {
		// Strings take a fraction of the text: size text blocks by what is
		// left of it.
		text.size = (len(b)-i)/4 + 64
		if len(block) == cap(block) {
			// Allocate records for the rest of b at the mean size so far.
			mean := 192
			if len(out) > 0 {
				mean = max(1, (i-1)/len(out))
			}
			block = make([]Record, 0, min((len(b)-i)/mean+1, 256))
		}
		block = block[:len(block)+1]
		r := &block[len(block)-1]
		end, ok := decodeCanonical(b, i, r, &text)
		if !ok || end >= len(b) {
			return nil, false
		}
		out = append(out, r)
		switch b[end] {
		case ',':
			i = end + 1
		case ']':
			if end+1 != len(b) {
				return nil, false
			}
			return slices.Clone(out), true
		default:
			return nil, false
		}
	}
}

// A textArena holds the text of the strings of decoded records, a block at
// a time, so that each string costs no allocation of its own. Bytes once
// handed out as a string are never written again.
type textArena struct {
	buf  []byte
	size int // of the next block
}

// string returns s as a string; a nil arena copies it on its own.
func (a *textArena) string(s []byte) string {
	if a == nil || len(s) == 0 {
		return string(s)
	}
	if cap(a.buf)-len(a.buf) < len(s) {
		a.buf = make([]byte, 0, max(len(s), min(a.size, 4096)))
	}
	start := len(a.buf)
	a.buf = append(a.buf, s...)
	return unsafe.String(&a.buf[start], len(s))
}

// decodeCanonical decodes into r, a zero Record, the record that starts at
// b[i], when it is written exactly in canonical form and breaks no rule, and
// returns the offset after it. r's canonical bytes are then a sub-slice of b,
// and its strings are kept in text (copied on their own when text is nil).
// It reports false, leaving r in an unspecified state, for anything else,
// and for canonical records with an escape in a string member or in a meta
// member name; FromValue then decides, and reports the problem.
//
// Every rule FromValue applies is applied here too: the members each kind
// allows and requires, their JSON types, the meta object and its depth, and
// Record.validate for the values. So is every rule canonical.Parse applies,
// as the text must be canonical: the strings read here need no escape and
// are valid UTF-8, and canonical.Span checks meta.
//
// Canonical members come in a fixed order, by name: kind, label, meta, path,
// source_ref, type, unit, value_type.
func decodeCanonical(b []byte, i int, r *Record, text *textArena) (end int, ok bool) {
	start := i
	if i, ok = skip(b, i, `{"kind":"`); !ok {
		return 0, false
	}
	for k := KindPath; k <= KindObservation; k++ {
		if j, ok := skip(b, i, kindNames[k]); ok && j < len(b) && b[j] == '"' {
			r.kind, i = k, j+1
			break
		}
	}
	meta := [2]int{-1, -1}
	switch r.kind {
	case KindPath:
		if i, ok = optionalMeta(b, i, &meta); !ok {
			return 0, false
		}
		if i, ok = skip(b, i, `,"path":`); !ok {
			return 0, false
		}
		if r.path, i, ok = plainString(b, i, text); !ok {
			return 0, false
		}
		if j, ok := skip(b, i, `,"unit":`); ok {
			if k, ok := skip(b, j, "null"); ok {
				r.unit, i = NoUnit(), k
			} else {
				var s string
				if s, i, ok = plainString(b, j, text); !ok {
					return 0, false
				}
				r.unit = UnitOf(s)
			}
		}
	case KindSource:
		if j, ok := skip(b, i, `,"label":`); ok {
			var s string
			if s, i, ok = plainString(b, j, text); !ok {
				return 0, false
			}
			r.label = &s
		}
		if i, ok = optionalMeta(b, i, &meta); !ok {
			return 0, false
		}
		if i, ok = skip(b, i, `,"source_ref":`); !ok {
			return 0, false
		}
		if r.sourceRef, i, ok = plainString(b, i, text); !ok {
			return 0, false
		}
		if j, ok := skip(b, i, `,"type":`); ok {
			var s string
			if s, i, ok = plainString(b, j, text); !ok {
				return 0, false
			}
			r.typ = &s
		}
	case KindObservation:
		if i, ok = skip(b, i, `,"path":`); !ok {
			return 0, false
		}
		if r.path, i, ok = plainString(b, i, text); !ok {
			return 0, false
		}
		if i, ok = skip(b, i, `,"source_ref":`); !ok {
			return 0, false
		}
		if r.sourceRef, i, ok = plainString(b, i, text); !ok {
			return 0, false
		}
		if i, ok = skip(b, i, `,"value_type":"`); !ok {
			return 0, false
		}
		r.valueType = 0
		for t := Number; t <= Unknown; t++ {
			if j, ok := skip(b, i, valueTypeNames[t]); ok && j < len(b) && b[j] == '"' {
				r.valueType, i = t, j+1
				break
			}
		}
		if r.valueType == 0 {
			return 0, false
		}
	default:
		return 0, false
	}
	if i >= len(b) || b[i] != '}' {
		return 0, false
	}
	i++
	if r.validate() != nil {
		return 0, false
	}
	r.canon = b[start:i:i]
	if meta[0] >= 0 {
		r.metaSpan = [2]int{meta[0] - start, meta[1] - start}
		r.meta = r.canon[r.metaSpan[0]:r.metaSpan[1]:r.metaSpan[1]]
	}
	return i, true
}

// skip returns the offset after s when b continues with s at i.
func skip(b []byte, i int, s string) (int, bool) {
	if len(b)-i < len(s) || string(b[i:i+len(s)]) != s {
		return 0, false
	}
	return i + len(s), true
}

// optionalMeta reads a meta member at i, if there is one, and stores the
// span of its value.
func optionalMeta(b []byte, i int, span *[2]int) (int, bool) {
	j, ok := skip(b, i, `,"meta":`)
	if !ok {
		return i, true
	}
	if j >= len(b) || b[j] != '{' {
		return 0, false
	}
	n, depth, ok := canonical.Span(b[j:])
	// As in checkMeta: the meta object sits one level down in its record.
	if !ok || 1+depth > MaxRecordDepth {
		return 0, false
	}
	*span = [2]int{j, j + n}
	return j + n, true
}

// plainString reads the string at i when it needs no escape: valid UTF-8
// without control characters, quotation marks and reverse solidi. It returns
// its text, kept in text, and the offset after it.
func plainString(b []byte, i int, text *textArena) (string, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return "", 0, false
	}
	start := i + 1
	ascii := true
	for i = start; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			s := b[start:i]
			if !ascii && !utf8.Valid(s) {
				return "", 0, false
			}
			return text.string(s), i + 1, true
		case c == '\\' || c < 0x20:
			return "", 0, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", 0, false
}
