package finalize

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
)

// Errors of the receiver, aliases of the module's classes so that either
// name works with errors.Is.
var (
	ErrConflict           = sourcecatalog.ErrConflict
	ErrRevisionConflict   = sourcecatalog.ErrRevisionConflict
	ErrForeignVessel      = sourcecatalog.ErrForeignVessel
	ErrUnregisteredVessel = sourcecatalog.ErrUnregisteredVessel
	ErrStagingExhausted   = sourcecatalog.ErrStagingExhausted
	ErrStoreUnavailable   = sourcecatalog.ErrStoreUnavailable

	// ErrActiveSnapshot is returned by Discard for the active snapshot,
	// which is never removed.
	ErrActiveSnapshot = errors.New("finalize: the active snapshot cannot be removed")
)

// Origin is what the integrator's authentication established about the
// sender of a message.
type Origin struct {
	VesselID uuid.UUID
}

// A VesselRegistry answers whether a vessel is a registered telemetry
// vessel. It must be safe for concurrent use.
type VesselRegistry interface {
	IsRegistered(ctx context.Context, vesselID uuid.UUID) (bool, error)
}

// Limits bound what one vessel may keep staged. Exceeding any of them fails
// closed with ErrStagingExhausted and changes nothing.
type Limits struct {
	IncompleteSnapshots int   // snapshots still staging
	IncompleteBytes     int64 // their staged bytes
	RetainedSnapshots   int   // finalized snapshots kept (activated, superseded, rejected)
	RetainedBytes       int64 // their staged bytes
}

// DefaultLimits allow a few snapshots in flight and keep the history of
// dozens of activations. A maximal snapshot stages about 4.3 MB.
var DefaultLimits = Limits{
	IncompleteSnapshots: 8,
	IncompleteBytes:     64 << 20,
	RetainedSnapshots:   32,
	RetainedBytes:       256 << 20,
}

// An Option configures a Receiver.
type Option func(*Receiver)

// WithRegistry makes the Receiver refuse messages of vessels r does not
// know. Without it every vessel is taken as registered.
func WithRegistry(r VesselRegistry) Option { return func(rc *Receiver) { rc.registry = r } }

// WithLimits replaces DefaultLimits.
func WithLimits(l Limits) Option { return func(rc *Receiver) { rc.limits = l } }

// WithRetention opts in to pruning after each activation, keeping the
// newest keep finalized snapshots (and always the active one). By default
// nothing is pruned automatically.
func WithRetention(keep int) Option { return func(rc *Receiver) { rc.retain = keep } }

// A Receiver runs the receiver's state machine over a Store. It keeps no
// state of its own, so any number of Receivers, in any number of processes,
// may share a Store. It is safe for concurrent use.
type Receiver struct {
	store    Store
	registry VesselRegistry
	limits   Limits
	retain   int // < 0: no automatic pruning
}

// NewReceiver returns a Receiver over store.
func NewReceiver(store Store, opts ...Option) *Receiver {
	r := &Receiver{store: store, limits: DefaultLimits, retain: -1}
	for _, o := range opts {
		o(r)
	}
	return r
}

// ReceiptStatus says what receiving a message did.
type ReceiptStatus string

// Receipt statuses.
const (
	// Staged: the message is now durably staged.
	Staged ReceiptStatus = "staged"
	// AlreadyReceived: identical bytes were staged before; nothing changed.
	AlreadyReceived ReceiptStatus = "already_received"
)

// A Receipt acknowledges durable staging of one message — never
// activation. A retry of identical bytes gets an equal Receipt with status
// AlreadyReceived.
type Receipt struct {
	Status     ReceiptStatus
	EntityType string // sourcecatalog.ManifestEntityType or ChunkEntityType
	VesselID   uuid.UUID
	SnapshotID uuid.UUID
	Revision   int64
	ChunkIndex int              // sourcecatalog.NoIndex for a manifest
	Digest     canonical.Digest // a chunk's payload_sha256; the SHA-256 of a manifest's canonical bytes
}

// Matches reports whether r and o acknowledge the same message, whatever
// their status.
func (r Receipt) Matches(o Receipt) bool {
	r.Status, o.Status = "", ""
	return r == o
}

func (r *Receiver) admit(ctx context.Context, origin Origin, vessel uuid.UUID) error {
	if vessel != origin.VesselID {
		return sourcecatalog.Errorf(ErrForeignVessel, "the message names another vessel than its origin").AtField("vessel_id")
	}
	if r.registry == nil {
		return nil
	}
	ok, err := r.registry.IsRegistered(ctx, vessel)
	if err != nil {
		return fmt.Errorf("finalize: vessel registry: %w", err)
	}
	if !ok {
		return sourcecatalog.Errorf(ErrUnregisteredVessel, "not a registered telemetry vessel").AtField("vessel_id")
	}
	return nil
}
