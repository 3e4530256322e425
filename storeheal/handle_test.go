package storeheal_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/finalizetest"
	"github.com/yachtmemory/sourcecatalog/outbox"
	"github.com/yachtmemory/sourcecatalog/outbox/outboxtest"
	"github.com/yachtmemory/sourcecatalog/storeheal"
)

// The views pass the stores' conformance kits: a Handle changes nothing of
// what a healthy store does.
func TestReceiverConformance(t *testing.T) {
	finalizetest.Run(t, func(t *testing.T) finalize.Store {
		return storeheal.Receiver(openOn(t, newDisk(t)), asReceiver)
	})
}

func TestOutboxConformance(t *testing.T) {
	outboxtest.Run(t, func(t *testing.T) outbox.Store {
		return storeheal.Outbox(openOn(t, newDisk(t)), asOutbox)
	})
}

// setRevision writes revision as the vessel's active revision, and
// activeRevision reads it back.
func setRevision(s finalize.Store, vessel uuid.UUID, revision int64) error {
	return s.WithVessel(context.Background(), vessel, func(tx finalize.Tx) error {
		return tx.SetVessel(context.Background(), finalize.VesselState{ActiveSnapshot: uuid.New(), ActiveRevision: revision})
	})
}

func activeRevision(t *testing.T, s finalize.Store, vessel uuid.UUID) int64 {
	t.Helper()
	var got int64
	require.NoError(t, s.WithVessel(context.Background(), vessel, func(tx finalize.Tx) error {
		v, err := tx.Vessel(context.Background())
		got = v.ActiveRevision
		return err
	}))
	return got
}

// A call that fails with an error the predicate accepts poisons the
// handle: the error is returned unchanged, new calls are refused at once
// with ErrReopening while the reopen waits, the old handle is closed
// before the new one opens, and the new one serves what the old made
// durable.
func TestPoisonedHandleIsReopened(t *testing.T) {
	d, obs := newDisk(t), newObserved()
	h := openOn(t, d, obs.option())
	s := storeheal.Receiver(h, asReceiver)
	vessel := uuid.New()
	require.NoError(t, setRevision(s, vessel, 7))

	gate := make(chan struct{})
	d.set(func(d *disk) { d.gate = gate })
	d.handle(1).broken.Store(true)
	err := setRevision(s, vessel, 8)
	require.ErrorIs(t, err, errPoisoned, "the poisoning error is the call's")
	assert.Equal(t, storeheal.Poisoned, obs.next(t).State)
	reopening := obs.next(t)
	assert.Equal(t, storeheal.Reopening, reopening.State)
	assert.ErrorIs(t, reopening.Cause, errPoisoned)
	assert.True(t, d.handle(1).closed.Load(), "the poisoned handle is closed before the reopen")

	for range 3 { // refused at once, while the open waits
		err := within(t, "a call during the reopen", func() error { return setRevision(s, vessel, 9) })
		require.ErrorIs(t, err, storeheal.ErrReopening)
		require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable)
		assert.Equal(t, []error{sourcecatalog.ErrStoreUnavailable}, classes(err), "one class")
		assert.NotErrorIs(t, err, errPoisoned, "the refusal does not wrap another call's cause")
		assert.Contains(t, err.Error(), "reopening")
	}
	_, err = storeheal.Receiver(h, asReceiver).(finalize.VesselLister).Vessels(context.Background(), false)
	require.ErrorIs(t, err, storeheal.ErrReopening)

	close(gate)
	healthy := obs.next(t)
	require.Equal(t, storeheal.Healthy, healthy.State)
	assert.Equal(t, int64(1), healthy.Poisonings)
	assert.Equal(t, int64(1), healthy.Reopens)
	assert.ErrorIs(t, healthy.Cause, errPoisoned, "the last cause is kept")
	assert.Equal(t, 2, d.count())
	assert.Equal(t, int64(7), activeRevision(t, s, vessel), "what the old handle committed")
	require.NoError(t, setRevision(s, vessel, 10))
	assert.Equal(t, int64(10), activeRevision(t, s, vessel))
	assert.Equal(t, storeheal.Healthy, h.Status().State)
}

// classes returns the error classes err wraps.
func classes(err error) []error {
	var got []error
	for _, c := range sourcecatalog.Classes() {
		if errors.Is(err, c) {
			got = append(got, c)
		}
	}
	return got
}

// An error the predicate does not accept is the call's alone: it is
// returned unchanged and nothing is reopened, whichever way it comes.
func TestOtherErrorsDoNotPoison(t *testing.T) {
	mine := errors.New("the callback's own error")
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"callback", mine},
		{"class", sourcecatalog.Errorf(sourcecatalog.ErrStoreUnavailable, "locked")},
		{"context", context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDisk(t)
			h := openOn(t, d)
			err := storeheal.Receiver(h, asReceiver).WithVessel(context.Background(), uuid.New(), func(finalize.Tx) error { return tc.err })
			require.Equal(t, tc.err, err, "returned unchanged")
			assert.Equal(t, storeheal.Healthy, h.Status().State)
			assert.Equal(t, 1, d.count(), "nothing reopened")
		})
	}
}

// A call in flight on the poisoned handle finishes there: the handle is
// not closed, and no new one opened, until it has returned; its commit is
// in what the new handle sees.
func TestInFlightCallFinishesBeforeClose(t *testing.T) {
	d, obs := newDisk(t), newObserved()
	h := openOn(t, d, obs.option())
	s := storeheal.Receiver(h, asReceiver)
	vessel, other := uuid.New(), uuid.New()

	inside, release := make(chan struct{}), make(chan struct{})
	slow := make(chan error, 1)
	go func() {
		slow <- s.WithVessel(context.Background(), vessel, func(tx finalize.Tx) error {
			close(inside)
			<-release
			return tx.SetVessel(context.Background(), finalize.VesselState{ActiveSnapshot: uuid.New(), ActiveRevision: 5})
		})
	}()
	<-inside
	d.handle(1).broken.Store(true)
	require.ErrorIs(t, setRevision(s, other, 1), errPoisoned)
	assert.Equal(t, storeheal.Poisoned, obs.next(t).State)
	require.ErrorIs(t, setRevision(s, other, 2), storeheal.ErrReopening)
	assert.False(t, d.handle(1).closed.Load(), "closed with a call in flight")
	assert.Equal(t, 1, d.count(), "opened with a call in flight on the old handle")
	assert.Equal(t, storeheal.Poisoned, h.Status().State)

	close(release)
	require.NoError(t, <-slow, "the call in flight commits on its handle")
	obs.until(t, storeheal.Healthy)
	assert.True(t, d.handle(1).closed.Load())
	assert.Equal(t, int64(5), activeRevision(t, s, vessel))
}

// Many calls failing at once make one reopen.
func TestOneReopenAtATime(t *testing.T) {
	d, obs := newDisk(t), newObserved()
	h := openOn(t, d, obs.option())
	s := storeheal.Receiver(h, asReceiver)
	gate := make(chan struct{})
	d.set(func(d *disk) { d.gate = gate })

	// Every call enters the handle before any fails.
	const n = 16
	var entered, failed sync.WaitGroup
	entered.Add(n)
	start := make(chan struct{})
	errs := make(chan error, n)
	failed.Add(n)
	for range n {
		go func() {
			defer failed.Done()
			errs <- s.WithVessel(context.Background(), uuid.New(), func(finalize.Tx) error {
				entered.Done()
				<-start
				return errPoisoned
			})
		}()
	}
	entered.Wait()
	close(start)
	failed.Wait()
	close(errs)
	for err := range errs {
		require.ErrorIs(t, err, errPoisoned)
	}
	close(gate)
	healthy, before := obs.until(t, storeheal.Healthy)
	assert.Equal(t, []storeheal.State{storeheal.Poisoned, storeheal.Reopening}, before)
	assert.Equal(t, int64(1), healthy.Poisonings)
	assert.Equal(t, int64(1), healthy.Reopens)
	assert.Equal(t, 2, d.count(), "one reopen")
	require.NoError(t, setRevision(s, uuid.New(), 1))
}

// Failed attempts back off, doubling from the initial delay to the
// maximum; the attempts and their last error are in the Status, and the
// first attempt after a handle served for the maximum delay runs at once.
func TestBackoff(t *testing.T) {
	d, obs, waits := newDisk(t), newObserved(), &noSleep{}
	var clock clockwork
	clock.set(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	h := openOn(t, d, obs.option(), waits.option(), storeheal.WithClock(clock.now),
		storeheal.WithBackoff(time.Second, 5*time.Second), storeheal.WithJitter(func(d time.Duration) time.Duration { return d }))
	s := storeheal.Receiver(h, asReceiver)
	down := errors.New("the disk is gone")
	d.set(func(d *disk) { d.failErr, d.failing = down, 5 })
	d.handle(1).broken.Store(true)
	require.ErrorIs(t, setRevision(s, uuid.New(), 1), errPoisoned)

	obs.until(t, storeheal.Reopening) // the old handle closed
	for i := 1; i <= 5; i++ {
		st := obs.next(t)
		require.Equal(t, storeheal.Reopening, st.State)
		require.Equal(t, i, st.Attempts)
		require.Equal(t, int64(i), st.FailedReopens)
		require.Equal(t, down, st.LastErr)
	}
	healthy := obs.next(t)
	require.Equal(t, storeheal.Healthy, healthy.State)
	assert.Equal(t, 5, healthy.Attempts, "the attempts of the reopen are kept")
	want := []time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	require.Equal(t, want, waits.got()[:len(want)])
	n := len(waits.got())

	// Poisoned again at once: the backoff goes on at the maximum.
	d.handle(d.count()).broken.Store(true)
	require.ErrorIs(t, setRevision(s, uuid.New(), 1), errPoisoned)
	obs.until(t, storeheal.Healthy)
	assert.Equal(t, []time.Duration{5 * time.Second}, waits.got()[n:], "a handle that failed at once")
	n = len(waits.got())

	// Poisoned after serving for the maximum delay: reopened at once.
	clock.add(5 * time.Second)
	d.handle(d.count()).broken.Store(true)
	require.ErrorIs(t, setRevision(s, uuid.New(), 1), errPoisoned)
	obs.until(t, storeheal.Healthy)
	assert.Equal(t, []time.Duration{0}, waits.got()[n:], "a handle that served for the maximum delay")
}

// Each delay of the backoff is drawn from the upper half of its step,
// never beyond the maximum, and not always the step itself; by default
// the maximum is a second.
func TestBackoffJitter(t *testing.T) {
	d, obs, waits := newDisk(t), newObserved(), &noSleep{}
	const attempts = 24
	h := openOn(t, d, obs.option(), waits.option(), storeheal.WithBackoff(time.Second, 8*time.Second))
	s := storeheal.Receiver(h, asReceiver)
	d.set(func(d *disk) { d.failErr, d.failing = errors.New("down"), attempts })
	d.handle(1).broken.Store(true)
	require.ErrorIs(t, setRevision(s, uuid.New(), 1), errPoisoned)
	obs.until(t, storeheal.Healthy)
	got := waits.got()
	require.Len(t, got, attempts+1)
	require.Zero(t, got[0], "the first attempt runs at once")
	step, below := time.Second, 0
	for i, w := range got[1:] {
		require.True(t, w >= step/2 && w <= step, "wait %d: %v, not within the upper half of %v", i+1, w, step)
		if w < step {
			below++
		}
		step = min(2*step, 8*time.Second)
	}
	assert.Positive(t, below, "the delays are drawn, not the steps themselves")
	assert.Equal(t, time.Second, storeheal.DefaultMaxBackoff)
}

// clockwork is a clock a test moves.
type clockwork struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clockwork) set(t time.Time)     { c.mu.Lock(); c.t = t; c.mu.Unlock() }
func (c *clockwork) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }
func (c *clockwork) now() (t time.Time)  { c.mu.Lock(); t = c.t; c.mu.Unlock(); return t }
