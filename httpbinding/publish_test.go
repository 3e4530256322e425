package httpbinding_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// A whole snapshot published through the Client is staged, finalized on
// its complete receipt and activated; an identical retry is
// already_received; a conflicting snapshot is 409 and the Publisher stops
// it.
func TestPublishThroughTheBinding(t *testing.T) {
	ctx := context.Background()
	r := startRig(t, rigConfig{})
	cert := r.ca.vessel(t, vesselA)
	c := r.client(t, &cert)
	b := commitCycle(t, vesselA, uuid.Nil, "nav", 120) // manifest and 3 chunks
	require.Len(t, b.entries, 4)

	pass, err := outbox.NewPublisher(b.store, vesselA, c, outbox.WithReceiverV2(true)).Publish(ctx)
	require.NoError(t, err)
	assert.Equal(t, outbox.Pass{Sent: 4, Delivered: 4}, noBytes(pass))
	active, err := r.recv.Active(ctx, vesselA)
	require.NoError(t, err)
	assert.Equal(t, b.snapID, active.SnapshotID)
	assert.Equal(t, b.commit.Revision, active.Revision)
	fin := r.events.of(httpbinding.EventFinalize)
	require.Len(t, fin, 1)
	assert.Equal(t, finalize.Activated, fin[0].Finalize.Status)
	assert.Equal(t, httpbinding.TriggerReceipt, fin[0].Trigger)
	assert.NoError(t, fin[0].Err)
	assert.Equal(t, []string{"staged", "staged", "staged", "staged"}, r.events.outcomes())

	// An identical retry.
	rc, err := c.Send(ctx, b.entries[2])
	require.NoError(t, err)
	assert.Equal(t, envelope.AlreadyReceived, rc.Status)
	assert.True(t, rc.Matches(b.entries[2].Receipt()))

	// Another document under the same snapshot id: the receiver refuses
	// it and the Publisher stops the snapshot.
	conflicting := commitCycle(t, vesselA, b.snapID, "other", 3)
	_, err = outbox.NewPublisher(conflicting.store, vesselA, c, outbox.WithReceiverV2(true)).Publish(ctx)
	require.ErrorIs(t, err, sourcecatalog.ErrConflict)
	assert.Equal(t, []outbox.State{outbox.Stopped, outbox.Stopped}, conflicting.states(t))
	ev := r.events.of(httpbinding.EventMessage)
	assert.Equal(t, 409, ev[len(ev)-1].Status)
	assert.Equal(t, "conflict", ev[len(ev)-1].Outcome)
	assert.Equal(t, b.snapID, ev[len(ev)-1].Snapshot, "a refusal is logged with its snapshot")
	assert.Equal(t, sourcecatalog.ManifestEntityType, ev[len(ev)-1].EntityType)
}

// A Finalize that fails after a complete receipt does not change the
// answer — the receipt is durable — and the Reconciler activates the
// snapshot later.
func TestFinalizeFailureKeepsTheReceipt(t *testing.T) {
	ctx := context.Background()
	fs := &failStore{Store: memstore.New()}
	r := startRig(t, rigConfig{store: fs})
	cert := r.ca.vessel(t, vesselA)
	c := r.client(t, &cert)
	b := commitCycle(t, vesselA, uuid.Nil, "nav", 1) // manifest and 1 chunk
	fs.failAt.Store(3)                               // manifest, chunk, then Finalize
	pass, err := outbox.NewPublisher(b.store, vesselA, c, outbox.WithReceiverV2(true)).Publish(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, pass.Delivered)
	fin := r.events.of(httpbinding.EventFinalize)
	require.Len(t, fin, 1)
	require.ErrorIs(t, fin[0].Err, sourcecatalog.ErrStoreUnavailable)

	rec := &httpbinding.Reconciler{Receiver: r.recv, Vessels: staticVessels(vesselA), Observer: r.events.observe}
	require.NoError(t, rec.Once(ctx))
	active, err := r.recv.Active(ctx, vesselA)
	require.NoError(t, err)
	assert.Equal(t, b.snapID, active.SnapshotID)
	fin = r.events.of(httpbinding.EventFinalize)
	require.Len(t, fin, 2)
	assert.Equal(t, httpbinding.TriggerReconcile, fin[1].Trigger)
	assert.Equal(t, finalize.Activated, fin[1].Finalize.Status)
}

func staticVessels(ids ...uuid.UUID) httpbinding.VesselLister {
	return func(context.Context) ([]uuid.UUID, error) { return ids, nil }
}

// The Reconciler runs at once and on its interval, reports a failing
// lister, and stops with its context.
func TestReconcilerRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	recv := finalize.NewReceiver(memstore.New())
	events := make(chan httpbinding.Event, 64)
	listed := make(chan struct{}, 64)
	rec := &httpbinding.Reconciler{
		Receiver: recv, Interval: 10 * time.Millisecond,
		Vessels: func(context.Context) ([]uuid.UUID, error) {
			listed <- struct{}{}
			return []uuid.UUID{vesselA, vesselB}, nil
		},
		Observer: func(e httpbinding.Event) { events <- e },
	}
	done := make(chan error, 1)
	go func() { done <- rec.Run(ctx) }()
	<-listed // the start-up pass

	// Stage B's snapshot in full, as if the server died before finalizing.
	b := commitCycle(t, vesselB, uuid.Nil, "nav", 1)
	stageAll(t, recv, vesselB, b.entries)
	deadline := time.After(10 * time.Second)
	for activated := false; !activated; {
		select {
		case e := <-events:
			activated = e.Kind == httpbinding.EventFinalize && e.Vessel == vesselB && e.Finalize.Status == finalize.Activated
		case <-deadline:
			t.Fatal("the Reconciler did not activate the staged snapshot")
		}
	}
	cancel()
	require.NoError(t, <-done)

	// A failing lister is reported and returned, classed.
	failing := &httpbinding.Reconciler{Receiver: recv, Vessels: func(context.Context) ([]uuid.UUID, error) { return nil, errInjected }}
	err := failing.Once(context.Background())
	require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable)
	require.ErrorIs(t, err, errInjected)
	require.ErrorIs(t, (&httpbinding.Reconciler{}).Run(ctx), sourcecatalog.ErrInvalidValue)

	// Without a lister the Receiver lists the vessels with staging work.
	a := commitCycle(t, vesselA, uuid.Nil, "nav", 1)
	stageAll(t, recv, vesselA, a.entries)
	require.NoError(t, (&httpbinding.Reconciler{Receiver: recv}).Once(context.Background()))
	active, err := recv.Active(context.Background(), vesselA)
	require.NoError(t, err)
	require.Equal(t, a.snapID, active.SnapshotID, "the default lister found vessel A's staged snapshot")
	staticOnly := finalize.NewReceiver(struct{ finalize.Store }{memstore.New()})
	require.ErrorIs(t, (&httpbinding.Reconciler{Receiver: staticOnly}).Once(context.Background()), sourcecatalog.ErrUnsupported,
		"a store that cannot list needs a lister")
}

// stageAll receives every entry as the vessel's.
func stageAll(t *testing.T, recv *finalize.Receiver, vessel uuid.UUID, entries []outbox.Entry) {
	t.Helper()
	for _, e := range entries {
		receive := recv.ReceiveChunk
		if e.EntityType == sourcecatalog.ManifestEntityType {
			receive = recv.ReceiveManifest
		}
		_, err := receive(context.Background(), finalize.Origin{VesselID: vessel}, e.Payload)
		require.NoError(t, err)
	}
}
