package sqlitestore_test

import (
	"bytes"
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// indexCycle sends snap as a boat does to a receiver declaring
// manifest_index (SPEC.md §6.7): the index, then whole the chunks its
// receipt names missing, then Finalize; it returns how many were missing.
func indexCycle(t *testing.T, r *finalize.Receiver, snap *envelope.Snapshot) int {
	t.Helper()
	ctx := context.Background()
	origin := finalize.Origin{VesselID: snap.Manifest.VesselID}
	payloads := make([]canonical.Digest, len(snap.Chunks))
	for i, c := range snap.Chunks {
		payloads[i] = c.PayloadSHA256()
	}
	x, err := envelope.NewManifestIndex(snap.Manifest, payloads)
	require.NoError(t, err)
	rc, err := r.ReceiveManifestIndex(ctx, origin, x.Canonical())
	require.NoError(t, err)
	for _, c := range snap.Chunks {
		if rc.Missing.Has(c.Index()) {
			_, err := r.ReceiveChunk(ctx, origin, c.Canonical())
			require.NoError(t, err)
		}
	}
	out, err := r.Finalize(ctx, snap.Manifest.VesselID, snap.Manifest.SnapshotID)
	require.NoError(t, err)
	require.Equal(t, finalize.Activated, out.Status)
	return rc.Missing.Len()
}

// buildSnapshot builds revision rev of vessel: records records, changed
// of their paths' units changed.
func buildSnapshot(t *testing.T, vessel uuid.UUID, rev int64, records int, changed int) *envelope.Snapshot {
	t.Helper()
	recs := examples.Scaled(records)
	if changed > 0 {
		recs = examples.WithChangedUnits(recs, changed)
	}
	snap, err := envelope.Build(envelope.Input{VesselID: vessel, SnapshotID: uuid.New(), Revision: rev,
		DiscoveredAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(rev) * time.Minute), Records: recs})
	require.NoError(t, err)
	return snap
}

// stagedChunks reads every chunk of snapshot through a transaction.
func stagedChunks(t *testing.T, s *sqlitestore.Store, vessel, snapshot uuid.UUID) ([]finalize.StagedChunk, error) {
	t.Helper()
	var got []finalize.StagedChunk
	err := s.WithVessel(context.Background(), vessel, func(tx finalize.Tx) error {
		var err error
		got, err = tx.Chunks(context.Background(), snapshot)
		return err
	})
	return got, err
}

// TestChunksShareRecords: an identical cycle through an index stores its
// chunks' records once — the new rows name the bodies the first cycle
// wrote, and no body is written — and every chunk reads back byte for
// byte, alone, in order and by payload.
func TestChunksShareRecords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := open(t)
	r := receiver(s)
	vessel := uuid.New()
	first := buildSnapshot(t, vessel, 1, 1500, 0)
	require.Equal(t, len(first.Chunks), indexCycle(t, r, first))
	bodies := count(t, s, `SELECT count(*) FROM chunk_bodies`)
	require.EqualValues(t, len(first.Chunks), bodies, "a body per chunk of the first cycle")
	size := count(t, s, `SELECT sum(length(chunk_canonical)) FROM chunks`)

	second := buildSnapshot(t, vessel, 2, 1500, 0)
	require.Zero(t, indexCycle(t, r, second), "every chunk resolved")
	require.Equal(t, bodies, count(t, s, `SELECT count(*) FROM chunk_bodies`), "an identical cycle wrote bodies")
	require.Less(t, count(t, s, `SELECT sum(length(chunk_canonical)) FROM chunks`)-size, int64(len(second.Chunks))*300,
		"an identical cycle's rows hold more than the bytes around the records")

	got, err := stagedChunks(t, s, vessel, second.Manifest.SnapshotID)
	require.NoError(t, err)
	require.Len(t, got, len(second.Chunks))
	require.NoError(t, s.WithVessel(ctx, vessel, func(tx finalize.Tx) error {
		for i, c := range second.Chunks {
			require.Equal(t, c.Canonical(), got[i].Canonical, "chunk %d", i)
			one, err := tx.Chunk(ctx, second.Manifest.SnapshotID, i)
			require.NoError(t, err)
			require.Equal(t, c.Canonical(), one.Canonical)
			held, err := tx.(finalize.PayloadTx).ChunkByPayload(ctx, c.PayloadSHA256())
			require.NoError(t, err)
			require.Equal(t, second.Manifest.SnapshotID, held.Snapshot, "the newest row answers")
			require.Equal(t, c.Canonical(), held.Canonical)
		}
		return nil
	}))
}

// TestChunkStoredFaithfully: a chunk whose records do not have its
// payload_sha256, or that differ from the body of that digest, is stored
// whole and read back as put, and never keys or changes a body.
func TestChunkStoredFaithfully(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := open(t)
	r := receiver(s)
	vessel := uuid.New()
	snap := buildSnapshot(t, vessel, 1, 300, 0)
	indexCycle(t, r, snap)
	real := snap.Chunks[0]
	other := snap.Chunks[1]
	// The same header, records of another chunk: a digest that is not the
	// records'. And the records of chunk 0 with a byte changed.
	at := bytes.Index(real.Canonical(), []byte(`"records":[`))
	swapped := append(append([]byte{}, real.Canonical()[:at]...), other.Canonical()[bytes.Index(other.Canonical(), []byte(`"records":[`)):]...)
	changed := bytes.Clone(real.Canonical())
	changed[at+40] ^= 0x01
	bodies := count(t, s, `SELECT count(*) FROM chunk_bodies`)
	staging := uuid.New()
	// Last, chunk 0's bytes under a digest no body has.
	puts := [][]byte{swapped, changed, real.Canonical(), real.Canonical()}
	require.NoError(t, s.WithVessel(ctx, vessel, func(tx finalize.Tx) error {
		for i, b := range puts {
			payload := real.PayloadSHA256()
			if i == 3 {
				payload = other.PayloadSHA256()
				payload[0] ^= 1
			}
			if err := tx.PutChunk(ctx, finalize.StagedChunk{Snapshot: staging, Index: i, Canonical: b, Payload: payload}); err != nil {
				return err
			}
		}
		return nil
	}))
	require.Equal(t, bodies, count(t, s, `SELECT count(*) FROM chunk_bodies`))
	require.EqualValues(t, 3, count(t, s, `SELECT count(*) FROM chunks WHERE snapshot_id = ? AND body_id IS NULL`, staging[:]), "stored whole")
	require.EqualValues(t, 1, count(t, s, `SELECT count(*) FROM chunks WHERE snapshot_id = ? AND body_id IS NOT NULL`, staging[:]), "shared")
	got, err := stagedChunks(t, s, vessel, staging)
	require.NoError(t, err)
	for i, b := range puts {
		require.Equal(t, b, got[i].Canonical, "chunk %d", i)
	}
	got, err = stagedChunks(t, s, vessel, snap.Manifest.SnapshotID)
	require.NoError(t, err)
	require.Equal(t, real.Canonical(), got[0].Canonical, "the body is unchanged")
}

// TestDamagedChunkBody: records shared by two snapshots that do not
// match their checksum make both snapshots' chunks damaged, naming the
// records; by payload they are hash_mismatch, so that the sender sends
// the chunk whole, whose records mend them.
func TestDamagedChunkBody(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := open(t)
	r := receiver(s)
	vessel := uuid.New()
	first, second := buildSnapshot(t, vessel, 1, 300, 0), buildSnapshot(t, vessel, 2, 300, 0)
	indexCycle(t, r, first)
	require.Zero(t, indexCycle(t, r, second))
	digest := first.Chunks[1].PayloadSHA256()
	require.NoError(t, s.Exec(ctx, `UPDATE chunk_bodies SET body = CAST(zeroblob(length(body)) AS BLOB) WHERE payload_sha256 = ?`, digest[:]))

	for _, snap := range []*envelope.Snapshot{first, second} {
		_, err := stagedChunks(t, s, vessel, snap.Manifest.SnapshotID)
		require.ErrorIs(t, err, sqlitestore.ErrDamaged)
		require.ErrorContains(t, err, "snapshot "+snap.Manifest.SnapshotID.String()+" chunk 1: the records it shares")
	}
	third := buildSnapshot(t, vessel, 3, 300, 0)
	require.NoError(t, s.WithVessel(ctx, vessel, func(tx finalize.Tx) error {
		_, err := tx.(finalize.PayloadTx).ChunkByPayload(ctx, digest)
		require.ErrorIs(t, err, sourcecatalog.ErrHashMismatch)
		require.NotErrorIs(t, err, sourcecatalog.ErrStoreUnavailable)
		_, err = tx.(finalize.PayloadTx).ChunkByPayload(ctx, first.Chunks[0].PayloadSHA256())
		return err // the transaction is still usable
	}))
	require.Equal(t, 1, indexCycle(t, r, third), "the chunk of damaged records is missing")
	for _, snap := range []*envelope.Snapshot{first, second, third} {
		got, err := stagedChunks(t, s, vessel, snap.Manifest.SnapshotID)
		require.NoError(t, err, "mended by the chunk sent whole")
		for i, c := range snap.Chunks {
			require.Equal(t, c.Canonical(), got[i].Canonical)
		}
	}
}

// TestDeleteSnapshotBodies: deleting a snapshot deletes the bodies no
// other chunk names, and keeps the others.
func TestDeleteSnapshotBodies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := open(t)
	r := receiver(s)
	vessel := uuid.New()
	first, second := buildSnapshot(t, vessel, 1, 1500, 0), buildSnapshot(t, vessel, 2, 1500, 1)
	indexCycle(t, r, first)
	changed := indexCycle(t, r, second)
	require.Positive(t, changed)
	require.Less(t, changed, len(second.Chunks))
	require.EqualValues(t, len(first.Chunks)+changed, count(t, s, `SELECT count(*) FROM chunk_bodies`))
	require.NoError(t, r.Discard(ctx, vessel, first.Manifest.SnapshotID))
	require.EqualValues(t, len(second.Chunks), count(t, s, `SELECT count(*) FROM chunk_bodies`), "the first cycle's own bodies are gone")
	got, err := stagedChunks(t, s, vessel, second.Manifest.SnapshotID)
	require.NoError(t, err)
	for i, c := range second.Chunks {
		require.Equal(t, c.Canonical(), got[i].Canonical)
	}
}

// TestMigrateV6Shore opens a receiver's file written by schema version 6
// (testdata/shore_v6.db.gz: two snapshots of 300 records activated, a
// third staging with its manifest and chunk 0, written by the code at
// 23aae3e): the migration rewrites no row, every chunk reads back as
// version 6 stored it, an identical index resolves from chunks stored
// whole, and the staging snapshot completes.
func TestMigrateV6Shore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v6.db")
	gunzipTo(t, "testdata/shore_v6.db.gz", path)
	vessel := uuid.MustParse("7d2a4c61-93e5-4f0b-8a17-c4e9b2d05f38")
	staging := uuid.MustParse("2d7c2f36-4c5e-4eab-9d53-4a7cad5e8023")

	want := map[string][]byte{}
	db, err := sql.Open("sqlite3", "file:"+path)
	require.NoError(t, err)
	var version int
	require.NoError(t, db.QueryRow("PRAGMA user_version").Scan(&version))
	require.Equal(t, 6, version, "fixture: a file of version 6")
	rows, err := db.Query(`SELECT snapshot_id, chunk_index, chunk_canonical FROM chunks`)
	require.NoError(t, err)
	for rows.Next() {
		var snap, canon []byte
		var i int
		require.NoError(t, rows.Scan(&snap, &i, &canon))
		want[string(snap)+string(rune('0'+i))] = canon
	}
	require.NoError(t, rows.Err())
	require.NoError(t, db.Close())
	require.Len(t, want, 7, "fixture: 3 + 3 + 1 chunks")

	s, err := sqlitestore.Open(ctx, path)
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, int64(sqlitestore.SchemaVersion), count(t, s, `PRAGMA user_version`))
	require.Zero(t, count(t, s, `SELECT count(*) FROM chunks WHERE body_id IS NOT NULL OR body_at IS NOT NULL`), "the migration rewrote rows")
	require.Zero(t, count(t, s, `SELECT count(*) FROM chunk_bodies`))
	r := receiver(s)
	st, err := r.Status(ctx, vessel)
	require.NoError(t, err)
	for _, snap := range st.Snapshots {
		got, err := stagedChunks(t, s, vessel, snap.ID)
		require.NoError(t, err)
		for _, c := range got {
			require.Equal(t, want[string(snap.ID[:])+string(rune('0'+c.Index))], c.Canonical)
		}
	}

	// The staging snapshot completes; an identical cycle resolves every
	// chunk from rows stored whole, and its rows share the records.
	third := scaledAt(t, vessel, staging, 3)
	origin := finalize.Origin{VesselID: vessel}
	for _, c := range third.Chunks[1:] {
		_, err := r.ReceiveChunk(ctx, origin, c.Canonical())
		require.NoError(t, err)
	}
	out, err := r.Finalize(ctx, vessel, staging)
	require.NoError(t, err)
	require.Equal(t, finalize.Activated, out.Status)
	fourth := scaledAt(t, vessel, uuid.New(), 4)
	require.Zero(t, indexCycle(t, r, fourth))
	require.EqualValues(t, len(fourth.Chunks), count(t, s, `SELECT count(*) FROM chunks WHERE snapshot_id = ? AND body_id IS NOT NULL`, fourth.Manifest.SnapshotID[:]))
}

// scaledAt builds the fixture's snapshot of revision rev: 300 records,
// discovered rev minutes after 2026-11-01 12:00 UTC.
func scaledAt(t *testing.T, vessel, id uuid.UUID, rev int64) *envelope.Snapshot {
	t.Helper()
	snap, err := envelope.Build(envelope.Input{VesselID: vessel, SnapshotID: id, Revision: rev,
		DiscoveredAt: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(rev) * time.Minute), Records: examples.Scaled(300)})
	require.NoError(t, err)
	return snap
}

// TestChunkNamesAnotherBody: a chunk row whose body_id was changed to
// name other records of the vessel is damaged: its checksum covers its
// bytes whole.
func TestChunkNamesAnotherBody(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := open(t)
	vessel := uuid.New()
	snap := buildSnapshot(t, vessel, 1, 300, 0)
	indexCycle(t, receiver(s), snap)
	require.NoError(t, s.Exec(ctx, `UPDATE chunks SET body_id = (SELECT body_id FROM chunks WHERE chunk_index = 1) WHERE chunk_index = 0`))
	_, err := stagedChunks(t, s, vessel, snap.Manifest.SnapshotID)
	require.ErrorIs(t, err, sqlitestore.ErrDamaged)
	require.ErrorContains(t, err, "snapshot "+snap.Manifest.SnapshotID.String()+" chunk 0")
}
