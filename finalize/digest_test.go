package finalize_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
)

// digestStore is a Store whose transactions are DigestTx: ChunkDigests
// returns Chunks without their bytes, with the digest at index flipped
// when flip is set, and both calls are counted by snapshot.
type digestStore struct {
	finalize.Store
	flip          bool
	chunks, diges map[uuid.UUID]int
}

type digestTx struct {
	finalize.Tx
	s *digestStore
}

func (s *digestStore) WithVessel(ctx context.Context, v uuid.UUID, fn func(finalize.Tx) error) error {
	return s.Store.WithVessel(ctx, v, func(tx finalize.Tx) error { return fn(digestTx{tx, s}) })
}

func (t digestTx) Chunks(ctx context.Context, snapshot uuid.UUID) ([]finalize.StagedChunk, error) {
	t.s.chunks[snapshot]++
	return t.Tx.Chunks(ctx, snapshot)
}

func (t digestTx) ChunkDigests(ctx context.Context, snapshot uuid.UUID) ([]finalize.StagedChunk, error) {
	t.s.diges[snapshot]++
	cs, err := t.Tx.Chunks(ctx, snapshot)
	for i := range cs {
		cs[i].Canonical = nil
		if t.s.flip && i == 1 {
			cs[i].Payload[0] ^= 1
		}
	}
	return cs, err
}

var _ finalize.DigestTx = digestTx{}

// Over a DigestTx, verifying an identical set by identity (SPEC.md §8.4)
// reads the active snapshot's chunk digests, not its chunks; a digest the
// store reports wrongly does not pass the set by identity: it is decoded
// in full, and activated as the document it is.
func TestIdenticalReadsActiveDigests(t *testing.T) {
	for _, flip := range []bool{false, true} {
		ctx := context.Background()
		s := &digestStore{Store: memstore.New(), flip: flip, chunks: map[uuid.UUID]int{}, diges: map[uuid.UUID]int{}}
		r := finalize.NewReceiver(s)
		origin := finalize.Origin{VesselID: benchVessel}
		records := examples.Scaled(300)
		count, restore := finalize.CountDecodes()
		var active uuid.UUID
		for rev := int64(1); rev <= 2; rev++ {
			snap := benchSnapshot(t, rev, records)
			deliver(t, r, origin, snap)
			out, err := r.Finalize(ctx, benchVessel, snap.Manifest.SnapshotID)
			require.NoError(t, err)
			require.Equal(t, finalize.Activated, out.Status)
			if rev == 1 { // count from its activation on
				active = snap.Manifest.SnapshotID
				clear(s.chunks)
				clear(s.diges)
			}
		}
		restore()
		require.Zero(t, s.chunks[active], "the active snapshot's chunks are not read whole (flip %v)", flip)
		require.Equal(t, 1, s.diges[active], "its digests are read once (flip %v)", flip)
		want := map[bool]int{false: 1, true: 2}[flip] // the first round, and the second when a digest disagrees
		require.Equal(t, want, count(), "sets decoded (flip %v)", flip)
	}
}

// deliver sends every message of s to r.
func deliver(t *testing.T, r *finalize.Receiver, origin finalize.Origin, s *envelope.Snapshot) {
	t.Helper()
	_, err := r.ReceiveManifest(context.Background(), origin, s.Manifest.Canonical())
	require.NoError(t, err)
	for _, c := range s.Chunks {
		_, err := r.ReceiveChunk(context.Background(), origin, c.Canonical())
		require.NoError(t, err)
	}
}
