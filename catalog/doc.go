// Package catalog defines the records of a Source Catalog snapshot — path,
// source and observation — with their validation, canonical global order and
// integrity rules (protocol v2: SPEC.md §4 and §5).
//
// A [*Record] is immutable and holds its canonical RFC 8785 bytes, computed
// once when the record is constructed ([NewPath], [NewSource],
// [NewObservation]) or decoded ([Decode], [FromValue]); chunking and hashing
// then only copy bytes.
//
// The canonical global order is: every path record by path, then every
// source record by source_ref, then every observation by path and then
// source_ref, all bytewise. [Sort] establishes it and [Check] verifies it
// together with the integrity rules: unique paths and source_refs, exactly
// one observation per path, every observation resolves to a path and a
// source, every source is referenced by an observation.
//
// Errors are *sourcecatalog.Error values wrapping ErrUnknownField,
// ErrMissingField, ErrInvalidValue, ErrLimitExceeded or ErrIntegrity, with
// the field and, from Check and DecodeList, the record index.
package catalog
