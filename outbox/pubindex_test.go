package outbox_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
	finalmem "github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/outbox"
	"github.com/yachtmemory/sourcecatalog/outbox/memstore"
)

// An indexLink hands each entry to a real receiver over memstore, as the
// HTTP binding does, finalizing after a complete receipt, and records
// what was sent. It is safe for concurrent use.
type indexLink struct {
	recv   *finalize.Receiver
	origin finalize.Origin
	// refuse, when set, answers an index instead of the receiver.
	refuse func(e outbox.Entry) error
	// lose holds the requests (from 1) whose answer is lost after the
	// receiver took them.
	lose map[int]bool
	// loseIndexes loses the answer of every index after the receiver
	// took it.
	loseIndexes bool
	// holdIndex, when positive, holds an index until the receiver took
	// as many chunks of its snapshot (or a few seconds passed), which
	// rode counts.
	holdIndex int

	mu        sync.Mutex
	sent      []outbox.Entry
	indexBusy map[uuid.UUID]bool // an index of the snapshot is in flight
	overlap   int                // sends of a snapshot started while its index was in flight
	taken     map[uuid.UUID]int  // chunks of the snapshot the receiver took
	rode      int                // chunks the receiver took while an index was held
}

func newIndexLink(vessel uuid.UUID) *indexLink {
	return &indexLink{recv: finalize.NewReceiver(finalmem.New()), origin: finalize.Origin{VesselID: vessel}, indexBusy: map[uuid.UUID]bool{}, taken: map[uuid.UUID]int{}}
}

func (l *indexLink) Send(ctx context.Context, e outbox.Entry) (envelope.Receipt, error) {
	l.mu.Lock()
	l.sent = append(l.sent, e)
	n := len(l.sent)
	if l.indexBusy[e.SnapshotID] {
		l.overlap++
	}
	index := e.EntityType == sourcecatalog.ManifestIndexEntityType
	if index {
		l.indexBusy[e.SnapshotID] = true
	}
	l.mu.Unlock()
	if index && l.holdIndex > 0 {
		l.hold(e.SnapshotID)
	}
	if index {
		time.Sleep(10 * time.Millisecond) // room for a send that should wait to start
		defer func() { l.mu.Lock(); l.indexBusy[e.SnapshotID] = false; l.mu.Unlock() }()
		if l.refuse != nil {
			if err := l.refuse(e); err != nil {
				return envelope.Receipt{}, err
			}
		}
	}
	receive := l.recv.ReceiveChunk
	switch e.EntityType {
	case sourcecatalog.ManifestEntityType:
		receive = l.recv.ReceiveManifest
	case sourcecatalog.ManifestIndexEntityType:
		receive = l.recv.ReceiveManifestIndex
	case sourcecatalog.ChunkRefEntityType:
		receive = l.recv.ReceiveChunkRef
	}
	rc, err := receive(ctx, l.origin, e.Payload)
	if err != nil {
		return envelope.Receipt{}, err
	}
	if e.EntityType == sourcecatalog.ChunkEntityType {
		l.mu.Lock()
		l.taken[e.SnapshotID]++
		l.mu.Unlock()
	}
	if rc.Complete {
		if _, err := l.recv.Finalize(ctx, rc.VesselID, rc.SnapshotID); err != nil {
			return envelope.Receipt{}, err
		}
	}
	if l.lose[n] || (index && l.loseIndexes) {
		return envelope.Receipt{}, sourcecatalog.Errorf(sourcecatalog.ErrStoreUnavailable, "the answer was lost")
	}
	return rc, nil
}

// hold waits until the receiver took holdIndex chunks of the snapshot,
// or a few seconds passed, and counts them in rode.
func (l *indexLink) hold(snapshot uuid.UUID) {
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		l.mu.Lock()
		n := l.taken[snapshot]
		l.mu.Unlock()
		if n >= l.holdIndex {
			break
		}
	}
	l.mu.Lock()
	l.rode += l.taken[snapshot]
	l.mu.Unlock()
}

// since returns the entries sent from the k-th on.
func (l *indexLink) since(k int) []outbox.Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]outbox.Entry(nil), l.sent[k:]...)
}

// An indexRig is a vessel's outbox and the receiver it publishes to.
type indexRig struct {
	t      *testing.T
	ctx    context.Context
	vessel uuid.UUID
	board  outbox.Store
	link   *indexLink
	at     time.Time
}

func newIndexRig(t *testing.T) *indexRig {
	vessel := uuid.New()
	return &indexRig{t: t, ctx: context.Background(), vessel: vessel, board: memstore.New(), link: newIndexLink(vessel),
		at: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
}

// commit commits a cycle of 150 depth sensors, sensor changed (none when
// negative) with another unit of the same length: its chunk alone changes.
func (g *indexRig) commit(changed int) outbox.Commit {
	g.t.Helper()
	records := sensors(g.t, 150)
	if changed >= 0 {
		name := fmt.Sprintf("environment.depth.sensor%03d", changed)
		p, err := catalog.NewPath(catalog.Path{Path: name, Unit: catalog.UnitOf("K")})
		require.NoError(g.t, err)
		records[1+2*changed] = p
	}
	g.at = g.at.Add(15 * time.Minute)
	c, err := outbox.NewWriter(g.board).Commit(g.ctx, outbox.NewCycle(g.vessel, g.at, records))
	require.NoError(g.t, err)
	return c
}

// publish makes one pass with manifest indexes on, and returns it and
// the entries sent.
func (g *indexRig) publish(opts ...outbox.PublisherOption) (outbox.Pass, []outbox.Entry, error) {
	g.t.Helper()
	before := len(g.link.since(0))
	opts = append([]outbox.PublisherOption{outbox.WithReceiverV2(true), outbox.WithManifestIndexes(true)}, opts...)
	pass, err := outbox.NewPublisher(g.board, g.vessel, g.link, opts...).Publish(g.ctx)
	return pass, g.link.since(before), err
}

// requireActive requires c's snapshot active at the receiver and nothing
// pending on board.
func (g *indexRig) requireActive(c outbox.Commit) {
	g.t.Helper()
	st, err := g.link.recv.Status(g.ctx, g.vessel)
	require.NoError(g.t, err)
	require.Equal(g.t, c.Revision, st.Active.ActiveRevision, "activated")
	require.NoError(g.t, g.board.WithVessel(g.ctx, g.vessel, func(tx outbox.Tx) error {
		n, err := outbox.CountPending(g.ctx, tx)
		require.Zero(g.t, n, "everything delivered")
		return err
	}))
}

// types lists the entity types and chunk indices sent.
func types(sent []outbox.Entry) []string {
	var out []string
	for _, e := range sent {
		out = append(out, fmt.Sprintf("%s/%d", e.EntityType, e.ChunkIndex))
	}
	return out
}

// An identical cycle after a delivered one costs one request, the index,
// which delivers every entry and activates the snapshot; a cycle with one
// chunk changed costs two, the index and that chunk whole (SPEC.md §6.7,
// §7.5).
func TestPublishManifestIndex(t *testing.T) {
	g := newIndexRig(t)
	first := g.commit(-1)
	chunks := len(first.Entries) - 1
	require.Greater(t, chunks, 3, "fixture: several chunks")
	pass, sent, err := g.publish()
	require.NoError(t, err)
	require.Equal(t, outbox.Pass{Sent: 1 + chunks, Delivered: 1 + chunks}, pass, "nothing held: every chunk missing, sent whole")
	require.Equal(t, sourcecatalog.ManifestIndexEntityType, sent[0].EntityType)
	for i, e := range sent[1:] {
		require.Equal(t, first.Entries[1+i], e, "the missing chunks whole, in order")
	}
	g.requireActive(first)

	second := g.commit(-1)
	pass, sent, err = g.publish()
	require.NoError(t, err)
	require.Equal(t, []string{sourcecatalog.ManifestIndexEntityType + "/-1"}, types(sent), "one request")
	require.Equal(t, outbox.Pass{Sent: 1, Delivered: 1 + chunks, Indexed: chunks}, pass)
	g.requireActive(second)

	third := g.commit(100) // sensor 100 is in one chunk, not the first
	pass, sent, err = g.publish()
	require.NoError(t, err)
	require.Len(t, sent, 2, "the index and the changed chunk")
	require.Equal(t, sourcecatalog.ManifestIndexEntityType, sent[0].EntityType)
	require.Equal(t, sourcecatalog.ChunkEntityType, sent[1].EntityType)
	require.Equal(t, third.Entries[1+sent[1].ChunkIndex], sent[1], "whole, as committed")
	require.Equal(t, outbox.Pass{Sent: 2, Delivered: 1 + chunks, Indexed: chunks - 1}, pass)
	g.requireActive(third)
	require.Zero(t, g.link.overlap, "no chunk sent while its snapshot's index was in flight")
}

// Without the capability the Publisher sends as before: the plain
// manifest and every chunk.
func TestPublishManifestIndexNotDeclared(t *testing.T) {
	g := newIndexRig(t)
	for range 2 {
		c := g.commit(-1)
		pass, err := outbox.NewPublisher(g.board, g.vessel, g.link, outbox.WithReceiverV2(true)).Publish(g.ctx)
		require.NoError(t, err)
		require.Equal(t, outbox.Pass{Sent: len(c.Entries), Delivered: len(c.Entries)}, pass)
		g.requireActive(c)
	}
	for _, e := range g.link.since(0) {
		require.NotEqual(t, sourcecatalog.ManifestIndexEntityType, e.EntityType)
	}
	// A gate that does not declare it sends none either.
	c := g.commit(-1)
	before := len(g.link.since(0))
	pass, err := outbox.NewPublisher(g.board, g.vessel, g.link, outbox.WithGate(indexGate(false))).Publish(g.ctx)
	require.NoError(t, err)
	require.Equal(t, outbox.Pass{Sent: len(c.Entries), Delivered: len(c.Entries)}, pass)
	require.Equal(t, c.Entries, g.link.since(before))
	// One that does, indexes.
	c = g.commit(-1)
	before = len(g.link.since(0))
	pass, err = outbox.NewPublisher(g.board, g.vessel, g.link, outbox.WithGate(indexGate(true))).Publish(g.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, pass.Sent)
	require.Len(t, g.link.since(before), 1)
	g.requireActive(c)
}

// indexGate is an open gate that declares manifest_index or not.
type indexGate bool

func (indexGate) Open(context.Context) (string, error) { return "v2", nil }
func (g indexGate) ManifestIndexes() bool              { return bool(g) }

// A receiver that refuses the index as unsupported gets the plain
// manifest at once and every chunk, in the same pass.
func TestPublishManifestIndexUnsupported(t *testing.T) {
	g := newIndexRig(t)
	first := g.commit(-1)
	_, _, err := g.publish()
	require.NoError(t, err)
	g.link.refuse = func(outbox.Entry) error {
		return sourcecatalog.Errorf(sourcecatalog.ErrUnsupported, "unknown entity type").AtField("entity_type")
	}
	second := g.commit(-1)
	pass, sent, err := g.publish()
	require.NoError(t, err)
	n := len(second.Entries)
	require.Equal(t, outbox.Pass{Sent: n, Delivered: n}, pass)
	require.Equal(t, sourcecatalog.ManifestIndexEntityType, sent[0].EntityType)
	require.Equal(t, second.Entries, sent[1:], "the plain manifest and every chunk whole")
	g.requireActive(second)
	require.NotEqual(t, first.Revision, second.Revision)
}

// A conflict answering the index stops its snapshot: no chunk is sent.
func TestPublishManifestIndexConflict(t *testing.T) {
	g := newIndexRig(t)
	c := g.commit(-1)
	g.link.refuse = func(outbox.Entry) error {
		return sourcecatalog.Errorf(sourcecatalog.ErrConflict, "another manifest staged")
	}
	pass, sent, err := g.publish()
	require.ErrorIs(t, err, sourcecatalog.ErrConflict)
	require.Len(t, sent, 1)
	require.Equal(t, len(c.Entries), pass.Remaining)
	require.NoError(t, g.board.WithVessel(g.ctx, g.vessel, func(tx outbox.Tx) error {
		entries, err := tx.Entries(g.ctx, c.Entries[0].SnapshotID)
		for _, e := range entries {
			require.Equal(t, outbox.Stopped, e.State)
		}
		return err
	}))
}

// A lost receipt of the index leaves the snapshot pending, its chunks
// unsent; the next pass sends the index again and is answered
// already_received with the chunks still missing.
func TestPublishManifestIndexLostReceipt(t *testing.T) {
	for _, changed := range []int{-1, 100} {
		t.Run(fmt.Sprint("changed ", changed), func(t *testing.T) {
			g := newIndexRig(t)
			first := g.commit(-1)
			_, _, err := g.publish()
			require.NoError(t, err)
			g.requireActive(first)
			c := g.commit(changed)
			chunks := len(c.Entries) - 1
			g.link.holdIndex = 1 // the changed chunk, when there is one, is lost with the index's answer
			if changed < 0 {
				g.link.holdIndex = 0
			}
			g.link.loseIndexes = true
			pass, sent, err := g.publish(outbox.WithInFlight(4))
			require.NoError(t, err)
			if changed >= 0 {
				require.Len(t, sent, 2, "the index, and the changed chunk riding with it")
				require.Equal(t, outbox.Pass{Sent: 2, Delivered: 1, Failed: 1, Remaining: len(c.Entries) - 1, Failures: pass.Failures}, pass)
			} else {
				require.Len(t, sent, 1, "the index alone")
				require.Equal(t, outbox.Pass{Sent: 1, Failed: 1, Remaining: len(c.Entries), Failures: pass.Failures}, pass)
			}
			g.link.holdIndex, g.link.loseIndexes = 0, false
			pass, sent, err = g.publish(outbox.WithInFlight(4))
			require.NoError(t, err)
			require.Len(t, sent, 1, "the index again, answered already_received with nothing missing")
			require.Equal(t, sourcecatalog.ManifestIndexEntityType, sent[0].EntityType)
			want := outbox.Pass{Sent: 1, Delivered: 1 + chunks, AlreadyReceived: 1, Indexed: chunks}
			if changed >= 0 {
				want.Delivered, want.Indexed = chunks, chunks-1
			}
			require.Equal(t, want, pass)
			g.requireActive(c)
		})
	}
}

// With several entries in flight the index goes with the chunks riding
// with it — those no delivered chunk carries (SPEC.md §7.5) —, and the
// chunks its receipt names missing then go together.
func TestPublishManifestIndexInFlight(t *testing.T) {
	g := newIndexRig(t)
	c := g.commit(-1)
	pass, sent, err := g.publish(outbox.WithInFlight(4))
	require.NoError(t, err)
	require.Equal(t, outbox.Pass{Sent: len(c.Entries), Delivered: len(c.Entries)}, pass)
	require.Len(t, sent, len(c.Entries), "the index and every chunk, once")
	g.requireActive(c)
	// Two snapshots pending: the second's index waits for the first's,
	// and only its changed chunk rides with it.
	a, b := g.commit(-1), g.commit(7)
	overlap := g.link.overlap
	pass, _, err = g.publish(outbox.WithInFlight(4))
	require.NoError(t, err)
	require.Equal(t, 3, pass.Sent, "two indexes and one chunk")
	require.Equal(t, len(a.Entries)+len(b.Entries), pass.Delivered)
	require.LessOrEqual(t, g.link.overlap-overlap, 1, "the changed chunk alone, beside its own snapshot's index")
	g.requireActive(b)
}

// The chunks no delivered chunk entry carries ride with their index,
// sent before its receipt; when the receiver took them first, the index's
// receipt does not deliver them again: each entry is delivered once
// (SPEC.md §7.5).
func TestPublishManifestIndexFreshChunksRide(t *testing.T) {
	g := newIndexRig(t)
	first := g.commit(-1)
	chunks := len(first.Entries) - 1
	require.Greater(t, chunks, 3, "fixture: more chunks than ride")
	g.link.holdIndex = 3 // four in flight: the index and three chunks
	pass, sent, err := g.publish(outbox.WithInFlight(4))
	require.NoError(t, err)
	require.Equal(t, 3, g.link.rode, "three chunks taken while the index was held")
	require.Equal(t, outbox.Pass{Sent: 1 + chunks, Delivered: 1 + chunks}, pass, "each delivered once, by its own receipt")
	require.Len(t, sent, 1+chunks)
	g.requireActive(first)

	g.link.rode = 0
	g.link.holdIndex = 1
	changed := g.commit(100)
	pass, sent, err = g.publish(outbox.WithInFlight(4))
	require.NoError(t, err)
	require.Equal(t, 1, g.link.rode, "the changed chunk rode with the index")
	require.Len(t, sent, 2, "the index and the changed chunk: the others were delivered before")
	require.Equal(t, outbox.Pass{Sent: 2, Delivered: 1 + chunks, Indexed: chunks - 1}, pass)
	g.requireActive(changed)

	g.link.holdIndex = 0
	identical := g.commit(100)
	pass, sent, err = g.publish(outbox.WithInFlight(4))
	require.NoError(t, err)
	require.Len(t, sent, 1, "nothing rides with the index of an identical cycle")
	require.Equal(t, outbox.Pass{Sent: 1, Delivered: 1 + chunks, Indexed: chunks}, pass)
	g.requireActive(identical)
}

// The chunks an index's receipt names missing are sent whole, never as
// references: the receiver just failed to resolve them from their digest.
func TestPublishManifestIndexMissingWhole(t *testing.T) {
	g := newIndexRig(t)
	first := g.commit(-1)
	_, _, err := g.publish()
	require.NoError(t, err)
	other := g.commit(0) // another document activated, then the first discarded
	_, _, err = g.publish()
	require.NoError(t, err)
	g.requireActive(other)
	require.NoError(t, g.link.recv.Discard(g.ctx, g.vessel, first.Entries[0].SnapshotID))
	again := g.commit(-1)
	pass, sent, err := g.publish(outbox.WithChunkReferences(true))
	require.NoError(t, err)
	require.Equal(t, 2, pass.Sent, "the index and chunk 0, which other holds changed")
	require.Zero(t, pass.Referenced)
	require.Equal(t, again.Entries[1], sent[1], "whole, though a delivered chunk has its digest")
	g.requireActive(again)
}

// After an unsupported refusal the Publisher does not index that
// snapshot again: a plain manifest lost on the way is sent again plain.
func TestPublishManifestIndexNotAgain(t *testing.T) {
	g := newIndexRig(t)
	refused := 0
	g.link.refuse = func(outbox.Entry) error {
		refused++
		return sourcecatalog.Errorf(sourcecatalog.ErrUnsupported, "unknown entity type").AtField("entity_type")
	}
	c := g.commit(-1)
	k := len(g.link.since(0))
	g.link.lose = map[int]bool{k + 2: true} // the plain manifest's answer
	p := outbox.NewPublisher(g.board, g.vessel, g.link, outbox.WithReceiverV2(true), outbox.WithManifestIndexes(true))
	pass, err := p.Publish(g.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, pass.Failed)
	require.Equal(t, len(c.Entries)-1, pass.Delivered, "the chunks, sent whole")
	pass, err = p.Publish(g.ctx)
	require.NoError(t, err)
	require.Equal(t, outbox.Pass{Sent: 1, Delivered: 1, AlreadyReceived: 1}, pass)
	require.Equal(t, c.Entries[0], g.link.since(0)[len(g.link.since(0))-1], "the plain manifest again")
	require.Equal(t, 1, refused)
	g.requireActive(c)
}

// A pass indexing a snapshot reads all its pending entries, beyond a
// batch that cut them: an identical cycle is still one request.
func TestPublishManifestIndexBatch(t *testing.T) {
	g := newIndexRig(t)
	g.commit(-1)
	_, _, err := g.publish()
	require.NoError(t, err)
	c := g.commit(-1)
	pass, sent, err := g.publish(outbox.WithBatch(2))
	require.NoError(t, err)
	require.Len(t, sent, 1)
	require.Equal(t, outbox.Pass{Sent: 1, Delivered: len(c.Entries), Indexed: len(c.Entries) - 1}, pass)
	g.requireActive(c)
}
