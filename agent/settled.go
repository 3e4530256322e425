package agent

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// The settle and hold rules (SPEC.md §12.7).
const (
	// DefaultSettle is the settle time: the longest a new server start's
	// reads are compared before one that did not grow is trusted.
	DefaultSettle = 2 * time.Minute
	// NoSettle, as a settle time, trusts the first read of every server
	// start: for tests, and a server known to have run long enough.
	NoSettle time.Duration = -1
	// ConfirmGap is the wait between the reads of a start not settled
	// while none has differed from the one before it, and the least time
	// between two reads that confirm a held one; once a read differed,
	// each wait doubles the one before.
	ConfirmGap = 5 * time.Second
	// QuietSpan: a new start whose reads, ConfirmGap apart, have all been
	// the same for QuietSpan since this process first read it — the tree
	// not seen changing at all — is settled. A tree seen changing is
	// taken for a server that just started, and settles by the clock.
	QuietSpan = 10 * time.Second
	// ShrinkFifths: a read with fewer than ShrinkFifths fifths of the
	// paths of the last trusted read (it lost more than a fifth) is held.
	ShrinkFifths = 4
)

// A StartDiscoverer is a Discoverer that also names the server start
// each scan read (signalk.Client is one); the Agent and DiscoverSettled
// then settle each start by evidence (SPEC.md §12.7). A Discoverer that
// is not one settles itself, as it says with its errors' RetryAfter.
type StartDiscoverer interface {
	Discoverer
	DiscoverStart(ctx context.Context) ([]*catalog.Record, string, error)
}

// An Unconfirmed reports a read that the settle and hold rules (SPEC.md
// §12.7) do not trust yet: nothing is committed from it, and a read after
// RetryAfter may confirm it. It wraps sourcecatalog.ErrIncompleteScan.
type Unconfirmed struct {
	Cause  string // CauseNotSettled or CauseHeld
	Detail string
	Wait   time.Duration
}

func (e *Unconfirmed) Error() string { return "agent: " + e.Cause + ": " + e.Detail }

// Unwrap returns sourcecatalog.ErrIncompleteScan.
func (e *Unconfirmed) Unwrap() error { return sourcecatalog.ErrIncompleteScan }

// RetryAfter is when a read may confirm this one.
func (e *Unconfirmed) RetryAfter() time.Duration { return e.Wait }

// A reading is one successful scan.
type reading struct {
	records []*catalog.Record
	start   string // "" from a Discoverer that names none
	at      time.Time
	sum     [sha256.Size]byte // of the records' canonical bytes, in order
	paths   int
}

func newReading(records []*catalog.Record, start string, at time.Time) reading {
	h := sha256.New()
	paths := 0
	for _, r := range records {
		h.Write(r.Canonical())
		h.Write([]byte{'\n'})
		if r.Kind() == catalog.KindPath {
			paths++
		}
	}
	r := reading{records: records, start: start, at: at, paths: paths}
	h.Sum(r.sum[:0])
	return r
}

// A settler applies the settle and hold rules to a loop's reads.
type settler struct {
	memory  outbox.StartMemory // nil: this process's own, and the clock settle
	local   map[string]outbox.ServerStart
	settle  time.Duration // NoSettle: every start trusted
	maxGap  time.Duration
	cand    *reading      // the read waiting to be confirmed
	gap     time.Duration // the last wait before a confirming read
	trusted int           // the paths of the last trusted read; -1 none
	// Of the start changing names: since is when this process first read
	// it, changed when a read last differed from the one before it.
	changing string
	since    time.Time
	changed  time.Time
}

func newSettler(memory outbox.StartMemory, settle, maxGap time.Duration) *settler {
	if settle == 0 {
		settle = DefaultSettle
	}
	return &settler{memory: memory, local: map[string]outbox.ServerStart{}, settle: settle,
		maxGap: max(maxGap, ConfirmGap), trusted: -1}
}

// errNoMemory is returned once by judge when the store turns out to keep
// no starts: the settler goes on with the clock.
var errNoMemory = errors.New("the store remembers no server starts: a new start is trusted only after the settle time as this process sees it")

// A verdict is what judge makes of a read: trusted, or not with why.
type verdict struct {
	trusted bool
	why     *Unconfirmed
	warn    string // a settle time shorter than the tree needs, or ""
	attrs   []any  // of warn
}

// sighting records that r's start was read at r.at and returns what is
// remembered of it.
func (s *settler) sighting(ctx context.Context, id string, at time.Time, settled time.Time) (outbox.ServerStart, error) {
	st := outbox.ServerStart{ID: id, FirstSeen: at, Settled: settled}
	if s.memory != nil {
		got, err := s.memory.RememberStart(ctx, st)
		if errors.Is(err, sourcecatalog.ErrUnsupported) {
			s.memory = nil // fail closed: the clock settle from now on
			got, _ = s.sighting(ctx, id, at, settled)
			return got, errNoMemory
		}
		return got, err
	}
	if old, ok := s.local[id]; ok {
		if old.Settled.IsZero() {
			old.Settled = settled
		}
		st = old
	}
	if len(s.local) >= outbox.MaxServerStarts {
		clear(s.local)
	}
	s.local[id] = st
	return st, nil
}

// judge applies the rules to r (SPEC.md §12.7). Its error is the start
// memory's, and r is then not trusted; errNoMemory comes with a verdict.
func (s *settler) judge(ctx context.Context, r reading) (verdict, error) {
	var st outbox.ServerStart
	var noMemory error
	if r.start != "" && s.settle >= 0 {
		var err error
		st, err = s.sighting(ctx, r.start, r.at, time.Time{})
		if errors.Is(err, errNoMemory) {
			noMemory = err
		} else if err != nil {
			return verdict{}, err
		}
	}
	settled := r.start == "" || s.settle < 0 || !st.Settled.IsZero()
	same := s.cand != nil && s.cand.start == r.start
	agree := same && s.cand.sum == r.sum
	grew := same && r.paths > s.cand.paths
	if r.start != s.changing {
		s.changing, s.since, s.changed = r.start, r.at, time.Time{}
	}
	// A start after another the memory holds is a restart: it settles
	// by the clock, never by a quiet tree, since a server just started
	// may hold a partial tree still for a while.
	restart := st.Others > 0
	if same && !agree {
		s.changed = r.at
	}
	quiet := agree && s.changed.IsZero() && r.at.Sub(s.since) >= QuietSpan
	byClock := s.settle >= 0 && r.at.Sub(st.FirstSeen) >= s.settle
	settles := settled || (s.memory != nil && quiet && !restart) || (byClock && !grew)
	hollow := r.paths == 0 || (s.trusted > 0 && r.paths*5 < s.trusted*ShrinkFifths)
	// A hollow read is confirmed only by one ConfirmGap or more after it,
	// however early a wake brought the later read.
	confirmed := agree && r.at.Sub(s.cand.at) >= ConfirmGap
	if settles && (!hollow || confirmed) {
		v := verdict{trusted: true}
		if !settled {
			if _, err := s.sighting(ctx, r.start, r.at, r.at); err != nil && !errors.Is(err, errNoMemory) {
				return verdict{}, err
			}
			if !s.changed.IsZero() && s.changed.Sub(st.FirstSeen) >= s.settle || same && !agree {
				v.warn = "the Signal K tree changed longer after the server start than the settle time: a shorter settle would have trusted a tree still filling"
				v.attrs = []any{"start_id", r.start, "settle", s.settle.String(), "changed_after", s.changed.Sub(st.FirstSeen).String()}
			}
		}
		s.cand, s.gap, s.trusted = nil, 0, r.paths
		return v, noMemory
	}
	if !same || s.changed.IsZero() {
		s.gap = ConfirmGap
	} else {
		s.gap = min(2*s.gap, s.maxGap)
	}
	why := &Unconfirmed{Cause: CauseHeld, Wait: s.gap}
	switch {
	case !settles:
		why.Cause = CauseNotSettled
		why.Detail = fmt.Sprintf("server start %q was first seen %v ago; its tree has not yet stood still for %v of reads %v apart", r.start, r.at.Sub(st.FirstSeen).Round(time.Second), QuietSpan, ConfirmGap)
		if !s.changed.IsZero() {
			why.Detail = fmt.Sprintf("server start %q was first seen %v ago and its tree changed since: trusted from the settle time (%v) once it stops growing", r.start, r.at.Sub(st.FirstSeen).Round(time.Second), s.settle)
		} else if restart {
			why.Detail = fmt.Sprintf("server start %q, first seen %v ago, follows an earlier start: a restart, trusted from the settle time (%v) once it stops growing", r.start, r.at.Sub(st.FirstSeen).Round(time.Second), s.settle)
		}
		if s.memory == nil {
			why.Detail = fmt.Sprintf("server start %q was first seen %v ago, less than the settle time (%v), or its tree grew", r.start, r.at.Sub(st.FirstSeen).Round(time.Second), s.settle)
		}
		if until := st.FirstSeen.Add(s.settle).Sub(r.at); until > 0 && (s.memory == nil || until < why.Wait) {
			why.Wait = until
		}
	case r.paths == 0:
		why.Detail = "the scan found no paths; a later scan must find the same before it is committed"
	default:
		why.Detail = fmt.Sprintf("the selection shrank from %d to %d paths, by more than a fifth; a later scan must find the same before it is committed", s.trusted, r.paths)
	}
	s.cand = &r
	return verdict{why: why}, noMemory
}

// SettleOptions configure DiscoverSettled.
type SettleOptions struct {
	// Memory remembers the server starts across processes (the on-board
	// store); nil settles by the clock after every start this process
	// sees.
	Memory outbox.StartMemory
	// Settle is the settle time (default DefaultSettle; NoSettle trusts
	// the first read).
	Settle time.Duration
	// Tries bounds the reads (at least 1).
	Tries int
	Clock outbox.Clock // default outbox.SystemClock
	// OnWait, when set, is told of each wait before it begins, with why.
	OnWait func(wait time.Duration, why error)
	// OnWarn, when set, is told of a settle time shorter than the tree
	// needs, and of a store that remembers no server starts.
	OnWarn func(msg string)
}

// DiscoverSettled runs one scan for a one-shot controller (a discover
// command piped into commit) under the settle and hold rules (SPEC.md
// §12.7): it reads d until a read is trusted — at once for a start
// Memory remembers as settled, else once reads ConfirmGap apart have
// stood still for QuietSpan, or from the settle time a read that did not
// grow —, after an error whose RetryAfter() is positive waits
// that long and reads again, Tries reads in all. It returns the trusted
// records, or the last error as it is (an *Unconfirmed when the rules
// never trusted a read); the error of a scan that says nothing of
// retrying, at once. A ctx that ends during a wait returns the last
// error.
func DiscoverSettled(ctx context.Context, d Discoverer, o SettleOptions) ([]*catalog.Record, error) {
	if o.Clock == nil {
		o.Clock = outbox.SystemClock{}
	}
	s := newSettler(o.Memory, o.Settle, max(o.Settle, time.Minute))
	if o.Memory == nil && s.settle >= 0 && o.OnWarn != nil {
		o.OnWarn(errNoMemory.Error())
	}
	for try := 1; ; try++ {
		records, start, err := discover(ctx, d)
		var wait time.Duration
		if err == nil {
			v, jerr := s.judge(ctx, newReading(records, start, o.Clock.Now()))
			switch {
			case errors.Is(jerr, errNoMemory) && o.OnWarn != nil:
				o.OnWarn(jerr.Error())
			case jerr != nil && !errors.Is(jerr, errNoMemory):
				return nil, jerr
			}
			if v.warn != "" && o.OnWarn != nil {
				o.OnWarn(v.warn)
			}
			if v.trusted {
				return records, nil
			}
			records, err, wait = nil, v.why, v.why.Wait
		} else if _, w := scanCause(err); w > 0 {
			wait = w
		} else {
			return nil, err
		}
		if try >= max(o.Tries, 1) {
			return nil, err
		}
		if o.OnWait != nil {
			o.OnWait(wait, err)
		}
		if !o.Clock.Sleep(ctx, wait) {
			return nil, err
		}
	}
}

// discover reads d once, with the start it read when it names one.
func discover(ctx context.Context, d Discoverer) ([]*catalog.Record, string, error) {
	if sd, ok := d.(StartDiscoverer); ok {
		return sd.DiscoverStart(ctx)
	}
	records, err := d.Discover(ctx)
	return records, "", err
}

// retryAfter returns the wait an error says a scan needs before it may
// succeed — a positive RetryAfter() — and whether it says one.
func retryAfter(err error) (time.Duration, bool) {
	var ra interface{ RetryAfter() time.Duration }
	if !errors.As(err, &ra) || ra.RetryAfter() <= 0 {
		return 0, false
	}
	return ra.RetryAfter(), true
}
