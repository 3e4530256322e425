package httpbinding_test

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
)

// errInjected is what a failStore fails with.
var errInjected = errors.New("injected store failure")

// A failStore fails every transaction while fail is set, and the
// transaction numbered failAt (1-based; 0: none).
type failStore struct {
	finalize.Store
	fail   atomic.Bool
	failAt atomic.Int64
	n      atomic.Int64
}

func (s *failStore) WithVessel(ctx context.Context, v uuid.UUID, fn func(finalize.Tx) error) error {
	if n := s.n.Add(1); s.fail.Load() || n == s.failAt.Load() {
		return errInjected
	}
	return s.Store.WithVessel(ctx, v, fn)
}

// A gateStore holds every transaction until the gate opens, announcing
// each on entered.
type gateStore struct {
	finalize.Store
	entered chan struct{}
	gate    chan struct{}
}

func (s *gateStore) WithVessel(ctx context.Context, v uuid.UUID, fn func(finalize.Tx) error) error {
	s.entered <- struct{}{}
	select {
	case <-s.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.Store.WithVessel(ctx, v, fn)
}

// A lockedStore runs its transactions one at a time, as a store with one
// connection does, and holds the first one until released, as a file
// locked by another process holds it. Waiting for its turn or for the
// lock, a call gives up when its context ends.
type lockedStore struct {
	*memstore.Store
	turn     chan struct{} // a token while a call has the turn
	entered  chan string   // each call that took the turn
	released chan struct{} // closed: the lock is free
}

func newLockedStore() *lockedStore {
	return &lockedStore{Store: memstore.New(), turn: make(chan struct{}, 1), entered: make(chan string, 64), released: make(chan struct{})}
}

// take waits for the turn and then for the lock, and returns the function
// that gives the turn back.
func (s *lockedStore) take(ctx context.Context, what string) (func(), error) {
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s.entered <- what
	select {
	case <-s.released:
		return func() { <-s.turn }, nil
	case <-ctx.Done():
		<-s.turn
		return nil, ctx.Err()
	}
}

func (s *lockedStore) WithVessel(ctx context.Context, v uuid.UUID, fn func(finalize.Tx) error) error {
	done, err := s.take(ctx, "transaction")
	if err != nil {
		return err
	}
	defer done()
	return s.Store.WithVessel(ctx, v, fn)
}

func (s *lockedStore) Vessels(ctx context.Context, staging bool) ([]uuid.UUID, error) {
	done, err := s.take(ctx, "vessels")
	if err != nil {
		return nil, err
	}
	defer done()
	return s.Store.Vessels(ctx, staging)
}
