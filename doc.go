// Package sourcecatalog holds the wire constants and the error classes of the
// YachtMemory Source Catalog protocol v2 (draft 0.1.0).
//
// A vessel's on-board controller periodically discovers which Signal K paths
// and sources it currently selects and ships that inventory, the source
// catalog, to a shore server. One discovery cycle produces one snapshot: a
// manifest and up to [MaxChunks] content-hashed chunks of records. The pieces
// travel through a transactional outbox and may arrive in any order,
// duplicated or retried. The receiver stages them durably, answers identical
// retries idempotently, refuses conflicting bytes, and a resumable finalize
// step verifies the complete set and atomically activates it for the vessel.
// Older revisions never overwrite newer ones and history is never lost.
//
// # Packages
//
//   - canonical: RFC 8785 canonical JSON — a strict transform of arbitrary
//     JSON text and the append helpers the typed encoders use.
//   - catalog: path, source and observation records; validation, the
//     canonical global order and the integrity rules.
//   - envelope: the manifest and chunk wire format, strict decoders, the
//     greedy chunker that enforces the hard limits, hashes and Verify.
//   - outbox: the on-board side — one transaction per discovery cycle and a
//     publisher behind a capability gate.
//   - finalize: the receiver's state machine over a storage-agnostic Store;
//     finalize/memstore is the in-memory reference store and
//     finalize/finalizetest the conformance suite every Store must pass.
//   - mysqlstore: the MySQL/MariaDB (InnoDB; Galera too) stores and the _v2
//     schema; sqlitestore: one SQLite file, both sides, power-loss safe.
//   - httpbinding: the receiver over HTTPS and its client; storeheal, a
//     store handle that reopens itself; prommetrics, the Prometheus observer.
//   - signalk and agent: discovery from a Signal K server and the on-board
//     loop.
//   - cmd/sourcecatalog: the command-line tool.
//
// All of them are one module: a program links only the packages it imports,
// so one that uses the codec alone links no database, Prometheus or
// WebSocket code.
//
// # Errors
//
// Every failure the packages report wraps exactly one of the class sentinels
// declared here, so callers branch with [errors.Is] or [Class]. Three kinds of
// error value are not failures of an operation and wrap no class: detail
// sentinels (canonical.ErrDuplicateName, ...), found only inside an error of
// their class; the ErrNotFound a store transaction answers to the package
// driving it; and what a store passes on unchanged (its callback's error, a
// done context's error). The Receiver, Writer and Publisher class the latter
// as ErrStoreUnavailable. Failures located in a snapshot are an [*Error] that
// says where: chunk index, record index and field. Error texts may change
// between versions; the classes do not.
package sourcecatalog

// Wire constants of protocol v2.
const (
	// Protocol is the value of every manifest's and chunk's "protocol" field.
	Protocol = "yachtmemory.source-catalog.v2"

	// ManifestEntityType and ChunkEntityType name the outbox entities that
	// carry a manifest and a chunk.
	ManifestEntityType = "signalk_catalog_manifest_v2"
	ChunkEntityType    = "signalk_catalog_chunk_v2"
	// ChunkRefEntityType names the outbox entity that carries a chunk by
	// reference (SPEC.md §6.6): a chunk's members but its records, sent
	// only to a receiver that declared the capability chunk_reference
	// (httpbinding.CapabilityChunkReference).
	ChunkRefEntityType = "signalk_catalog_chunk_ref_v2"
	// ManifestIndexEntityType names the outbox entity that carries a
	// manifest with every chunk's payload_sha256 (SPEC.md §6.7), sent only
	// to a receiver that declared the capability manifest_index
	// (httpbinding.CapabilityManifestIndex). Its receipt has this entity
	// type too, and names the chunks the receiver still needs.
	ManifestIndexEntityType = "signalk_catalog_manifest_index_v2"

	// Scope and Coverage are the only accepted values of the manifest's
	// "scope" and "inventory_coverage". Other values are a future protocol
	// version's and are refused with ErrUnsupported.
	Scope    = "current-selected-sources"
	Coverage = "selected-only"
)

// Hard limits of protocol v2. Exceeding any of them fails closed; nothing is
// ever truncated or dropped.
const (
	MaxChunks          = 256   // chunks per snapshot
	MaxRecordsPerChunk = 100   // records per chunk
	MaxChunkBody       = 16384 // bytes of a chunk's canonical {"records":[...]}
	MaxRecords         = 25600 // records per snapshot
	MaxRequest         = 32768 // bytes of one complete wrapped outbox request
	MaxRevision        = 1<<53 - 1
	MaxDepth           = 64 // nesting of JSON arrays and objects
)
