package sqlitestore

import (
	"context"
	"errors"
	"io"

	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/outbox"
	"github.com/yachtmemory/sourcecatalog/storeheal"
)

// Source returns the storeheal.Source of the receiver's store in the
// file at path, opened by Open with opts: named "sqlite PATH", and
// reopened after a failure wrapping ErrPoisoned (an I/O error, a full
// disk, a failed commit).
func Source(path string, opts ...Option) storeheal.Source {
	return storeheal.Source{
		Name: "sqlite " + path,
		Open: func(ctx context.Context) (finalize.Store, io.Closer, error) {
			s, err := Open(ctx, path, opts...)
			if err != nil {
				return nil, nil, err
			}
			return s, s, nil
		},
		Poisoned: poisoned,
	}
}

// OutboxSource returns the storeheal.OutboxSource of the on-board outbox in
// the file at path, as Source does the receiver's: opened by Open with
// opts, named "sqlite PATH", reopened after a failure wrapping
// ErrPoisoned.
func OutboxSource(path string, opts ...Option) storeheal.OutboxSource {
	return storeheal.OutboxSource{
		Name: "sqlite " + path,
		Open: func(ctx context.Context) (outbox.Store, io.Closer, error) {
			s, err := Open(ctx, path, opts...)
			if err != nil {
				return nil, nil, err
			}
			return s.Outbox(), s, nil
		},
		Poisoned: poisoned,
	}
}

// poisoned is the predicate of the failures after which a Store must be
// closed and opened again.
func poisoned(err error) bool { return errors.Is(err, ErrPoisoned) }
