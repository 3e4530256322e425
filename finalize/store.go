package finalize

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
)

// A Store is where a Receiver keeps its state. Integrators implement it over
// their own database; memstore is the in-memory reference and finalizetest
// the conformance suite every Store must pass.
//
// A Store offers one thing: a transaction serialised per vessel, with plain
// reads and writes. Every rule of the protocol lives in the Receiver.
type Store interface {
	// WithVessel runs fn in a transaction on the vessel's state.
	//
	// Calls for the same vessel are serialised: while fn runs, no other
	// WithVessel call for that vessel runs fn or commits, from this process
	// or any other sharing the store (a database implements this with a
	// vessel row lock). Calls for different vessels may run concurrently.
	//
	// If fn returns nil, WithVessel commits every write fn made, atomically
	// and durably, and returns nil; if the commit fails it returns an error
	// and nothing fn wrote is visible. If fn returns an error, or the
	// process crashes before the commit, nothing fn wrote is visible and
	// WithVessel returns fn's error unchanged. A Store may re-run fn after
	// a transient failure such as a deadlock, so fn must not have effects
	// outside tx. When the store cannot serve at all, WithVessel returns an
	// error wrapping sourcecatalog.ErrStoreUnavailable.
	//
	// tx must not be used after fn returns.
	WithVessel(ctx context.Context, vesselID uuid.UUID, fn func(tx Tx) error) error
}

// A Tx is the transaction WithVessel hands to its callback. Every method
// reads or writes the state of the one vessel the transaction was opened
// for, and sees the writes made earlier in the same transaction.
//
// Byte slices passed to a Tx are never modified by the caller afterwards,
// so a Store may keep them without copying; byte slices a Tx returns must
// not be modified by the caller, and keep their contents after the
// transaction: a Store never hands out memory it reuses or unmaps.
//
// The Receiver calls a Tx from the callback's goroutine only, one method
// at a time, and never after the callback has returned; a Tx need not be
// safe for concurrent use. Every method returns ctx's error when ctx is
// done, and otherwise a non-nil error exactly when it could not read or
// write what it was asked to (a failed statement, a lost connection): the
// callback then returns that error, unchanged or wrapped, and the Store
// must not commit. Apart from sourcecatalog.ErrNotFound where a method names it, the
// Receiver gives no meaning to a Tx error beyond that; a Store wanting a
// retry re-runs the whole callback (see Store.WithVessel).
type Tx interface {
	// Vessel returns the vessel's active pointer. A vessel that never had a
	// snapshot activated has the zero VesselState (uuid.Nil, revision 0).
	Vessel(ctx context.Context) (VesselState, error)

	// SetVessel replaces the active pointer.
	SetVessel(ctx context.Context, v VesselState) error

	// Snapshot returns the staged snapshot with the given id, or sourcecatalog.ErrNotFound.
	Snapshot(ctx context.Context, id uuid.UUID) (Snapshot, error)

	// Snapshots returns every staged snapshot of the vessel, in any order.
	// A Receiver bounds how many there are.
	Snapshots(ctx context.Context) ([]Snapshot, error)

	// PutSnapshot inserts the snapshot, or replaces the one with the same
	// ID. It does not touch the snapshot's chunks.
	PutSnapshot(ctx context.Context, s Snapshot) error

	// DeleteSnapshot removes the snapshot with its chunks. It
	// returns nil if there is no such snapshot. Only explicit operator
	// actions (Discard, Prune and the opt-in retention) delete.
	DeleteSnapshot(ctx context.Context, id uuid.UUID) error

	// Chunk returns one staged chunk, or sourcecatalog.ErrNotFound.
	Chunk(ctx context.Context, snapshot uuid.UUID, index int) (StagedChunk, error)

	// Chunks returns every staged chunk of a snapshot in index order.
	Chunks(ctx context.Context, snapshot uuid.UUID) ([]StagedChunk, error)

	// PutChunk stores a chunk. The Receiver never puts a chunk twice.
	PutChunk(ctx context.Context, c StagedChunk) error

	// Index returns the record index of the active snapshot, as last given
	// to SetIndex, in canonical record order; nil before the first
	// activation.
	Index(ctx context.Context) ([]IndexEntry, error)

	// SetIndex replaces the record index. The Receiver calls it when it
	// activates a snapshot whose document differs from the active one. A
	// Store may keep the index as one value.
	SetIndex(ctx context.Context, index []IndexEntry) error

	// PutItems writes inventory items that the snapshot being activated
	// selects. An item that does not exist is inserted as given. For an
	// item that exists, Record, Current and LastSeen are replaced and
	// FirstSeen is kept: a Store never overwrites FirstSeen.
	PutItems(ctx context.Context, items []Item) error

	// RetireItems marks existing items as no longer selected: Current
	// false and LastSeen last. Record and FirstSeen are kept; keys without
	// an item are ignored. Items are never deleted.
	RetireItems(ctx context.Context, keys []catalog.Key, last Seen) error

	// Items returns the vessel's whole inventory, in any order.
	Items(ctx context.Context) ([]Item, error)
}

// VesselState is a vessel's active pointer.
type VesselState struct {
	ActiveSnapshot     uuid.UUID // uuid.Nil when nothing was activated yet
	ActiveRevision     int64
	ActiveDiscoveredAt time.Time
	ActiveDocument     canonical.Digest
}

// SnapshotState is where a staged snapshot is in its life: what a Store
// keeps. It is not the outcome of a Finalize call ([OutcomeStatus]), which
// also says how the snapshot compares with the active one; the outcome
// that finalized a snapshot is kept in Snapshot.Final. A snapshot
// finalized AlreadyActive or Superseded was never activated itself, and
// both are in StateSuperseded.
type SnapshotState string

// Snapshot states. Staging snapshots count against the incomplete staging
// bounds, the others against the retained bounds.
const (
	StateStaging    SnapshotState = "staging"
	StateActivated  SnapshotState = "activated"  // activated once; may no longer be active
	StateSuperseded SnapshotState = "superseded" // older than, or identical to, the active revision
	StateRejected   SnapshotState = "rejected"   // failed verification
)

// A Snapshot is the staged state of one snapshot.
type Snapshot struct {
	ID       uuid.UUID
	Revision int64 // from the first message received
	State    SnapshotState

	// Manifest is the manifest's canonical bytes, nil until it arrives;
	// ManifestDigest is their SHA-256.
	Manifest       []byte
	ManifestDigest canonical.Digest
	ChunkCount     int // from the manifest; 0 until it arrives
	RecordCount    int // from the manifest

	ChunksStaged int   // number of chunks staged
	StagedBytes  int64 // canonical bytes of the manifest and chunks

	// Reason is why a snapshot was rejected, or, for one finalized
	// Superseded, the active snapshot that superseded it; for people.
	Reason string
	// Final is the outcome that finalized the snapshot, "" while staging.
	Final OutcomeStatus
}

// A StagedChunk is one received chunk: its canonical bytes exactly as
// received and re-encoded, and the hash they carry.
type StagedChunk struct {
	Snapshot  uuid.UUID
	Index     int
	Canonical []byte
	Payload   canonical.Digest // payload_sha256
}

// An IndexEntry identifies one record of the active snapshot and the SHA-256
// of its canonical bytes.
type IndexEntry struct {
	Key    catalog.Key
	Digest canonical.Digest
}

// Seen is a sighting of an item: the snapshot's revision and discovery time.
type Seen struct {
	Revision int64
	At       time.Time
}

// An Item is one entry of a vessel's inventory: every path, source and
// observation any activated snapshot ever selected.
type Item struct {
	Key catalog.Key
	// Record is the canonical bytes of the item's latest record, a valid
	// record of the key's kind and identity; a Store may parse it, for
	// instance to fill descriptive columns.
	Record []byte
	// FirstSeen is the activation that first selected the item; a Store
	// never overwrites it.
	FirstSeen Seen
	// CurrentlyObserved reports whether the active snapshot selects the
	// item. For selected-only coverage it describes the current selection,
	// never physically absent equipment.
	CurrentlyObserved bool
	// LastSeen is the last active snapshot that selected the item. A Store
	// keeps it only for items not currently observed: for the others it is
	// the active snapshot, which Receiver.Active fills in when it reads
	// the inventory.
	LastSeen Seen
}
