package envelope

import (
	"errors"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/internal/canontext"
)

// Every message decoder here brings its input to canonical bytes first
// (parseMessage), then reads the members of the canonical object with the
// helpers below: one decoder per message, whatever the input's spelling.

// A message is the canonical text of a message being decoded, a JSON
// object, with what the text alone does not tell: how the input wrote its
// numbers.
type message struct {
	b    []byte
	nums canonical.Numbers
}

// parseMessage brings a message to canonical text. It refuses, in this
// order (SPEC.md §6.1), text over MaxMessageSize bytes (ErrLimitExceeded),
// malformed JSON (ErrMalformedJSON), a value other than an object
// (ErrInvalidValue) and canonical text over MaxRequest bytes
// (ErrLimitExceeded), which no valid message has. The canonical text is
// the only copy of the message it makes; with inPlace, raw that is
// canonical already is not copied: it is the canonical text.
func parseMessage(raw []byte, inPlace bool) (message, error) {
	if len(raw) > MaxMessageSize {
		return message{}, sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, "message larger than "+strconv.Itoa(MaxMessageSize)+" bytes")
	}
	var (
		b    = raw
		nums canonical.Numbers // the zero Numbers describes canonical text
		err  error
	)
	if !inPlace || !canonical.IsCanonical(raw) {
		b, nums, err = canonical.TransformNumbers(raw)
	}
	if err != nil {
		return message{}, sourcecatalog.Wrap(sourcecatalog.ErrMalformedJSON, err)
	}
	if b[0] != '{' {
		return message{}, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "must be a JSON object")
	}
	if len(b) > sourcecatalog.MaxRequest {
		return message{}, sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, "canonical message larger than "+strconv.Itoa(sourcecatalog.MaxRequest)+" bytes")
	}
	return message{b: b[:len(b):len(b)], nums: nums}, nil
}

func invalid(field, detail string) *sourcecatalog.Error {
	return sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, detail).AtField(field)
}

// atField locates err, a *sourcecatalog.Error, at field.
func atField(err error, field string) error {
	if e := (*sourcecatalog.Error)(nil); errors.As(err, &e) {
		return e.AtField(field)
	}
	return err
}

// inChunk locates err, a *sourcecatalog.Error, in chunk i.
func inChunk(err error, i int) error {
	if e := (*sourcecatalog.Error)(nil); errors.As(err, &e) {
		return e.InChunk(i)
	}
	return err
}

// members checks that the object's member names are among names (sorted
// canonically) and include every name not listed as optional, and stores
// the offset of each member's value in vals, by its position in names; -1
// for an absent optional member. The first problem in canonical name order
// is reported: an undefined name (ErrUnknownField) or an absent required
// one (ErrMissingField), at that name (SPEC.md §6.1 step 4).
func (m *message) members(names []string, vals []int, optional ...string) error {
	o := canontext.ObjectAt(m.b, 0)
	name, v, more := next(&o)
	for k, want := range names {
		vals[k] = -1
		switch {
		case more && name < want:
			return unknownField(name)
		case more && name == want:
			vals[k] = v
			end, _ := canontext.End(m.b, v)
			o.Next(end)
			name, v, more = next(&o)
		case !isOptional(want, optional):
			return sourcecatalog.Errorf(sourcecatalog.ErrMissingField, "required").AtField(want)
		}
	}
	if more {
		return unknownField(name)
	}
	return nil
}

func next(o *canontext.Object) (name string, value int, ok bool) {
	if !o.More() {
		return "", 0, false
	}
	name, value = o.Member()
	return name, value, true
}

func isOptional(name string, optional []string) bool {
	for _, o := range optional {
		if o == name {
			return true
		}
	}
	return false
}

// member returns the offset of the value of the member name, or -1.
func (m *message) member(name string) int {
	for o := canontext.ObjectAt(m.b, 0); o.More(); {
		n, v := o.Member()
		if n == name {
			return v
		}
		end, _ := canontext.End(m.b, v)
		o.Next(end)
	}
	return -1
}

func unknownField(name string) *sourcecatalog.Error {
	return sourcecatalog.Errorf(sourcecatalog.ErrUnknownField, "not defined by the protocol").AtField(name)
}

// integer reads the value at v, a JSON integer written as digits only, in
// [lo, hi]. 42.0, 4.2e1, true and "42" are all refused, and so is 1e400
// by the JSON layer; -0 is 0.
func (m *message) integer(v int, field string, lo, hi int64) (int64, error) {
	if !m.nums.IsIntegerLiteral(m.b, v) {
		return 0, invalid(field, "must be a JSON integer written as digits only")
	}
	end, _ := canontext.End(m.b, v)
	text := m.b[v:end]
	f, _ := strconv.ParseFloat(unsafe.String(&text[0], len(text)), 64) // canonical text reads back exactly
	if f < float64(lo) || f > float64(hi) {
		return 0, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "out of range").AtField(field)
	}
	return int64(f), nil
}

// str reads the string at v. Its text is a view of the message's
// canonical bytes, or a copy when it has escapes.
func (m *message) str(v int, field string) (string, error) {
	if m.b[v] != '"' {
		return "", invalid(field, "must be a string, not "+canontext.KindAt(m.b, v).String())
	}
	s, _ := canontext.String(m.b, v)
	return s, nil
}

// boolean reads the literal true or false at v; detail says what else is
// refused.
func (m *message) boolean(v int, field, detail string) (bool, error) {
	switch m.b[v] {
	case 't':
		return true, nil
	case 'f':
		return false, nil
	}
	return false, invalid(field, detail)
}

// constant reads a string member that must equal want; another string is an
// unsupported capability.
func (m *message) constant(v int, field, want string) error {
	s, err := m.str(v, field)
	if err != nil {
		return err
	}
	if s != want {
		return sourcecatalog.Errorf(sourcecatalog.ErrUnsupported, "only "+want+" is supported").AtField(field)
	}
	return nil
}

func (m *message) uuid(v int, field string) (uuid.UUID, error) {
	s, err := m.str(v, field)
	if err != nil {
		return uuid.Nil, err
	}
	id, err := ParseUUID(s)
	if err != nil {
		return uuid.Nil, atField(err, field)
	}
	return id, nil
}

func (m *message) digest(v int, field string) (canonical.Digest, error) {
	s, err := m.str(v, field)
	if err != nil {
		return canonical.Digest{}, err
	}
	d, err := canonical.ParseDigest(s)
	if err != nil {
		return canonical.Digest{}, atField(err, field)
	}
	return d, nil
}

// boundedStr reads a string of min to max bytes, copied from the message.
func (m *message) boundedStr(v int, field string, min, max int) (string, error) {
	s, err := m.str(v, field)
	switch {
	case err != nil:
		return "", err
	case len(s) > max:
		return "", sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, "longer than "+strconv.Itoa(max)+" bytes").AtField(field)
	case len(s) < min:
		return "", invalid(field, "must not be empty")
	}
	return strings.Clone(s), nil
}

// ParseUUID parses a UUID in canonical lowercase 8-4-4-4-12 form; the nil
// UUID and every other spelling are refused with ErrInvalidValue.
func ParseUUID(s string) (uuid.UUID, error) {
	if len(s) != 36 {
		return uuid.Nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "UUID must be lowercase 8-4-4-4-12")
	}
	id, err := uuid.Parse(s)
	if err != nil || id.String() != s {
		return uuid.Nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "UUID must be lowercase 8-4-4-4-12")
	}
	if id == uuid.Nil {
		return uuid.Nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "UUID must not be nil")
	}
	return id, nil
}

// checkSnapshotID requires a random (version 4, RFC 4122 variant) UUID.
func checkSnapshotID(id uuid.UUID) error {
	if id == uuid.Nil || id.Version() != 4 || id.Variant() != uuid.RFC4122 {
		return invalid("snapshot_id", "must be a random (version 4) UUID")
	}
	return nil
}

func checkVesselID(id uuid.UUID) error {
	if id == uuid.Nil {
		return invalid("vessel_id", "must not be the nil UUID")
	}
	return nil
}

func checkRevision(rev int64) error {
	if rev < 1 || rev > sourcecatalog.MaxRevision {
		return invalid("revision", "must be in 1..2^53-1")
	}
	return nil
}

// FormatTime returns t as the protocol spells timestamps: RFC 3339 in UTC
// with "Z" and the fraction of a second without trailing zeros.
func FormatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// ParseTime parses a protocol timestamp. It accepts exactly the spelling
// FormatTime produces, so one instant has one spelling on the wire.
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || FormatTime(t) != s {
		return time.Time{}, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, `must be RFC 3339 UTC with "Z", like 2026-05-01T12:00:00Z`)
	}
	return t.UTC(), nil
}
