// Package demo runs the library's main job end to end: a boat's discovery
// cycles are committed to the on-board outbox, published over a simulated
// lossy link to a shore receiver, finalized and activated; then the final
// state is checked against what the two cycles must have produced.
//
// Everything is deterministic for a seed: the snapshot ids come from a
// seeded random reader and the link's losses from a seeded generator, so
// the same seed prints the same bytes.
package demo

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
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
)

// Config configures Run. The zero Config is seed 0 on the default link
// with an in-memory receiver.
type Config struct {
	Seed uint64

	// ReceiverStore is the shore side's store; nil means a new
	// finalize/memstore. It must hold nothing for the demo vessel
	// (examples.VesselID).
	ReceiverStore finalize.Store
	// StoreName names the receiver store in the output; "" means
	// "memstore" for a nil ReceiverStore and its Go type otherwise.
	StoreName string

	// Link is the simulated link; nil means DefaultLink. A non-nil zero
	// Link is a perfect one.
	Link *Link

	// MaxPasses bounds the publish passes of each cycle (0 means 32).
	// Running out of passes is an error.
	MaxPasses int
}

// Report is what Run did and found.
type Report struct {
	Seed     uint64
	VesselID uuid.UUID
	Link     Link      // the link's parameters
	Stats    LinkStats // what the link did, and the receiver's answers
	Cycles   []CycleReport

	// ActiveSnapshot and ActiveRevision name the vessel's active snapshot
	// at the end.
	ActiveSnapshot uuid.UUID
	ActiveRevision int64
	// Inventory is the final active catalog's inventory, in canonical order.
	Inventory []finalize.InventoryItem
	// Current and NotCurrent count its items by CurrentlyObserved.
	Current, NotCurrent int
	// Changes is the inventory difference between the two activations.
	Changes []Change

	// Entries and Delivered count the outbox entries of both cycles and
	// those in state delivered at the end.
	Entries, Delivered int
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
}

// Change is one item of the inventory that differs between the two
// activations.
type Change struct {
	What   string // "appeared", "changed", "left" (no longer selected) or "returned"
	Before *finalize.InventoryItem
	After  finalize.InventoryItem
}

// Run runs the demo, writing its progress and report to w, and returns the
// report. It returns an error when anything fails or the final state is not
// the expected one; the report is filled as far as the demo got.
func Run(ctx context.Context, cfg Config, w io.Writer) (Report, error) {
	link := DefaultLink
	if cfg.Link != nil {
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

	d := &run{
		ctx:    ctx,
		out:    &printer{w: w},
		vessel: examples.VesselID,
		ids:    idReader(cfg.Seed),
		report: Report{Seed: cfg.Seed, VesselID: examples.VesselID, Link: link},
		max:    maxPasses,
	}
	d.receiver = finalize.NewReceiver(store)
	d.outbox = outbox.NewMemStore()
	d.writer = outbox.NewWriter(d.outbox)
	d.link = &lossyLink{
		cfg:    link,
		rng:    rand.New(rand.NewPCG(cfg.Seed, 0x736f75726365)), // "source"
		recv:   d.receiver,
		origin: finalize.Origin{VesselID: d.vessel},
	}
	d.publisher = outbox.NewPublisher(d.outbox, d.vessel, d.link, outbox.WithReceiverV2(true))

	d.out.printf("sourcecatalog demo: seed %d, vessel %s, receiver store %s\n", cfg.Seed, d.vessel, storeName)
	d.out.printf("link: %s\n", link)
	err := d.run(store)
	d.report.Stats, _ = d.link.snapshot()
	if err == nil {
		err = d.out.err
	}
	return d.report, err
}

// run holds the state of one Run.
type run struct {
	ctx       context.Context
	out       *printer
	vessel    uuid.UUID
	ids       io.Reader
	max       int
	receiver  *finalize.Receiver
	outbox    *outbox.MemStore
	writer    *outbox.Writer
	publisher *outbox.Publisher
	link      *lossyLink
	report    Report
}

func (d *run) run(store finalize.Store) error {
	if err := d.checkEmpty(store); err != nil {
		return err
	}
	first, second, story, err := scans()
	if err != nil {
		return err
	}

	d.out.printf("cycle 1: the example boat (%s)\n", describe(first))
	if err := d.cycle(first, firstScan); err != nil {
		return err
	}
	before, err := d.receiver.Active(d.ctx, d.vessel)
	if err != nil {
		return err
	}
	c1 := d.report.Cycles[0]
	if err := checkActive(before, c1, []activation{{first, finalize.Seen{Revision: c1.Revision, At: c1.DiscoveredAt}}}); err != nil {
		return fmt.Errorf("demo: after cycle 1: %w", err)
	}

	d.out.printf("cycle 2: %s, 15 minutes later\n", describe(second))
	for _, line := range story {
		d.out.printf("  %s\n", line)
	}
	if err := d.cycle(second, secondScan); err != nil {
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
	outs, err := d.receiver.Reconcile(d.ctx, d.vessel)
	if err != nil {
		return fmt.Errorf("demo: reconcile: %w", err)
	}
	if len(outs) == 0 {
		d.out.printf("reconcile: nothing complete left staging\n")
	}
	for _, o := range outs {
		d.out.printf("reconcile: snapshot %s revision %d: %s\n", o.SnapshotID, o.Revision, outcome(o))
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
	d.out.printf("verified: active revision 2 is cycle 2's snapshot; %s as expected; %d of %d outbox entries delivered\n",
		plural(len(after.Items), "inventory item"), d.report.Delivered, d.report.Entries)
	return nil
}

// cycle commits one discovery cycle to the outbox and publishes it until
// nothing is pending and the receiver has activated it.
func (d *run) cycle(records []*catalog.Record, at time.Time) error {
	n := len(d.report.Cycles) + 1
	id, err := uuid.NewRandomFromReader(d.ids)
	if err != nil {
		return err
	}
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
			return nil
		case p.Remaining == 0 && out.Status == finalize.StatusStaging:
			return fmt.Errorf("demo: cycle %d: every outbox entry was acknowledged, yet the snapshot is %s", n, outcome(out))
		case !done && out.Status != finalize.StatusStaging:
			return fmt.Errorf("demo: cycle %d: finalize: %s", n, outcome(out))
		}
	}
}

// checkEmpty refuses a receiver store that already holds state for the demo
// vessel: the demo's expectations start from nothing.
func (d *run) checkEmpty(store finalize.Store) error {
	return store.WithVessel(d.ctx, d.vessel, func(tx finalize.Tx) error {
		v, err := tx.Vessel(d.ctx)
		if err != nil {
			return err
		}
		snaps, err := tx.Snapshots(d.ctx)
		if err != nil {
			return err
		}
		if v.ActiveSnapshot != uuid.Nil || len(snaps) > 0 {
			return fmt.Errorf("demo: the receiver store already holds state for the demo vessel %s; use a fresh store", d.vessel)
		}
		return nil
	})
}

// countEntries counts the outbox entries of both cycles and the delivered
// ones.
func (d *run) countEntries() error {
	return d.outbox.WithVessel(d.ctx, d.vessel, func(tx outbox.Tx) error {
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

// idReader is the seeded source of the snapshot ids.
func idReader(seed uint64) io.Reader {
	var key [32]byte
	copy(key[:], "sourcecatalog demo snapshot ids")
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
	case o.Status == finalize.StatusStaging && o.MissingManifest:
		s += ", missing the manifest"
	case o.Status == finalize.StatusStaging:
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
