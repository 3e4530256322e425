package storeheal

import (
	"context"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// Receiver returns the finalize.Store of h: each call runs, through
// h.Do, on the store that get returns from the open handle. Its
// WithVessel returns fn's error unchanged, and ErrReopening or ErrClosed
// without running fn when h cannot serve. It is a finalize.VesselLister
// too: Vessels lists through the open handle's store, and refuses with an
// error wrapping sourcecatalog.ErrUnsupported when that store is not one.
func Receiver[S any](h *Handle[S], get func(S) finalize.Store) finalize.Store {
	return receiver[S]{h, get}
}

type receiver[S any] struct {
	h   *Handle[S]
	get func(S) finalize.Store
}

var _ finalize.VesselLister = receiver[int]{}

func (r receiver[S]) WithVessel(ctx context.Context, vesselID uuid.UUID, fn func(finalize.Tx) error) error {
	return r.h.Do(func(s S) error { return r.get(s).WithVessel(ctx, vesselID, fn) })
}

func (r receiver[S]) Vessels(ctx context.Context, staging bool) (ids []uuid.UUID, err error) {
	err = r.h.Do(func(s S) error {
		l, ok := r.get(s).(finalize.VesselLister)
		if !ok {
			return sourcecatalog.Errorf(sourcecatalog.ErrUnsupported, "storeheal: the store cannot list its vessels")
		}
		ids, err = l.Vessels(ctx, staging)
		return err
	})
	return ids, err
}

// Outbox returns the outbox.Store of h: each call runs, through h.Do, on
// the store that get returns from the open handle. Its WithVessel
// returns fn's error unchanged, and ErrReopening or ErrClosed without
// running fn when h cannot serve. It is an outbox.StartMemory too:
// RememberStart runs through the open handle's store, and refuses with an
// error wrapping sourcecatalog.ErrUnsupported when that store is not one.
func Outbox[S any](h *Handle[S], get func(S) outbox.Store) outbox.Store {
	return outboxStore[S]{h, get}
}

type outboxStore[S any] struct {
	h   *Handle[S]
	get func(S) outbox.Store
}

func (o outboxStore[S]) WithVessel(ctx context.Context, vesselID uuid.UUID, fn func(outbox.Tx) error) error {
	return o.h.Do(func(s S) error { return o.get(s).WithVessel(ctx, vesselID, fn) })
}

var _ outbox.StartMemory = outboxStore[int]{}

func (o outboxStore[S]) RememberStart(ctx context.Context, st outbox.ServerStart) (got outbox.ServerStart, err error) {
	err = o.h.Do(func(s S) error {
		m, ok := o.get(s).(outbox.StartMemory)
		if !ok {
			return sourcecatalog.Errorf(sourcecatalog.ErrUnsupported, "storeheal: the store remembers no server starts")
		}
		got, err = m.RememberStart(ctx, st)
		return err
	})
	return got, err
}
