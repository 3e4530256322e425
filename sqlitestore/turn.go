package sqlitestore

import (
	"context"
	"sync"
)

// A turn serialises the Store's use of its one connection: a mutex whose
// waiters can give up. The zero turn is unlocked.
type turn struct {
	once sync.Once
	ch   chan struct{} // holds a token while the turn is taken
}

func (t *turn) c() chan struct{} {
	t.once.Do(func() { t.ch = make(chan struct{}, 1) })
	return t.ch
}

// Lock takes the turn, waiting as long as it takes.
func (t *turn) Lock() { t.c() <- struct{}{} }

// LockContext takes the turn, or returns ctx's error once ctx is done
// first, without the turn.
func (t *turn) LockContext(ctx context.Context) error {
	select {
	case t.c() <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Unlock gives the turn back; the turn must be taken.
func (t *turn) Unlock() { <-t.c() }
