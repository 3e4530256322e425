package catalog

import (
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
)

// Decode parses one record from JSON text. Member order and whitespace are
// free; the record keeps its canonical bytes.
func Decode(raw []byte) (*Record, error) {
	v, err := canonical.Parse(raw)
	if err != nil {
		return nil, sourcecatalog.Wrap(sourcecatalog.ErrMalformedJSON, err)
	}
	return FromValue(&v)
}

// DecodeList parses a JSON array of records, in any order. Errors carry the
// index of the offending record in the array.
func DecodeList(raw []byte) ([]*Record, error) {
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
