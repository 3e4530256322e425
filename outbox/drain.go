package outbox

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
)

// A Clock tells the time and waits. [Publisher.Drain] and package agent
// take one so that a test drives time itself; [SystemClock] is the real
// one.
type Clock interface {
	Now() time.Time
	// Sleep waits d, or until ctx is done; it reports whether d passed.
	// A d of zero or less returns at once, true unless ctx is done.
	Sleep(ctx context.Context, d time.Duration) bool
	// WithDeadline returns a context done at t on this clock, or when
	// parent is done (context.WithDeadline for SystemClock).
	WithDeadline(parent context.Context, t time.Time) (context.Context, context.CancelFunc)
}

// SystemClock is the Clock of time.Now and timers.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Sleep waits d on a timer, or until ctx is done.
func (SystemClock) Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// WithDeadline is context.WithDeadline.
func (SystemClock) WithDeadline(parent context.Context, t time.Time) (context.Context, context.CancelFunc) {
	return context.WithDeadline(parent, t)
}

// A Backoff is the wait after a pass that failed: Min first, doubling up
// to Max; it starts again from Min after a pass that delivered something.
// The zero Backoff is DefaultBackoff.
type Backoff struct{ Min, Max time.Duration }

// DefaultBackoff is 1 s doubling up to 30 s.
var DefaultBackoff = Backoff{Min: time.Second, Max: 30 * time.Second}

// orDefault returns b with DefaultBackoff's bounds where b's are not
// positive, and Max at least Min.
func (b Backoff) orDefault() Backoff {
	if b.Min <= 0 {
		b.Min = DefaultBackoff.Min
	}
	if b.Max <= 0 {
		b.Max = max(b.Min, DefaultBackoff.Max)
	}
	b.Max = max(b.Max, b.Min)
	return b
}

// Next returns the wait that follows wait: twice as long, at most Max
// (Min when wait is not positive).
func (b Backoff) Next(wait time.Duration) time.Duration {
	b = b.orDefault()
	if wait <= 0 {
		return b.Min
	}
	return min(2*wait, b.Max)
}

// DrainOptions configure [Publisher.Drain]. The zero value drains with
// DefaultBackoff on the SystemClock until the context is done.
type DrainOptions struct {
	Backoff Backoff
	// Until, when set, is a deadline on Clock: no pass starts after it, no
	// wait runs past it, and a send in flight at Until is cut (the entry
	// stays pending). A context deadline works too, on real time.
	Until time.Time
	Clock Clock // default SystemClock
	// OnPass, when set, is called after each pass, before the wait that
	// may follow it, such as to print progress.
	OnPass func(DrainPass)
	// OnGate, when set, is called after each attempt to open the gate
	// that failed without an answer (neither open nor ErrCapabilityOff),
	// with its error and the wait before the next attempt.
	OnGate func(err error, wait time.Duration)
}

// A DrainPass reports one pass of a Drain to DrainOptions.OnPass.
type DrainPass struct {
	N    int   // the pass's number, from 1
	Pass Pass  // what it did
	Err  error // Publish's error, or nil
	// Last is the last failure of the Drain so far: a failed send's
	// cause, or a store's error; nil while nothing failed.
	Last error
	// Wait is the wait before the next pass when failures make one
	// follow, or 0.
	Wait time.Duration
}

// A DrainOutcome is how a Drain ended.
type DrainOutcome string

// The outcomes of a Drain.
const (
	// Drained: nothing is pending and no snapshot was stopped.
	Drained DrainOutcome = "delivered"
	// DrainStopped: nothing is pending, but a conflict stopped at least
	// one snapshot (DrainReport.Stopped).
	DrainStopped DrainOutcome = "stopped"
	// DrainGaveUp: the context ended or Until passed with entries pending.
	DrainGaveUp DrainOutcome = "gave_up"
	// DrainFailed: an error that waiting and sending again cannot mend,
	// such as one for which NeedsOperator holds.
	DrainFailed DrainOutcome = "failed"
)

// A DrainReport says what a Drain did, summed over its passes.
type DrainReport struct {
	Outcome         DrainOutcome
	Passes          int
	Sent            int
	Delivered       int
	AlreadyReceived int // of Delivered
	Failed          int // failed sends, over every pass
	// Referenced and SentWhole sum the passes' (Pass.Referenced: chunks
	// sent as references; Pass.SentWhole: of them, those sent again
	// whole).
	Referenced, SentWhole int
	// Indexed sums the passes' chunk entries delivered by the receipt of
	// a manifest index without being sent (Pass.Indexed; in Delivered).
	Indexed int
	// Bytes sums the passes' request bytes (Pass.Bytes), as sent and
	// uncompressed; zero over a Transport that is no CountedTransport.
	Bytes RequestBytes
	// Stopped lists the snapshots a conflict stopped, in order.
	Stopped []uuid.UUID
	// Last is the last failure (a failed send's cause, a store's error,
	// or the gate's failed attempt), or nil.
	Last error
	// Declared is what the gate last reported as declared (Gate.Open),
	// or "" when it learnt nothing.
	Declared string
}

// Drain makes Publish passes until nothing is pending, the context ends
// or opts.Until passes, and reports what they did. A pass with failed
// sends, or one the store failed (ErrStoreUnavailable), is followed by a
// wait (opts.Backoff) and another pass; a pass that delivered everything
// it read is followed by another at once, so the last pass is one that
// found nothing pending. A conflict stops its snapshot (Publish) and
// draining goes on with the rest.
//
// Before the first pass Drain asks the gate (WithReceiverV2, WithGate),
// once: a gate that answers neither open nor closed — a failed attempt
// to read the receiver's declaration — is asked again after a wait
// (opts.Backoff), as a failed pass is.
//
// The error is nil when nothing is left pending (Outcome Drained or
// DrainStopped). Otherwise it is: the gate's error wrapping
// ErrCapabilityOff at once, before any pass, while the receiver's v2
// capability is not declared (DrainFailed); the gate's error for which
// NeedsOperator holds (DrainFailed); for
// DrainFailed, Publish's error, such as one for which NeedsOperator holds
// (the credentials refused, TLS verification failed, the vessel refused:
// not retried), ErrReceiptMismatch or sourcecatalog.ErrHashMismatch; for
// DrainGaveUp, sourcecatalog.ErrStoreUnavailable wrapping the context's
// error, or context.DeadlineExceeded when Until passed.
func (p *Publisher) Drain(ctx context.Context, opts DrainOptions) (DrainReport, error) {
	clock := opts.Clock
	if clock == nil {
		clock = SystemClock{}
	}
	backoff := opts.Backoff.orDefault()
	outer := ctx
	if !opts.Until.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = clock.WithDeadline(ctx, opts.Until)
		defer cancel()
	}
	// over reports whether the drain must end: the context is done or
	// Until passed.
	over := func() bool {
		return ctx.Err() != nil || (!opts.Until.IsZero() && !clock.Now().Before(opts.Until))
	}
	gaveUp := func(rep DrainReport) (DrainReport, error) {
		rep.Outcome = DrainGaveUp
		if err := outer.Err(); err != nil {
			return rep, classed(err)
		}
		return rep, classed(context.DeadlineExceeded)
	}
	var rep DrainReport
	var wait time.Duration
	sleep := func() {
		d := wait
		if !opts.Until.IsZero() {
			d = min(d, opts.Until.Sub(clock.Now()))
		}
		clock.Sleep(ctx, d)
	}
	for open := false; ; {
		if over() {
			return gaveUp(rep)
		}
		if !open {
			declared, err := p.open(ctx)
			rep.Declared = declared
			switch {
			case err == nil:
				open, wait = true, 0
			case errors.Is(err, ErrCapabilityOff):
				rep.Outcome = DrainFailed
				return rep, err
			case NeedsOperator(err):
				rep.Outcome, rep.Last = DrainFailed, err
				return rep, err
			default:
				rep.Last = err
				if over() {
					return gaveUp(rep)
				}
				wait = backoff.Next(wait)
				if opts.OnGate != nil {
					opts.OnGate(err, wait)
				}
				sleep()
				continue
			}
		}
		pass, err := p.publish(ctx)
		rep.Passes++
		rep.Sent += pass.Sent
		rep.Delivered += pass.Delivered
		rep.AlreadyReceived += pass.AlreadyReceived
		rep.Failed += pass.Failed
		rep.Referenced += pass.Referenced
		rep.SentWhole += pass.SentWhole
		rep.Indexed += pass.Indexed
		rep.Bytes.add(pass.Bytes)
		for _, f := range pass.Failures {
			if !errors.Is(f.Err, sourcecatalog.ErrConflict) {
				rep.Last = f.Err
			}
		}
		if pass.Delivered > 0 {
			wait = 0
		}
		retry := false
		switch {
		case errors.Is(err, sourcecatalog.ErrConflict):
			rep.Stopped = append(rep.Stopped, pass.Failures[len(pass.Failures)-1].SnapshotID)
		case NeedsOperator(err):
			rep.Outcome = DrainFailed
		case over():
		case errors.Is(err, sourcecatalog.ErrStoreUnavailable):
			retry, rep.Last = true, err
		case err != nil:
			rep.Outcome = DrainFailed
		case pass.Failed > 0:
			retry = true
		case pass.Sent == 0:
			rep.Outcome = Drained
			if len(rep.Stopped) > 0 {
				rep.Outcome = DrainStopped
			}
		}
		step := DrainPass{N: rep.Passes, Pass: pass, Err: err, Last: rep.Last}
		if retry {
			wait = backoff.Next(wait)
			step.Wait = wait
		}
		if opts.OnPass != nil {
			opts.OnPass(step)
		}
		switch rep.Outcome {
		case DrainFailed:
			return rep, err
		case Drained, DrainStopped:
			return rep, nil
		}
		if retry {
			sleep()
		}
	}
}
