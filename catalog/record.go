package catalog

import (
	"unicode/utf8"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
)

// Identifier and string limits, in bytes.
const (
	MaxPathLen      = 512
	MaxSourceRefLen = 255
	MaxLabelLen     = 255 // label and type of a source record
	MaxUnitLen      = 255
	// MaxRecordDepth is the deepest nesting a record may have: a record sits
	// two levels down in a chunk ({"records":[record]}), and the chunk must
	// stay within sourcecatalog.MaxDepth.
	MaxRecordDepth = sourcecatalog.MaxDepth - 2
)

// A Record is one validated, immutable record with its canonical bytes.
// The zero Record is not valid; records come from the constructors and
// decoders of this package. A Record is safe for concurrent use.
type Record struct {
	// The identity and the canonical bytes come first, within 64 bytes:
	// sorting and chunking many records read these fields alone, one
	// record after another in no order the hardware can foresee, and each
	// record then costs them one cache line.
	kind      Kind
	valueType ValueType
	path      string
	sourceRef string
	canon     []byte
	unit      Unit
	label     *string
	typ       *string
	meta      []byte // canonical, a sub-slice of canon; nil when absent
	metaSpan  [2]int // where meta sits in canon
}

// Kind returns the record's kind.
func (r *Record) Kind() Kind { return r.kind }

// PathName returns the path of a path or observation record, "" for a
// source record.
func (r *Record) PathName() string { return r.path }

// SourceRef returns the source_ref of a source or observation record, "" for
// a path record.
func (r *Record) SourceRef() string { return r.sourceRef }

// Canonical returns the record's canonical bytes. The caller must not
// modify them.
func (r *Record) Canonical() []byte { return r.canon }

// AsPath returns the content of a path record; ok is false for other kinds.
// Meta is the canonical form of the metadata, which the caller must not
// modify.
func (r *Record) AsPath() (p Path, ok bool) {
	if r.kind != KindPath {
		return Path{}, false
	}
	return Path{Path: r.path, Unit: r.unit, Meta: r.meta}, true
}

// AsSource returns the content of a source record; ok is false for other
// kinds. Meta is canonical and must not be modified.
func (r *Record) AsSource() (s Source, ok bool) {
	if r.kind != KindSource {
		return Source{}, false
	}
	return Source{SourceRef: r.sourceRef, Label: clone(r.label), Type: clone(r.typ), Meta: r.meta}, true
}

// AsObservation returns the content of an observation record; ok is false
// for other kinds.
func (r *Record) AsObservation() (o Observation, ok bool) {
	if r.kind != KindObservation {
		return Observation{}, false
	}
	return Observation{Path: r.path, SourceRef: r.sourceRef, ValueType: r.valueType}, true
}

func clone(s *string) *string {
	if s == nil {
		return nil
	}
	c := *s
	return &c
}

// NewPath validates p and returns its record.
func NewPath(p Path) (*Record, error) {
	r := &Record{kind: KindPath, path: p.Path, unit: p.Unit}
	if err := checkPath(p.Path, "path"); err != nil {
		return nil, err
	}
	if err := checkUnit(p.Unit); err != nil {
		return nil, err
	}
	meta, err := parseMeta(p.Meta, 1)
	if err != nil {
		return nil, err
	}
	r.encode(meta)
	return r, nil
}

// NewSource validates s and returns its record.
func NewSource(s Source) (*Record, error) {
	r := &Record{kind: KindSource, sourceRef: s.SourceRef, label: clone(s.Label), typ: clone(s.Type)}
	if err := checkSourceRef(s.SourceRef, "source_ref"); err != nil {
		return nil, err
	}
	if err := checkLabel(r.label, "label"); err != nil {
		return nil, err
	}
	if err := checkLabel(r.typ, "type"); err != nil {
		return nil, err
	}
	meta, err := parseMeta(s.Meta, 1)
	if err != nil {
		return nil, err
	}
	r.encode(meta)
	return r, nil
}

// NewObservation validates o and returns its record.
func NewObservation(o Observation) (*Record, error) {
	r := &Record{kind: KindObservation, path: o.Path, sourceRef: o.SourceRef, valueType: o.ValueType}
	if err := checkPath(o.Path, "path"); err != nil {
		return nil, err
	}
	if err := checkSourceRef(o.SourceRef, "source_ref"); err != nil {
		return nil, err
	}
	if o.ValueType < Number || o.ValueType > Unknown {
		return nil, invalid("value_type", "unknown value type")
	}
	r.encode(nil)
	return r, nil
}

func invalid(field, detail string) *sourcecatalog.Error {
	return sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, detail).AtField(field)
}

// parseMeta canonicalises a meta object given as JSON text. depth is the
// nesting level of the meta object inside its record.
func parseMeta(raw []byte, depth int) (*canonical.Value, error) {
	if raw == nil {
		return nil, nil
	}
	v, err := canonical.Parse(raw)
	if err != nil {
		return nil, sourcecatalog.Wrap(sourcecatalog.ErrMalformedJSON, err).AtField("meta")
	}
	if err := checkMeta(&v, depth); err != nil {
		return nil, err
	}
	return &v, nil
}

func checkMeta(v *canonical.Value, depth int) error {
	if v.Kind() != canonical.KindObject {
		return invalid("meta", "meta must be an object")
	}
	if depth+nesting(v) > MaxRecordDepth {
		return sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, "meta nests too deep").AtField("meta")
	}
	return nil
}

// nesting returns the number of array and object levels in v.
func nesting(v *canonical.Value) int {
	deepest := 0
	switch v.Kind() {
	case canonical.KindArray:
		for i := range v.Elems() {
			deepest = max(deepest, nesting(&v.Elems()[i]))
		}
	case canonical.KindObject:
		for i := range v.Members() {
			deepest = max(deepest, nesting(&v.Members()[i].Value))
		}
	default:
		return 0
	}
	return deepest + 1
}

// checkIdent applies the identifier rules: 1 to limit bytes of valid UTF-8
// without control characters (Unicode Cc).
func checkIdent(s, field string, limit int) error {
	if len(s) == 0 {
		return invalid(field, "must not be empty")
	}
	if len(s) > limit {
		return sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, "longer than the limit").AtField(field)
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return invalid(field, "control character")
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			return invalid(field, "invalid UTF-8")
		}
		if r >= 0x80 && r <= 0x9f {
			return invalid(field, "control character")
		}
		i += size
	}
	return nil
}

func checkPath(s, field string) error {
	if err := checkIdent(s, field, MaxPathLen); err != nil {
		return err
	}
	if s[0] == '.' || s[len(s)-1] == '.' {
		return invalid(field, "empty path segment")
	}
	for i := 1; i < len(s); i++ {
		if s[i] == '.' && s[i-1] == '.' {
			return invalid(field, "empty path segment")
		}
	}
	return nil
}

func checkSourceRef(s, field string) error { return checkIdent(s, field, MaxSourceRefLen) }

func checkLabel(s *string, field string) error {
	if s == nil {
		return nil
	}
	if len(*s) > MaxLabelLen {
		return sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, "longer than the limit").AtField(field)
	}
	if !utf8.ValidString(*s) {
		return invalid(field, "invalid UTF-8")
	}
	return nil
}

func checkUnit(u Unit) error {
	if u.state != unitSymbol {
		return nil
	}
	if u.symbol == "" {
		return invalid("unit", "an empty unit symbol; use null for no unit")
	}
	if len(u.symbol) > MaxUnitLen {
		return sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, "longer than the limit").AtField("unit")
	}
	if !utf8.ValidString(u.symbol) {
		return invalid("unit", "invalid UTF-8")
	}
	return nil
}

// encode writes r.canon. Member names are written in canonical order:
// path: kind, meta, path, unit; source: kind, label, meta, source_ref, type;
// observation: kind, path, source_ref, value_type.
func (r *Record) encode(meta *canonical.Value) {
	b := make([]byte, 0, r.encodedLenHint())
	b = append(b, `{"kind":"`...)
	b = append(b, r.kind.String()...)
	b = append(b, '"')
	switch r.kind {
	case KindPath:
		b = r.appendMeta(b, meta)
		b = appendMember(b, "path", r.path)
		switch r.unit.state {
		case unitNone:
			b = append(b, `,"unit":null`...)
		case unitSymbol:
			b = appendMember(b, "unit", r.unit.symbol)
		}
	case KindSource:
		if r.label != nil {
			b = appendMember(b, "label", *r.label)
		}
		b = r.appendMeta(b, meta)
		b = appendMember(b, "source_ref", r.sourceRef)
		if r.typ != nil {
			b = appendMember(b, "type", *r.typ)
		}
	case KindObservation:
		b = appendMember(b, "path", r.path)
		b = appendMember(b, "source_ref", r.sourceRef)
		b = append(b, `,"value_type":"`...)
		b = append(b, r.valueType.String()...)
		b = append(b, '"')
	}
	r.canon = append(b, '}')
	if meta != nil {
		r.meta = r.canon[r.metaSpan[0]:r.metaSpan[1]:r.metaSpan[1]]
	}
}

func (r *Record) encodedLenHint() int {
	return 64 + len(r.path) + len(r.sourceRef) + len(r.unit.symbol)
}

func (r *Record) appendMeta(b []byte, meta *canonical.Value) []byte {
	if meta == nil {
		return b
	}
	b = append(b, `,"meta":`...)
	start := len(b)
	b = meta.AppendCanonical(b)
	r.metaSpan = [2]int{start, len(b)}
	return b
}

// appendMember appends `,"name":"value"`; values are validated UTF-8.
func appendMember(b []byte, name, value string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	b, _ = canonical.AppendString(b, value)
	return b
}
