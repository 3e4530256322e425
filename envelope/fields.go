package envelope

import (
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
)

// The helpers here read one member of a strictly decoded object.

func invalid(field, detail string) *sourcecatalog.Error {
	return sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, detail).AtField(field)
}

// object checks that v is an object whose member names are exactly names
// (sorted canonically), and returns the members in that order.
func object(v *canonical.Value, names []string) ([]canonical.Member, error) {
	if v.Kind() != canonical.Object {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "must be a JSON object")
	}
	mems := v.Members()
	i, k := 0, 0
	for i < len(mems) && k < len(names) {
		switch {
		case mems[i].Name == names[k]:
			i++
			k++
		case mems[i].Name < names[k]:
			return nil, unknownField(mems[i].Name)
		default:
			return nil, sourcecatalog.Errorf(sourcecatalog.ErrMissingField, "required").AtField(names[k])
		}
	}
	if i < len(mems) {
		return nil, unknownField(mems[i].Name)
	}
	if k < len(names) {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrMissingField, "required").AtField(names[k])
	}
	return mems, nil
}

func unknownField(name string) *sourcecatalog.Error {
	return sourcecatalog.Errorf(sourcecatalog.ErrUnknownField, "not defined by the protocol").AtField(name)
}

// integer reads a JSON integer written as digits only, in [lo, hi]. 42.0,
// 4.2e1, true and "42" are all refused.
func integer(v *canonical.Value, field string, lo, hi int64) (int64, error) {
	if !v.IsIntegerLiteral() {
		return 0, invalid(field, "must be a JSON integer written as digits only")
	}
	f := v.Float()
	if f < float64(lo) || f > float64(hi) {
		return 0, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "out of range").AtField(field)
	}
	return int64(f), nil
}

func str(v *canonical.Value, field string) (string, error) {
	if v.Kind() != canonical.String {
		return "", invalid(field, "must be a string, not "+v.Kind().String())
	}
	return v.Str(), nil
}

// constant reads a string member that must equal want; another string is an
// unsupported capability.
func constant(v *canonical.Value, field, want string) error {
	s, err := str(v, field)
	if err != nil {
		return err
	}
	if s != want {
		return sourcecatalog.Errorf(sourcecatalog.ErrUnsupported, "only "+want+" is supported").AtField(field)
	}
	return nil
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

func uuidField(v *canonical.Value, field string) (uuid.UUID, error) {
	s, err := str(v, field)
	if err != nil {
		return uuid.Nil, err
	}
	id, err := ParseUUID(s)
	if err != nil {
		return uuid.Nil, err.(*sourcecatalog.Error).AtField(field)
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
