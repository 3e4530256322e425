package sqlitestore

import (
	"context"
	"errors"
	"io"
	"os"
	"slices"
	"sync"

	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/outbox"
	"github.com/yachtmemory/sourcecatalog/storeheal"
)

// Source returns the storeheal.Source of the receiver's store in the
// file at path, opened by Open with opts: named "sqlite PATH", and
// reopened after a failure wrapping ErrPoisoned (an I/O error, a full
// disk, a failed commit, the file removed or replaced). Its first open
// opens (or, without WithExistingFile, creates) whatever is at path;
// every reopen opens only that same file, which must still be at path:
// a file removed, replaced by another (a copy included) or moved away is
// not reopened, nor is a new one created, and each attempt fails with
// ErrFileChanged until the file is back. A Source serves one Handle.
func Source(path string, opts ...Option) storeheal.Source {
	open := reopener(path, opts)
	return storeheal.Source{
		Name: "sqlite " + path,
		Open: func(ctx context.Context) (finalize.Store, io.Closer, error) {
			s, err := open(ctx)
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
// ErrPoisoned, and only ever the file opened first.
func OutboxSource(path string, opts ...Option) storeheal.OutboxSource {
	open := reopener(path, opts)
	return storeheal.OutboxSource{
		Name: "sqlite " + path,
		Open: func(ctx context.Context) (outbox.Store, io.Closer, error) {
			s, err := open(ctx)
			if err != nil {
				return nil, nil, err
			}
			return s.Outbox(), s, nil
		},
		Poisoned: poisoned,
	}
}

// reopener returns the Open of a Source: the first successful call opens
// path with opts, and every later one opens only the file that one
// opened (see Source).
func reopener(path string, opts []Option) func(context.Context) (*Store, error) {
	var mu sync.Mutex
	var first os.FileInfo
	return func(ctx context.Context) (*Store, error) {
		mu.Lock()
		defer mu.Unlock()
		o := opts
		if first != nil {
			f := first
			o = append(slices.Clip(opts), func(c *config) { c.first = f })
		}
		s, err := Open(ctx, path, o...)
		if err == nil && first == nil {
			first = s.file
		}
		return s, err
	}
}

// poisoned is the predicate of the failures after which a Store must be
// closed and opened again.
func poisoned(err error) bool { return errors.Is(err, ErrPoisoned) }
