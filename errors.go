package sourcecatalog

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Error classes. Every error returned by this module's packages wraps exactly
// one of them; test with errors.Is, or find it with [Class]. The contract has
// three named exceptions, none of them a failure of an operation:
//
//   - A detail sentinel, such as canonical.ErrDuplicateName, refines a
//     class: it is found inside a returned error of its class (here
//     ErrMalformedJSON) and is never returned alone.
//   - [ErrNotFound] is a store transaction's answer to the package driving
//     it (finalize.Tx, outbox.Tx). It wraps no class, and the Receiver,
//     Writer and Publisher never return it.
//   - A store's WithVessel returns its callback's error unchanged; the
//     in-memory stores return a done context's error, and the conformance
//     kits' fault stores their ErrInjected, as it is. The Receiver, Writer
//     and Publisher return anything a store, a transport or a registry
//     reports that wraps no class as ErrStoreUnavailable, keeping it as the
//     cause.
var (
	// ErrMalformedJSON: the bytes are not strict JSON (see package canonical
	// for the rules, which are stricter than RFC 8259).
	ErrMalformedJSON = errors.New("malformed JSON")
	// ErrUnknownField: an object carries a member the protocol does not define.
	ErrUnknownField = errors.New("unknown field")
	// ErrMissingField: a required member is absent.
	ErrMissingField = errors.New("missing field")
	// ErrInvalidValue: a member has the wrong JSON type or a value outside its
	// domain (a UUID that is not lowercase 8-4-4-4-12, 42.0 for an integer, a
	// path with an empty segment, ...), or a setting outside what the call
	// accepts (mysqlstore: a connection with no current schema, the
	// production schema without the opt-in, tables of another shape). Fix
	// the input or the configuration; retrying the same call fails again.
	ErrInvalidValue = errors.New("invalid value")
	// ErrLimitExceeded: a hard protocol limit (chunks, records, body bytes)
	// would be exceeded.
	ErrLimitExceeded = errors.New("limit exceeded")
	// ErrRecordTooLarge: one record cannot fit alone in a chunk, in its
	// canonical body or in its wrapped outbox request.
	ErrRecordTooLarge = errors.New("record too large")
	// ErrHashMismatch: a payload or document hash does not match the bytes.
	ErrHashMismatch = errors.New("hash mismatch")
	// ErrIntegrity: the records of a snapshot break an integrity rule
	// (uniqueness, one observation per path, resolution, order, index set),
	// or a receipt does not acknowledge the entry that was sent
	// (outbox.ErrReceiptMismatch).
	ErrIntegrity = errors.New("integrity violation")
	// ErrUnsupported: a capability this protocol version does not support
	// (another protocol, scope or inventory coverage), or that the receiver
	// has not declared (outbox.ErrCapabilityOff).
	ErrUnsupported = errors.New("unsupported capability")
	// ErrIncompleteScan: the discovery scan reported truncation or
	// pagination uncertainty, or a manifest does not claim transport
	// completeness. Nothing partial is ever built or activated.
	ErrIncompleteScan = errors.New("incomplete scan")
	// ErrForeignVessel: a message names another vessel than the one its
	// origin was authenticated as.
	ErrForeignVessel = errors.New("foreign vessel")
	// ErrUnregisteredVessel: the vessel is not a registered telemetry vessel.
	ErrUnregisteredVessel = errors.New("unregistered vessel")
	// ErrConflict: other bytes were already accepted for the same snapshot
	// and chunk index, or another manifest for the same snapshot.
	ErrConflict = errors.New("conflict")
	// ErrRevisionConflict: a snapshot claims the active revision with a
	// different document.
	ErrRevisionConflict = errors.New("revision conflict")
	// ErrStagingExhausted: a per-vessel staging bound would be exceeded.
	ErrStagingExhausted = errors.New("staging exhausted")
	// ErrReferenceUnavailable: a chunk reference (SPEC.md §6.6) names a
	// payload whose bytes the receiver does not hold for the vessel —
	// never received, pruned, discarded, or a store that keeps no lookup
	// by payload. Nothing changed; the sender sends the whole chunk
	// instead. It is never a conflict: the same message, sent whole, may
	// be staged.
	ErrReferenceUnavailable = errors.New("reference unavailable")
	// ErrStoreUnavailable: the store (or a transport or registry) is locked,
	// poisoned or otherwise cannot serve the request, or the context ended
	// first; the cause is wrapped. The operation changed nothing and may be
	// retried.
	ErrStoreUnavailable = errors.New("store unavailable")
)

// classes lists the classes in the order declared, and wireNames their
// names on the wire (SPEC.md §10.1), in the same order.
var (
	classes = []error{
		ErrMalformedJSON, ErrUnknownField, ErrMissingField, ErrInvalidValue,
		ErrLimitExceeded, ErrRecordTooLarge, ErrHashMismatch, ErrIntegrity,
		ErrUnsupported, ErrIncompleteScan, ErrForeignVessel, ErrUnregisteredVessel,
		ErrConflict, ErrRevisionConflict, ErrStagingExhausted, ErrReferenceUnavailable, ErrStoreUnavailable,
	}
	wireNames = []string{
		"malformed_json", "unknown_field", "missing_field", "invalid_value",
		"limit_exceeded", "record_too_large", "hash_mismatch", "integrity",
		"unsupported", "incomplete_scan", "foreign_vessel", "unregistered_vessel",
		"conflict", "revision_conflict", "staging_exhausted", "reference_unavailable", "store_unavailable",
	}
)

// WireName returns the stable name of class on the wire (SPEC.md §10.1),
// such as "malformed_json" for ErrMalformedJSON, or "" when class is not
// one of [Classes].
func WireName(class error) string {
	if i := slices.Index(classes, class); i >= 0 {
		return wireNames[i]
	}
	return ""
}

// ClassNamed returns the class whose wire name is name, or nil when no
// class has that name.
func ClassNamed(name string) error {
	if i := slices.Index(wireNames, name); i >= 0 {
		return classes[i]
	}
	return nil
}

// Classes returns the error classes in the order they are declared, in a new
// slice on each call.
func Classes() []error { return slices.Clone(classes) }

// Class returns the class err wraps, or nil when err is nil or wraps none
// (see the exceptions above). An error of this module wraps at most one
// class; were err to wrap several, Class would return the first in the
// order of [Classes].
func Class(err error) error {
	for _, c := range classes {
		if errors.Is(err, c) {
			return c
		}
	}
	return nil
}

// ErrNotFound is what a store transaction (finalize.Tx, outbox.Tx) returns
// for a snapshot, chunk or outbox entry that does not exist, where a method
// of the Tx says so. It is a store's answer to the package driving it, not
// an error class.
var ErrNotFound = errors.New("not found")

// NoIndex marks an absent chunk or record index in an [Error].
const NoIndex = -1

// An Error is a failure located in a snapshot. It wraps its class (one of the
// Err sentinels) and, when there is one, the underlying cause.
//
// Chunk and Record are zero-based indexes, or NoIndex when they do not apply.
// Record counts within the chunk when Chunk is set, and within the whole
// record sequence otherwise. Field names the member, as a JSON field name.
type Error struct {
	Class  error
	Chunk  int
	Record int
	Field  string
	Detail string // a bounded description; never echoes unbounded input
	Err    error  // the cause, or nil
}

// Errorf returns an *Error of the given class with no location; use the
// With methods to add one.
func Errorf(class error, detail string) *Error {
	return &Error{Class: class, Chunk: NoIndex, Record: NoIndex, Detail: detail}
}

// Wrap returns an *Error of the given class caused by err.
func Wrap(class error, err error) *Error {
	return &Error{Class: class, Chunk: NoIndex, Record: NoIndex, Err: err}
}

// InChunk returns a copy of e located in chunk i.
func (e *Error) InChunk(i int) *Error { c := *e; c.Chunk = i; return &c }

// AtRecord returns a copy of e located at record i.
func (e *Error) AtRecord(i int) *Error { c := *e; c.Record = i; return &c }

// maxFieldLen bounds Field: a member name may come from the input.
const maxFieldLen = 64

// AtField returns a copy of e located at field name. Names longer than 64
// bytes are cut at a character boundary and marked with "…".
func (e *Error) AtField(name string) *Error {
	c := *e
	if len(name) > maxFieldLen {
		cut := maxFieldLen
		for cut > 0 && !utf8.RuneStart(name[cut]) {
			cut--
		}
		name = name[:cut] + "…"
	}
	c.Field = name
	return &c
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("sourcecatalog: ")
	if loc := e.Location(); loc != "" {
		b.WriteString(loc)
		b.WriteString(": ")
	}
	b.WriteString(e.Class.Error())
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Location renders where the error is, for example `chunk 3 record 17 field
// "unit"`, or "" when the error has no location.
func (e *Error) Location() string {
	var parts []string
	if e.Chunk != NoIndex {
		parts = append(parts, "chunk "+strconv.Itoa(e.Chunk))
	}
	if e.Record != NoIndex {
		parts = append(parts, "record "+strconv.Itoa(e.Record))
	}
	if e.Field != "" {
		parts = append(parts, "field "+strconv.Quote(e.Field))
	}
	return strings.Join(parts, " ")
}

// Unwrap returns the class and, when present, the cause.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Class}
	}
	return []error{e.Class, e.Err}
}

func isError(err error) bool { _, ok := err.(*Error); return ok }

// Problems flattens err — a single error or a tree joined with errors.Join —
// into its located errors, in order. Errors that are not an *Error are
// returned wrapped in one with no location.
func Problems(err error) []*Error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok && !isError(err) {
		var out []*Error
		for _, inner := range j.Unwrap() {
			out = append(out, Problems(inner)...)
		}
		return out
	}
	var e *Error
	if errors.As(err, &e) {
		return []*Error{e}
	}
	return []*Error{{Class: err, Chunk: NoIndex, Record: NoIndex}}
}
