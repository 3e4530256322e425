package demo

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// Link describes the simulated link between the boat and the shore. Each
// probability applies to one Transport.Send, independently of the others.
type Link struct {
	// DropRequest is the probability that a request is lost on its way:
	// the receiver never sees it and the sender gets no receipt.
	DropRequest float64
	// DropReceipt is the probability that the receipt is lost on its way
	// back after the receiver staged the message.
	DropReceipt float64
	// Duplicate is the probability that a delivered request reaches the
	// receiver twice.
	Duplicate float64
	// Reorder is the probability that a request is held back: the sender
	// times out without a receipt and the request reaches the receiver
	// later, after up to ReorderWindow requests sent after it.
	Reorder       float64
	ReorderWindow int
}

// DefaultLink loses about a fifth of the messages (half of them requests,
// half receipts), duplicates 15% and holds back 15% for up to 8 later
// messages.
var DefaultLink = Link{DropRequest: 0.10, DropReceipt: 0.10, Duplicate: 0.15, Reorder: 0.15, ReorderWindow: 8}

func (l Link) check() error {
	for _, p := range []float64{l.DropRequest, l.DropReceipt, l.Duplicate, l.Reorder} {
		if !(p >= 0 && p < 1) {
			return fmt.Errorf("demo: link probabilities must be in [0, 1)")
		}
	}
	if l.Reorder > 0 && l.ReorderWindow < 1 {
		return fmt.Errorf("demo: a link that reorders needs a reorder window of at least 1")
	}
	return nil
}

func (l Link) String() string {
	return fmt.Sprintf("drops %s of requests and %s of receipts, duplicates %s, reorders %s (holds them back for up to %d later requests)",
		percent(l.DropRequest), percent(l.DropReceipt), percent(l.Duplicate), percent(l.Reorder), l.ReorderWindow)
}

func percent(p float64) string { return fmt.Sprintf("%.0f%%", 100*p) }

// LinkStats counts what the link did.
type LinkStats struct {
	Sent            int // requests the publisher sent (Transport.Send calls)
	DroppedRequests int // requests lost before the receiver
	DroppedReceipts int // receipts lost after the receiver staged the request
	Duplicated      int // requests delivered twice
	Reordered       int // requests held back and delivered later
	Released        int // held-back requests delivered so far
	Late            int // of those, still held when publishing ended and delivered then
	Deliveries      int // messages that reached the receiver, duplicates and late ones included
	Staged          int // receiver answers: staged
	AlreadyReceived int // receiver answers: already_received

	// Over the HTTP binding (Config.HTTP), what the fault proxy did to the
	// answers, and the activations the server ran on a complete receipt.
	Resets            int // answers lost to a connection reset
	Cuts              int // answers cut midway
	Delays            int // answers held back
	ServerActivations int
	// BodyBytes is the bytes of request bodies the server received, as
	// sent: gzipped, and a chunk sent by reference as its reference;
	// WholeBytes what the same requests would have been with each entry
	// whole and uncompressed.
	BodyBytes, WholeBytes int64
}

// Errors the link gives the publisher for a lost message. The publisher
// takes them as failed attempts and sends again later.
var (
	errRequestLost = errors.New("demo link: request lost")
	errReceiptLost = errors.New("demo link: no receipt (lost on the way back)")
	errTimedOut    = errors.New("demo link: timed out (request held back)")
)

// lossyLink is an outbox.Transport that delivers to a finalize.Receiver over
// a seeded unreliable link.
type lossyLink struct {
	cfg    Link
	rng    *rand.Rand
	recv   *finalize.Receiver
	origin finalize.Origin

	mu    sync.Mutex
	tick  int // requests sent so far
	held  []heldMessage
	stats LinkStats
	err   error // the first error the receiver answered
}

type heldMessage struct {
	due   int // the tick after which it arrives
	entry outbox.Entry
}

var _ carrier = (*lossyLink)(nil)

// Send implements outbox.Transport. The receiver's answer crosses the link
// in its wire form: a receipt or a refusal, encoded and decoded again.
func (l *lossyLink) Send(ctx context.Context, e outbox.Entry) (envelope.Receipt, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tick++
	l.stats.Sent++
	// Requests held back long enough arrive now, ahead of this one.
	l.release(ctx, l.tick)
	if l.rng.Float64() < l.cfg.DropRequest {
		l.stats.DroppedRequests++
		return envelope.Receipt{}, errRequestLost
	}
	if l.rng.Float64() < l.cfg.Reorder {
		l.stats.Reordered++
		l.held = append(l.held, heldMessage{due: l.tick + 1 + l.rng.IntN(l.cfg.ReorderWindow), entry: e})
		return envelope.Receipt{}, errTimedOut
	}
	rc, err := l.deliver(ctx, e)
	if err != nil {
		return envelope.Receipt{}, overTheWire(err)
	}
	if l.rng.Float64() < l.cfg.Duplicate {
		l.stats.Duplicated++
		if _, err := l.deliver(ctx, e); err != nil {
			return envelope.Receipt{}, overTheWire(err)
		}
	}
	if l.rng.Float64() < l.cfg.DropReceipt {
		l.stats.DroppedReceipts++
		return envelope.Receipt{}, errReceiptLost
	}
	return envelope.DecodeReceipt(rc.Canonical())
}

// overTheWire returns the error a sender decodes from the refusal that
// answers err (SPEC.md §9.4).
func overTheWire(err error) error {
	f, derr := envelope.DecodeRefusal(envelope.RefusalOf(err).Canonical())
	if derr != nil {
		return derr
	}
	return f.Err()
}

// release delivers the held requests due by tick, in the order they were
// held back. Their receipts go nowhere: the sender gave up on them. A
// receiver error is recorded in l.err, not given to the sender of another
// message.
func (l *lossyLink) release(ctx context.Context, tick int) {
	var keep []heldMessage
	var due []heldMessage
	for _, h := range l.held {
		if h.due <= tick {
			due = append(due, h)
		} else {
			keep = append(keep, h)
		}
	}
	l.held = keep
	for _, h := range due {
		l.stats.Released++
		_, _ = l.deliver(ctx, h.entry) // an error is recorded in l.err
	}
}

// flush delivers every request still held back, late.
func (l *lossyLink) flush(ctx context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stats.Late += len(l.held)
	l.release(ctx, math.MaxInt)
}

// deliver hands one message to the receiver, as its entity type says.
func (l *lossyLink) deliver(ctx context.Context, e outbox.Entry) (envelope.Receipt, error) {
	var rc envelope.Receipt
	var err error
	switch e.EntityType {
	case sourcecatalog.ManifestEntityType:
		rc, err = l.recv.ReceiveManifest(ctx, l.origin, e.Payload)
	case sourcecatalog.ChunkEntityType:
		rc, err = l.recv.ReceiveChunk(ctx, l.origin, e.Payload)
	default:
		err = sourcecatalog.Errorf(sourcecatalog.ErrUnsupported, "unknown entity type")
	}
	l.stats.Deliveries++
	if err != nil {
		err = fmt.Errorf("receiver refused %s: %w", e.EntityKey, err)
		if l.err == nil {
			l.err = err
		}
		return rc, err
	}
	switch rc.Status {
	case envelope.Staged:
		l.stats.Staged++
	case envelope.AlreadyReceived:
		l.stats.AlreadyReceived++
	}
	return rc, nil
}

// activity renders what the link did between two counts, for a progress
// line: "1 request dropped, 2 receipts dropped".
func activity(before, after LinkStats) string {
	var parts []string
	add := func(n int, noun, what string) {
		if n > 0 {
			parts = append(parts, plural(n, noun)+what)
		}
	}
	add(after.DroppedRequests-before.DroppedRequests, "request", " dropped")
	add(after.Reordered-before.Reordered, "request", " held back")
	add(after.DroppedReceipts-before.DroppedReceipts, "receipt", " dropped")
	add(after.Duplicated-before.Duplicated, "request", " duplicated")
	add(after.Released-before.Released, "held-back request", " arrived")
	add(after.Resets-before.Resets, "answer", " reset")
	add(after.Cuts-before.Cuts, "answer", " cut midway")
	add(after.Delays-before.Delays, "answer", " delayed")
	if n := after.ServerActivations - before.ServerActivations; n > 0 {
		parts = append(parts, "the server activated the snapshot on its complete receipt")
	}
	if len(parts) == 0 {
		return "no losses"
	}
	return strings.Join(parts, ", ")
}

// close implements carrier: the link holds nothing.
func (l *lossyLink) close() error { return nil }

// snapshot returns the counters and the first receiver error.
func (l *lossyLink) snapshot() (LinkStats, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats, l.err
}
