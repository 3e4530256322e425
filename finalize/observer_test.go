package finalize_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
)

// recorder is an Observer keeping what it is told.
type recorder struct {
	mu     sync.Mutex
	events []finalize.Event
}

func (r *recorder) observe(e finalize.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// take returns the events so far and forgets them.
func (r *recorder) take() []finalize.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.events
	r.events = nil
	return e
}

// retryOnce is a Store that runs the callback of every transaction twice:
// once rolled back, as after a deadlock, then for real.
type retryOnce struct{ finalize.Store }

var errDeadlock = errors.New("deadlock")

func (s retryOnce) WithVessel(ctx context.Context, id uuid.UUID, fn func(finalize.Tx) error) error {
	err := s.Store.WithVessel(ctx, id, func(tx finalize.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return errDeadlock
	})
	if !errors.Is(err, errDeadlock) {
		return err
	}
	return s.Store.WithVessel(ctx, id, fn)
}

// TestObserver requires one event per receive and finalize call, telling
// what the caller was told, with the usage the call read, and one event
// per retried transaction.
func TestObserver(t *testing.T) {
	ctx := context.Background()
	var rec recorder
	store := memstore.New()
	r := finalize.NewReceiver(store, finalize.WithObserver(rec.observe))
	snap := snapshotOf(t, staging, 1)
	origin := finalize.Origin{VesselID: vessel}
	usage := func() *finalize.Usage {
		t.Helper()
		u, err := r.Usage(ctx, vessel)
		require.NoError(t, err)
		return &u
	}
	requireOne := func(want finalize.Event) finalize.Event {
		t.Helper()
		events := rec.take()
		require.Len(t, events, 1, "one event per call")
		got := events[0]
		require.ErrorIs(t, got.Err, want.Err)
		got.Duration, got.Err, want.Err = 0, nil, nil
		require.Equal(t, want, got)
		return events[0]
	}

	rc, err := r.ReceiveChunk(ctx, origin, snap.Chunks[0].Canonical())
	require.NoError(t, err)
	requireOne(finalize.Event{Kind: finalize.EventReceive, Op: "ReceiveChunk", Vessel: vessel, Snapshot: staging, Receipt: rc, Usage: usage()})
	rec.take() // Usage reports nothing

	rc, err = r.ReceiveChunk(ctx, origin, snap.Chunks[0].Canonical())
	require.NoError(t, err)
	require.Equal(t, envelope.AlreadyReceived, rc.Status)
	requireOne(finalize.Event{Kind: finalize.EventReceive, Op: "ReceiveChunk", Vessel: vessel, Snapshot: staging, Receipt: rc})

	_, err = r.ReceiveManifest(ctx, finalize.Origin{VesselID: stranger}, snap.Manifest.Canonical())
	requireClass(t, err, sourcecatalog.ErrForeignVessel, "a manifest of another vessel")
	requireOne(finalize.Event{Kind: finalize.EventReceive, Op: "ReceiveManifest", Vessel: stranger, Snapshot: staging, Err: sourcecatalog.ErrForeignVessel})

	_, err = r.ReceiveChunk(ctx, origin, []byte(`{"entity":`))
	requireClass(t, err, sourcecatalog.ErrMalformedJSON, "malformed")
	requireOne(finalize.Event{Kind: finalize.EventReceive, Op: "ReceiveChunk", Vessel: vessel, Err: sourcecatalog.ErrMalformedJSON})

	rc, err = r.ReceiveManifest(ctx, origin, snap.Manifest.Canonical())
	require.NoError(t, err)
	require.True(t, rc.Complete)
	requireOne(finalize.Event{Kind: finalize.EventReceive, Op: "ReceiveManifest", Vessel: vessel, Snapshot: staging, Receipt: rc, Usage: usage()})
	rec.take()

	out, err := r.Finalize(ctx, vessel, staging)
	require.NoError(t, err)
	require.Equal(t, finalize.Activated, out.Status)
	requireOne(finalize.Event{Kind: finalize.EventFinalize, Op: "Finalize", Vessel: vessel, Snapshot: staging, Outcome: out, Usage: &out.Usage})

	outs, err := r.Reconcile(ctx, vessel)
	require.NoError(t, err)
	require.Empty(t, outs)
	require.Empty(t, rec.take(), "nothing finalized, nothing reported")

	_, err = r.Finalize(ctx, uuid.Nil, staging)
	requireClass(t, err, sourcecatalog.ErrInvalidValue, "uuid.Nil")
	requireOne(finalize.Event{Kind: finalize.EventFinalize, Op: "Finalize", Snapshot: staging, Err: sourcecatalog.ErrInvalidValue})

	retrying := finalize.NewReceiver(retryOnce{store}, finalize.WithObserver(rec.observe))
	next := snapshotOf(t, active, 2)
	rc, err = retrying.ReceiveManifest(ctx, origin, next.Manifest.Canonical())
	require.NoError(t, err)
	require.Equal(t, envelope.Staged, rc.Status, "the rolled-back first run staged nothing")
	events := rec.take()
	require.Len(t, events, 2)
	require.Equal(t, finalize.Event{Kind: finalize.EventRetry, Op: "ReceiveManifest", Vessel: vessel}, events[0])
	require.Equal(t, finalize.EventReceive, events[1].Kind)
	require.Equal(t, rc, events[1].Receipt)
}

// ReceiveDecodedChunk stages what ReceiveChunk stages, and refuses what no
// decoder made.
func TestReceiveDecodedChunk(t *testing.T) {
	ctx := context.Background()
	origin := finalize.Origin{VesselID: vessel}
	snap := snapshotOf(t, staging, 1)
	decoded, err := envelope.DecodeChunk(snap.Chunks[0].Canonical())
	require.NoError(t, err)

	direct := finalize.NewReceiver(memstore.New())
	want, err := direct.ReceiveChunk(ctx, origin, snap.Chunks[0].Canonical())
	require.NoError(t, err)

	r := finalize.NewReceiver(memstore.New())
	for _, bad := range []*envelope.Chunk{nil, {}} {
		rc, err := r.ReceiveDecodedChunk(ctx, origin, bad)
		requireClass(t, err, sourcecatalog.ErrInvalidValue, "a chunk no decoder made")
		require.Zero(t, rc)
	}
	got, err := r.ReceiveDecodedChunk(ctx, origin, decoded)
	require.NoError(t, err)
	require.Equal(t, want, got, "the receipt ReceiveChunk gives")
	again, err := r.ReceiveChunk(ctx, origin, snap.Chunks[0].Canonical())
	require.NoError(t, err)
	require.Equal(t, envelope.AlreadyReceived, again.Status, "the decoded chunk was staged")
	_, err = r.ReceiveDecodedChunk(ctx, finalize.Origin{VesselID: stranger}, decoded)
	requireClass(t, err, sourcecatalog.ErrForeignVessel, "origin still binds")
}
