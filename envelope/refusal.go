package envelope

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
)

// maxRefusalMessage bounds a refusal's message (SPEC.md §9.4).
const maxRefusalMessage = 256

// A Refusal is the receiver's answer to a message it did not stage: the
// class and location of the first problem, never a receipt (SPEC.md
// §9.4).
type Refusal struct {
	Class  error // one of sourcecatalog.Classes()
	Chunk  int   // sourcecatalog.NoIndex when absent
	Record int   // within Chunk; sourcecatalog.NoIndex when absent
	Field  string
	// Message describes the problem for people; a sender must not
	// interpret it.
	Message string
}

// RefusalOf returns the refusal answering err: the class and location of
// its first problem. An error of no class, or nil, is refused as
// ErrStoreUnavailable with no location. The message is the class and the
// problem's bounded detail, never the cause's text, which may describe the
// receiver's internals. The refusal always passes Check: a location or
// field it cannot carry is dropped or cut, never sent malformed.
func RefusalOf(err error) Refusal {
	unavailable := Refusal{Class: sourcecatalog.ErrStoreUnavailable, Chunk: sourcecatalog.NoIndex, Record: sourcecatalog.NoIndex, Message: sourcecatalog.ErrStoreUnavailable.Error()}
	problems := sourcecatalog.Problems(err)
	if len(problems) == 0 {
		return unavailable
	}
	p := problems[0]
	f := Refusal{Class: sourcecatalog.Class(p), Chunk: p.Chunk, Record: p.Record}
	if f.Class == nil {
		return unavailable
	}
	if f.Chunk < 0 || f.Chunk >= sourcecatalog.MaxChunks {
		f.Chunk, f.Record = sourcecatalog.NoIndex, sourcecatalog.NoIndex // a record counted in a list, not in a chunk
	}
	if f.Record < 0 || f.Record >= sourcecatalog.MaxRecordsPerChunk {
		f.Record = sourcecatalog.NoIndex
	}
	if p.Field != "" {
		// Repaired first, then cut as sourcecatalog.Error.AtField cuts.
		f.Field = sourcecatalog.Errorf(f.Class, "").AtField(strings.ToValidUTF8(p.Field, "\uFFFD")).Field
	}
	f.Message = f.Class.Error()
	if p.Class == f.Class && p.Detail != "" {
		f.Message += ": " + p.Detail
	}
	f.Message = cutString(strings.ToValidUTF8(f.Message, "\uFFFD"), maxRefusalMessage)
	if f.Check() != nil {
		return unavailable
	}
	return f
}

// cutString returns s cut to at most n bytes at a character boundary.
func cutString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Err returns the refusal as an error of its class, located as it says.
func (f Refusal) Err() error {
	e := sourcecatalog.Errorf(f.Class, "refused by the receiver: "+f.Message)
	e.Chunk, e.Record, e.Field = f.Chunk, f.Record, f.Field
	return e
}

// Check reports the first member of f outside its domain, as DecodeRefusal
// would (ErrInvalidValue or ErrLimitExceeded).
func (f Refusal) Check() error {
	switch {
	case sourcecatalog.WireName(f.Class) == "":
		return invalid("error", "not an error class")
	case !utf8.ValidString(f.Field):
		return invalid("field", "not valid UTF-8")
	case !utf8.ValidString(f.Message):
		return invalid("message", "not valid UTF-8")
	case len(f.Field) > maxFieldBytes:
		return sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, "longer than "+strconv.Itoa(maxFieldBytes)+" bytes").AtField("field")
	case len(f.Message) > maxRefusalMessage:
		return sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, "longer than "+strconv.Itoa(maxRefusalMessage)+" bytes").AtField("message")
	case f.Chunk != sourcecatalog.NoIndex && (f.Chunk < 0 || f.Chunk >= sourcecatalog.MaxChunks):
		return invalid("chunk_index", "out of range")
	case f.Record != sourcecatalog.NoIndex && (f.Record < 0 || f.Record >= sourcecatalog.MaxRecordsPerChunk):
		return invalid("record_index", "out of range")
	case f.Record != sourcecatalog.NoIndex && f.Chunk == sourcecatalog.NoIndex:
		return invalid("record_index", "only with chunk_index")
	}
	return nil
}

// maxFieldBytes bounds a refusal's field: a 64-byte name cut at a
// character boundary and marked with "…" (SPEC.md §10.2).
const maxFieldBytes = 64 + len("…")

// Canonical returns the refusal's canonical bytes. f must pass Check.
func (f Refusal) Canonical() []byte {
	b := make([]byte, 0, 160+len(f.Message)+len(f.Field))
	b = append(b, '{')
	if f.Chunk != sourcecatalog.NoIndex {
		b = append(b, `"chunk_index":`...)
		b = strconv.AppendInt(b, int64(f.Chunk), 10)
		b = append(b, ',')
	}
	b = append(b, `"error":"`...)
	b = append(b, sourcecatalog.WireName(f.Class)...)
	b = append(b, '"')
	if f.Field != "" {
		b = append(b, `,"field":`...)
		b, _ = canonical.AppendString(b, f.Field) // valid UTF-8: Check
	}
	b = append(b, `,"message":`...)
	b, _ = canonical.AppendString(b, f.Message)
	b = append(b, `,"protocol":"`+sourcecatalog.Protocol+`"`...)
	if f.Record != sourcecatalog.NoIndex {
		b = append(b, `,"record_index":`...)
		b = strconv.AppendInt(b, int64(f.Record), 10)
	}
	return append(b, '}')
}

// DecodeRefusal strictly decodes a refusal from JSON text in any member
// order and whitespace, reporting the first problem in the order of
// SPEC.md §9.4: text over MaxAnswerSize bytes (ErrLimitExceeded), malformed
// JSON, a value other than an object, a missing error member, unknown and
// missing members, then each value in canonical name order; an unknown
// class name is ErrInvalidValue at error.
func DecodeRefusal(raw []byte) (Refusal, error) {
	msg, err := parseAnswer(raw)
	if err != nil {
		return Refusal{}, err
	}
	if msg.member("error") < 0 {
		return Refusal{}, sourcecatalog.Errorf(sourcecatalog.ErrMissingField, "required").AtField("error")
	}
	var vals [6]int
	if err := msg.members(refusalFields, vals[:], "chunk_index", "field", "record_index"); err != nil {
		return Refusal{}, err
	}
	f := Refusal{Chunk: sourcecatalog.NoIndex, Record: sourcecatalog.NoIndex}
	for k, name := range refusalFields {
		if vals[k] < 0 {
			continue // an absent optional member
		}
		if err := f.decodeField(&msg, name, vals[k]); err != nil {
			return Refusal{}, err
		}
	}
	if err := f.Check(); err != nil {
		return Refusal{}, err
	}
	return f, nil
}

// decodeField reads the member name, whose value is at msg.b[v].
func (f *Refusal) decodeField(msg *message, name string, v int) error {
	var err error
	var n int64
	switch name {
	case "chunk_index":
		n, err = msg.integer(v, name, 0, sourcecatalog.MaxChunks-1)
		f.Chunk = int(n)
	case "error":
		var s string
		if s, err = msg.str(v, name); err == nil {
			if f.Class = sourcecatalog.ClassNamed(s); f.Class == nil {
				err = invalid(name, "not an error class")
			}
		}
	case "field":
		f.Field, err = msg.boundedStr(v, name, 1, maxFieldBytes)
	case "message":
		f.Message, err = msg.boundedStr(v, name, 0, maxRefusalMessage)
	case "protocol":
		err = msg.constant(v, name, sourcecatalog.Protocol)
	case "record_index":
		n, err = msg.integer(v, name, 0, sourcecatalog.MaxRecordsPerChunk-1)
		f.Record = int(n)
	}
	return err
}

var refusalFields = []string{"chunk_index", "error", "field", "message", "protocol", "record_index"}
