package storeheal_test

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/outbox"
	outboxmem "github.com/yachtmemory/sourcecatalog/outbox/memstore"
	"github.com/yachtmemory/sourcecatalog/outbox/outboxtest"
	"github.com/yachtmemory/sourcecatalog/storeheal"
)

// fullDisk is a memstore that opens but cannot write while full is set:
// a disk that is full.
type fullDisk struct {
	*memstore.Store
	full *atomic.Bool
}

var errDiskFull = errors.New("disk full")

func (r fullDisk) WithVessel(ctx context.Context, v uuid.UUID, fn func(finalize.Tx) error) error {
	if r.full.Load() {
		return errDiskFull
	}
	return r.Store.WithVessel(ctx, v, fn)
}

type closeCounter struct{ closed *atomic.Int32 }

func (c closeCounter) Close() error { c.closed.Add(1); return nil }

// OpenReceiver probes each open with a write: a store that opens but
// cannot write is closed and the open fails, naming the Source; a
// Source without Open is refused; without Poisoned nothing poisons.
func TestOpenReceiver(t *testing.T) {
	var full atomic.Bool
	var closed atomic.Int32
	m := memstore.New()
	src := storeheal.Source{
		Name: "test store",
		Open: func(context.Context) (finalize.Store, io.Closer, error) {
			return fullDisk{m, &full}, closeCounter{&closed}, nil
		},
	}
	full.Store(true)
	h, err := storeheal.OpenReceiver(context.Background(), src)
	require.ErrorIs(t, err, errDiskFull)
	assert.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable, "an error of no class is classed")
	assert.ErrorContains(t, err, "test store cannot write")
	assert.Nil(t, h)
	assert.Equal(t, int32(1), closed.Load(), "the store that cannot write is closed")

	full.Store(false)
	h, err = storeheal.OpenReceiver(context.Background(), src, storeheal.WithBackoff(time.Millisecond, time.Millisecond))
	require.NoError(t, err)
	full.Store(true)
	err = storeheal.Receiver(h, func(s finalize.Store) finalize.Store { return s }).WithVessel(context.Background(), uuid.New(), func(finalize.Tx) error { return nil })
	require.ErrorIs(t, err, errDiskFull)
	assert.Equal(t, storeheal.Healthy, h.Status().State, "without Poisoned nothing poisons the store")
	require.NoError(t, h.Close())

	_, err = storeheal.OpenReceiver(context.Background(), storeheal.Source{Name: "no opener"})
	require.ErrorIs(t, err, sourcecatalog.ErrInvalidValue)

	refused := errors.New("connection refused")
	_, err = storeheal.OpenReceiver(context.Background(), storeheal.Source{Name: "the test store", Open: func(context.Context) (finalize.Store, io.Closer, error) {
		return nil, nil, refused
	}})
	require.ErrorIs(t, err, refused)
	assert.Equal(t, sourcecatalog.ErrStoreUnavailable, sourcecatalog.Class(err), "an open error of no class is classed")
	assert.ErrorContains(t, err, "the test store does not open")
	invalid := sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "not a database")
	_, err = storeheal.OpenReceiver(context.Background(), storeheal.Source{Name: "x", Open: func(context.Context) (finalize.Store, io.Closer, error) {
		return nil, nil, invalid
	}})
	assert.Equal(t, sourcecatalog.ErrInvalidValue, sourcecatalog.Class(err), "an open error's own class is kept")
}

// fullOutbox is an outbox that opens but cannot write.
type fullOutbox struct{ *outboxmem.Store }

func (fullOutbox) WithVessel(context.Context, uuid.UUID, func(outbox.Tx) error) error {
	return errDiskFull
}

// OpenOutbox probes each open of an outbox with a write, as OpenReceiver
// does a receiver's store: one that cannot write is closed and the open
// fails, classed and naming the source; one that can is served.
func TestOpenOutbox(t *testing.T) {
	var closed atomic.Int32
	src := storeheal.OutboxSource{Name: "the boat's outbox", Open: func(context.Context) (outbox.Store, io.Closer, error) {
		return fullOutbox{outboxmem.New()}, closeCounter{&closed}, nil
	}}
	h, err := storeheal.OpenOutbox(context.Background(), src)
	require.ErrorIs(t, err, errDiskFull)
	assert.Equal(t, sourcecatalog.ErrStoreUnavailable, sourcecatalog.Class(err))
	assert.ErrorContains(t, err, "the boat's outbox cannot write")
	assert.Nil(t, h)
	assert.Equal(t, int32(1), closed.Load(), "the outbox that cannot write is closed")

	src.Open = func(context.Context) (outbox.Store, io.Closer, error) {
		return outboxmem.New(), closeCounter{&closed}, nil
	}
	h, err = storeheal.OpenOutbox(context.Background(), src)
	require.NoError(t, err)
	require.NoError(t, h.Close())
	_, err = storeheal.OpenOutbox(context.Background(), storeheal.OutboxSource{Name: "no opener"})
	require.ErrorIs(t, err, sourcecatalog.ErrInvalidValue)
}

// The healing outbox remembers server starts through the store it holds,
// and says so when that store does not.
func TestOutboxStartMemory(t *testing.T) {
	var closed atomic.Int32
	open := func(s outbox.Store) *storeheal.Handle[outbox.Store] {
		h, err := storeheal.OpenOutbox(context.Background(), storeheal.OutboxSource{Name: "outbox",
			Open: func(context.Context) (outbox.Store, io.Closer, error) { return s, closeCounter{&closed}, nil }})
		require.NoError(t, err)
		t.Cleanup(func() { h.Close() })
		return h
	}
	self := func(s outbox.Store) outbox.Store { return s }
	outboxtest.RunStartMemory(t, func(t *testing.T) outbox.StartMemory {
		return storeheal.Outbox(open(outboxmem.New()), self).(outbox.StartMemory)
	})
	m := storeheal.Outbox(open(plainOutbox{outboxmem.New()}), self).(outbox.StartMemory)
	_, err := m.RememberStart(context.Background(), outbox.ServerStart{ID: "a", FirstSeen: time.Now()})
	require.ErrorIs(t, err, sourcecatalog.ErrUnsupported)
}

// plainOutbox is an outbox.Store and nothing more.
type plainOutbox struct{ s outbox.Store }

func (p plainOutbox) WithVessel(ctx context.Context, id uuid.UUID, fn func(outbox.Tx) error) error {
	return p.s.WithVessel(ctx, id, fn)
}
