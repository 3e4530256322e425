package storeheal

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// A Source names a receiver's store for a service that heals it: what
// [OpenReceiver] opens, and opens again after a failure poisons it.
// sqlitestore.Source returns the Source of a SQLite file.
type Source struct {
	// Name names the store in logs and errors, such as "sqlite
	// /var/lib/catalog.db"; it must hold no password.
	Name string
	// Open opens the store: the finalize.Store, and the io.Closer (not
	// nil) that closes it. It is called for the first open and for each reopen, one
	// call at a time.
	Open func(ctx context.Context) (finalize.Store, io.Closer, error)
	// Poisoned reports whether an error of the store means that it must
	// be closed and opened again, such as errors.Is(err,
	// sqlitestore.ErrPoisoned); it must be safe for concurrent use. When
	// nil, the store is never reopened (an in-memory store, which a
	// reopen would empty).
	Poisoned func(error) bool
}

// OpenReceiver opens src under a Handle, with opts: each open, the first
// and every reopen, is followed by [ProbeReceiver], and a store that
// cannot write is closed and the open fails, so that the Handle serves
// only a store that can write. It returns an error wrapping
// sourcecatalog.ErrInvalidValue for a Source without Open, and the
// first open's or probe's error, naming src, when the store does not
// open or cannot write: of the class the store gave it, or, naming src,
// sourcecatalog.ErrStoreUnavailable when it gave none.
func OpenReceiver(ctx context.Context, src Source, opts ...Option) (*Handle[finalize.Store], error) {
	return openProbed(ctx, src.Name, src.Open, ProbeReceiver, src.Poisoned, opts)
}

// An OutboxSource names an on-board outbox store for a long-running
// sender that heals it, as a Source names a receiver's: what [OpenOutbox]
// opens, and opens again after a failure poisons it.
// sqlitestore.OutboxSource returns the OutboxSource of a SQLite file.
type OutboxSource struct {
	// Name names the store in logs and errors; it must hold no password.
	Name string
	// Open opens the store: the outbox.Store, and the io.Closer (not nil)
	// that closes it, one call at a time.
	Open func(ctx context.Context) (outbox.Store, io.Closer, error)
	// Poisoned reports whether an error of the store means that it must
	// be closed and opened again; nil: never.
	Poisoned func(error) bool
}

// OpenOutbox is OpenReceiver for an outbox: each open is followed by
// [ProbeOutbox], with the same errors. Outbox(h, ...) makes the Handle an
// outbox.Store for a Writer, a Publisher or agent.Config.Store.
func OpenOutbox(ctx context.Context, src OutboxSource, opts ...Option) (*Handle[outbox.Store], error) {
	return openProbed(ctx, src.Name, src.Open, ProbeOutbox, src.Poisoned, opts)
}

// openProbed opens a store under a Handle, probing each open with probe.
func openProbed[S any](ctx context.Context, name string, open func(context.Context) (S, io.Closer, error),
	probe func(context.Context, S) error, poisoned func(error) bool, opts []Option) (*Handle[S], error) {
	if open == nil {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "storeheal: a Source needs Open")
	}
	if poisoned == nil {
		poisoned = func(error) bool { return false }
	}
	opener := func(ctx context.Context) (S, io.Closer, error) {
		var none S
		s, c, err := open(ctx)
		if err != nil {
			if sourcecatalog.Class(err) != nil {
				return none, nil, err
			}
			return none, nil, sourcecatalog.Wrap(sourcecatalog.ErrStoreUnavailable, fmt.Errorf("%s does not open: %w", name, err))
		}
		if err := probe(ctx, s); err != nil {
			return none, nil, classed(errors.Join(fmt.Errorf("%s cannot write: %w", name, err), c.Close()))
		}
		return s, c, nil
	}
	return Open(ctx, opener, poisoned, opts...)
}

// classed returns err as it is when it wraps a class of sourcecatalog, and
// otherwise wrapped as sourcecatalog.ErrStoreUnavailable: a store that
// does not open cannot serve.
func classed(err error) error {
	if sourcecatalog.Class(err) != nil {
		return err
	}
	return sourcecatalog.Wrap(sourcecatalog.ErrStoreUnavailable, err)
}
