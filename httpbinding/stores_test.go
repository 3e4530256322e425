package httpbinding_test

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/finalize"
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
