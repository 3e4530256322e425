package httpbinding

import (
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

// An Observer is told what the Handler and the Reconciler did, one Event
// at a time, so that a server can log and count (messages by outcome,
// finalize outcomes, activation time) without this package importing a
// metrics library. It is called synchronously on the request's or the
// reconcile loop's goroutine, so it must be fast, must not block, and must
// be safe for concurrent use.
type Observer func(Event)

// EventKind says what an Event reports.
type EventKind string

// Event kinds.
const (
	// EventMessage: one HTTP request was answered.
	EventMessage EventKind = "message"
	// EventFinalize: one Finalize call ended, after a complete receipt or
	// during reconciliation.
	EventFinalize EventKind = "finalize"
	// EventReconcile: reconciling one vessel ended, or listing the
	// vessels with staging work failed (Vessel is uuid.Nil).
	EventReconcile EventKind = "reconcile"
	// EventHealth: a Health probe was answered; Err is why the check
	// failed.
	EventHealth EventKind = "health"
)

// Outcomes of a message that are not a receipt status or a refusal class.
const (
	OutcomeUnauthenticated  = "unauthenticated"    // 401
	OutcomeMethodNotAllowed = "method_not_allowed" // 405
	OutcomeBadRequest       = "bad_request"        // 400: the body could not be read, or a GET had one
	OutcomeDeclaration      = "declaration"        // 200: the capability declaration (GET, SPEC.md §11.7)
)

// Finalize triggers.
const (
	TriggerReceipt   = "receipt"   // a receipt reported the set complete
	TriggerReconcile = "reconcile" // the Reconciler found the set complete
)

// An Event reports one thing the binding did.
type Event struct {
	Kind EventKind // what happened
	// Vessel is the authenticated vessel (uuid.Nil before authentication
	// succeeded). EntityType is the message's once the request decoded,
	// and Snapshot once its payload decoded (a refused message's too); for
	// EventFinalize, the finalized snapshot.
	Vessel     uuid.UUID
	Snapshot   uuid.UUID
	EntityType string

	// For EventMessage: the HTTP status answered, and the outcome: the
	// receipt's status ("staged", "already_received"), the refusal's
	// class wire name ("conflict", ...), or one of the Outcome constants.
	Status  int
	Outcome string

	// For EventFinalize: what started it (TriggerReceipt or
	// TriggerReconcile) and what Finalize reported; for EventReconcile,
	// the outcomes of Reconcile.
	Trigger  string
	Finalize *finalize.Outcome
	Outcomes []finalize.Outcome

	// Err is the cause behind a refusal, an authentication failure or a
	// body read failure; for EventFinalize the error Finalize returned
	// (why a snapshot was rejected is in Finalize.Err); for EventReconcile
	// the error Reconcile or the VesselLister returned; for EventHealth
	// the error of the check. It may describe
	// the server's internals: log it, never send it.
	Err error

	// Duration is how long the request, the Finalize call, the vessel's
	// reconciliation or the health check took; zero for the EventFinalize of a Reconcile,
	// which times the vessel as a whole.
	Duration time.Duration
}
