package finalize_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
)

// boat builds a snapshot of vessel v with n paths named by prefix, each
// observed from one source: 2n+1 records, several chunks from n = 50.
func boat(t *testing.T, v, id uuid.UUID, rev int64, prefix string, n int) *envelope.Snapshot {
	t.Helper()
	src, err := catalog.NewSource(catalog.Source{SourceRef: "gps"})
	require.NoError(t, err)
	recs := []*catalog.Record{src}
	for i := range n {
		name := fmt.Sprintf("%s.s%04d", prefix, i)
		p, err := catalog.NewPath(catalog.Path{Path: name, Unit: catalog.UnitOf("m")})
		require.NoError(t, err)
		o, err := catalog.NewObservation(catalog.Observation{Path: name, SourceRef: "gps", ValueType: catalog.Number})
		require.NoError(t, err)
		recs = append(recs, p, o)
	}
	s, err := envelope.Build(envelope.Input{VesselID: v, SnapshotID: id, Revision: rev,
		DiscoveredAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), Records: recs})
	require.NoError(t, err)
	require.Greater(t, len(s.Chunks), 2, "fixture: several chunks")
	return s
}

// refAt is the reference to c's records at another snapshot, revision
// and index.
func refAt(t *testing.T, c *envelope.Chunk, snapshot uuid.UUID, rev int64, index int) []byte {
	t.Helper()
	text := fmt.Sprintf(`{"chunk_index":%d,"payload_sha256":"%s","protocol":"%s","revision":%d,"snapshot_id":"%s","vessel_id":"%s"}`,
		index, c.PayloadSHA256(), sourcecatalog.Protocol, rev, snapshot, c.VesselID())
	ref, err := envelope.DecodeChunkRef([]byte(text))
	require.NoError(t, err)
	return ref.Canonical()
}

func stageWhole(t *testing.T, r *finalize.Receiver, s *envelope.Snapshot, manifest bool) {
	t.Helper()
	ctx := context.Background()
	o := finalize.Origin{VesselID: s.Manifest.VesselID}
	if manifest {
		_, err := r.ReceiveManifest(ctx, o, s.Manifest.Canonical())
		require.NoError(t, err)
	}
	for _, c := range s.Chunks {
		_, err := r.ReceiveChunk(ctx, o, c.Canonical())
		require.NoError(t, err)
	}
}

// problemOf returns err's one problem as text: class, location, message.
func problemOf(t *testing.T, err error) string {
	t.Helper()
	p := sourcecatalog.Problems(err)
	require.Len(t, p, 1, "%v", err)
	return fmt.Sprintf("%v|%d|%d|%s|%s", p[0].Class, p[0].Chunk, p[0].Record, p[0].Field, p[0].Error())
}

// leakyStore's ChunkByPayload ignores the vessel: a careless store. The
// Receiver must still never resolve from another vessel's bytes.
type leakyStore struct {
	*memstore.Store
	held []byte
}

type leakyTx struct {
	finalize.Tx
	held []byte
}

func (s leakyStore) WithVessel(ctx context.Context, v uuid.UUID, fn func(finalize.Tx) error) error {
	return s.Store.WithVessel(ctx, v, func(tx finalize.Tx) error { return fn(leakyTx{tx, s.held}) })
}

func (t leakyTx) ChunkByPayload(context.Context, canonical.Digest) (finalize.StagedChunk, error) {
	return finalize.StagedChunk{Canonical: t.held}, nil
}

// A reference naming another vessel's payload is refused exactly as one
// naming a payload nobody holds — same class, location and text — and
// stages nothing, also over a store that hands out the other vessel's
// bytes (SPEC.md §6.6).
func TestReview21RefOtherVesselIsIndistinguishable(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	r := finalize.NewReceiver(store)
	a := boat(t, vessel, uuid.New(), 1, "nav", 120)
	stageWhole(t, r, a, false)

	b := boat(t, stranger, uuid.New(), 1, "nav", 120) // the same records
	require.Equal(t, a.Chunks[1].PayloadSHA256(), b.Chunks[1].PayloadSHA256(), "fixture")
	nobody := boat(t, stranger, uuid.New(), 1, "zzz", 120).Chunks[1]
	origin := finalize.Origin{VesselID: stranger}
	snap := uuid.New()
	_, errOther := r.ReceiveChunkRef(ctx, origin, refAt(t, b.Chunks[1], snap, 1, 1))
	_, errNone := r.ReceiveChunkRef(ctx, origin, refAt(t, nobody, snap, 1, 1))
	requireClass(t, errOther, sourcecatalog.ErrReferenceUnavailable, "another vessel's payload")
	requireClass(t, errNone, sourcecatalog.ErrReferenceUnavailable, "a payload nobody holds")
	assert.Equal(t, problemOf(t, errNone), problemOf(t, errOther), "nothing tells the two apart")
	assert.Equal(t, errNone.Error(), errOther.Error())

	leaky := finalize.NewReceiver(leakyStore{store, a.Chunks[1].Canonical()})
	_, errLeak := leaky.ReceiveChunkRef(ctx, origin, refAt(t, b.Chunks[1], snap, 1, 1))
	requireClass(t, errLeak, sourcecatalog.ErrReferenceUnavailable, "bytes naming another vessel")
	assert.Equal(t, problemOf(t, errNone), problemOf(t, errLeak))
	u, err := r.Usage(ctx, stranger)
	require.NoError(t, err)
	assert.Zero(t, u.IncompleteSnapshots.Used, "nothing staged for the stranger")
}

// A reference at an index at or beyond the manifest's chunk_count, or of
// another revision, is a conflict in either order of arrival, as a whole
// chunk is (SPEC.md §8.2).
func TestReview21RefBeyondChunkCount(t *testing.T) {
	ctx := context.Background()
	r := finalize.NewReceiver(memstore.New())
	o := finalize.Origin{VesselID: vessel}
	held := boat(t, vessel, uuid.New(), 1, "nav", 120)
	stageWhole(t, r, held, false)

	// Manifest first, then the reference beyond its count.
	s2 := boat(t, vessel, uuid.New(), 2, "nav", 120)
	_, err := r.ReceiveManifest(ctx, o, s2.Manifest.Canonical())
	require.NoError(t, err)
	n := len(s2.Chunks)
	for _, index := range []int{n, sourcecatalog.MaxChunks - 1} {
		_, err = r.ReceiveChunkRef(ctx, o, refAt(t, held.Chunks[1], idOf(s2), 2, index))
		requireClass(t, err, sourcecatalog.ErrConflict, fmt.Sprintf("index %d after the manifest", index))
	}

	_, err = r.ReceiveChunkRef(ctx, o, refAt(t, held.Chunks[1], idOf(s2), 9, 1))
	requireClass(t, err, sourcecatalog.ErrConflict, "another revision than the manifest's")

	// Another revision first: the manifest is the conflict.
	s4 := boat(t, vessel, uuid.New(), 4, "nav", 120)
	_, err = r.ReceiveChunkRef(ctx, o, refAt(t, held.Chunks[1], idOf(s4), 9, 1))
	require.NoError(t, err)
	_, err = r.ReceiveManifest(ctx, o, s4.Manifest.Canonical())
	requireClass(t, err, sourcecatalog.ErrConflict, "the manifest after a reference of another revision")

	// The reference beyond the count first: staged; the manifest is then
	// the conflict.
	s3 := boat(t, vessel, uuid.New(), 3, "nav", 120)
	rc, err := r.ReceiveChunkRef(ctx, o, refAt(t, held.Chunks[1], idOf(s3), 3, n))
	require.NoError(t, err)
	assert.Equal(t, envelope.Staged, rc.Status)
	_, err = r.ReceiveManifest(ctx, o, s3.Manifest.Canonical())
	requireClass(t, err, sourcecatalog.ErrConflict, "the manifest after a reference beyond its count")
}

func idOf(s *envelope.Snapshot) uuid.UUID { return s.Manifest.SnapshotID }

// A reference staged, then the snapshot it was resolved from discarded:
// its retry is already_received with the same receipt, the whole chunk
// too, while a reference to another of the discarded records is
// reference_unavailable (SPEC.md §8.2).
func TestReview21RefRetryAfterDiscard(t *testing.T) {
	ctx := context.Background()
	r := finalize.NewReceiver(memstore.New())
	o := finalize.Origin{VesselID: vessel}
	held := boat(t, vessel, uuid.New(), 1, "nav", 120)
	stageWhole(t, r, held, false)
	s2 := boat(t, vessel, uuid.New(), 2, "nav", 120)
	ref1 := refAt(t, s2.Chunks[1], idOf(s2), 2, 1)
	first, err := r.ReceiveChunkRef(ctx, o, ref1)
	require.NoError(t, err)
	require.NoError(t, r.Discard(ctx, vessel, idOf(held)))

	again, err := r.ReceiveChunkRef(ctx, o, ref1)
	require.NoError(t, err, "an identical retry needs no held bytes")
	whole, err := r.ReceiveChunk(ctx, o, s2.Chunks[1].Canonical())
	require.NoError(t, err)
	for _, rc := range []envelope.Receipt{again, whole} {
		assert.Equal(t, envelope.AlreadyReceived, rc.Status)
		assert.True(t, rc.Matches(first), "the same receipt")
		assert.Equal(t, sourcecatalog.ChunkEntityType, rc.EntityType)
	}
	_, err = r.ReceiveChunkRef(ctx, o, refAt(t, s2.Chunks[2], idOf(s2), 2, 2))
	requireClass(t, err, sourcecatalog.ErrReferenceUnavailable, "records discarded")
	stageWhole(t, r, s2, true)
	out, err := r.Finalize(ctx, vessel, idOf(s2))
	require.NoError(t, err)
	assert.Equal(t, finalize.Activated, out.Status, "%+v", out)
}

// References racing the discard of the snapshot they resolve from are
// each staged whole or refused reference_unavailable, nothing else; the
// set then completes whole and activates (run with -race).
func TestReview21RefRacesDiscard(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	r := finalize.NewReceiver(store)
	o := finalize.Origin{VesselID: vessel}
	held := boat(t, vessel, uuid.New(), 1, "nav", 200)
	stageWhole(t, r, held, false)
	s2 := boat(t, vessel, uuid.New(), 2, "nav", 200)
	var wg sync.WaitGroup
	errs := make([]error, len(s2.Chunks))
	wg.Add(1)
	go func() {
		defer wg.Done()
		assert.NoError(t, r.Discard(ctx, vessel, idOf(held)))
	}()
	for i, c := range s2.Chunks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = r.ReceiveChunkRef(ctx, o, refAt(t, c, idOf(s2), 2, i))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			requireClass(t, err, sourcecatalog.ErrReferenceUnavailable, fmt.Sprintf("chunk %d", i))
		}
	}
	stageWhole(t, r, s2, true)
	out, err := r.Finalize(ctx, vessel, idOf(s2))
	require.NoError(t, err)
	require.Equal(t, finalize.Activated, out.Status, "%+v", out)
	require.NoError(t, store.WithVessel(ctx, vessel, func(tx finalize.Tx) error {
		got, err := tx.Chunks(ctx, idOf(s2))
		require.Len(t, got, len(s2.Chunks))
		for i, c := range got {
			assert.Equal(t, string(s2.Chunks[i].Canonical()), string(c.Canonical))
		}
		return err
	}))
}
