package outbox

import (
	"context"
	"math"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/canonical"
)

// A Store persists a vessel's revision counter and outbox entries.
// outbox/memstore is the in-memory reference; mysqlstore.Outbox the MariaDB one,
// sqlitestore's Outbox the SQLite one; outboxtest.Run is the conformance
// suite every Store passes.
type Store interface {
	// WithVessel runs fn in a transaction on the vessel's outbox.
	//
	// Calls for the same vessel are serialised: while fn runs, no other
	// WithVessel call for that vessel runs fn or commits, from this
	// process or any other sharing the store. Calls for different vessels
	// may run concurrently.
	//
	// If fn returns nil, WithVessel commits every write fn made, atomically
	// and durably, and returns nil; if the commit fails it returns an error
	// and nothing fn wrote is visible. If fn returns an error, or the
	// process crashes before the commit, nothing fn wrote is visible and
	// WithVessel returns fn's error unchanged (compared with ==). A Store
	// may re-run fn after a transient failure such as a deadlock, so fn
	// must not have effects outside tx. When the store cannot serve at all,
	// WithVessel returns an error wrapping sourcecatalog.ErrStoreUnavailable.
	//
	// tx must not be used after fn returns.
	WithVessel(ctx context.Context, vesselID uuid.UUID, fn func(tx Tx) error) error
}

// A Tx is the transaction WithVessel hands to its callback, on one vessel.
// Byte slices passed in are never modified afterwards; slices returned must
// not be modified by the caller and keep their contents after the
// transaction, so a Store never hands out memory it reuses or unmaps.
//
// The Writer and the Publisher call a Tx from the callback's goroutine
// only, one method at a time. Every method returns ctx's error when ctx is
// done.
type Tx interface {
	// NextRevision allocates the vessel's next revision: one more than the
	// last allocated (1 for the first), or floor when floor is larger,
	// persisted with the transaction as the last allocated. A revision
	// whose transaction commits is never handed out again. A floor of 0
	// or less floors nothing; the Writer passes at most
	// sourcecatalog.MaxRevision (SPEC.md §2.4).
	NextRevision(ctx context.Context, floor int64) (int64, error)

	// Entries returns the entries of a snapshot in entity order (manifest
	// first, then chunks by index), or sourcecatalog.ErrNotFound.
	Entries(ctx context.Context, snapshot uuid.UUID) ([]Entry, error)

	// PutEntries inserts entries. The Writer never puts an entry twice.
	PutEntries(ctx context.Context, entries []Entry) error

	// Pending returns up to limit entries in state Pending, oldest
	// revision first, each snapshot's in entity order; none for a limit
	// of 0 or less.
	Pending(ctx context.Context, limit int) ([]Entry, error)

	// SetState sets the state of the entry with the given snapshot and
	// chunk index (sourcecatalog.NoIndex for the manifest). It returns
	// sourcecatalog.ErrNotFound when there is no such entry.
	SetState(ctx context.Context, snapshot uuid.UUID, chunkIndex int, state State) error
}

// A PendingCounter is a Tx that counts the vessel's pending entries without
// reading them; the shipped stores' transactions are. CountPending uses it.
type PendingCounter interface {
	// CountPending returns the number of the vessel's entries in state
	// Pending.
	CountPending(ctx context.Context) (int, error)
}

// CountPending returns the number of the vessel's entries in state Pending
// in tx: through the Tx's own PendingCounter when it has one, and
// otherwise by reading them all with Pending.
func CountPending(ctx context.Context, tx Tx) (int, error) {
	if c, ok := tx.(PendingCounter); ok {
		return c.CountPending(ctx)
	}
	pending, err := tx.Pending(ctx, math.MaxInt)
	return len(pending), err
}

// State is the delivery state of an entry.
type State string

// Delivery states.
const (
	Pending   State = "pending"   // to be sent
	Delivered State = "delivered" // a matching receipt came back
	Stopped   State = "stopped"   // publishing of its snapshot was stopped
)

// An Entry is one outbox entity: a manifest or a chunk.
type Entry struct {
	VesselID   uuid.UUID
	SnapshotID uuid.UUID
	Revision   int64
	EntityType string // sourcecatalog.ManifestEntityType or ChunkEntityType (IndexEntry: ManifestIndexEntityType)
	EntityKey  string // envelope.ManifestKey or envelope.ChunkKey
	ChunkIndex int    // sourcecatalog.NoIndex for the manifest
	Payload    []byte // the entity's canonical bytes
	// Digest is what the receiver's receipt carries: a chunk's
	// payload_sha256, or the SHA-256 of the manifest's canonical bytes.
	Digest canonical.Digest
	State  State
}
