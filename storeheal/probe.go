package storeheal

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// A store that opens may still be unable to write: SQLite opens a file on
// a full disk, and reads it, and fails only when a transaction journals
// its first write. An Opener that returns such a handle would have it
// poisoned by the next write, again and again; the probes let it check
// first.

// errProbe rolls a probe's transaction back.
var errProbe = errors.New("storeheal: the probe rolls back")

// ProbeReceiver checks that s can write: in one transaction on the nil
// vessel, which no message may name (SPEC.md §2.2), it writes the active
// pointer and then rolls everything back, so that it changes nothing. It
// returns nil when the write succeeded, and otherwise the store's error.
// An Opener calls it on the handle it opened, and closes the handle and
// fails when it fails.
func ProbeReceiver(ctx context.Context, s finalize.Store) error {
	return rolledBack(s.WithVessel(ctx, uuid.Nil, func(tx finalize.Tx) error {
		if err := tx.SetVessel(ctx, finalize.VesselState{ActiveRevision: 1}); err != nil {
			return err
		}
		return errProbe
	}))
}

// ProbeOutbox checks that s can write as ProbeReceiver does, allocating a
// revision of the nil vessel in a transaction it rolls back.
func ProbeOutbox(ctx context.Context, s outbox.Store) error {
	return rolledBack(s.WithVessel(ctx, uuid.Nil, func(tx outbox.Tx) error {
		if _, err := tx.NextRevision(ctx, 0); err != nil {
			return err
		}
		return errProbe
	}))
}

// rolledBack returns nil for the probe's own error, and err otherwise.
func rolledBack(err error) error {
	if err == errProbe {
		return nil
	}
	if err == nil {
		return sourcecatalog.Errorf(sourcecatalog.ErrStoreUnavailable, "storeheal: the store committed a probe its callback failed")
	}
	return err
}
