package storeheal_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/outbox"
	outboxmem "github.com/yachtmemory/sourcecatalog/outbox/memstore"
	"github.com/yachtmemory/sourcecatalog/storeheal"
)

// errPoisoned is what a broken fake handle fails with, and poisoned the
// predicate that recognises it.
var errPoisoned = sourcecatalog.Errorf(sourcecatalog.ErrStoreUnavailable, "fake: the handle is poisoned")

func poisoned(err error) bool { return errors.Is(err, errPoisoned) }

// A disk is the durable state the fake handles of one test open, as a
// file outlives its handles, and the adversary of the Handle: it fails the
// test when a handle is used after Close, closed with a call in flight or
// twice, or opened while another is open or another open runs.
type disk struct {
	t      *testing.T
	data   *memstore.Store
	outbox *outboxmem.Store

	mu      sync.Mutex
	handles []*fakeHandle
	openErr error // opens fail with it while set
	failing int   // the next this many opens fail with failErr
	failErr error
	gate    chan struct{} // when not nil, an open waits until it is closed
	opening int           // opens running
	opened  chan int      // receives each handle's number as it opens, if not nil
}

func newDisk(t *testing.T) *disk {
	return &disk{t: t, data: memstore.New(), outbox: outboxmem.New()}
}

// A fakeHandle is one open handle of a disk: a finalize.Store and, through
// Outbox, an outbox.Store.
type fakeHandle struct {
	d        *disk
	n        int // 1 for the first handle opened
	closed   atomic.Bool
	broken   atomic.Bool // every call fails with errPoisoned
	inflight atomic.Int32
}

func (d *disk) open(ctx context.Context) (*fakeHandle, io.Closer, error) {
	d.mu.Lock()
	d.opening++
	if d.opening > 1 {
		d.t.Errorf("two opens run at once")
	}
	for _, h := range d.handles {
		if !h.closed.Load() {
			d.t.Errorf("an open while handle %d is open", h.n)
		}
	}
	gate := d.gate
	d.mu.Unlock()
	defer func() { d.mu.Lock(); d.opening--; d.mu.Unlock() }()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failing > 0 {
		d.failing--
		return nil, nil, d.failErr
	}
	if d.openErr != nil {
		return nil, nil, d.openErr
	}
	h := &fakeHandle{d: d, n: len(d.handles) + 1}
	d.handles = append(d.handles, h)
	if d.opened != nil {
		d.opened <- h.n
	}
	return h, h, nil
}

// set changes the disk's behaviour under its lock.
func (d *disk) set(f func(d *disk)) { d.mu.Lock(); defer d.mu.Unlock(); f(d) }

// handle returns the nth handle opened.
func (d *disk) handle(n int) *fakeHandle {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.handles[n-1]
}

// count returns how many handles were opened.
func (d *disk) count() int { d.mu.Lock(); defer d.mu.Unlock(); return len(d.handles) }

// call admits a call on h, or returns the error it fails with.
func (h *fakeHandle) call() error {
	if h.closed.Load() {
		h.d.t.Errorf("handle %d used after Close", h.n)
	}
	if h.broken.Load() {
		return fmt.Errorf("fake handle %d: %w", h.n, errPoisoned)
	}
	return nil
}

func (h *fakeHandle) WithVessel(ctx context.Context, id uuid.UUID, fn func(finalize.Tx) error) error {
	if err := h.call(); err != nil {
		return err
	}
	h.inflight.Add(1)
	defer h.inflight.Add(-1)
	return h.d.data.WithVessel(ctx, id, fn)
}

func (h *fakeHandle) Vessels(ctx context.Context, staging bool) ([]uuid.UUID, error) {
	if err := h.call(); err != nil {
		return nil, err
	}
	return h.d.data.Vessels(ctx, staging)
}

func (h *fakeHandle) Close() error {
	if n := h.inflight.Load(); n != 0 {
		h.d.t.Errorf("handle %d closed with %d calls in flight", h.n, n)
	}
	if !h.closed.CompareAndSwap(false, true) {
		h.d.t.Errorf("handle %d closed twice", h.n)
	}
	return nil
}

// Outbox returns the outbox.Store of the handle.
func (h *fakeHandle) Outbox() outbox.Store { return fakeOutbox{h} }

type fakeOutbox struct{ h *fakeHandle }

func (o fakeOutbox) WithVessel(ctx context.Context, id uuid.UUID, fn func(outbox.Tx) error) error {
	if err := o.h.call(); err != nil {
		return err
	}
	o.h.inflight.Add(1)
	defer o.h.inflight.Add(-1)
	return o.h.d.outbox.WithVessel(ctx, id, fn)
}

func asReceiver(h *fakeHandle) finalize.Store { return h }
func asOutbox(h *fakeHandle) outbox.Store     { return h.Outbox() }

// observed collects what a Handle's observer reports.
type observed struct{ ch chan storeheal.Status }

func newObserved() *observed { return &observed{ch: make(chan storeheal.Status, 1000)} }

func (o *observed) option() storeheal.Option {
	return storeheal.WithObserver(func(s storeheal.Status) { o.ch <- s })
}

// next returns the next Status reported, failing the test after a minute
// without one (a Handle that hangs, not a speed check).
func (o *observed) next(t *testing.T) storeheal.Status {
	t.Helper()
	select {
	case s := <-o.ch:
		return s
	case <-time.After(time.Minute):
		t.Fatal("no Status reported within a minute")
		return storeheal.Status{}
	}
}

// until returns the first Status reported in state, with the states
// reported before it.
func (o *observed) until(t *testing.T, state storeheal.State) (storeheal.Status, []storeheal.State) {
	t.Helper()
	var before []storeheal.State
	for {
		s := o.next(t)
		if s.State == state {
			return s, before
		}
		before = append(before, s.State)
	}
}

// noSleep is a backoff that records the delays asked for and waits for
// none of them.
type noSleep struct {
	mu     sync.Mutex
	delays []time.Duration
}

func (n *noSleep) option() storeheal.Option {
	return storeheal.WithSleep(func(ctx context.Context, d time.Duration) error {
		n.mu.Lock()
		n.delays = append(n.delays, d)
		n.mu.Unlock()
		return ctx.Err()
	})
}

func (n *noSleep) got() []time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]time.Duration(nil), n.delays...)
}

// openOn opens a Handle over d, closed when the test ends.
func openOn(t *testing.T, d *disk, opts ...storeheal.Option) *storeheal.Handle[*fakeHandle] {
	t.Helper()
	h, err := storeheal.Open(context.Background(), d.open, poisoned, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Error(err)
		}
	})
	return h
}

// within runs f in a goroutine and returns its error, failing the test if
// it has not returned within a minute: a call that should be refused at
// once must not wait for a reopen.
func within(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatalf("%s did not return within a minute", what)
		return nil
	}
}
