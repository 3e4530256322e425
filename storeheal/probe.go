package storeheal

import (
	"context"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// A store that opens may still be unable to write: SQLite opens a file on
// a full disk, and reads it, and fails only when a commit writes. An
// Opener that returns such a handle would have it poisoned by the next
// write, again and again; the probes let it check first.
//
// A probe commits its write: a transaction rolled back proves nothing,
// since a store may write nothing for it (SQLite in WAL mode keeps an
// uncommitted transaction in memory, so it rolls back on a full disk
// without an error). The write is to the nil vessel, which no message may
// name (SPEC.md §2.2), and no listing shows; it changes a value, since
// SQLite writes nothing for a row overwritten with the same bytes. A
// probe runs when a handle
// is opened or reopened, not per call, so its commit costs nothing that
// matters.

// ProbeReceiver checks that s can write: in one transaction on the nil
// vessel it counts the probes in the vessel's active revision (the nil
// vessel never has an active snapshot), and commits. It returns nil when the commit succeeded, and otherwise the
// store's error. An Opener calls it on the handle it opened, and closes
// the handle and fails when it fails.
func ProbeReceiver(ctx context.Context, s finalize.Store) error {
	return s.WithVessel(ctx, uuid.Nil, func(tx finalize.Tx) error {
		v, err := tx.Vessel(ctx)
		if err != nil {
			return err
		}
		v.ActiveRevision++
		return tx.SetVessel(ctx, v)
	})
}

// ProbeOutbox checks that s can write as ProbeReceiver does, committing
// the allocation of a revision of the nil vessel (one is spent per
// probe; no entry ever takes it).
func ProbeOutbox(ctx context.Context, s outbox.Store) error {
	return s.WithVessel(ctx, uuid.Nil, func(tx outbox.Tx) error {
		_, err := tx.NextRevision(ctx, 0)
		return err
	})
}
