package sqlitestore_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/outbox"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// The outbox shares chunk records between entries (schema version 5):
// these tests check that a repeated cycle stores no records again, that
// every entry still reads back byte for byte, that damage to shared
// records is found and never sent, and that a file of version 4 keeps
// publishing what it held.

var bodyVessel = uuid.MustParse("5e2b7d91-3c4a-4f8e-b1d6-0a9c8e7f6d54")

// commitCycle commits a cycle of records for vessel at minute n and
// returns its entries.
func commitCycle(t *testing.T, s *sqlitestore.Store, vessel uuid.UUID, n int, records []*catalog.Record) []outbox.Entry {
	t.Helper()
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(n) * time.Minute)
	c, err := outbox.NewWriter(s.Outbox(), outbox.WithRevisionFloor(false)).Commit(context.Background(), outbox.NewCycle(vessel, at, records))
	require.NoError(t, err)
	return c.Entries
}

// storedEntries reads a snapshot's entries back.
func storedEntries(t *testing.T, s *sqlitestore.Store, vessel, snapshot uuid.UUID) ([]outbox.Entry, error) {
	t.Helper()
	var out []outbox.Entry
	err := s.Outbox().WithVessel(context.Background(), vessel, func(tx outbox.Tx) error {
		var err error
		out, err = tx.Entries(context.Background(), snapshot)
		return err
	})
	return out, err
}

// openBoard opens a store in a new file, closed when the test ends.
func openBoard(t *testing.T) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "board.db"))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// requireStored requires each snapshot's entries to read back as given.
func requireStored(t *testing.T, s *sqlitestore.Store, vessel uuid.UUID, snapshots ...[]outbox.Entry) {
	t.Helper()
	for _, want := range snapshots {
		got, err := storedEntries(t, s, vessel, want[0].SnapshotID)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
}

func count(t *testing.T, s *sqlitestore.Store, query string, args ...any) int64 {
	t.Helper()
	n, err := s.QueryInt(context.Background(), query, args...)
	require.NoError(t, err)
	return n
}

// TestOutboxSharesBodies: a cycle with the records of the last stores no
// records again, only entry rows that name the stored ones, and reads
// back byte for byte; another vessel's cycle shares nothing with it.
func TestOutboxSharesBodies(t *testing.T) {
	t.Parallel()
	s := openBoard(t)
	records := examples.Scaled(150)
	first := commitCycle(t, s, bodyVessel, 1, records)
	require.Greater(t, len(first), 2, "fixture: a snapshot of several chunks")
	bodies := count(t, s, `SELECT count(*) FROM outbox_bodies`)
	require.Equal(t, int64(len(first)-1), bodies, "one body per chunk")

	second := commitCycle(t, s, bodyVessel, 2, records)
	require.Equal(t, bodies, count(t, s, `SELECT count(*) FROM outbox_bodies`), "the identical cycle stored records again")
	requireStored(t, s, bodyVessel, first, second)
	// A chunk's row keeps its payload without the records.
	short := count(t, s, `SELECT count(*) FROM outbox WHERE chunk_index >= 0 AND body_id IS NOT NULL AND length(payload) < 512`)
	require.Equal(t, int64(2*(len(first)-1)), short)

	other := uuid.MustParse("7a1f0c3e-9b2d-4e6f-8a5c-1d3e5f7a9b0c")
	commitCycle(t, s, other, 1, records)
	require.Equal(t, 2*bodies, count(t, s, `SELECT count(*) FROM outbox_bodies`), "a vessel shares records with another")
}

// TestDamagedBody flips one byte inside records two entries share: every
// read of either fails with ErrDamaged naming the body, a publish sends
// nothing and writes nothing, and the next cycle with those records mends
// the body, after which both read back as committed.
func TestDamagedBody(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fs := newMemFS()
	defer fs.unregister()
	s := openFS(t, fs)
	records := examples.Scaled(150)
	first := commitCycle(t, s, bodyVessel, 1, records)
	second := commitCycle(t, s, bodyVessel, 2, records)
	require.NoError(t, s.Close())

	chunk := first[1].Payload
	records0 := chunk[bytes.Index(chunk, []byte(`"records":[`))+len(`"records":[`) : bytes.LastIndex(chunk, []byte(`],"revision":`))]
	damaged := flip(t, fs.file(dbPath), records0)
	fs.set(dbPath, damaged)
	s = openFS(t, fs)
	defer s.Close()
	sent := 0
	for name, call := range map[string]func() error{
		"Entries first":  func() error { _, err := storedEntries(t, s, bodyVessel, first[0].SnapshotID); return err },
		"Entries second": func() error { _, err := storedEntries(t, s, bodyVessel, second[0].SnapshotID); return err },
		"publish": func() error {
			_, err := outbox.NewPublisher(s.Outbox(), bodyVessel, countingTransport{&sent}, outbox.WithReceiverV2(true)).Publish(ctx)
			return err
		},
	} {
		before := fs.file(dbPath)
		err := call()
		require.ErrorIs(t, err, sqlitestore.ErrDamaged, name)
		require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable, name)
		require.ErrorContains(t, err, "outbox body", name)
		require.Equal(t, before, fs.file(dbPath), "%s wrote the file", name)
	}
	require.Zero(t, sent, "a publish of damaged records sent something")

	commitCycle(t, s, bodyVessel, 3, records) // mends the body
	requireStored(t, s, bodyVessel, first, second)
}

// TestBodyReference: an entry naming a body that is not there, or
// another vessel's (even one holding the same records), or putting it
// outside its payload, is damaged.
func TestBodyReference(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openBoard(t)
	records := examples.Scaled(150)
	mine := commitCycle(t, s, bodyVessel, 1, records)
	other := uuid.MustParse("7a1f0c3e-9b2d-4e6f-8a5c-1d3e5f7a9b0c")
	commitCycle(t, s, other, 1, records)
	theirs := count(t, s, `SELECT id FROM outbox_bodies WHERE vessel_id = ? AND digest = ?`, other[:], mine[1].Digest[:])
	chunk0 := `FROM outbox WHERE snapshot_id = ? AND chunk_index = 0`
	require.Equal(t, int64(1), count(t, s, `SELECT compact `+chunk0, mine[0].SnapshotID[:]), "fixture: chunk 0 stored compact")
	id := count(t, s, `SELECT body_id `+chunk0, mine[0].SnapshotID[:])
	// Chunk 0 whole but for its records, as a store before version 8
	// wrote it: body_at is where they go.
	part, at := splitRecords(mine[1].Payload)
	whole := `UPDATE outbox SET entity_type = ?, entity_key = ?, payload = ?, body_at = ?, compact = 0 WHERE snapshot_id = ? AND chunk_index = 0`
	for name, update := range map[string]string{
		"missing body":        `UPDATE outbox SET body_id = 1000000 WHERE snapshot_id = ? AND chunk_index = 0`,
		"another vessel's":    `UPDATE outbox SET body_id = ` + strconv.FormatInt(theirs, 10) + ` WHERE snapshot_id = ? AND chunk_index = 0`,
		"outside the payload": `UPDATE outbox SET body_at = 100000 WHERE snapshot_id = ? AND chunk_index = 0`,
		"no place":            `UPDATE outbox SET body_at = NULL WHERE snapshot_id = ? AND chunk_index = 0`,
	} {
		for _, stored := range []string{"compact", "whole"} {
			if stored == "whole" {
				require.NoError(t, s.Exec(ctx, whole, mine[1].EntityType, mine[1].EntityKey, part, at, mine[0].SnapshotID[:]))
				requireStored(t, s, bodyVessel, mine)
			}
			require.NoError(t, s.Exec(ctx, update, mine[0].SnapshotID[:]))
			_, err := storedEntries(t, s, bodyVessel, mine[0].SnapshotID)
			if name == "no place" && stored == "compact" {
				require.NoError(t, err, "a compact row's body goes where its rebuild says")
			} else {
				require.ErrorIs(t, err, sqlitestore.ErrDamaged, "%s (%s)", name, stored)
				require.ErrorContains(t, err, "(chunk 0)", "%s (%s)", name, stored)
			}
			require.NoError(t, s.Exec(ctx, `UPDATE outbox SET entity_type = '', entity_key = '', payload = x'', body_id = ?, body_at = NULL, compact = 1
				WHERE snapshot_id = ? AND chunk_index = 0`, id, mine[0].SnapshotID[:]))
		}
	}
	requireStored(t, s, bodyVessel, mine)
}

// TestMigrateV4Outbox opens a board file of schema version 4, written
// by the code before version 5 (testdata/outbox_v4.db.gz: the example
// boat's cycle 1, delivered, and cycle 2, pending): it migrates, its
// pending entries publish byte for byte as stored, its delivered chunks
// still answer chunk references, and the next cycles share records.
func TestMigrateV4Outbox(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v4.db")
	gunzipTo(t, "testdata/outbox_v4.db.gz", path)
	vessel := uuid.MustParse("3c1e8f52-7a4d-4b9e-a0c6-51d2e9f7b834")
	old := readOldOutbox(t, path, 4, `SELECT entity_key, snapshot_id, payload, state FROM outbox ORDER BY revision, chunk_index`)

	s, err := sqlitestore.Open(ctx, path)
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, int64(sqlitestore.SchemaVersion), count(t, s, `PRAGMA user_version`))
	require.Zero(t, count(t, s, `SELECT count(*) FROM outbox WHERE body_id IS NOT NULL OR body_at IS NOT NULL`), "the migration rewrote rows")
	old.requirePublished(t, s, vessel)
	old.requireDeliveredChunk(t, s, vessel, uuid.MustParse("a5b0c1d2-e3f4-4a5b-8c6d-7e8f9a0b1c2d"))

	// New cycles: the first stores its records, the next shares them.
	records := examples.WithChangedUnits(examples.Boat(), 1)
	third := commitCycle(t, s, vessel, 3, records)
	bodies := count(t, s, `SELECT count(*) FROM outbox_bodies`)
	require.NotZero(t, bodies)
	fourth := commitCycle(t, s, vessel, 4, records)
	require.Equal(t, bodies, count(t, s, `SELECT count(*) FROM outbox_bodies`))
	requireStored(t, s, vessel, third, fourth)
}

// An oldOutbox is a board file of an earlier schema version as SQL reads
// it, before this build opens it: each entry's payload whole and its
// snapshot, by entity key, and the keys of the pending entries and of the
// others, each in the order they are sent.
type oldOutbox struct {
	payload            map[string][]byte
	snapshot           map[string]uuid.UUID
	pending, delivered []string
}

// readOldOutbox reads the file at path, which must be of schema version,
// with query, which selects entity_key, snapshot_id, the payload whole and
// state of every entry in the order they are sent. The file must hold
// pending entries.
func readOldOutbox(t *testing.T, path string, version int, query string) oldOutbox {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path)
	require.NoError(t, err)
	defer db.Close()
	var v int
	require.NoError(t, db.QueryRow("PRAGMA user_version").Scan(&v))
	require.Equal(t, version, v, "fixture: a file of version %d", version)
	rows, err := db.Query(query)
	require.NoError(t, err)
	defer rows.Close()
	old := oldOutbox{payload: map[string][]byte{}, snapshot: map[string]uuid.UUID{}}
	for rows.Next() {
		var key, state string
		var snap, payload []byte
		require.NoError(t, rows.Scan(&key, &snap, &payload, &state))
		old.payload[key], old.snapshot[key] = payload, uuid.UUID(snap)
		if state == string(outbox.Pending) {
			old.pending = append(old.pending, key)
		} else {
			old.delivered = append(old.delivered, key)
		}
	}
	require.NoError(t, rows.Err())
	require.NotEmpty(t, old.pending, "fixture: pending entries")
	return old
}

// requirePublished publishes the pending entries of vessel in s and
// requires them to be old's pending ones, in order, byte for byte.
func (old oldOutbox) requirePublished(t *testing.T, s *sqlitestore.Store, vessel uuid.UUID) {
	t.Helper()
	var sent recordingTransport
	pass, err := outbox.NewPublisher(s.Outbox(), vessel, &sent, outbox.WithReceiverV2(true)).Publish(context.Background())
	require.NoError(t, err)
	require.Equal(t, len(old.pending), pass.Sent)
	require.Len(t, sent.entries, len(old.pending))
	for i, e := range sent.entries {
		require.Equal(t, old.pending[i], e.EntityKey)
		require.Equal(t, old.payload[e.EntityKey], e.Payload, "entry %s", e.EntityKey)
	}
}

// requireDeliveredChunk requires the chunk 0 of snapshot, delivered, to
// answer a reference to its digest with old's bytes.
func (old oldOutbox) requireDeliveredChunk(t *testing.T, s *sqlitestore.Store, vessel, snapshot uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, s.Outbox().WithVessel(ctx, vessel, func(tx outbox.Tx) error {
		d, err := tx.Entries(ctx, snapshot)
		require.NoError(t, err)
		got, err := tx.(outbox.DeliveredTx).DeliveredChunk(ctx, d[1].Digest, 100)
		require.NoError(t, err)
		require.Equal(t, old.payload[got.EntityKey], got.Payload)
		return nil
	}))
}

// recordingTransport keeps what it sends and answers each with its
// receipt.
type recordingTransport struct{ entries []outbox.Entry }

func (r *recordingTransport) Send(_ context.Context, e outbox.Entry) (envelope.Receipt, error) {
	e.Payload = bytes.Clone(e.Payload)
	r.entries = append(r.entries, e)
	return e.Receipt(), nil
}

// gunzipTo writes the gzipped file src, unzipped, to dst.
func gunzipTo(t *testing.T, src, dst string) {
	t.Helper()
	f, err := os.Open(src)
	require.NoError(t, err)
	defer f.Close()
	z, err := gzip.NewReader(f)
	require.NoError(t, err)
	data, err := io.ReadAll(z)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(dst, data, 0o600))
}

// TestBodyFirstRevision: entries put in falling revisions (the Writer
// never does; a Store takes them) share a body whose first_revision
// follows the lowest, so that a delivered chunk below the first put is
// still found by its digest.
func TestBodyFirstRevision(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openBoard(t)
	records := examples.Scaled(150)
	build := func(rev int64) []outbox.Entry {
		snap, err := envelope.Build(envelope.Input{VesselID: bodyVessel, SnapshotID: uuid.New(), Revision: rev,
			DiscoveredAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), Records: records})
		require.NoError(t, err)
		return outbox.Entries(snap)
	}
	high, low := build(5), build(3)
	for _, entries := range [][]outbox.Entry{high, low} {
		require.NoError(t, s.Outbox().WithVessel(ctx, bodyVessel, func(tx outbox.Tx) error { return tx.PutEntries(ctx, entries) }))
	}
	require.NoError(t, s.Outbox().WithVessel(ctx, bodyVessel, func(tx outbox.Tx) error {
		if err := tx.SetState(ctx, low[1].SnapshotID, low[1].ChunkIndex, outbox.Delivered); err != nil {
			return err
		}
		got, err := tx.(outbox.DeliveredTx).DeliveredChunk(ctx, low[1].Digest, 4)
		require.NoError(t, err)
		require.Equal(t, low[1].SnapshotID, got.SnapshotID)
		require.Equal(t, low[1].Payload, got.Payload)
		return nil
	}))
	for _, entries := range [][]outbox.Entry{high, low} {
		got, err := storedEntries(t, s, bodyVessel, entries[0].SnapshotID)
		require.NoError(t, err)
		for i := range got {
			got[i].State = outbox.Pending
		}
		require.Equal(t, entries, got)
	}
}

// TestBodyNeedsItsDigest: records that do not have their entry's digest
// are stored with the entry and shared with none, so that an entry put
// with tampered bytes cannot stand in for the records of a later one with
// that digest.
func TestBodyNeedsItsDigest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openBoard(t)
	genuine := commitCycle(t, s, bodyVessel, 1, examples.Scaled(150))
	// The same cycle, its chunk 0's records tampered under its digest, put
	// in another vessel's outbox first.
	other := uuid.MustParse("7a1f0c3e-9b2d-4e6f-8a5c-1d3e5f7a9b0c")
	tampered := make([]outbox.Entry, len(genuine))
	for i, e := range genuine {
		e.VesselID = other
		tampered[i] = e
	}
	at := bytes.Index(tampered[1].Payload, []byte(`"records":[`)) + 40
	tampered[1].Payload = bytes.Clone(tampered[1].Payload)
	tampered[1].Payload[at] ^= 0x01
	require.NoError(t, s.Outbox().WithVessel(ctx, other, func(tx outbox.Tx) error { return tx.PutEntries(ctx, tampered[1:2]) }))
	require.Zero(t, count(t, s, `SELECT count(*) FROM outbox_bodies WHERE vessel_id = ?`, other[:]), "tampered records were shared")
	fine := make([]outbox.Entry, len(genuine))
	for i, e := range genuine {
		e.VesselID, e.SnapshotID, e.Revision = other, uuid.New(), e.Revision+1 // the store reads no bytes of these
		fine[i] = e
	}
	require.NoError(t, s.Outbox().WithVessel(ctx, other, func(tx outbox.Tx) error { return tx.PutEntries(ctx, fine[1:2]) }))
	requireStored(t, s, other, fine[1:2], tampered[1:2])
}
