package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
)

// Receipt returns the receipt that acknowledges e: its status is
// envelope.Staged and Complete false; a receiver's receipt acknowledges e
// when it Matches this one (SPEC.md §9.3).
func (e Entry) Receipt() envelope.Receipt {
	return envelope.Receipt{
		EntityType: e.EntityType, VesselID: e.VesselID, SnapshotID: e.SnapshotID,
		Revision: e.Revision, ChunkIndex: e.ChunkIndex, Digest: e.Digest, Status: envelope.Staged,
	}
}

// A Transport sends one entry to the receiver and returns its receipt,
// decoded from the receiver's answer (envelope.DecodeReceipt). It belongs
// to the integrator, who owns the request format and the link. Send may be
// called again for an entry it already delivered (at least once). A
// receiver's refusal must come back as an error of its class
// (envelope.Refusal.Err): a conflict, wrapping sourcecatalog.ErrConflict,
// stops the snapshot; any other error is taken as a failed attempt to be
// retried later.
type Transport interface {
	Send(ctx context.Context, e Entry) (envelope.Receipt, error)
}

// A CountedTransport is a Transport that also says how many bytes each
// request put on the link; httpbinding.Client is one. It is optional: a
// Publisher asks for it with a type assertion and counts no bytes over a
// Transport without it, so every existing Transport keeps working
// unchanged.
//
// The counts come back from the call that sent them, rather than from
// counters on the transport read before and after a pass, so that
// concurrent Publishers (or a Drain and a Publish) sharing one transport
// each count their own requests, and a wrapper around a transport counts
// exactly what it forwards.
type CountedTransport interface {
	Transport
	// SendCounted is Send, also returning the bytes of the request: zero
	// when none was sent, and what was sent even when err is not nil.
	SendCounted(ctx context.Context, e Entry) (envelope.Receipt, RequestBytes, error)
}

// RequestBytes counts the bytes of requests' bodies.
type RequestBytes struct {
	// Sent counts the bytes as sent on the link, after any compression
	// (SPEC.md §11.1).
	Sent int64
	// Uncompressed counts the same requests' bytes before compression:
	// the wrapped requests' lengths.
	Uncompressed int64
}

// add adds o to b.
func (b *RequestBytes) add(o RequestBytes) {
	b.Sent += o.Sent
	b.Uncompressed += o.Uncompressed
}

// ErrCapabilityOff is returned by Publish while the receiver's v2
// capability is not declared; nothing was sent. It wraps
// sourcecatalog.ErrUnsupported.
var ErrCapabilityOff error = sourcecatalog.Errorf(sourcecatalog.ErrUnsupported,
	"the receiver has not declared the v2 capability; v2 entities are not sent")

// ErrReceiptMismatch is wrapped by Publish's error for a receipt that does
// not acknowledge the entry that was sent; the entry stays pending. It
// wraps sourcecatalog.ErrIntegrity, not ErrConflict: the receiver refused
// nothing, and the snapshot is not stopped.
var ErrReceiptMismatch error = sourcecatalog.Errorf(sourcecatalog.ErrIntegrity,
	"the receipt does not acknowledge the entry that was sent")

// A Gate is the sender's capability gate (SPEC.md §7.5): Publish and
// Drain ask it before they send anything. [WithReceiverV2] sets a gate
// fixed by the operator; httpbinding.Gate asks the receiver's capability
// declaration (SPEC.md §11.7).
type Gate interface {
	// Open returns nil when v2 entries may be sent now. An error wrapping
	// ErrCapabilityOff means the receiver has not declared v2: nothing is
	// sent. Any other error is a failed attempt to learn it (nothing is
	// sent either; NeedsOperator may hold for it). declared describes,
	// for logs, what decided — the receiver's declaration, or why there
	// is none —, or is "" when nothing was learnt.
	Open(ctx context.Context) (declared string, err error)
}

// fixedGate is the gate of WithReceiverV2: open or closed by the operator.
type fixedGate bool

// DeclaredByOperator is what a gate set by WithReceiverV2(true) reports
// as declared.
const DeclaredByOperator = "declared by the operator"

func (g fixedGate) Open(context.Context) (string, error) {
	if g {
		return DeclaredByOperator, nil
	}
	return "", ErrCapabilityOff
}

// A Publisher publishes a vessel's pending entries. It keeps no state of
// its own besides its configuration and, with WithChunkReferences, the
// chunks whose references the receiver refused (chunkref.go); it is safe
// for concurrent use.
type Publisher struct {
	store     Store
	vessel    uuid.UUID
	transport Transport
	gate      Gate
	batch     int
	inFlight  int
	refs      bool
	index     bool

	mu    sync.Mutex
	noRef map[refKey]bool // chunks sent whole from now on
}

// A PublisherOption configures a Publisher.
type PublisherOption func(*Publisher)

// WithReceiverV2 declares (or withdraws) the receiver's support of protocol
// v2. It is off by default: v2 entity types are never sent to a receiver
// that has not declared it.
// The last of WithReceiverV2 and WithGate given wins.
func WithReceiverV2(declared bool) PublisherOption {
	return func(p *Publisher) { p.gate = fixedGate(declared) }
}

// WithGate makes the Publisher ask g before sending (SPEC.md §7.5), such
// as an httpbinding.Gate that opens while the receiver declares v2. A nil
// g is a closed gate. The last of WithReceiverV2 and WithGate given wins.
func WithGate(g Gate) PublisherOption {
	return func(p *Publisher) {
		p.gate = g
		if g == nil {
			p.gate = fixedGate(false)
		}
	}
}

// WithBatch sets how many pending entries one Publish pass reads (default
// 512, two maximal snapshots). A pass that sends a snapshot's manifest
// index (WithManifestIndexes) reads every pending entry of that snapshot,
// beyond n when the batch cut it.
func WithBatch(n int) PublisherOption { return func(p *Publisher) { p.batch = max(1, n) } }

// WithInFlight sets how many entries one Publish pass sends at once
// (default 1; at least 1): each on its own goroutine, over the one
// Transport, which must then be safe for concurrent use (as
// httpbinding.Client is; over HTTP/2 its requests share one connection).
// Over a link of long round trips, n = 4 sends a 16-entry cycle in 4 round
// trips rather than 16; n = 14 matches the receiver's default limit per
// vessel (SPEC.md §11.5, httpbinding.DefaultMaxInFlight): keep n at most
// the receiver's limit, or the sends beyond it are answered 429 and stay
// pending. The window holds one snapshot at a time: a snapshot's entries
// start once every entry before them is answered, so that the snapshots
// complete in the order of their revisions, as sent one at a time — a
// newer one completing first would have the receiver supersede the
// older (SPEC.md §8.4).
//
// The outcomes are taken in the order of the entries, whatever order
// they come back in, by the goroutine that called Publish, which alone
// calls the store, one WithVessel at a time: the Pass — its counts, its
// bytes, its Failures in the order of the entries — and the entries'
// states are those of a pass sending one at a time, except when the pass
// stops (a conflict, a receipt for another entry, a failure NeedsOperator
// holds for, the store or the context failing). Then no further entry is
// sent, and those already in flight finish: they count in Sent and Bytes,
// and their outcomes are recorded after the one the pass stopped at —
// their receipts, unless the store or the context failed or the entry
// belongs to the snapshot a conflict stopped, and their failures (a
// receipt for another entry among them), counted in Failed and listed in
// Failures after the entry the pass stopped at.
func WithInFlight(n int) PublisherOption { return func(p *Publisher) { p.inFlight = max(1, n) } }

// NewPublisher returns a Publisher of vessel's entries over t.
func NewPublisher(store Store, vessel uuid.UUID, t Transport, opts ...PublisherOption) *Publisher {
	p := &Publisher{store: store, vessel: vessel, transport: t, gate: fixedGate(false), batch: 512, inFlight: 1}
	for _, o := range opts {
		o(p)
	}
	return p
}

// ErrNeedsOperator is found (errors.Is) inside a Transport's error when
// sending again cannot succeed until an operator acts on the sender's
// configuration: the receiver refused the credentials
// (httpbinding.ErrUnauthorized), or the connection's TLS verification
// failed (httpbinding.TLSError). It refines the class of the error that
// carries it and is never returned alone. See [NeedsOperator].
var ErrNeedsOperator = errors.New("an operator must act")

// NeedsOperator reports whether err is a failure that sending again
// cannot mend until an operator acts: one carrying [ErrNeedsOperator], or
// a receiver's refusal of the vessel itself (sourcecatalog.ErrForeignVessel:
// the credentials name another vessel; sourcecatalog.ErrUnregisteredVessel:
// the receiver has not registered it). Publish stops its pass at the first
// such failure, and Drain stops at once.
func NeedsOperator(err error) bool {
	return errors.Is(err, ErrNeedsOperator) ||
		errors.Is(err, sourcecatalog.ErrForeignVessel) || errors.Is(err, sourcecatalog.ErrUnregisteredVessel)
}

// A Pass reports what one Publish call did.
type Pass struct {
	Sent      int // entries handed to the transport
	Delivered int // entries acknowledged by a matching receipt
	// AlreadyReceived counts the delivered entries whose receipt says
	// already_received: the receiver had staged them before (a receipt
	// lost on the way back, or another outbox with the same bytes).
	AlreadyReceived int
	Failed          int // sends that failed and stay pending
	Remaining       int // entries of this pass still pending (failed or not attempted)
	// Referenced counts the entries sent as a chunk reference
	// (WithChunkReferences), and SentWhole those of them the receiver
	// could not resolve, sent whole at once in the same pass.
	Referenced, SentWhole int
	// Indexed counts the chunk entries the receipt of a manifest index
	// delivered without sending them (WithManifestIndexes, IndexGate):
	// the receiver staged them from records it held. They are counted in
	// Delivered, not in Sent; the index itself is one entry sent, its
	// manifest's, and counts in AlreadyReceived when its receipt says so.
	Indexed int
	// Bytes counts the request bytes of every send of the pass, failed
	// ones included, as a CountedTransport reports them; zero over
	// another Transport.
	Bytes RequestBytes
	// Failures lists, in the order of the entries (the order their sends
	// start), each entry that the pass did not deliver and why: every
	// failed send (Failed of them), then the entry the pass stopped at
	// when Publish returns an error about one (a conflict, a receipt for
	// another entry, bytes that no longer match), then — with
	// WithInFlight above 1 — the failed sends of entries that were in
	// flight when it stopped (in Failed too). It holds at most one
	// element per entry of the pass.
	Failures []Failure
}

// A Failure is an entry a Publish pass did not deliver, and why.
type Failure struct {
	SnapshotID uuid.UUID
	Revision   int64
	EntityType string // sourcecatalog.ManifestEntityType or ChunkEntityType
	EntityKey  string
	ChunkIndex int // sourcecatalog.NoIndex for the manifest
	// Class is the class Err wraps (sourcecatalog.Class): a transport's
	// error that wraps none is taken as sourcecatalog.ErrStoreUnavailable.
	Class error
	// Err is the cause: the transport's error, classed, or the Publisher's
	// own. It never carries the entry's bytes.
	Err error
}

// failure returns the Failure of e caused by err, classed.
func failure(e Entry, err error) Failure {
	err = classed(err)
	return Failure{
		SnapshotID: e.SnapshotID, Revision: e.Revision, EntityType: e.EntityType, EntityKey: e.EntityKey,
		ChunkIndex: e.ChunkIndex, Class: sourcecatalog.Class(err), Err: err,
	}
}

// Publish sends every pending entry once, oldest revision first, and marks
// those acknowledged by a matching receipt delivered. Failed sends stay
// pending for the next call; the Pass lists each with its class and cause.
//
// It asks the gate first (WithReceiverV2, WithGate) and sends nothing
// while it is not open: it returns the gate's error, wrapping
// ErrCapabilityOff while the receiver's v2 capability is not declared,
// or the gate's failed attempt (classed as a Transport's error). It stops and returns an error wrapping
// sourcecatalog.ErrHashMismatch when an entry's bytes no longer match its
// digest, ErrReceiptMismatch when a receipt acknowledges something else
// (the entry stays pending), and sourcecatalog.ErrConflict when the
// receiver answers a conflict: every entry of that snapshot is then
// stopped and will not be sent again (should stopping fail, the error is
// the store's, below). It stops at the first failed send for which
// [NeedsOperator] holds — the credentials refused, TLS verification
// failed, the vessel refused — and returns an error wrapping the
// transport's (so of its class, with NeedsOperator true); the entry stays
// pending. A failing store, or a context done before the pass ends, is
// reported as sourcecatalog.ErrStoreUnavailable wrapping the cause.
func (p *Publisher) Publish(ctx context.Context) (Pass, error) {
	if _, err := p.open(ctx); err != nil {
		return Pass{}, err
	}
	return p.publish(ctx)
}

// open asks the gate, and returns its error classed, or the context's
// when it ended meanwhile.
func (p *Publisher) open(ctx context.Context) (string, error) {
	declared, err := p.gate.Open(ctx)
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil && !errors.Is(err, ErrCapabilityOff) {
		err = classed(err)
	}
	return declared, err
}

// publish is Publish past the gate.
//
// Sends run on up to p.inFlight goroutines, started in the order of
// pending; this goroutine takes their outcomes in the same order and alone
// writes to the Pass and to the store, one WithVessel call at a time, so
// that the store's calls stay serialised (Store) and the Pass is what a
// pass sending one entry at a time would report, bar the entries in
// flight when it stops.
func (p *Publisher) publish(ctx context.Context) (Pass, error) {
	var pending []Entry
	var refs, fresh map[refKey]bool
	var indexes map[uuid.UUID]Entry
	err := p.store.WithVessel(ctx, p.vessel, func(tx Tx) error {
		var err error
		if pending, err = tx.Pending(ctx, p.batch); err != nil {
			return err
		}
		if indexes, pending, fresh, err = p.indexable(ctx, tx, pending); err != nil {
			return err
		}
		refs, err = p.referable(ctx, tx, pending)
		return err
	})
	if err != nil {
		return Pass{}, classed(err)
	}
	read := len(pending)
	// isIndex reports whether pending[k] is a manifest sent as its index.
	isIndex := func(k int) bool {
		_, ok := indexes[pending[k].SnapshotID]
		return ok && pending[k].ChunkIndex == sourcecatalog.NoIndex
	}
	outcomes := make([]chan outcome, len(pending))
	started := 0
	waiting := -1        // the last index started
	var unsendable error // why pending[started] cannot be sent
	// start starts the sends of pending up to upto, but past an index
	// whose outcome, pending[taken] or later, is not taken yet only the
	// fresh chunks of its snapshot, which ride with it; and a snapshot's
	// first entry only once every earlier entry's outcome is taken, so
	// that snapshots complete in the order of their revisions, as sent
	// one at a time (SPEC.md §11.6): a newer one completing first would
	// have the receiver supersede the older.
	start := func(taken, upto int) {
		for ; unsendable == nil && started < min(upto, len(pending)); started++ {
			e := pending[started]
			if started > taken && e.SnapshotID != pending[started-1].SnapshotID {
				return
			}
			if waiting >= taken && (e.SnapshotID != pending[waiting].SnapshotID || !fresh[refKey{e.SnapshotID, e.ChunkIndex}]) {
				return
			}
			c, err := checkEntry(e)
			if err != nil {
				unsendable = err
				return
			}
			ch := make(chan outcome, 1)
			outcomes[started] = ch
			if isIndex(started) {
				waiting = started
				x := indexes[e.SnapshotID]
				go func() {
					o := outcome{index: &x}
					var indexed bool
					o.rc, indexed, o.err = p.sendIndex(ctx, e, x, &o.counts)
					if !indexed {
						o.index = nil
					}
					ch <- o
				}()
				continue
			}
			var ref *envelope.ChunkRef
			if refs[refKey{e.SnapshotID, e.ChunkIndex}] {
				ref = envelope.NewChunkRef(c)
			}
			go func() {
				var o outcome
				o.rc, o.err = p.send(ctx, e, ref, &o.counts)
				ch <- o
			}()
		}
	}
	var pass Pass
	var st stopping
	for i := 0; i < len(pending); i++ {
		if st.err == nil {
			start(i, i+p.inFlight)
		}
		if i >= started {
			if st.err == nil { // pending[i] is unsendable
				pass.Failures = append(pass.Failures, failure(pending[i], unsendable))
				st.err = unsendable
			}
			break
		}
		o := <-outcomes[i]
		pass.Sent++
		pass.Bytes.add(o.counts.Bytes)
		pass.Referenced += o.counts.Referenced
		pass.SentWhole += o.counts.SentWhole
		// Past an index, only the chunks riding with it were started.
		var riding map[int]bool
		if o.index != nil {
			riding = map[int]bool{}
			for _, e := range pending[i+1 : started] {
				riding[e.ChunkIndex] = true
			}
		}
		if st.err != nil {
			p.takeInFlight(ctx, pending[i], o, riding, &pass, &st)
			continue
		}
		resolved := p.take(ctx, pending[i], o, riding, &pass, &st)
		if st.err == nil && o.index != nil {
			// Past the index only its riding chunks were started: keep
			// them, and of its snapshot's other chunks those still to
			// send — the missing ones after its receipt, whole; none
			// after a failure.
			rest := pending[:started]
			for _, e := range pending[started:] {
				if e.SnapshotID == pending[i].SnapshotID {
					if resolved == nil || resolved[e.ChunkIndex] {
						continue
					}
					delete(refs, refKey{e.SnapshotID, e.ChunkIndex})
				}
				rest = append(rest, e)
			}
			pending = rest
		}
	}
	pass.Remaining = read - pass.Delivered
	return pass, st.err
}

// An outcome is what sending one entry came to.
type outcome struct {
	rc     envelope.Receipt
	err    error
	counts Pass   // the send's Bytes, Referenced and SentWhole
	index  *Entry // the manifest index sent for the manifest, when its receipt is rc
}

// stopping is why a pass stopped: err, nil while it goes on; the snapshot
// a conflict stopped; and whether the entries still in flight may be
// recorded in the store (not after the store or the context failed).
type stopping struct {
	err      error
	snapshot uuid.UUID
	noRecord bool
}

// take records the outcome of e, sent while the pass goes on, in pass and
// the store, and sets st when the pass stops at e. For a manifest sent as
// its index (o.index) it returns the chunk indices the index's receipt
// delivered — not those riding with it, delivered by their own receipts —,
// or nil when the index was not delivered.
func (p *Publisher) take(ctx context.Context, e Entry, o outcome, riding map[int]bool, pass *Pass, st *stopping) map[int]bool {
	err := o.err
	want := e
	if o.index != nil {
		want = *o.index
	}
	switch {
	case errors.Is(err, sourcecatalog.ErrConflict):
		pass.Failures = append(pass.Failures, failure(e, err))
		st.snapshot = e.SnapshotID
		if serr := p.stop(ctx, e.SnapshotID); serr != nil {
			// Not stopped: the next pass meets the conflict again.
			st.err, st.noRecord = classed(fmt.Errorf("outbox: %s: stopping snapshot %s after a conflict (%v): %w", e.EntityKey, e.SnapshotID, err, serr)), true
			return nil
		}
		st.err = fmt.Errorf("outbox: %s: publishing of snapshot %s stopped: %w", e.EntityKey, e.SnapshotID, err)
	case err != nil:
		pass.Failed++
		pass.Failures = append(pass.Failures, failure(e, err))
		if ctx.Err() != nil {
			st.err, st.noRecord = classed(ctx.Err()), true
		} else if NeedsOperator(err) {
			st.err = fmt.Errorf("outbox: %s: sending stopped until an operator acts: %w", e.EntityKey, classed(err))
		}
	case !o.rc.Matches(want.Receipt()):
		err := fmt.Errorf("%w: sent %s, receipt for %s/%d", ErrReceiptMismatch, e.EntityKey, o.rc.SnapshotID, o.rc.ChunkIndex)
		pass.Failures = append(pass.Failures, failure(e, err))
		st.err = err
	case o.index != nil:
		resolved, err := p.deliveredIndex(ctx, e, o.rc, riding, pass)
		if err != nil {
			st.err, st.noRecord = classed(err), true
		}
		return resolved
	default:
		if err := p.delivered(ctx, e, o.rc, pass); err != nil {
			st.err, st.noRecord = classed(err), true
		}
	}
	return nil
}

// takeInFlight records the outcome of e, in flight when the pass stopped:
// a receipt is recorded unless the store or the context failed, or e's
// snapshot was stopped; a failure, or a receipt for another entry, is
// counted and listed, and stops nothing more. riding is take's.
func (p *Publisher) takeInFlight(ctx context.Context, e Entry, o outcome, riding map[int]bool, pass *Pass, st *stopping) {
	want := e
	if o.index != nil {
		want = *o.index
	}
	switch {
	case st.noRecord || e.SnapshotID == st.snapshot:
	case o.err != nil:
		pass.Failed++
		pass.Failures = append(pass.Failures, failure(e, o.err))
	case !o.rc.Matches(want.Receipt()):
		err := fmt.Errorf("%w: sent %s, receipt for %s/%d", ErrReceiptMismatch, e.EntityKey, o.rc.SnapshotID, o.rc.ChunkIndex)
		pass.Failed++
		pass.Failures = append(pass.Failures, failure(e, err))
	case o.index != nil:
		if _, err := p.deliveredIndex(ctx, e, o.rc, riding, pass); err != nil {
			st.noRecord = true
		}
	default:
		if p.delivered(ctx, e, o.rc, pass) != nil {
			st.noRecord = true
		}
	}
}

// delivered marks e delivered in the store, and counts it in pass.
func (p *Publisher) delivered(ctx context.Context, e Entry, rc envelope.Receipt, pass *Pass) error {
	err := p.store.WithVessel(ctx, p.vessel, func(tx Tx) error {
		return tx.SetState(ctx, e.SnapshotID, e.ChunkIndex, Delivered)
	})
	if err != nil {
		return err
	}
	p.forget(e)
	pass.Delivered++
	if rc.Status == envelope.AlreadyReceived {
		pass.AlreadyReceived++
	}
	return nil
}

// stop marks every pending entry of a snapshot stopped.
func (p *Publisher) stop(ctx context.Context, snapshot uuid.UUID) error {
	return p.store.WithVessel(ctx, p.vessel, func(tx Tx) error {
		entries, err := tx.Entries(ctx, snapshot)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.State == Pending {
				if err := tx.SetState(ctx, snapshot, e.ChunkIndex, Stopped); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
