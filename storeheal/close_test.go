package storeheal_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/storeheal"
)

// Close stops the reopening wherever it is — an open waiting, a backoff,
// calls still in flight on the poisoned handle — and closes whatever
// handle is open; calls after it fail with ErrClosed.
func TestCloseStopsTheReopening(t *testing.T) {
	for _, tc := range []struct {
		name string
		// arrange poisons the first handle and leaves the reopening where
		// the case says; it returns a function to call after Close.
		arrange func(t *testing.T, d *disk, s finalize.Store, obs *observed) (after func())
	}{
		{"healthy", func(*testing.T, *disk, finalize.Store, *observed) func() { return func() {} }},
		{"open waiting", func(t *testing.T, d *disk, s finalize.Store, obs *observed) func() {
			d.set(func(d *disk) { d.gate = make(chan struct{}) }) // never opens
			poison(t, d, s)
			obs.until(t, storeheal.Reopening)
			return func() {}
		}},
		{"backoff", func(t *testing.T, d *disk, s finalize.Store, obs *observed) func() {
			d.set(func(d *disk) { d.openErr = errors.New("down") })
			poison(t, d, s)
			obs.until(t, storeheal.Reopening)
			obs.next(t) // one attempt failed: the next waits the backoff of the real clock
			return func() {}
		}},
		{"call in flight", func(t *testing.T, d *disk, s finalize.Store, obs *observed) func() {
			inside, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
			go func() {
				done <- s.WithVessel(context.Background(), uuid.New(), func(finalize.Tx) error {
					close(inside)
					<-release
					return nil
				})
			}()
			<-inside
			poison(t, d, s)
			obs.until(t, storeheal.Poisoned)
			go func() { time.Sleep(10 * time.Millisecond); close(release) }()
			return func() { require.NoError(t, <-done) }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, obs := newDisk(t), newObserved()
			h, err := storeheal.Open(context.Background(), d.open, poisoned, obs.option(), storeheal.WithBackoff(time.Hour, time.Hour))
			require.NoError(t, err)
			s := storeheal.Receiver(h, asReceiver)
			after := tc.arrange(t, d, s, obs)
			require.NoError(t, within(t, "Close", h.Close))
			after()
			for i := 1; i <= d.count(); i++ {
				assert.True(t, d.handle(i).closed.Load(), "handle %d is closed", i)
			}
			assert.Equal(t, storeheal.Closed, h.Status().State)
			err = setRevision(s, uuid.New(), 1)
			require.ErrorIs(t, err, storeheal.ErrClosed)
			require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable)
			require.NoError(t, h.Close(), "idempotent")
			opened := d.count()
			d.set(func(d *disk) { d.openErr, d.gate = nil, nil })
			time.Sleep(10 * time.Millisecond)
			assert.Equal(t, opened, d.count(), "nothing opens after Close")
		})
	}
}

// poison breaks the latest handle and makes a call meet it.
func poison(t *testing.T, d *disk, s finalize.Store) {
	t.Helper()
	d.handle(d.count()).broken.Store(true)
	require.ErrorIs(t, setRevision(s, uuid.New(), 1), errPoisoned)
}

// A callback that panics ends its call all the same: the panic reaches
// the caller, and Close does not wait for the call.
func TestPanicEndsTheCall(t *testing.T) {
	d := newDisk(t)
	h, err := storeheal.Open(context.Background(), d.open, poisoned)
	require.NoError(t, err)
	assert.PanicsWithValue(t, "boom", func() {
		storeheal.Receiver(h, asReceiver).WithVessel(context.Background(), uuid.New(), func(finalize.Tx) error { panic("boom") })
	})
	require.NoError(t, within(t, "Close", h.Close))
	assert.True(t, d.handle(1).closed.Load())
}

// Open refuses what it cannot work with, and returns the first open's
// error unchanged.
func TestOpenRefuses(t *testing.T) {
	d := newDisk(t)
	down := errors.New("no such file")
	for _, tc := range []struct {
		name  string
		open  storeheal.Opener[*fakeHandle]
		pred  func(error) bool
		opts  []storeheal.Option
		want  error
		class error
	}{
		{"no opener", nil, poisoned, nil, nil, sourcecatalog.ErrInvalidValue},
		{"no predicate", d.open, nil, nil, nil, sourcecatalog.ErrInvalidValue},
		{"zero backoff", d.open, poisoned, []storeheal.Option{storeheal.WithBackoff(0, time.Second)}, nil, sourcecatalog.ErrInvalidValue},
		{"max below initial", d.open, poisoned, []storeheal.Option{storeheal.WithBackoff(2*time.Second, time.Second)}, nil, sourcecatalog.ErrInvalidValue},
		{"zero open timeout", d.open, poisoned, []storeheal.Option{storeheal.WithOpenTimeout(0)}, nil, sourcecatalog.ErrInvalidValue},
		{"first open fails", func(context.Context) (*fakeHandle, io.Closer, error) { return nil, nil, down }, poisoned, nil, down, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := storeheal.Open(context.Background(), tc.open, tc.pred, tc.opts...)
			require.Nil(t, h)
			if tc.want != nil {
				require.Equal(t, tc.want, err)
			} else {
				require.Equal(t, []error{tc.class}, classes(err))
			}
		})
	}
	assert.Equal(t, 0, d.count(), "a refused Open opens nothing")
}

// Vessels lists through a store that is a finalize.VesselLister, and
// refuses with ErrUnsupported otherwise.
func TestVessels(t *testing.T) {
	d := newDisk(t)
	h := openOn(t, d)
	vessel := uuid.New()
	require.NoError(t, setRevision(storeheal.Receiver(h, asReceiver), vessel, 1))
	ids, err := storeheal.Receiver(h, asReceiver).(finalize.VesselLister).Vessels(context.Background(), false)
	require.NoError(t, err)
	assert.Equal(t, []uuid.UUID{vessel}, ids)

	bare := storeheal.Receiver(h, func(h *fakeHandle) finalize.Store { return struct{ finalize.Store }{h} })
	_, err = bare.(finalize.VesselLister).Vessels(context.Background(), false)
	assert.Equal(t, []error{sourcecatalog.ErrUnsupported}, classes(err))
	assert.Equal(t, storeheal.Healthy, h.Status().State)
}

func TestStateNames(t *testing.T) {
	var names []string
	for _, s := range storeheal.States() {
		names = append(names, s.String())
	}
	assert.Equal(t, []string{"healthy", "poisoned", "reopening", "closed"}, names)
	assert.Equal(t, "State(9)", storeheal.State(9).String())
}
