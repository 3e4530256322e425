package httpbinding_test

import (
	"context"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// A resend of a message of a set the Receiver has finalized is answered
// already_received and complete, and runs no Finalize, so that a
// sender's retries are not counted as finalizes; a resend of a set
// still staging after its Finalize failed (as after a crash) runs the
// Finalize that was missed.
func TestResendsOfAFinalizedSetRunNoFinalize(t *testing.T) {
	ctx := context.Background()
	fs := &failStore{Store: memstore.New()}
	r := startRig(t, rigConfig{store: fs})
	cert := r.ca.vessel(t, vesselA)
	c := r.client(t, &cert)
	b := commitCycle(t, vesselA, uuid.Nil, "nav", 1) // manifest and 1 chunk
	fs.failAt.Store(3)                               // manifest, chunk, then the Finalize
	_, err := outbox.NewPublisher(b.store, vesselA, c, outbox.WithReceiverV2(true)).Publish(ctx)
	require.NoError(t, err)
	fin := r.events.of(httpbinding.EventFinalize)
	require.Len(t, fin, 1)
	require.ErrorIs(t, fin[0].Err, sourcecatalog.ErrStoreUnavailable, "the first Finalize was cut")

	// The set is complete and still staging: a resend finalizes it.
	rc, err := c.Send(ctx, b.entries[1])
	require.NoError(t, err)
	require.Equal(t, envelope.AlreadyReceived, rc.Status)
	require.True(t, rc.Complete)
	fin = r.events.of(httpbinding.EventFinalize)
	require.Len(t, fin, 2, "a resend of a complete set still staging runs Finalize")
	require.NoError(t, fin[1].Err)
	require.Equal(t, finalize.Activated, fin[1].Finalize.Status)

	// Now the set is finalized: resends of every message run none.
	for _, e := range b.entries {
		rc, err := c.Send(ctx, e)
		require.NoError(t, err)
		require.Equal(t, envelope.AlreadyReceived, rc.Status)
		require.True(t, rc.Complete, "complete stays true on the wire for a finalized set (SPEC.md §9.1)")
	}
	require.Len(t, r.events.of(httpbinding.EventFinalize), 2, "a resend of a finalized set runs no Finalize")
	active, err := r.recv.Active(ctx, vesselA)
	require.NoError(t, err)
	require.Equal(t, b.snapID, active.SnapshotID)
}

// TestFinalizeRunWithTheMessage: over a Receiver that finalizes a set
// with the message completing it (finalize.WithFinalizeWhenComplete), the
// Handler reports that Finalize, once, as triggered by the receipt, and
// runs no other.
func TestFinalizeRunWithTheMessage(t *testing.T) {
	ctx := context.Background()
	var finalizes atomic.Int32
	recv := finalize.NewReceiver(memstore.New(), finalize.WithFinalizeWhenComplete(), finalize.WithObserver(func(e finalize.Event) {
		if e.Kind == finalize.EventFinalize {
			finalizes.Add(1)
		}
	}))
	var events eventLog
	ts := httptest.NewServer(httpbinding.NewHandler(recv, httpbinding.InsecureNoAuth(vesselA), httpbinding.WithObserver(events.observe)))
	defer ts.Close()
	c, err := httpbinding.NewClient(ts.URL + "/v2/messages")
	require.NoError(t, err)
	defer c.CloseIdleConnections()
	b := commitCycle(t, vesselA, uuid.Nil, "nav", 1)
	for _, e := range b.entries {
		_, err := c.Send(ctx, e)
		require.NoError(t, err)
	}
	fin := events.of(httpbinding.EventFinalize)
	require.Len(t, fin, 1)
	require.Equal(t, httpbinding.TriggerReceipt, fin[0].Trigger)
	require.NoError(t, fin[0].Err)
	require.Equal(t, finalize.Activated, fin[0].Finalize.Status)
	require.EqualValues(t, 1, finalizes.Load(), "one Finalize ran, with the message")
	active, err := recv.Active(ctx, vesselA)
	require.NoError(t, err)
	require.Equal(t, b.snapID, active.SnapshotID)
}
