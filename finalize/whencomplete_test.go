package finalize_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
)

// countingStore counts transactions, and fails SetVessel while fail is
// set, as a store failing in the middle of an activation.
type countingStore struct {
	finalize.Store
	txs  atomic.Int32
	fail atomic.Bool
}

var errSetVessel = errors.New("SetVessel failed")

func (s *countingStore) WithVessel(ctx context.Context, id uuid.UUID, fn func(finalize.Tx) error) error {
	s.txs.Add(1)
	return s.Store.WithVessel(ctx, id, func(tx finalize.Tx) error {
		return fn(failingSetVessel{tx.(finalize.PayloadTx), s})
	})
}

// failingSetVessel keeps the PayloadTx of memstore, so that indexes
// resolve.
type failingSetVessel struct {
	finalize.PayloadTx
	s *countingStore
}

func (t failingSetVessel) SetVessel(ctx context.Context, v finalize.VesselState) error {
	if t.s.fail.Load() {
		return errSetVessel
	}
	return t.PayloadTx.SetVessel(ctx, v)
}

// indexOf is the manifest index of s.
func indexOf(t *testing.T, s *envelope.Snapshot) []byte {
	t.Helper()
	payloads := make([]canonical.Digest, len(s.Chunks))
	for i, c := range s.Chunks {
		payloads[i] = c.PayloadSHA256()
	}
	x, err := envelope.NewManifestIndex(s.Manifest, payloads)
	require.NoError(t, err)
	return x.Canonical()
}

// TestFinalizeWhenComplete: under WithFinalizeWhenComplete the message
// that completes a set — a last chunk, a last manifest, an index that
// resolves every chunk — is finalized in the transaction that stages it,
// reported in Staged.FinalizeRun and to the Observer; without the option
// no receive call finalizes. A later Finalize reports the same snapshot
// active.
func TestFinalizeWhenComplete(t *testing.T) {
	ctx := context.Background()
	for _, last := range []string{"chunk", "manifest", "index"} {
		for _, on := range []bool{false, true} {
			t.Run(last+map[bool]string{false: "/off", true: "/on"}[on], func(t *testing.T) {
				store := &countingStore{Store: memstore.New()}
				var rec recorder
				opts := []finalize.Option{finalize.WithObserver(rec.observe)}
				if on {
					opts = append(opts, finalize.WithFinalizeWhenComplete())
				}
				r := finalize.NewReceiver(store, opts...)
				v := uuid.New()
				origin := finalize.Origin{VesselID: v}
				first, second := boat(t, v, uuid.New(), 1, "a", 100), boat(t, v, uuid.New(), 2, "a", 100)
				deliver(t, r, origin, first)
				if !on {
					out, err := r.Finalize(ctx, v, first.Manifest.SnapshotID)
					require.NoError(t, err)
					require.Equal(t, finalize.Activated, out.Status)
				}

				var st finalize.Staged
				var err error
				switch last {
				case "chunk":
					_, err = r.ReceiveManifest(ctx, origin, second.Manifest.Canonical())
					require.NoError(t, err)
					for _, c := range second.Chunks[1:] {
						_, err = r.ReceiveChunk(ctx, origin, c.Canonical())
						require.NoError(t, err)
					}
					rec.take()
					before := store.txs.Load()
					st, err = r.StageChunk(ctx, origin, second.Chunks[0])
					require.Equal(t, int32(1), store.txs.Load()-before, "one transaction")
				case "manifest":
					for _, c := range second.Chunks {
						_, err = r.ReceiveChunk(ctx, origin, c.Canonical())
						require.NoError(t, err)
					}
					rec.take()
					st, err = r.StageManifest(ctx, origin, second.Manifest.Canonical())
				case "index":
					rec.take()
					before := store.txs.Load()
					st, err = r.StageManifestIndex(ctx, origin, indexOf(t, second))
					require.Equal(t, int32(1), store.txs.Load()-before, "one transaction")
					require.Zero(t, st.Receipt.Missing.Len())
				}
				require.NoError(t, err)
				require.True(t, st.Receipt.Complete)
				require.Equal(t, envelope.Staged, st.Receipt.Status)
				events := rec.take()
				active, err := r.Active(ctx, v)
				require.NoError(t, err)
				if !on {
					require.Nil(t, st.FinalizeRun)
					require.True(t, st.NeedsFinalize())
					require.Len(t, events, 1)
					require.Equal(t, first.Manifest.SnapshotID, active.SnapshotID, "a receive call finalized")
					return
				}
				require.NotNil(t, st.FinalizeRun)
				require.False(t, st.NeedsFinalize())
				require.Equal(t, finalize.Activated, st.FinalizeRun.Outcome.Status)
				require.Equal(t, second.Manifest.SnapshotID, st.FinalizeRun.Outcome.ActiveSnapshot)
				require.NoError(t, st.FinalizeRun.Err)
				require.Equal(t, second.Manifest.SnapshotID, active.SnapshotID)
				require.Len(t, events, 2)
				require.Equal(t, finalize.EventReceive, events[0].Kind)
				require.Equal(t, finalize.EventFinalize, events[1].Kind)
				require.Equal(t, finalize.Activated, events[1].Outcome.Status)
				require.NotNil(t, events[1].Usage)

				out, err := r.Finalize(ctx, v, second.Manifest.SnapshotID)
				require.NoError(t, err)
				require.Equal(t, finalize.AlreadyActive, out.Status)
				again, err := r.StageManifestIndex(ctx, origin, indexOf(t, second))
				require.NoError(t, err)
				require.Equal(t, envelope.AlreadyReceived, again.Receipt.Status)
				require.Nil(t, again.FinalizeRun, "a resend finalizes nothing")
				require.False(t, again.NeedsFinalize())
			})
		}
	}
}

// TestFinalizeWhenCompleteFails: a Finalize that fails in the staging
// transaction does not refuse the message: it is staged alone, and
// Finalize is left to run after it; a Finalize whose outcome carries an
// error (a revision conflict) reports it in the run.
func TestFinalizeWhenCompleteFails(t *testing.T) {
	ctx := context.Background()
	store := &countingStore{Store: memstore.New()}
	r := finalize.NewReceiver(store, finalize.WithFinalizeWhenComplete())
	v := uuid.New()
	origin := finalize.Origin{VesselID: v}
	first := boat(t, v, uuid.New(), 1, "a", 100)
	store.fail.Store(true)
	st, err := r.StageManifestIndex(ctx, origin, indexOf(t, first))
	require.NoError(t, err)
	for _, c := range first.Chunks[:len(first.Chunks)-1] {
		_, err = r.ReceiveChunk(ctx, origin, c.Canonical())
		require.NoError(t, err)
	}
	st, err = r.StageChunk(ctx, origin, first.Chunks[len(first.Chunks)-1])
	require.NoError(t, err, "the message is staged though its Finalize failed")
	require.Equal(t, envelope.Staged, st.Receipt.Status)
	require.True(t, st.Receipt.Complete)
	require.Nil(t, st.FinalizeRun)
	require.True(t, st.NeedsFinalize())
	status, err := r.Status(ctx, v)
	require.NoError(t, err)
	require.Len(t, status.Snapshots, 1)
	require.Equal(t, finalize.StateStaging, status.Snapshots[0].State)

	store.fail.Store(false)
	out, err := r.Finalize(ctx, v, first.Manifest.SnapshotID)
	require.NoError(t, err)
	require.Equal(t, finalize.Activated, out.Status)

	// The same revision with another document: rejected in the run.
	other := boat(t, v, uuid.New(), 1, "b", 100)
	st, err = r.StageManifestIndex(ctx, origin, indexOf(t, other))
	require.NoError(t, err)
	require.Positive(t, st.Receipt.Missing.Len())
	missing := st.Receipt.Missing
	for _, c := range other.Chunks {
		if missing.Has(c.Index()) {
			if st, err = r.StageChunk(ctx, origin, c); err != nil {
				break
			}
		}
	}
	require.NoError(t, err)
	require.NotNil(t, st.FinalizeRun)
	require.Equal(t, finalize.Rejected, st.FinalizeRun.Outcome.Status)
	require.ErrorIs(t, st.FinalizeRun.Err, sourcecatalog.ErrRevisionConflict)
}

// slowSetVessel is a store whose SetVessel waits for its context to end,
// as an activation that outlasts the time it is given.
type slowSetVessel struct{ finalize.Store }

func (s slowSetVessel) WithVessel(ctx context.Context, id uuid.UUID, fn func(finalize.Tx) error) error {
	return s.Store.WithVessel(ctx, id, func(tx finalize.Tx) error { return fn(waitingSetVessel{tx.(finalize.PayloadTx)}) })
}

type waitingSetVessel struct{ finalize.PayloadTx }

func (t waitingSetVessel) SetVessel(ctx context.Context, _ finalize.VesselState) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestFinalizeWhenCompleteOutlived: a Finalize in the staging transaction
// that outlasts the time it is given — half of what is left to the
// receive call — leaves the other half to stage the message alone: the
// message is staged, not refused for its Finalize.
func TestFinalizeWhenCompleteOutlived(t *testing.T) {
	r := finalize.NewReceiver(slowSetVessel{memstore.New()}, finalize.WithFinalizeWhenComplete())
	v := uuid.New()
	origin := finalize.Origin{VesselID: v}
	snap := boat(t, v, uuid.New(), 1, "a", 100)
	_, err := r.ReceiveManifest(context.Background(), origin, snap.Manifest.Canonical())
	require.NoError(t, err)
	for _, c := range snap.Chunks[1:] {
		_, err := r.ReceiveChunk(context.Background(), origin, c.Canonical())
		require.NoError(t, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	st, err := r.StageChunk(ctx, origin, snap.Chunks[0])
	require.NoError(t, err, "the message is staged though its Finalize ran out of time")
	require.True(t, st.Receipt.Complete)
	require.Nil(t, st.FinalizeRun)
	require.True(t, st.NeedsFinalize())
	status, err := r.Status(context.Background(), v)
	require.NoError(t, err)
	require.Len(t, status.Snapshots, 1)
	require.Equal(t, finalize.StateStaging, status.Snapshots[0].State)
	require.Equal(t, len(snap.Chunks), status.Snapshots[0].ChunksStaged)
}
