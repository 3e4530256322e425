// Package agent is the sender: a Sender commits a vessel's discovery
// cycles to its outbox and publishes them to the receiver, built from one
// Config whose defaults are safe (NewSender); an Agent runs a Sender in
// the on-board controller's loop: every interval it
// discovers which Signal K paths and sources the vessel selects, commits
// the cycle to the outbox (SPEC.md §7.4) and publishes the pending entries
// to the receiver (SPEC.md §7.5), logging what each cycle found and what
// was delivered.
//
// The loop runs one step at a time on one goroutine:
//
//   - Discover, at start and then every Config.Interval from the previous
//     scan's start, or at once when Config.Wake delivers, under the settle
//     and hold rules (SPEC.md §12.7): the picture of a server start the
//     Store (an outbox.StartMemory) remembers as settled is trusted at
//     once; a new start's once its reads, ConfirmGap apart, stood still
//     for QuietSpan, or — its tree seen changing, or the start following
//     another the Store remembers (a restart) — from Config.Settle after
//     it was first seen, by a read that did not grow. A scan with no paths, or with fewer than
//     four fifths of the paths of the last trusted one, is held until a
//     later read finds the same. A scan not trusted, or that fails —
//     sourcecatalog.ErrIncompleteScan or any other error — commits
//     nothing; it is tried again after the error's positive RetryAfter()
//     when it has one, after ConfirmGap for a restart during the scan,
//     and otherwise after a backoff doubling from ConfirmGap up to the
//     interval. Each failure is logged with its cause (the Cause
//     constants), its next attempt and the failures in a row.
//   - Commit the scan as a new outbox.Cycle. A commit the store could not
//     serve (sourcecatalog.ErrStoreUnavailable) is tried again with the
//     same cycle — the same snapshot id — after a backoff, until it lands;
//     no scan runs meanwhile. A commit refused for its records (a limit,
//     an integrity rule) is dropped: the next scan starts a new cycle.
//   - Publish (outbox.Publisher.Drain) while entries are pending, between
//     the other steps, with a backoff between failed passes, and never
//     past the time the next scan or commit retry is due: a send in flight
//     then is cut and the entry stays pending. A failure only an operator
//     can mend (outbox.NeedsOperator: credentials or the vessel refused,
//     TLS verification failed) is logged as an error and not retried until
//     the next cycle commits; so is the capability gate (SPEC.md §7.5)
//     while it is closed: by default (Config.Gate GateAuto) it asks the
//     receiver's capability declaration (SPEC.md §11.7) and opens while
//     it names v2; GateOn opens it for good, GateOff shuts it. The
//     gate is asked at every publishing step — once per committed cycle
//     while it stays closed —, and each change of what it reports as
//     declared is logged ("receiver declaration"); a gate that could not
//     learn anything (the declaration unreadable for now) is asked again
//     after a backoff within the step, like a failed pass.
//
// Cancelling Run's context stops the loop after the current step: a scan
// or a publishing pass in progress is cut (a cut scan commits nothing; a
// cut send stays pending), a commit in progress completes.
//
// The Store is used as given; a store that heals itself after a fault
// (closing and reopening a poisoned handle) can be passed in its place,
// since the loop only retries what the store reports as unavailable.
package agent

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// DefaultInterval is the time between two scans' starts.
const DefaultInterval = 15 * time.Minute

// commitTimeout bounds a commit that runs on after Run's context ended.
const commitTimeout = time.Minute

// A Discoverer reads one discovery cycle: the records of what the vessel
// currently selects, or an error — sourcecatalog.ErrIncompleteScan when
// the scan cannot be trusted — and no records. An error may also have a
// method RetryAfter() time.Duration saying when a scan may succeed.
// signalk.Client is one.
type Discoverer interface {
	Discover(ctx context.Context) ([]*catalog.Record, error)
}

// Config configures a Sender (NewSender) and an Agent (New), which runs
// one. Vessel, Store and the receiver — URL, or Transport — are required,
// and an Agent's Discoverer. The zero value of every other member is a
// safe default: the gate reads the receiver's declaration (GateAuto),
// TLS 1.2 or later verified against the system's roots, no credentials.
type Config struct {
	Vessel uuid.UUID
	Store  outbox.Store // the outbox; a self-healing wrapper may stand in

	// URL is the receiver's https URL, such as
	// https://shore.example:8443/v2/messages, or an http URL on loopback
	// (httpbinding.NewClient).
	URL string
	// CertFile and KeyFile are the vessel's client certificate and its
	// key (PEM), for mutual TLS; TokenFile instead holds a bearer token
	// on its first line (surrounding white space ignored). CAFile holds
	// the PEM certificates of the CAs that sign the receiver's
	// certificate (default: the system's roots).
	CertFile, KeyFile, TokenFile, CAFile string
	// HTTPClient, when set, carries the requests instead of a transport
	// of the Client's own (httpbinding.WithHTTPClient): it holds the TLS
	// configuration, so CertFile, KeyFile and CAFile stay empty; a
	// TokenFile may go with it.
	HTTPClient *http.Client
	// Timeout bounds one request (default httpbinding.DefaultClientTimeout).
	Timeout time.Duration
	// Gate is when to send v2 entries (SPEC.md §7.5): GateAuto (the
	// zero value) asks the receiver, GateOff never, GateOn always.
	Gate Gate
	// Transport, instead of URL and its credentials, is a transport of
	// the caller's: an *httpbinding.Client built by hand, or another
	// binding (then Gate must be GateOn or GateOff).
	Transport outbox.Transport
	// Publisher are more Publisher options, applied after the gate's
	// (the last gate option given wins). Over the Client NewSender builds
	// from URL, the Publisher keeps httpbinding.DefaultMaxInFlight
	// entries in flight, the receiver's default limit per vessel
	// (outbox.WithInFlight): an outbox.WithInFlight here sets another
	// number, such as 1 for a receiver configured with a lower limit.
	// Over a Transport of the caller's it keeps 1, unless set here.
	Publisher []outbox.PublisherOption
	// Build are the options each cycle's snapshot is built with
	// (outbox.WithBuildOptions): none cuts chunks by the greedy rule;
	// envelope.WithContentDefinedCuts() by the content-defined one
	// (SPEC.md §7.2), so that a cycle changing a few records resends a
	// few chunks — for about eight times the chunks, and an identical
	// cycle's manifest index four times as large.
	Build []envelope.Option

	Discoverer Discoverer // the Agent's scans
	// Interval is the time between two scans' starts (default
	// DefaultInterval).
	Interval time.Duration
	// Wake, when set, makes the next scan due at once each time it
	// delivers while the loop waits, unless a scanned cycle waits for its
	// commit: a trigger such as signalk.Client.Watch, which wakes when
	// the server's delta stream shows a change worth a scan. The interval
	// stays the heartbeat. A closed Wake is no trigger.
	Wake <-chan struct{}
	// Settle is the settle time of a server start (SPEC.md §12.7;
	// default DefaultSettle; NoSettle trusts every start's first read).
	// The start memory is the Store's when it is an outbox.StartMemory.
	Settle time.Duration
	// Backoff is the wait after a failed publishing pass or commit
	// (default outbox.DefaultBackoff).
	Backoff outbox.Backoff
	Logger  *slog.Logger // default slog.Default()
	Clock   outbox.Clock // default outbox.SystemClock
}

// An Agent runs the on-board loop of one vessel. Run it once.
type Agent struct {
	cfg    Config
	sender *Sender
	log    *slog.Logger
	wake   <-chan struct{} // cfg.Wake until it is closed
}

// New returns an Agent for cfg, running the Sender of NewSender(cfg). It
// returns NewSender's errors, and an error wrapping
// sourcecatalog.ErrInvalidValue located at the field when Discoverer is
// nil or Interval is negative.
func New(cfg Config) (*Agent, error) {
	switch {
	case cfg.Discoverer == nil:
		return nil, invalidField("Discoverer", "a Discoverer is required")
	case cfg.Interval < 0:
		return nil, invalidField("Interval", "the interval is negative")
	case cfg.Settle < 0 && cfg.Settle != NoSettle:
		return nil, invalidField("Settle", "the settle time is negative")
	}
	sender, err := NewSender(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = outbox.SystemClock{}
	}
	return &Agent{cfg: cfg, sender: sender, log: cfg.Logger.With("vessel_id", cfg.Vessel.String()), wake: cfg.Wake}, nil
}

// Close closes the connections the Agent's Sender keeps alive.
func (a *Agent) Close() { a.sender.Close() }

// state is what the loop knows between steps.
type state struct {
	nextScan   time.Time     // when the next scan is due
	cycle      *outbox.Cycle // scanned, not yet committed
	commitAt   time.Time     // when to try committing cycle
	commitWait time.Duration // the last wait before a commit retry
	publish    bool          // entries may be pending and sending may help
	lastHash   string        // the last committed cycle's document hash, or ""
	declared   string        // what the gate last reported as declared, or ""
	settler    *settler
	scanFails  int             // scans failed in a row
	paths      map[string]bool // the last committed cycle's paths; nil before the first
}

// Run runs the loop until ctx is done, then returns nil after the current
// step (see the package doc). It reports every outcome in the log and
// returns no error of its own.
func (a *Agent) Run(ctx context.Context) error {
	clock := a.cfg.Clock
	memory, _ := a.cfg.Store.(outbox.StartMemory)
	s := &state{nextScan: clock.Now(), publish: true, settler: newSettler(memory, a.cfg.Settle, a.cfg.Interval)}
	a.log.Info("agent started", "interval", a.cfg.Interval.String())
	if _, starts := a.cfg.Discoverer.(StartDiscoverer); starts && memory == nil && s.settler.settle >= 0 {
		a.log.Warn(errNoMemory.Error(), "settle", s.settler.settle.String())
	}
	for ctx.Err() == nil {
		now := clock.Now()
		switch {
		case s.cycle != nil && !now.Before(s.commitAt):
			a.commit(ctx, s)
		case s.cycle == nil && !now.Before(s.nextScan):
			a.scan(ctx, s)
		case s.publish:
			a.drain(ctx, s)
		default:
			a.sleep(ctx, s, s.due().Sub(now))
		}
	}
	a.log.Info("agent stopped")
	return nil
}

// sleep waits d, or until a.wake delivers: then the next scan is due at
// once, unless a cycle waits for its commit. A wake pending already is
// taken before any wait.
func (a *Agent) sleep(ctx context.Context, s *state, d time.Duration) {
	if a.wake == nil {
		a.cfg.Clock.Sleep(ctx, d)
		return
	}
	select {
	case _, ok := <-a.wake:
		a.woken(s, ok)
		return
	default:
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wake, stop := a.wake, make(chan struct{})
	got := make(chan *bool, 1) // a wake (true), the end of wake (false), or none (nil)
	go func() {
		select {
		case _, ok := <-wake:
			got <- &ok
			cancel()
		case <-stop:
			got <- nil // the wait ended first: a later wake stays in wake
		}
	}()
	a.cfg.Clock.Sleep(wctx, d)
	close(stop)
	if ok := <-got; ok != nil {
		a.woken(s, *ok)
	}
}

// woken takes a wake, or, when !ok, the end of a.wake.
func (a *Agent) woken(s *state, ok bool) {
	if !ok {
		a.wake = nil
		return
	}
	if now := a.cfg.Clock.Now(); s.cycle == nil && now.Before(s.nextScan) {
		a.log.Info("scan woken early", "due_in", s.nextScan.Sub(now).String())
		s.nextScan = now
	}
}

// due is when the next scan or commit retry is.
func (s *state) due() time.Time {
	if s.cycle != nil {
		return s.commitAt
	}
	return s.nextScan
}

// scan runs one discovery and, when the settle and hold rules (SPEC.md
// §12.7) trust it, keeps its cycle for the commit.
func (a *Agent) scan(ctx context.Context, s *state) {
	started := a.cfg.Clock.Now()
	s.nextScan = started.Add(a.cfg.Interval)
	records, start, err := discover(ctx, a.cfg.Discoverer)
	if ctx.Err() != nil {
		a.log.Info("scan cut by the stop: nothing committed")
		return
	}
	if err == nil {
		var v verdict
		v, err = s.settler.judge(ctx, newReading(records, start, started))
		if errors.Is(err, errNoMemory) {
			a.log.Warn(err.Error(), "settle", s.settler.settle.String())
			err = nil
		}
		if v.warn != "" {
			a.log.Warn(v.warn, v.attrs...)
		}
		if err == nil && !v.trusted {
			err = v.why
		}
	}
	if err != nil {
		a.scanFailed(ctx, s, err)
		return
	}
	s.scanFails = 0
	c := outbox.NewCycle(a.cfg.Vessel, started, records)
	s.cycle, s.commitAt, s.commitWait = &c, a.cfg.Clock.Now(), 0
}

// scanFailed logs a scan that commits nothing and schedules the next: at
// the time the error says (a server settling, a scan held: a confirming
// read comes ConfirmGap or more after, whatever the interval), or else
// after a backoff doubling from ConfirmGap up to the interval. A wait for
// a server to settle is INFO; other failures are WARN — ERROR for records
// the library refuses —, with the count of scans failed in a row.
func (a *Agent) scanFailed(ctx context.Context, s *state, err error) {
	s.scanFails++
	now := a.cfg.Clock.Now()
	cause, wait := scanCause(err)
	level, msg := slog.LevelWarn, "scan incomplete: nothing committed"
	switch {
	case errors.Is(err, sourcecatalog.ErrStoreUnavailable): // the start memory's
		cause, msg = CauseStoreUnavailable, "scan not judged: the store could not say whether the server start settled; nothing committed"
	case cause == CauseHeld:
		msg = "scan held: nothing committed until a later scan confirms it"
	case cause == CauseScanRefused:
		level, msg = slog.LevelError, "scan failed: nothing committed"
	case cause == CauseNotSettled:
		level = slog.LevelInfo // expected after every (re)start of the server
	}
	if wait <= 0 {
		wait = min(ConfirmGap, a.cfg.Interval)
		for range min(s.scanFails-1, 20) {
			wait = min(2*wait, a.cfg.Interval)
		}
	}
	s.nextScan = now.Add(wait)
	a.log.Log(ctx, level, msg, "cause", cause, "error", err.Error(), "failures", s.scanFails,
		"retry_in", s.nextScan.Sub(now).String())
}

// commit commits the scanned cycle, or schedules its retry.
func (a *Agent) commit(ctx context.Context, s *state) {
	c := s.cycle
	// A commit in progress completes when ctx ends: the loop stops after it.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer cancel()
	com, err := a.sender.writer.Commit(cctx, *c)
	switch {
	case errors.Is(err, sourcecatalog.ErrStoreUnavailable):
		s.commitWait = a.cfg.Backoff.Next(s.commitWait)
		s.commitAt = a.cfg.Clock.Now().Add(s.commitWait)
		a.log.Warn("commit failed: retrying the same cycle", "cause", CauseStoreUnavailable, "snapshot_id", c.SnapshotID.String(),
			"error", err.Error(), "retry_in", s.commitWait.String())
		return
	case err != nil:
		s.cycle = nil
		a.log.Error("commit refused: cycle dropped, the next scan starts a new one", "snapshot_id", c.SnapshotID.String(),
			"error", err.Error(), "class", sourcecatalog.WireName(sourcecatalog.Class(err)))
		return
	}
	s.cycle, s.publish = nil, true
	attrs := []any{"snapshot_id", c.SnapshotID.String(), "revision", com.Revision, "entries", len(com.Entries)}
	attrs = append(attrs, counts(c.Records)...)
	m, merr := envelope.DecodeManifest(com.Entries[0].Payload)
	if merr != nil { // the Writer checked these bytes; never expected
		a.log.Error("committed manifest does not decode", "snapshot_id", c.SnapshotID.String(), "error", merr.Error())
		s.lastHash = ""
		return
	}
	hash := m.DocumentSHA256.String()
	attrs = append(attrs, "document_sha256", hash, "changed", hash != s.lastHash)
	if s.lastHash != "" {
		attrs = append(attrs, "previous_document_sha256", s.lastHash)
	}
	if com.Retried {
		attrs = append(attrs, "retried", true)
	}
	s.lastHash = hash
	a.log.Info("cycle committed", attrs...)
	a.notePathsLeft(s, c.Records)
}

// maxLeftLogged bounds the paths that left the selection logged one by
// one after a commit; the rest are counted in one line.
const maxLeftLogged = 32

// notePathsLeft logs, once, each path of the previous committed cycle
// that this one no longer selects: its value went null or stale (the
// source fell silent), or it left the server's model.
func (a *Agent) notePathsLeft(s *state, records []*catalog.Record) {
	paths := make(map[string]bool)
	for _, r := range records {
		if r.Kind() == catalog.KindPath {
			paths[r.PathName()] = true
		}
	}
	prev := s.paths
	s.paths = paths
	var left []string
	for p := range prev {
		if !paths[p] {
			left = append(left, p)
		}
	}
	slices.Sort(left)
	for i, p := range left {
		if i == maxLeftLogged {
			a.log.Info("more paths left the selection", "count", len(left)-i)
			break
		}
		a.log.Info("path left the selection: no live value (null or stale), or gone from the model", "path", p)
	}
}

// counts returns the log attributes counting records by kind.
func counts(records []*catalog.Record) []any {
	var paths, sources, observations int
	for _, r := range records {
		switch r.Kind() {
		case catalog.KindPath:
			paths++
		case catalog.KindSource:
			sources++
		case catalog.KindObservation:
			observations++
		}
	}
	return []any{"paths", paths, "sources", sources, "observations", observations}
}

// drain publishes until nothing is pending or the next step is due.
func (a *Agent) drain(ctx context.Context, s *state) {
	rep, err := a.sender.Publish(ctx, outbox.DrainOptions{Backoff: a.cfg.Backoff, Until: s.due(), Clock: a.cfg.Clock})
	a.noteDeclared(s, rep.Declared)
	attrs := []any{"outcome", string(rep.Outcome), "passes", rep.Passes, "sent", rep.Sent, "delivered", rep.Delivered,
		"already_received", rep.AlreadyReceived, "failed", rep.Failed, "referenced", rep.Referenced, "indexed", rep.Indexed,
		"bytes_sent", rep.Bytes.Sent, "bytes_uncompressed", rep.Bytes.Uncompressed}
	if len(rep.Stopped) > 0 {
		stopped := make([]string, len(rep.Stopped))
		for i, id := range rep.Stopped {
			stopped[i] = id.String()
		}
		attrs = append(attrs, "stopped_snapshots", stopped)
	}
	if rep.Last != nil {
		attrs = append(attrs, "last_failure", rep.Last.Error(), "cause", sendCause(rep.Last))
	}
	now := a.cfg.Clock.Now()
	switch {
	case errors.Is(err, outbox.ErrCapabilityOff):
		s.publish = false
		a.log.Warn("nothing sent: the receiver is not declared v2-capable (SPEC.md §7.5); entries stay pending",
			"cause", CauseReceiverRefused, "reason", err.Error(), "retry_in", "after the next commit")
	case rep.Outcome == outbox.DrainFailed:
		s.publish = false
		msg := "publishing failed: retried after the next commit"
		if outbox.NeedsOperator(err) {
			msg = "publishing stopped: an operator must act; retried after the next commit"
		}
		a.log.Error(msg, append(attrs, "error", err.Error(), "class", sourcecatalog.WireName(sourcecatalog.Class(err)),
			"cause", sendCause(err), "retry_in", "after the next commit")...)
	case rep.Outcome == outbox.DrainGaveUp:
		// The next step is due, or Run is stopping: entries stay pending.
		if rep.Passes == 0 && rep.Last != nil {
			a.log.Warn("nothing sent: the receiver's capability declaration could not be read; asked again at the next step",
				"last_failure", rep.Last.Error(), "cause", sendCause(rep.Last), "retry_in", s.due().Sub(now).String())
		}
		if rep.Sent > 0 {
			a.log.Warn("published in part: entries pending", append(attrs, "retry_in", s.due().Sub(now).String())...)
		}
	default:
		s.publish = false
		if rep.Sent > 0 || len(rep.Stopped) > 0 {
			a.log.Info("published", attrs...)
		}
	}
}

// noteDeclared logs what the gate reports as declared when it changed: a
// receiver upgraded, rolled back or reconfigured. "" (nothing learnt) is
// no change.
func (a *Agent) noteDeclared(s *state, declared string) {
	if declared == "" || declared == s.declared {
		return
	}
	msg, attrs := "receiver declaration", []any{"declared", declared}
	if s.declared != "" {
		msg, attrs = "receiver declaration changed", append(attrs, "previous", s.declared)
	}
	s.declared = declared
	a.log.Info(msg, attrs...)
}
