package catalog

import (
	"errors"
	"slices"
	"strconv"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/internal/canontext"
)

// Every record decoder here brings its input to canonical bytes first
// (canonical.Transform, a checked copy when the input is canonical already)
// and reads those with decodeRecord, the one decoder of a record. The
// record's canonical bytes, and the text of its strings, are views of them.

// Decode parses one record from JSON text. Member order and whitespace are
// free; the record keeps its canonical bytes. The first problem is reported
// in the order of SPEC.md §10.3: the JSON text (ErrMalformedJSON), then the
// record's rules (§4).
func Decode(raw []byte) (*Record, error) {
	canon, err := canonical.Transform(raw)
	if err != nil {
		return nil, sourcecatalog.Wrap(sourcecatalog.ErrMalformedJSON, err)
	}
	r := new(Record)
	if _, err := decodeRecord(canon, 0, r); err != nil {
		return nil, err
	}
	return r, nil
}

// FromValue decodes the record a value from canonical.Parse holds, as
// Decode decodes its text.
func FromValue(v *canonical.Value) (*Record, error) {
	if v.Kind() != canonical.KindObject {
		return nil, errNotObject()
	}
	r := new(Record)
	if _, err := decodeRecord(v.AppendCanonical(nil), 0, r); err != nil {
		return nil, err
	}
	return r, nil
}

// DecodeList parses a JSON array of records, in any order (SPEC.md §4.7).
// Errors carry the index of the offending record in the array.
func DecodeList(raw []byte) ([]*Record, error) {
	canon, err := canonical.Transform(raw)
	if err != nil {
		return nil, sourcecatalog.Wrap(sourcecatalog.ErrMalformedJSON, err)
	}
	if canon[0] != '[' {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "records must be a JSON array")
	}
	return DecodeCanonicalList(canon, -1)
}

// DecodeCanonicalList decodes the JSON array b of records, which must be
// canonical text, such as an array inside the result of
// canonical.Transform; that is not checked. It decodes as DecodeList does,
// without copying: the records' canonical bytes and strings are views of b,
// which the caller must not modify afterwards.
//
// With max ≥ 0, an array of more than max elements is refused with
// ErrLimitExceeded and no record index, before any element is looked at.
// Every other error carries the index of the offending record.
func DecodeCanonicalList(b []byte, max int) ([]*Record, error) {
	var (
		ptrs  [128]*Record
		out   = ptrs[:0]
		block []Record
		read  = 1 // bytes of b read so far
	)
	_, err := ScanCanonicalList(b, max, func(r *Record) {
		read += len(r.canon) + 1
		if len(block) == cap(block) {
			// Allocate records for the rest of b at the mean size so far.
			mean := (read - 1) / (len(out) + 1)
			block = make([]Record, 0, min((len(b)-read)/mean+1, 256))
		}
		block = append(block, *r)
		out = append(out, &block[len(block)-1])
	})
	if err != nil {
		return nil, err
	}
	return slices.Clone(out), nil
}

// ScanCanonicalList decodes the canonical array b of records as
// DecodeCanonicalList does, with the same errors, but keeps no record: it
// calls fn, unless nil, with each record in turn, and returns their
// number. The record passed to fn is valid only during the call; its
// canonical bytes and strings are views of b.
func ScanCanonicalList(b []byte, max int, fn func(*Record)) (int, error) {
	if b[1] == ']' {
		return 0, nil
	}
	var r Record
	for n, i := 0, 1; ; n++ {
		if n == max {
			return 0, tooMany(max)
		}
		r = Record{}
		end, err := decodeRecord(b, i, &r)
		if err != nil {
			if max >= 0 && n+countElements(b, i) > max {
				return 0, tooMany(max)
			}
			return 0, locate(err, n)
		}
		if fn != nil {
			fn(&r)
		}
		if b[end] == ']' {
			return n + 1, nil
		}
		i = end + 1
	}
}

func tooMany(max int) error {
	return sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, "more than "+strconv.Itoa(max)+" records")
}

// countElements counts the elements of a canonical array from the one at
// b[i] to the end of the array.
func countElements(b []byte, i int) int {
	n := 0
	for {
		end, _ := canontext.End(b, i)
		n++
		if b[end] == ']' {
			return n
		}
		i = end + 1
	}
}

// locate sets the record index of a *sourcecatalog.Error.
func locate(err error, i int) error {
	if e := (*sourcecatalog.Error)(nil); errors.As(err, &e) {
		return e.AtRecord(i)
	}
	return err
}

// recordFields lists, in canonical name order, the members each kind
// allows, "kind" included, and whether each is required.
var recordFields = [...][]struct {
	name     string
	required bool
}{
	KindPath:        {{"kind", true}, {"meta", false}, {"path", true}, {"unit", false}},
	KindSource:      {{"kind", true}, {"label", false}, {"meta", false}, {"source_ref", true}, {"type", false}},
	KindObservation: {{"kind", true}, {"path", true}, {"source_ref", true}, {"value_type", true}},
}

// lookupField returns the position of the member name in recordFields of
// kind, or -1 when kind does not allow it.
func lookupField(kind Kind, name string) int {
	for i, f := range recordFields[kind] {
		if f.name == name {
			return i
		}
	}
	return -1
}

func errNotObject() error {
	return sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "a record must be a JSON object")
}

// decodeRecord decodes into r, a zero Record, the record at b[start] of the
// canonical text b, and returns the offset after it. r's canonical bytes
// and strings are then views of b. It reports the first problem in the
// order of SPEC.md §10.3: not an object; kind; the members in canonical
// name order, each for being defined for the kind and for its JSON type,
// value_type for its name, meta for being an object within the depth
// bound; the required members absent, in name order; then the values'
// rules (Record.validate).
func decodeRecord(b []byte, start int, r *Record) (int, error) {
	if b[start] != '{' {
		return 0, errNotObject()
	}
	kind, err := recordKind(b, start)
	if err != nil {
		return 0, err
	}
	r.kind = kind
	var seen uint8 // a bit per member of recordFields[kind]
	meta := [2]int{-1, -1}
	o := canontext.ObjectAt(b, start)
	for o.More() {
		name, v := o.Member()
		f := lookupField(kind, name)
		if f < 0 {
			return 0, sourcecatalog.Errorf(sourcecatalog.ErrUnknownField, "not a member of "+article(kind)+" record").AtField(name)
		}
		seen |= 1 << f
		var end int
		switch name {
		case "kind":
			end = canontext.StringEnd(b, v)
		case "path":
			r.path, end, err = str(b, v, name)
		case "source_ref":
			r.sourceRef, end, err = str(b, v, name)
		case "unit":
			r.unit, end, err = unit(b, v)
		case "label", "type":
			var s string
			s, end, err = str(b, v, name)
			if name == "label" {
				r.label = &s
			} else {
				r.typ = &s
			}
		case "meta":
			if b[v] != '{' {
				return 0, invalid("meta", "meta must be an object")
			}
			var depth int
			end, depth = canontext.End(b, v)
			// The meta object sits one level down in its record.
			if 1+depth > MaxRecordDepth {
				return 0, sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, "meta nests too deep").AtField("meta")
			}
			meta = [2]int{v, end}
		case "value_type":
			var s string
			if s, end, err = str(b, v, name); err == nil {
				r.valueType, err = ParseValueType(s)
			}
		}
		if err != nil {
			return 0, err
		}
		o.Next(end)
	}
	for i, f := range recordFields[kind] {
		if f.required && seen&(1<<i) == 0 {
			return 0, sourcecatalog.Errorf(sourcecatalog.ErrMissingField, "required in "+article(kind)+" record").AtField(f.name)
		}
	}
	if err := r.validate(); err != nil {
		return 0, err
	}
	end := o.End()
	r.canon = b[start:end:end]
	if meta[0] >= 0 {
		r.metaSpan = [2]int{meta[0] - start, meta[1] - start}
		r.meta = r.canon[r.metaSpan[0]:r.metaSpan[1]:r.metaSpan[1]]
	}
	return end, nil
}

// recordKind reads the kind member of the record at b[start].
func recordKind(b []byte, start int) (Kind, error) {
	o := canontext.ObjectAt(b, start)
	for o.More() {
		name, v := o.Member()
		switch {
		case name > "kind":
			// Members come in name order: there is no kind.
		case name < "kind":
			end, _ := canontext.End(b, v)
			o.Next(end)
			continue
		case b[v] != '"':
			return 0, invalid("kind", "must be a string")
		default:
			s, _ := canontext.String(b, v)
			for k := KindPath; k <= KindObservation; k++ {
				if s == kindNames[k] {
					return k, nil
				}
			}
			return 0, invalid("kind", "must be path, source or observation")
		}
		break
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

// str reads the string member field at b[v], and returns it and the offset
// after it.
func str(b []byte, v int, field string) (string, int, error) {
	if b[v] != '"' {
		return "", 0, invalid(field, "must be a string, not "+canontext.KindAt(b, v).String())
	}
	s, end := canontext.String(b, v)
	return s, end, nil
}

// unit reads the unit member at b[v]: a string or null.
func unit(b []byte, v int) (Unit, int, error) {
	switch b[v] {
	case 'n':
		return NoUnit(), v + len("null"), nil
	case '"':
		s, end := canontext.String(b, v)
		return UnitOf(s), end, nil
	}
	return Unit{}, 0, invalid("unit", "must be a string or null")
}

// article returns the kind's name with its indefinite article.
func article(k Kind) string {
	if k == KindObservation {
		return "an observation"
	}
	return "a " + k.String()
}
