// Package demo runs the library's main job end to end: a boat's discovery
// cycles are committed to the on-board outbox, published over a simulated
// lossy link to a shore receiver, finalized and activated; then the final
// state is checked against what the two cycles must have produced.
//
// Stores that outlive a run (a file, a database) carry on: a run first
// resumes what an earlier one left — it publishes the entries still pending
// and reconciles the receiver — and its cycles then take the next two
// revisions.
//
// Everything is deterministic for a seed and the stores' state: the
// snapshot ids come from a random reader seeded with the seed and the
// first revision of the run, and the link's losses from a seeded
// generator, so the same seed on the same state prints the same bytes.
// Over the HTTP binding (Config.HTTP) the fault proxy draws its faults
// from the seed too, answer after answer; the output stays the same as
// long as every request reaches the server within the client's timeout.
package demo

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/outbox"
	outboxmem "github.com/yachtmemory/sourcecatalog/outbox/memstore"
)

// Config configures Run. The zero Config is seed 0 on the default link
// with an in-memory outbox and receiver.
type Config struct {
	Seed uint64

	// OutboxStore is the on-board outbox; nil means a new
	// outboxmem.Store. What it holds for the demo vessel
	// (examples.VesselID) from earlier runs is resumed.
	OutboxStore outbox.Store
	// OutboxName names the outbox store in the output; "" means
	// "memstore" for a nil OutboxStore and its Go type otherwise.
	OutboxName string

	// ReceiverStore is the shore side's store; nil means a new
	// finalize/memstore. It may hold state for the demo vessel only up to
	// the outbox's last revision: what earlier runs on the same outbox
	// delivered.
	ReceiverStore finalize.Store
	// StoreName names the receiver store in the output; "" means
	// "memstore" for a nil ReceiverStore and its Go type otherwise.
	StoreName string

	// Link is the simulated link; nil means DefaultLink. A non-nil zero
	// Link is a perfect one.
	Link *Link
	// HTTP, when set, replaces the simulated link with the HTTP binding:
	// an httpbinding server over the receiver on a loopback port, with
	// mutual TLS and certificates made for the run, and a fault proxy in
	// front of it whose faults are drawn from the seed. Link must be nil.
	// Run shuts the server down before it returns.
	HTTP *HTTPLink

	// MaxPasses bounds the publish passes of each cycle, and of the
	// resumption (0 means 32). Running out of passes is an error.
	MaxPasses int

	// AfterStep, when set, is called at each Step of the run. A non-nil
	// error stops Run there, returning that error, as if the process had
	// died: crash tests use it, or block in it and kill the process.
	AfterStep func(Step) error
}

// A Step is a point of a run where AfterStep is called.
type Step struct {
	Cycle int    // 1 or 2
	What  string // StepCommitted, StepPublished or StepActivated
	Pass  int    // the publish pass, for StepPublished
}

// The steps of a cycle.
const (
	// StepCommitted: the cycle is committed to the outbox; nothing of it
	// was sent yet.
	StepCommitted = "committed"
	// StepPublished: a publish pass ended; the snapshot is not finalized
	// after it yet.
	StepPublished = "published"
	// StepActivated: the receiver activated the cycle's snapshot and
	// every entry was acknowledged.
	StepActivated = "activated"
)

func (s Step) String() string {
	if s.What == StepPublished {
		return fmt.Sprintf("cycle %d pass %d %s", s.Cycle, s.Pass, s.What)
	}
	return fmt.Sprintf("cycle %d %s", s.Cycle, s.What)
}

// Report is what Run did and found.
type Report struct {
	Seed     uint64
	VesselID uuid.UUID
	Link     Link      // the simulated link's parameters (zero over HTTP)
	HTTP     *HTTPLink // the HTTP link's parameters, nil for the simulated link
	Stats    LinkStats // what the link did, and the receiver's answers
	// Over HTTP, the addresses of the fault proxy the publisher posted to
	// and of the server behind it, both closed when Run returns.
	ProxyAddr, ServerAddr string

	// LastRevision is the outbox's last revision before this run's
	// cycles: 0 for a new outbox. The cycles take the next two.
	LastRevision int64
	// Resumed counts the entries that earlier runs left pending, which
	// this run published first; Reconciled is what the Reconcile after
	// them finalized.
	Resumed    int
	Reconciled []finalize.Outcome
	// Earlier is the inventory that earlier runs left active, before
	// this run's cycles (empty for a new receiver store).
	Earlier []finalize.Item

	Cycles []CycleReport

	// ActiveSnapshot and ActiveRevision name the vessel's active snapshot
	// at the end.
	ActiveSnapshot uuid.UUID
	ActiveRevision int64
	// Inventory is the final active catalog's inventory, in canonical order.
	Inventory []finalize.Item
	// Current and NotCurrent count its items by CurrentlyObserved.
	Current, NotCurrent int
	// Changes is the inventory difference between the two activations.
	Changes []Change

	// Entries and Delivered count the outbox entries of both cycles and
	// those in state delivered at the end; Pending counts the outbox's
	// entries still pending at the end, of any run.
	Entries, Delivered, Pending int
}

// CycleReport is one discovery cycle.
type CycleReport struct {
	SnapshotID   uuid.UUID
	Revision     int64
	DiscoveredAt time.Time
	Records      int
	Chunks       int
	Entries      int // outbox entries: the manifest and the chunks
	Passes       int // publish passes until nothing was pending
	// Outcomes are the Finalize outcomes after each pass.
	Outcomes []finalize.OutcomeStatus
	// Final is what Finalize reports for the snapshot at the end of the
	// demo: superseded for the first cycle, already_active for the second.
	Final finalize.OutcomeStatus
	// Over the HTTP binding: the bytes of the request bodies the cycle's
	// passes sent, and of the same requests whole and uncompressed
	// (LinkStats.BodyBytes, WholeBytes).
	BodyBytes, WholeBytes int64
}

// Change is one item of the inventory that differs between the two
// activations.
type Change struct {
	What   string // "appeared", "changed", "left" (no longer selected) or "returned"
	Before *finalize.Item
	After  finalize.Item
}

// Run runs the demo, writing its progress and report to w, and returns the
// report. It returns an error when anything fails or the final state is not
// the expected one; the report is filled as far as the demo got.
func Run(ctx context.Context, cfg Config, w io.Writer) (Report, error) {
	link := DefaultLink
	switch {
	case cfg.HTTP != nil && cfg.Link != nil:
		return Report{}, errors.New("demo: a simulated link and the HTTP link at once")
	case cfg.HTTP != nil:
		link = Link{}
	case cfg.Link != nil:
		link = *cfg.Link
	}
	if err := link.check(); err != nil {
		return Report{}, err
	}
	maxPasses := cfg.MaxPasses
	if maxPasses <= 0 {
		maxPasses = 32
	}
	store, storeName := cfg.ReceiverStore, cfg.StoreName
	if store == nil {
		store = memstore.New()
		if storeName == "" {
			storeName = "memstore"
		}
	}
	if storeName == "" {
		storeName = fmt.Sprintf("%T", store)
	}
	box, boxName := cfg.OutboxStore, cfg.OutboxName
	if box == nil {
		box = outboxmem.New()
		if boxName == "" {
			boxName = "memstore"
		}
	}
	if boxName == "" {
		boxName = fmt.Sprintf("%T", box)
	}

	d := &run{
		ctx:    ctx,
		out:    &printer{w: w},
		vessel: examples.VesselID,
		seed:   cfg.Seed,
		report: Report{Seed: cfg.Seed, VesselID: examples.VesselID, Link: link, HTTP: cfg.HTTP},
		max:    maxPasses,
		after:  cfg.AfterStep,
	}
	// A store that outlives runs would stop the vessel after 32 finalized
	// snapshots (finalize.DefaultLimits): keep the newest few.
	d.receiver = finalize.NewReceiver(store, finalize.WithRetention(keepFinalized))
	d.outbox = box
	// Counted revisions (1 and 2, then 3 and 4 on a second run) keep the
	// output the same for a seed; a real outbox floors them (SPEC.md §2.4).
	d.writer = outbox.NewWriter(d.outbox, outbox.WithRevisionFloor(false))
	if cfg.HTTP != nil {
		l, err := startHTTP(*cfg.HTTP, cfg.Seed, d.receiver, d.vessel)
		if err != nil {
			return d.report, err
		}
		d.link = l
		d.report.ProxyAddr, d.report.ServerAddr = l.proxy.Addr(), l.serverAddr
	} else {
		d.link = &lossyLink{
			cfg:    link,
			rng:    rand.New(rand.NewPCG(cfg.Seed, 0x736f75726365)), // "source"
			recv:   d.receiver,
			origin: finalize.Origin{VesselID: d.vessel},
		}
	}
	pubOpts := []outbox.PublisherOption{outbox.WithReceiverV2(true)}
	if l, ok := d.link.(*httpLink); ok {
		pubOpts = l.publisherOptions()
	}
	d.publisher = outbox.NewPublisher(d.outbox, d.vessel, d.link, pubOpts...)

	d.out.printf("sourcecatalog demo: seed %d, vessel %s, outbox %s, receiver store %s\n", cfg.Seed, d.vessel, boxName, storeName)
	if l, ok := d.link.(*httpLink); ok {
		d.out.printf("link: %s\n", cfg.HTTP)
		d.out.printf("receiver declares: %s\n", l.declared)
	} else {
		d.out.printf("link: %s\n", link)
	}
	err := d.run(store)
	d.report.Stats, _ = d.link.snapshot()
	if cerr := d.link.close(); cerr != nil {
		err = errors.Join(err, cerr)
	} else if err == nil && cfg.HTTP != nil {
		d.out.printf("shutdown: the server and the fault proxy stopped cleanly\n")
	}
	if err == nil {
		err = d.out.err
	}
	return d.report, err
}

// A carrier takes the outbox's entries to the receiver: the simulated
// link or the HTTP binding.
type carrier interface {
	outbox.Transport
	// snapshot returns the counts so far and the first error the
	// receiver answered, if any.
	snapshot() (LinkStats, error)
	// flush delivers what the carrier still holds back.
	flush(ctx context.Context)
	// close releases the carrier's resources.
	close() error
}

// keepFinalized is the receiver's retention: the newest finalized
// snapshots it keeps staged. A run needs its own two.
const keepFinalized = 8

// run holds the state of one Run.
type run struct {
	ctx       context.Context
	out       *printer
	vessel    uuid.UUID
	seed      uint64
	ids       io.Reader
	max       int
	after     func(Step) error
	receiver  *finalize.Receiver
	outbox    outbox.Store
	writer    *outbox.Writer
	publisher *outbox.Publisher
	link      carrier
	report    Report
}

func (d *run) run(store finalize.Store) error {
	if err := d.resume(store); err != nil {
		return err
	}
	earlier, err := d.receiver.Active(d.ctx, d.vessel)
	if err != nil {
		return err
	}
	d.report.Earlier = earlier.Items
	d.ids = idReader(d.seed, d.report.LastRevision+1)
	first, second, story, err := scans()
	if err != nil {
		return err
	}

	d.out.printf("cycle 1: the example boat (%s)\n", describe(first))
	if err := d.cycle(first); err != nil {
		return err
	}
	before, err := d.receiver.Active(d.ctx, d.vessel)
	if err != nil {
		return err
	}
	c1 := d.report.Cycles[0]
	if err := checkActive(before, c1, earlier.Items, []activation{{first, finalize.Seen{Revision: c1.Revision, At: c1.DiscoveredAt}}}); err != nil {
		return fmt.Errorf("demo: after cycle 1: %w", err)
	}

	d.out.printf("cycle 2: %s, 15 minutes later\n", describe(second))
	for _, line := range story {
		d.out.printf("  %s\n", line)
	}
	if err := d.cycle(second); err != nil {
		return err
	}

	// The shore side sweeps up: requests still held back by the link
	// arrive now, Reconcile looks for anything complete left staging, and
	// both snapshots are finalized once more.
	was, _ := d.link.snapshot()
	d.link.flush(d.ctx)
	now, err := d.link.snapshot()
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if n := now.Late - was.Late; n > 0 {
		d.out.printf("late: %s held back by the link arrived after publishing ended: %d staged, %d already_received\n",
			plural(n, "request"), now.Staged-was.Staged, now.AlreadyReceived-was.AlreadyReceived)
	}
	if _, err := d.reconcile("reconcile"); err != nil {
		return err
	}
	for i := range d.report.Cycles {
		c := &d.report.Cycles[i]
		out, err := d.receiver.Finalize(d.ctx, d.vessel, c.SnapshotID)
		if err != nil {
			return fmt.Errorf("demo: finalize snapshot %d again: %w", i+1, err)
		}
		c.Final = out.Status
	}

	after, err := d.receiver.Active(d.ctx, d.vessel)
	if err != nil {
		return err
	}
	d.report.ActiveSnapshot, d.report.ActiveRevision = after.SnapshotID, after.Revision
	d.report.Inventory = after.Items
	for _, it := range after.Items {
		if it.CurrentlyObserved {
			d.report.Current++
		} else {
			d.report.NotCurrent++
		}
	}
	d.report.Changes = changes(before.Items, after.Items)
	if err := d.countEntries(); err != nil {
		return err
	}
	d.report.Stats, _ = d.link.snapshot()
	d.printReport()

	if err := d.verify(after, first, second); err != nil {
		d.out.printf("FAILED: %v\n", err)
		return err
	}
	d.out.printf("verified: active revision %d is cycle 2's snapshot; %s as expected; %d of %d outbox entries delivered\n",
		after.Revision, plural(len(after.Items), "inventory item"), d.report.Delivered, d.report.Entries)
	return nil
}

// resume finishes what earlier runs on the same stores left: it publishes
// the outbox's pending entries until none is left, then reconciles the
// receiver, so that a run killed midway ends as if it had finished its
// publishing. It prints nothing for a new outbox.
func (d *run) resume(store finalize.Store) error {
	last, err := d.lastRevision()
	if err != nil {
		return fmt.Errorf("demo: outbox: %w", err)
	}
	d.report.LastRevision = last
	if err := d.checkHistory(store, last); err != nil {
		return err
	}
	if last == 0 {
		return nil
	}
	var pending []outbox.Entry
	err = d.outbox.WithVessel(d.ctx, d.vessel, func(tx outbox.Tx) error {
		pending, err = tx.Pending(d.ctx, math.MaxInt)
		return err
	})
	if err != nil {
		return fmt.Errorf("demo: outbox: %w", err)
	}
	d.report.Resumed = len(pending)
	d.out.printf("resume: the outbox is at revision %d from earlier runs, %s still pending\n", last, plural(len(pending), "entry"))
	for pass := 1; len(pending) > 0; pass++ {
		if pass > d.max {
			return fmt.Errorf("demo: resume: still not delivered after %d publish passes", d.max)
		}
		was, _ := d.link.snapshot()
		p, err := d.publisher.Publish(d.ctx)
		if err != nil {
			return fmt.Errorf("demo: resume: publish: %w", err)
		}
		now, _ := d.link.snapshot()
		d.out.printf("  pass %d: sent %d, acknowledged %d (%s)\n", pass, p.Sent, p.Delivered, activity(was, now))
		if p.Remaining == 0 {
			break
		}
	}
	outs, err := d.reconcile("  reconcile")
	d.report.Reconciled = outs
	if err != nil {
		return err
	}
	active, err := d.receiver.Active(d.ctx, d.vessel)
	if err != nil {
		return err
	}
	if active.SnapshotID == uuid.Nil {
		d.out.printf("  active: nothing yet\n")
	} else {
		d.out.printf("  active: revision %d, snapshot %s, %s\n", active.Revision, active.SnapshotID, plural(len(active.Items), "inventory item"))
	}
	return nil
}

// reconcile runs Reconcile on the vessel and prints its outcomes, each line
// prefixed with label.
func (d *run) reconcile(label string) ([]finalize.Outcome, error) {
	outs, err := d.receiver.Reconcile(d.ctx, d.vessel)
	if err != nil {
		return outs, fmt.Errorf("demo: reconcile: %w", err)
	}
	if len(outs) == 0 {
		d.out.printf("%s: nothing complete left staging\n", label)
	}
	for _, o := range outs {
		d.out.printf("%s: snapshot %s revision %d: %s\n", label, o.SnapshotID, o.Revision, outcome(o))
	}
	return outs, nil
}

// errPeek rolls back lastRevision's transaction.
var errPeek = errors.New("demo: peek at the revision counter (rolled back)")

// lastRevision is the last revision the outbox allocated for the vessel,
// 0 for none: it allocates the next one in a transaction it rolls back.
func (d *run) lastRevision() (int64, error) {
	var next int64
	err := d.outbox.WithVessel(d.ctx, d.vessel, func(tx outbox.Tx) error {
		var err error
		if next, err = tx.NextRevision(d.ctx, 0); err != nil {
			return err
		}
		return errPeek
	})
	if !errors.Is(err, errPeek) {
		if err == nil {
			err = errors.New("the revision peek committed")
		}
		return 0, err
	}
	return next - 1, nil
}

// step calls the AfterStep hook.
func (d *run) step(s Step) error {
	if d.after == nil {
		return nil
	}
	return d.after(s)
}

// cycle commits one discovery cycle to the outbox and publishes it until
// nothing is pending and the receiver has activated it.
func (d *run) cycle(records []*catalog.Record) error {
	n := len(d.report.Cycles) + 1
	id, err := uuid.NewRandomFromReader(d.ids)
	if err != nil {
		return err
	}
	at := scanTime(d.report.LastRevision + int64(n))
	commit, err := d.writer.Commit(d.ctx, outbox.Cycle{
		VesselID: d.vessel, SnapshotID: id, DiscoveredAt: at, Records: records,
	})
	if err != nil {
		return fmt.Errorf("demo: commit cycle %d: %w", n, err)
	}
	c := CycleReport{
		SnapshotID: id, Revision: commit.Revision, DiscoveredAt: at,
		Records: len(records), Chunks: len(commit.Entries) - 1, Entries: len(commit.Entries),
	}
	d.out.printf("  commit: revision %d, snapshot %s, %d records in %s, %s in one transaction\n",
		c.Revision, id, c.Records, plural(c.Chunks, "chunk"), plural(c.Entries, "outbox entry"))
	defer func() { d.report.Cycles = append(d.report.Cycles, c) }()
	if err := d.step(Step{Cycle: n, What: StepCommitted}); err != nil {
		return err
	}

	if l, ok := d.link.(*httpLink); ok {
		l.expect(commit.Entries)
		start, _ := d.link.snapshot()
		defer func() {
			end, _ := d.link.snapshot()
			c.BodyBytes, c.WholeBytes = end.BodyBytes-start.BodyBytes, end.WholeBytes-start.WholeBytes
			d.out.printf("  bytes: %d of request bodies in %s; %d with every entry whole and uncompressed (%s saved)\n",
				c.BodyBytes, plural(end.Sent-start.Sent, "request"), c.WholeBytes, percent(1-float64(c.BodyBytes)/float64(c.WholeBytes)))
		}()
	}
	for pass := 1; ; pass++ {
		if pass > d.max {
			return fmt.Errorf("demo: cycle %d: still not delivered and activated after %d publish passes", n, d.max)
		}
		was, _ := d.link.snapshot()
		p, err := d.publisher.Publish(d.ctx)
		if err != nil {
			return fmt.Errorf("demo: cycle %d: publish: %w", n, err)
		}
		now, err := d.link.snapshot()
		if err != nil {
			return fmt.Errorf("demo: cycle %d: %w", n, err)
		}
		if err := d.step(Step{Cycle: n, What: StepPublished, Pass: pass}); err != nil {
			return err
		}
		out, err := d.receiver.Finalize(d.ctx, d.vessel, id)
		if err != nil {
			return fmt.Errorf("demo: cycle %d: finalize: %w", n, err)
		}
		c.Passes = pass
		c.Outcomes = append(c.Outcomes, out.Status)
		d.out.printf("  pass %d: sent %d, acknowledged %d (%s); finalize: %s\n",
			pass, p.Sent, p.Delivered, activity(was, now), outcome(out))
		done := out.Status == finalize.Activated || out.Status == finalize.AlreadyActive
		switch {
		case p.Remaining == 0 && done:
			return d.step(Step{Cycle: n, What: StepActivated})
		case p.Remaining == 0 && out.Status == finalize.Staging:
			return fmt.Errorf("demo: cycle %d: every outbox entry was acknowledged, yet the snapshot is %s", n, outcome(out))
		case !done && out.Status != finalize.Staging:
			return fmt.Errorf("demo: cycle %d: finalize: %s", n, outcome(out))
		}
	}
}

// checkHistory refuses a receiver store that holds state for the demo
// vessel beyond the outbox's last revision: that state came from another
// outbox, and the demo's revisions would collide with it.
func (d *run) checkHistory(store finalize.Store, last int64) error {
	return store.WithVessel(d.ctx, d.vessel, func(tx finalize.Tx) error {
		v, err := tx.Vessel(d.ctx)
		if err != nil {
			return err
		}
		snaps, err := tx.Snapshots(d.ctx)
		if err != nil {
			return err
		}
		newest := v.ActiveRevision
		for _, s := range snaps {
			newest = max(newest, s.Revision)
		}
		if newest > last {
			return fmt.Errorf("demo: the receiver store already holds state for the demo vessel %s up to revision %d, but the outbox is at revision %d; use a fresh store, or the outbox that wrote it", d.vessel, newest, last)
		}
		return nil
	})
}

// countEntries counts the outbox entries of both cycles and the delivered
// ones, and the entries of any run still pending.
func (d *run) countEntries() error {
	return d.outbox.WithVessel(d.ctx, d.vessel, func(tx outbox.Tx) error {
		pending, err := tx.Pending(d.ctx, math.MaxInt)
		if err != nil {
			return err
		}
		d.report.Pending = len(pending)
		d.report.Entries, d.report.Delivered = 0, 0
		for _, c := range d.report.Cycles {
			entries, err := tx.Entries(d.ctx, c.SnapshotID)
			if err != nil {
				return err
			}
			for _, e := range entries {
				d.report.Entries++
				if e.State == outbox.Delivered {
					d.report.Delivered++
				}
			}
		}
		return nil
	})
}

// idReader is the seeded source of the snapshot ids of a run whose first
// cycle takes revision first: a run on new stores (first 1) and one on
// stores that earlier runs left draw other ids.
func idReader(seed uint64, first int64) io.Reader {
	var key [32]byte
	copy(key[:], "sourcecatalog demo snapshot ids")
	binary.LittleEndian.PutUint64(key[16:], binary.LittleEndian.Uint64(key[16:])^uint64(first-1))
	binary.LittleEndian.PutUint64(key[24:], seed)
	return rand.NewChaCha8(key)
}

// describe summarises a cycle's records.
func describe(records []*catalog.Record) string {
	var paths, sources int
	for _, r := range records {
		switch r.Kind() {
		case catalog.KindPath:
			paths++
		case catalog.KindSource:
			sources++
		}
	}
	return fmt.Sprintf("%s from %s", plural(paths, "path"), plural(sources, "source"))
}

// outcome renders a Finalize outcome.
func outcome(o finalize.Outcome) string {
	s := string(o.Status)
	switch {
	case o.Status == finalize.Staging && o.MissingManifest:
		s += ", missing the manifest"
	case o.Status == finalize.Staging:
		s += fmt.Sprintf(", missing %s %v", pluralWord(len(o.MissingChunks), "chunk"), o.MissingChunks)
	case o.Status == finalize.Activated || o.Status == finalize.AlreadyActive:
		s += fmt.Sprintf(", active revision %d", o.ActiveRevision)
	case o.Err != nil:
		s += ": " + o.Err.Error()
	}
	return s
}

func plural(n int, noun string) string { return fmt.Sprintf("%d %s", n, pluralWord(n, noun)) }

func pluralWord(n int, noun string) string {
	switch {
	case n == 1:
		return noun
	case strings.HasSuffix(noun, "s"):
		return noun + "es"
	case strings.HasSuffix(noun, "y"):
		return noun[:len(noun)-1] + "ies"
	}
	return noun + "s"
}

// printer writes formatted lines and keeps the first write error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

// envelopeTime renders a time as the manifest does.
func envelopeTime(t time.Time) string { return envelope.FormatTime(t) }
