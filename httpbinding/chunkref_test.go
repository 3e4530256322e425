package httpbinding_test

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/internal/faultproxy"
	"github.com/yachtmemory/sourcecatalog/outbox"
	outboxmem "github.com/yachtmemory/sourcecatalog/outbox/memstore"
)

// An on-board outbox committing cycles of one vessel.
type refBoard struct {
	t     *testing.T
	store *outboxmem.Store
	at    time.Time
}

func newRefBoard(t *testing.T) *refBoard {
	return &refBoard{t: t, store: outboxmem.New(), at: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
}

// commit commits a cycle of n sensors named by prefix.
func (b *refBoard) commit(prefix string, n int) outbox.Commit {
	b.t.Helper()
	b.at = b.at.Add(15 * time.Minute)
	c, err := outbox.NewWriter(b.store).Commit(context.Background(), outbox.NewCycle(vesselA, b.at, records(b.t, prefix, n)))
	require.NoError(b.t, err)
	return c
}

func (b *refBoard) activeIs(t *testing.T, r *rig, c outbox.Commit) {
	t.Helper()
	active, err := r.recv.Active(context.Background(), vesselA)
	require.NoError(t, err)
	require.Equal(t, c.Entries[0].SnapshotID, active.SnapshotID)
}

// TestChunkRefThroughFaults publishes unchanged cycles by reference over
// the binding through a fault proxy: a reference whose records the
// receiver discarded is refused reference_unavailable and sent whole in
// the same pass; a reference whose answer is lost is sent again, as a
// reference, and is already_received.
func TestChunkRefThroughFaults(t *testing.T) {
	ctx := context.Background()
	r := startRig(t, rigConfig{tlsMax: tls.VersionTLS12, http1: true, opts: []httpbinding.HandlerOption{httpbinding.WithChunkReferences(true)}})
	p, err := faultproxy.Start(faultproxy.Config{Target: r.addr})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	cert := r.ca.vessel(t, vesselA)
	c, err := httpbinding.NewClient("https://"+p.Addr()+"/v2/messages", httpbinding.WithTLSConfig(r.tlsFor(&cert)), httpbinding.WithTimeout(10*time.Second))
	require.NoError(t, err)
	defer c.CloseIdleConnections()
	b := newRefBoard(t)
	pub := outbox.NewPublisher(b.store, vesselA, c, outbox.WithReceiverV2(true), outbox.WithChunkReferences(true))

	first := b.commit("nav", 150)
	chunks := len(first.Entries) - 1
	require.Greater(t, chunks, 2, "fixture: several chunks")
	pass, err := pub.Publish(ctx)
	require.NoError(t, err)
	require.Equal(t, outbox.Pass{Sent: chunks + 1, Delivered: chunks + 1}, noBytes(pass), "nothing to reference yet")

	// Another document activated, then the first discarded: its records
	// are gone from the receiver, though the outbox delivered them.
	other := b.commit("eng", 150)
	pass, err = pub.Publish(ctx)
	require.NoError(t, err)
	require.Zero(t, pass.Referenced, "no chunk of other was delivered before")
	b.activeIs(t, r, other)
	require.NoError(t, r.recv.Discard(ctx, vesselA, first.Entries[0].SnapshotID))

	again := b.commit("nav", 150)
	before := len(r.events.outcomes())
	pass, err = pub.Publish(ctx)
	require.NoError(t, err)
	assert.Equal(t, outbox.Pass{Sent: chunks + 1, Delivered: chunks + 1, Referenced: chunks, SentWhole: chunks}, noBytes(pass),
		"each reference refused, each chunk sent whole in the same pass")
	refused := r.events.outcomes()[before:]
	assert.Equal(t, "staged", refused[0])
	for i := 1; i < len(refused); i += 2 {
		assert.Equal(t, []string{"reference_unavailable", "staged"}, refused[i:i+2], "chunk %d", i/2)
	}
	b.activeIs(t, r, again)

	// Unchanged again: references only, and the first one's answer lost.
	last := b.commit("nav", 150)
	p.Arm(faultproxy.None)  // the manifest's answer
	p.Arm(faultproxy.Reset) // chunk 0's, a reference's
	before = len(r.events.outcomes())
	counts := answers(p)
	pass, err = pub.Publish(ctx)
	require.NoError(t, err)
	require.Equal(t, counts.Resets+1, answers(p).Resets, "one answer lost")
	require.Len(t, pass.Failures, 1)
	assert.Equal(t, sourcecatalog.ErrStoreUnavailable, pass.Failures[0].Class, "a lost answer is transient: %v", pass.Failures[0].Err)
	pass.Failures = nil
	assert.Equal(t, outbox.Pass{Sent: chunks + 1, Delivered: chunks, Failed: 1, Remaining: 1, Referenced: chunks}, noBytes(pass))
	pass, err = pub.Publish(ctx)
	require.NoError(t, err)
	assert.Equal(t, outbox.Pass{Sent: 1, Delivered: 1, AlreadyReceived: 1, Referenced: 1}, noBytes(pass),
		"resent as a reference: the receiver had staged the chunk it stands for")
	assert.NotContains(t, r.events.outcomes()[before:], "reference_unavailable")
	b.activeIs(t, r, last)
}

// TestChunkRefsRefusedByDefault: a Handler without WithChunkReferences
// refuses a reference as an unknown entity type, and a Publisher sending
// references to it falls back to whole chunks, all delivered.
func TestChunkRefsRefusedByDefault(t *testing.T) {
	ctx := context.Background()
	r := startRig(t, rigConfig{})
	cert := r.ca.vessel(t, vesselA)
	c := r.client(t, &cert)
	b := newRefBoard(t)
	pub := outbox.NewPublisher(b.store, vesselA, c, outbox.WithReceiverV2(true), outbox.WithChunkReferences(true))
	first := b.commit("nav", 150)
	_, err := pub.Publish(ctx)
	require.NoError(t, err)

	// By hand: 422 unsupported at entity_type.
	second := b.commit("nav", 150)
	ch, err := envelope.DecodeChunk(second.Entries[1].Payload)
	require.NoError(t, err)
	ref := second.Entries[1]
	ref.EntityType, ref.Payload = sourcecatalog.ChunkRefEntityType, envelope.NewChunkRef(ch).Canonical()
	_, err = c.Send(ctx, ref)
	require.ErrorIs(t, err, sourcecatalog.ErrUnsupported)
	require.Equal(t, "entity_type", sourcecatalog.Problems(err)[0].Field)

	pass, err := pub.Publish(ctx)
	require.NoError(t, err)
	n := len(second.Entries)
	assert.Equal(t, outbox.Pass{Sent: n, Delivered: n, Referenced: n - 1, SentWhole: n - 1}, noBytes(pass))
	b.activeIs(t, r, second)
	assert.Len(t, first.Entries, n)
}

// TestChunkRefHandlerStagesWholeBytes: what a reference stages through
// the binding is the whole chunk, and its receipt the chunk's.
func TestChunkRefHandlerStagesWholeBytes(t *testing.T) {
	ctx := context.Background()
	r := startRig(t, rigConfig{opts: []httpbinding.HandlerOption{httpbinding.WithChunkReferences(true)}})
	cert := r.ca.vessel(t, vesselA)
	c := r.client(t, &cert)
	b := newRefBoard(t)
	for _, e := range b.commit("nav", 40).Entries {
		_, err := c.Send(ctx, e)
		require.NoError(t, err)
	}
	second := b.commit("nav", 40)
	for i, e := range second.Entries {
		if i > 0 {
			ch, err := envelope.DecodeChunk(e.Payload)
			require.NoError(t, err)
			e.EntityType, e.Payload = sourcecatalog.ChunkRefEntityType, envelope.NewChunkRef(ch).Canonical()
		}
		rc, err := c.Send(ctx, e)
		require.NoError(t, err)
		require.True(t, rc.Matches(second.Entries[i].Receipt()), "the whole entry's receipt")
	}
	require.NoError(t, r.store.WithVessel(ctx, vesselA, func(tx finalize.Tx) error {
		chunks, err := tx.Chunks(ctx, second.Entries[0].SnapshotID)
		require.Len(t, chunks, len(second.Entries)-1)
		for i, ch := range chunks {
			assert.Equal(t, string(second.Entries[i+1].Payload), string(ch.Canonical))
		}
		return err
	}))
	b.activeIs(t, r, second)
}
