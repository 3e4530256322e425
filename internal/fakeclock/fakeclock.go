// Package fakeclock is an outbox.Clock on virtual time for tests: a Sleep
// returns at once, having moved the time on by its duration, so a loop
// that waits runs through hours in microseconds and the same way on every
// run. Callbacks registered with At run when the time reaches theirs,
// which is how a test acts "later" (cancels a context, changes a fake).
package fakeclock

import (
	"context"
	"slices"
	"sync"
	"time"
)

// A Clock is a virtual clock. Its methods are safe for concurrent use, but
// it is meant for a loop running on one goroutine.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
	timers []timer
}

type timer struct {
	at time.Time
	fn func()
}

// New returns a Clock reading start.
func New(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the virtual time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep records d, moves the time on by d (when positive) and runs the
// callbacks due by then, in time order. It reports whether ctx is still
// not done: a callback that cancels it makes the Sleep "interrupted".
func (c *Clock) Sleep(ctx context.Context, d time.Duration) bool {
	if ctx.Err() != nil {
		return false
	}
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	c.mu.Unlock()
	c.Advance(d)
	return ctx.Err() == nil
}

// Advance moves the time on by d (when positive) and runs the callbacks
// due by then, in time order, each at its own time.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(max(d, 0))
	c.mu.Unlock()
	for {
		c.mu.Lock()
		i := slices.IndexFunc(c.timers, func(t timer) bool { return !t.at.After(end) })
		if i < 0 {
			c.now = end
			c.mu.Unlock()
			return
		}
		t := c.timers[i]
		c.timers = slices.Delete(c.timers, i, i+1)
		c.now = t.at
		c.mu.Unlock()
		t.fn()
	}
}

// At runs fn when the virtual time reaches t (at once, from the next
// Sleep or Advance, when t has passed).
func (c *Clock) At(t time.Time, fn func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timers = append(c.timers, timer{t, fn})
	slices.SortStableFunc(c.timers, func(a, b timer) int { return a.at.Compare(b.at) })
}

// WithDeadline returns a context cancelled when the virtual time reaches
// t, or when parent is done.
func (c *Clock) WithDeadline(parent context.Context, t time.Time) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	c.At(t, func() { cancel(context.DeadlineExceeded) })
	return ctx, func() { cancel(context.Canceled) }
}

// Sleeps returns the durations of the Sleeps so far, in order.
func (c *Clock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.sleeps)
}
