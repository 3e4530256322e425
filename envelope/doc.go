// Package envelope implements the wire format of a Source Catalog v2
// snapshot: one manifest and 1 to sourcecatalog.MaxChunks chunks of records
// (SPEC.md §6 and §7.2–§7.3).
//
// [Build] orders, checks and cuts validated records into chunks with a
// greedy chunker, or where the records' keys say with
// [WithContentDefinedCuts], and computes the hashes. [DecodeManifest] and
// [DecodeChunk] are strict decoders for received messages, and [Verify]
// checks a complete set in any chunk order, reporting every problem with its
// location.
//
// # Hashes
//
// A chunk's payload_sha256 is the SHA-256 of the canonical
// {"records":[...]} of that chunk's records, its body. The manifest's
// document_sha256 is the SHA-256 of the canonical {"records":[...]} of all
// records in canonical global order. Neither covers the manifest or its
// timestamp, and both are computed over canonical bytes, never over a
// database's re-serialisation.
//
// # Limits
//
// Under either rule of SPEC.md §7.2, a chunk closes before adding a record
// would exceed
// sourcecatalog.MaxRecordsPerChunk records, sourcecatalog.MaxChunkBody body
// bytes, or sourcecatalog.MaxRequest bytes of the complete outbox request
// as measured by the [Wrapper]. The wrapper is pluggable because
// integrators own the request format; it is measured on the real bytes,
// never estimated, since escaping can double a body. A record that cannot
// fit alone fails with ErrRecordTooLarge; more than MaxChunks chunks or
// MaxRecords records fail with ErrLimitExceeded. Nothing is ever truncated
// or dropped.
package envelope
