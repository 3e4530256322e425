package storeheal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// Errors of the package; each wraps sourcecatalog.ErrStoreUnavailable, so
// a receiver answers them 503 and a sender retries later.
var (
	// ErrReopening: a failure poisoned the store's handle and the Handle
	// is reopening it; the call ran nothing. The error's text names the
	// state and the failure, as text only: it does not wrap the cause,
	// which belongs to the call that met it (Status has it).
	ErrReopening error = sourcecatalog.Errorf(sourcecatalog.ErrStoreUnavailable, "storeheal: the store is being reopened after a failure")
	// ErrClosed: the Handle was closed.
	ErrClosed error = sourcecatalog.Errorf(sourcecatalog.ErrStoreUnavailable, "storeheal: the store is closed")
	// ErrReplaced: what a store's handle had open is no longer what the
	// store's name names — a file removed, replaced by another or moved
	// away (sqlitestore.ErrFileChanged wraps it). A store returns it,
	// wrapped, from the call that found it, which the predicate should
	// take as poisoning; the Handle counts it (Status.Replacements). An
	// Opener must then not open whatever the name names now, nor create
	// a store where one was: only the store the handle had open may be
	// reopened, and accepting another is the operator's decision (a
	// restart).
	ErrReplaced error = sourcecatalog.Errorf(sourcecatalog.ErrStoreUnavailable, "storeheal: the store was removed or replaced under its handle")
)

// An Opener opens a store handle: the store S that calls run on, and the
// Closer that releases it (S itself, often; nil when there is nothing to
// release). It must honour ctx, which ends when the attempt's time is up
// or the Handle is closed. An Opener is called by one goroutine at a time,
// and never while another handle it returned is open.
//
// The Handle serves on whatever the Opener returns, so an Opener should
// return only a handle that can serve: one that opens but cannot write (a
// file on a disk still full) should be closed and reported as an error,
// after a check such as ProbeReceiver.
type Opener[S any] func(ctx context.Context) (S, io.Closer, error)

// State is where a Handle is.
type State uint8

// The states of a Handle, in the order a failure takes it through them.
const (
	// Healthy: the handle serves every call.
	Healthy State = iota
	// Poisoned: a call failed with an error the predicate accepts; new
	// calls are refused while those in flight on the handle finish.
	Poisoned
	// Reopening: the poisoned handle is closed and a new one is being
	// opened, with backoff between the attempts.
	Reopening
	// Closed: Close was called.
	Closed
)

var stateNames = [...]string{"healthy", "poisoned", "reopening", "closed"}

// String returns the state's name in lower case: "healthy", "poisoned",
// "reopening" or "closed", as logs and metrics label it.
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", s)
}

// States returns the states in order, for a metric with one series per
// state.
func States() []State { return []State{Healthy, Poisoned, Reopening, Closed} }

// Status is what Handle.Status returns and an observer receives.
type Status struct {
	State State
	Since time.Time // when State began
	// Cause is the failure that poisoned the handle, kept after the reopen
	// as the latest one; nil when no handle was ever poisoned.
	Cause error
	// Attempts counts the reopen attempts that failed since Cause, and
	// LastErr is the latest failure, of an attempt or of closing the
	// poisoned handle (nil when none failed).
	Attempts int
	LastErr  error
	// Counts since Open: handles poisoned, reopens that succeeded, and
	// reopen attempts that failed.
	Poisonings, Reopens, FailedReopens int64
	// Replacements counts the poisonings whose cause wraps ErrReplaced:
	// the store was removed or replaced under its handle.
	Replacements int64
}

// Defaults of the options. The longest delay bounds how long a Handle
// still refuses calls once its store can serve again: with jitter at most
// DefaultMaxBackoff, plus one attempt. One attempt a second at most is
// still light on a store that is down (one open and one probe).
const (
	DefaultInitialBackoff = 100 * time.Millisecond
	DefaultMaxBackoff     = time.Second
	DefaultOpenTimeout    = 30 * time.Second
)

type config struct {
	initial, max time.Duration
	openTimeout  time.Duration
	observer     func(Status)
	// Tests replace these.
	sleep  func(ctx context.Context, d time.Duration) error
	now    func() time.Time
	jitter func(d time.Duration) time.Duration
}

// An Option configures Open.
type Option func(*config)

// WithBackoff sets the delays between reopen attempts: the first attempt
// runs at once, the next after initial, each later one after twice the
// previous delay, at most max (defaults DefaultInitialBackoff and
// DefaultMaxBackoff). Each delay is drawn at random from its upper half,
// so that receivers that lost one database together do not come back to
// it in step: a wait is never longer than max. Open refuses initial ≤ 0
// or max < initial.
func WithBackoff(initial, max time.Duration) Option {
	return func(c *config) { c.initial, c.max = initial, max }
}

// WithOpenTimeout bounds each reopen attempt (default DefaultOpenTimeout);
// Open refuses d ≤ 0. The first open, in Open, runs under Open's ctx.
func WithOpenTimeout(d time.Duration) Option { return func(c *config) { c.openTimeout = d } }

// WithObserver calls f with the Status after every change: the handle
// poisoned, the old handle closed (Reopening), each failed attempt, the
// reopen done (Healthy). f is called from the goroutine that reopens, one
// call at a time and in order, after the change; it may call Status and
// Do but must not block for long, nor call Close.
func WithObserver(f func(Status)) Option { return func(c *config) { c.observer = f } }

// A Handle is a store handle that reopens itself after a failure (see the
// package documentation). It is safe for concurrent use.
type Handle[S any] struct {
	open     Opener[S]
	poisoned func(error) bool
	cfg      config
	ctx      context.Context // of the reopening; cancelled by Close
	cancel   context.CancelFunc

	mu       sync.Mutex
	drained  sync.Cond // broadcast when no call is in flight, and at Close
	cur      S         // the open handle; the zero S when none is
	closer   io.Closer
	inflight int // calls running on cur
	status   Status
	openedAt time.Time
	backoff  time.Duration // the wait before the next reopen attempt
	healing  chan struct{} // closed when the latest reopening ends; nil before the first

	closeOnce sync.Once
	closeErr  error
}

// Open opens the first handle with open, under ctx, and returns a Handle
// over it. poisoned reports whether an error a call returned means the
// handle must be reopened, such as errors.Is(err, sqlitestore.ErrPoisoned);
// it must be safe for concurrent use, and is never called with nil. Open
// returns open's error unchanged when the first open fails, and an error
// wrapping sourcecatalog.ErrInvalidValue for a nil open or poisoned or an
// option out of range.
func Open[S any](ctx context.Context, open Opener[S], poisoned func(error) bool, opts ...Option) (*Handle[S], error) {
	cfg := config{initial: DefaultInitialBackoff, max: DefaultMaxBackoff, openTimeout: DefaultOpenTimeout, sleep: sleep, now: time.Now, jitter: jitter}
	for _, o := range opts {
		o(&cfg)
	}
	switch {
	case open == nil || poisoned == nil:
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "storeheal: Open needs an Opener and a poisoned predicate")
	case cfg.initial <= 0 || cfg.max < cfg.initial:
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, fmt.Sprintf("storeheal: backoff from %v to %v: the initial delay must be positive and at most the maximum", cfg.initial, cfg.max))
	case cfg.openTimeout <= 0:
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, fmt.Sprintf("storeheal: open timeout %v is not positive", cfg.openTimeout))
	}
	s, c, err := open(ctx)
	if err != nil {
		return nil, err
	}
	h := &Handle[S]{open: open, poisoned: poisoned, cfg: cfg, cur: s, closer: c}
	h.drained.L = &h.mu
	h.ctx, h.cancel = context.WithCancel(context.WithoutCancel(ctx))
	h.openedAt = cfg.now()
	h.status = Status{State: Healthy, Since: h.openedAt}
	return h, nil
}

// Status returns where the Handle is.
func (h *Handle[S]) Status() Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.status
}

// Do runs fn on the open handle and returns its error unchanged. While
// the Handle is not Healthy it runs nothing and returns at once an error
// wrapping ErrReopening, or ErrClosed after Close. An error of fn that
// the poisoned predicate accepts poisons the handle and starts the
// reopening; fn must not use its S after it returns.
func (h *Handle[S]) Do(fn func(S) error) (err error) {
	s, err := h.begin()
	if err != nil {
		return err
	}
	defer func() { h.end(err) }() // err is nil if fn panics: nothing is judged
	return fn(s)
}

// begin admits a call on the open handle, or says why not.
func (h *Handle[S]) begin() (S, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var zero S
	switch st := h.status; st.State {
	case Healthy:
		h.inflight++
		return h.cur, nil
	case Closed:
		return zero, ErrClosed
	default:
		return zero, fmt.Errorf("%w (%s since %s, %d attempts failed): %v", ErrReopening,
			st.State, st.Since.UTC().Format(time.RFC3339), st.Attempts, st.Cause)
	}
}

// end ends a call that returned err, poisoning the handle if err says so.
// Every call in flight runs on the open handle: none is admitted once it
// is poisoned, and it is closed only when they have all ended.
func (h *Handle[S]) end(err error) {
	bad := err != nil && h.poisoned(err)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.inflight--
	if h.inflight == 0 {
		h.drained.Broadcast()
	}
	if bad && h.status.State == Healthy {
		h.poison(err)
	}
}

// poison marks the open handle poisoned by err and starts the goroutine
// that reopens it, after the previous one has ended. h.mu is held.
func (h *Handle[S]) poison(err error) {
	now := h.cfg.now()
	h.status.State, h.status.Since, h.status.Cause = Poisoned, now, err
	h.status.Attempts, h.status.LastErr = 0, nil
	h.status.Poisonings++
	if errors.Is(err, ErrReplaced) {
		h.status.Replacements++
	}
	if now.Sub(h.openedAt) >= h.cfg.max {
		h.backoff = 0 // it served long enough: the failure is a new one
	}
	prev, done := h.healing, make(chan struct{})
	h.healing = done
	go h.heal(prev, done)
}

// heal takes a poisoned handle through Reopening to Healthy, or stops at
// Close. It is the only goroutine that changes the state from Poisoned
// on, and the only one that calls the observer: prev, the previous
// reopening's channel, orders its reports after the previous ones.
func (h *Handle[S]) heal(prev, done chan struct{}) {
	defer close(done)
	if prev != nil {
		<-prev
	}
	h.notify()
	if !h.closeOld() {
		return
	}
	for {
		if h.cfg.sleep(h.ctx, h.nextDelay()) != nil {
			return // closed
		}
		ctx, cancel := context.WithTimeout(h.ctx, h.cfg.openTimeout)
		s, c, err := h.open(ctx)
		cancel()
		if h.install(s, c, err) {
			return
		}
	}
}

// closeOld waits until no call is in flight on the poisoned handle, closes
// it, and reports whether to go on reopening (false after Close, which
// then closes the handle itself).
func (h *Handle[S]) closeOld() bool {
	h.mu.Lock()
	for h.inflight > 0 && h.status.State != Closed {
		h.drained.Wait()
	}
	if h.status.State == Closed {
		h.mu.Unlock()
		return false
	}
	c := h.take()
	h.status.State, h.status.Since = Reopening, h.cfg.now()
	h.mu.Unlock()
	if c != nil {
		if err := c.Close(); err != nil {
			h.mu.Lock()
			h.status.LastErr = fmt.Errorf("storeheal: closing the poisoned handle: %w", err)
			h.mu.Unlock()
		}
	}
	h.notify()
	return true
}

// take removes the open handle and returns its Closer. h.mu is held.
func (h *Handle[S]) take() io.Closer {
	var zero S
	c := h.closer
	h.cur, h.closer = zero, nil
	return c
}

// install makes the result of a reopen attempt the Handle's: a new open
// handle, or a failed attempt. It reports whether the reopening is over:
// the handle is installed, or Close was called (and a handle the attempt
// opened all the same is closed).
func (h *Handle[S]) install(s S, c io.Closer, err error) bool {
	h.mu.Lock()
	if h.status.State == Closed {
		h.mu.Unlock()
		if err == nil && c != nil {
			c.Close()
		}
		return true
	}
	now := h.cfg.now()
	if err != nil {
		h.status.Attempts++
		h.status.FailedReopens++
		h.status.LastErr = err
	} else {
		h.cur, h.closer, h.openedAt = s, c, now
		h.status.State, h.status.Since = Healthy, now
		h.status.Reopens++
	}
	h.mu.Unlock()
	h.notify()
	return err == nil
}

// nextDelay returns the wait before the next attempt and doubles the one
// after it: 0, then the initial delay, doubling up to the maximum, as
// outbox.Backoff steps, each jittered.
func (h *Handle[S]) nextDelay() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	d := h.backoff
	h.backoff = outbox.Backoff{Min: h.cfg.initial, Max: h.cfg.max}.Next(d)
	return h.cfg.jitter(d)
}

// jitter returns a delay drawn uniformly from the upper half of d: from
// d/2 to d.
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d - rand.N(d/2+1)
}

// notify reports the Status to the observer, if any.
func (h *Handle[S]) notify() {
	if h.cfg.observer != nil {
		h.cfg.observer(h.Status())
	}
}

// Close stops the reopening, waits for the calls in flight, closes the
// open handle, if any, and returns the error of closing it. Later calls
// fail with ErrClosed; Close is idempotent, and every call returns the
// first one's result once it is done. An Opener attempt running is
// cancelled through its ctx, and Close waits for it to return.
func (h *Handle[S]) Close() error {
	h.closeOnce.Do(func() {
		h.mu.Lock()
		h.status.State, h.status.Since = Closed, h.cfg.now()
		h.cancel()
		h.drained.Broadcast()
		healing := h.healing
		h.mu.Unlock()
		if healing != nil {
			<-healing
		}
		h.mu.Lock()
		for h.inflight > 0 {
			h.drained.Wait()
		}
		c := h.take()
		h.mu.Unlock()
		if c != nil {
			h.closeErr = c.Close()
		}
	})
	return h.closeErr
}

// sleep waits for d or until ctx is done, and returns ctx's error then.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
