package suite

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

// A Reopener holds a store that a suite reopens after every call that
// ends while no other is in flight. Begin and End bracket each call;
// calls that begin during a reopen wait for it.
type Reopener[S any] struct {
	t      *testing.T
	suite  string
	reopen func() (S, error)

	mu        sync.Mutex
	done      sync.Cond // signalled when a reopen ends
	store     S
	err       error // why there is no store: a reopen failed
	open      int   // calls in flight
	reopening bool
}

// NewReopener returns a Reopener over s. reopen closes the store it last
// returned (s, at first) and opens the same data again; a failed reopen,
// or one that returns a nil store, fails t, with a message that starts
// with suite, and every later call's Begin returns that error.
func NewReopener[S any](t *testing.T, suite string, s S, reopen func() (S, error)) *Reopener[S] {
	r := &Reopener[S]{t: t, suite: suite, store: s, reopen: reopen}
	r.done.L = &r.mu
	t.Logf("%s: RunReopen reopens the store after every transaction: a write that a later transaction misses did not survive a reopen", suite)
	return r
}

// Begin begins a call and returns the store to make it on. Every Begin
// must be followed by one End, whatever it returns.
func (r *Reopener[S]) Begin() (S, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.reopening {
		r.done.Wait()
	}
	r.open++
	return r.store, r.err
}

// End ends a call, reopening the store if it was the last in flight.
func (r *Reopener[S]) End() {
	r.mu.Lock()
	r.open--
	reopen := r.open == 0 && r.err == nil
	r.reopening = reopen
	r.mu.Unlock()
	if !reopen {
		return
	}
	s, err := r.reopen()
	if err == nil && any(s) == nil {
		err = errors.New("reopen returned no store")
	}
	if err != nil {
		err = fmt.Errorf("%s: reopen: %w", r.suite, err)
		r.t.Error(err)
	}
	r.mu.Lock()
	r.store, r.err, r.reopening = s, err, false
	r.done.Broadcast()
	r.mu.Unlock()
}
