package finalize

import (
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/envelope"
)

// An Observer is told what a Receiver did, one Event at a time, so that a
// server can log and count where things happen — messages by result and
// class, finalize outcomes and their duration, staging usage against its
// bounds, store retries — without this package importing a metrics
// library. It is called synchronously on the caller's goroutine, an
// EventRetry while the vessel's transaction is open, so it must be fast,
// must not block and must be safe for concurrent use. It must not call the
// Receiver.
type Observer func(Event)

// WithObserver makes the Receiver report to o. Without it nothing is
// reported.
func WithObserver(o Observer) Option { return func(rc *Receiver) { rc.observe = o } }

// EventKind says what an Event reports.
type EventKind string

// Event kinds.
const (
	// EventReceive: ReceiveManifest or ReceiveChunk returned.
	EventReceive EventKind = "receive"
	// EventFinalize: Finalize returned, called directly or by Reconcile.
	EventFinalize EventKind = "finalize"
	// EventRetry: the Store ran a transaction's callback again after a
	// transient failure such as a deadlock (Store.WithVessel).
	EventRetry EventKind = "retry"
)

// An Event reports one thing a Receiver did.
type Event struct {
	Kind EventKind
	// Op names the Receiver method: "ReceiveManifest", "ReceiveChunk",
	// "ReceiveChunkRef", "ReceiveManifestIndex", "Finalize", or for EventRetry the method whose
	// transaction was retried.
	Op string
	// Vessel is the vessel the call was for: for EventReceive the
	// origin's, since a refused message may name none or another.
	Vessel uuid.UUID
	// Snapshot is the snapshot concerned, uuid.Nil when a message was
	// refused before its snapshot id was decoded.
	Snapshot uuid.UUID

	// Receipt is an EventReceive's receipt; zero when Err is not nil.
	Receipt envelope.Receipt
	// Outcome is an EventFinalize's outcome; zero when Err is not nil and
	// the outcome was not Rejected.
	Outcome Outcome
	// Err is the error the call returned. It may describe the server's
	// internals: log it, never send it.
	Err error

	// Usage is the vessel's usage of its staging bounds after the call,
	// nil when the call did not read it: Finalize always reads it, and a
	// receive that staged a message; a retry, a refused message and an
	// identical retry of a message do not.
	Usage *Usage
	// Duration is how long the call took; zero for EventRetry.
	Duration time.Duration
}

// report sends e to the Observer, if any.
func (r *Receiver) report(e Event) {
	if r.observe != nil {
		r.observe(e)
	}
}
