package sqlitestore_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/outbox"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// Chunk entries are stored compact (schema version 8): these tests check
// that the Writer's chunks are, that they read back byte for byte, that
// an entry the store cannot rebuild exactly is stored as before, that a
// compact row changed at rest is damaged, and that a file of version 6
// keeps publishing what it held.

// splitRecords returns a chunk entry's payload without its records
// array's content, and where the content goes.
func splitRecords(payload []byte) (part []byte, at int) {
	at = bytes.Index(payload, []byte(`"records":[`)) + len(`"records":[`)
	end := bytes.LastIndex(payload, []byte(`],"revision":`))
	return append(append([]byte{}, payload[:at]...), payload[end:]...), at
}

// TestCompactEntries: every chunk entry the Writer commits is stored
// compact — its entity_type, entity_key and payload empty, body_at NULL —
// in the first cycle and in an identical one, and the manifest without
// its type and key, its payload whole; each reads back and publishes byte for byte.
func TestCompactEntries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openBoard(t)
	records := examples.Scaled(150)
	first := commitCycle(t, s, bodyVessel, 1, records)
	second := commitCycle(t, s, bodyVessel, 2, records)
	chunks := int64(len(first) - 1)
	require.Greater(t, chunks, int64(1), "fixture: a snapshot of several chunks")
	for _, snap := range [][]outbox.Entry{first, second} {
		id := snap[0].SnapshotID[:]
		require.Equal(t, chunks, count(t, s, `SELECT count(*) FROM outbox WHERE snapshot_id = ? AND chunk_index >= 0 AND compact = 1
			AND entity_type = '' AND entity_key = '' AND length(payload) = 0 AND body_at IS NULL AND body_id IS NOT NULL`, id),
			"the chunk entries are stored compact")
		require.Equal(t, int64(1), count(t, s, `SELECT count(*) FROM outbox WHERE snapshot_id = ? AND chunk_index = -1 AND compact = 1
			AND entity_type = '' AND entity_key = '' AND length(payload) > 0 AND body_id IS NULL`, id),
			"the manifest is stored compact, its payload whole")
	}
	requireStored(t, s, bodyVessel, first, second)

	var sent recordingTransport
	_, err := outbox.NewPublisher(s.Outbox(), bodyVessel, &sent, outbox.WithReceiverV2(true)).Publish(ctx)
	require.NoError(t, err)
	require.Len(t, sent.entries, len(first)+len(second))
	for i, e := range append(append([]outbox.Entry{}, first...), second...) {
		require.Equal(t, e.EntityKey, sent.entries[i].EntityKey)
		require.Equal(t, e.Payload, sent.entries[i].Payload, "entry %s", e.EntityKey)
	}
}

// TestCompactOnlyWhenRebuilt: a chunk entry whose type, key, or bytes
// around the records it shares are not what the store rebuilds is stored
// whole; one that shares no records (its array is not where the Writer
// puts it) keeps its payload whole and may drop its type and key; each
// reads back byte for byte. The same entry as the Writer builds it keeps
// none of them.
func TestCompactOnlyWhenRebuilt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openBoard(t)
	genuine := commitCycle(t, s, bodyVessel, 1, examples.Scaled(150))
	revision := genuine[0].Revision
	for _, c := range []struct {
		name      string
		change    func(*outbox.Entry)
		key, part bool // rebuilt: type and key; bytes around the records
	}{
		{"as built", func(*outbox.Entry) {}, true, true},
		{"another key", func(e *outbox.Entry) { e.EntityKey += "x" }, false, false},
		{"another type", func(e *outbox.Entry) { e.EntityType += "x" }, false, false},
		{"a field more", func(e *outbox.Entry) { e.Payload = append([]byte(`{"a":1,`), e.Payload[1:]...) }, false, false},
		{"spaced", func(e *outbox.Entry) {
			e.Payload = bytes.Replace(e.Payload, []byte(`],"revision":`), []byte(`], "revision":`), 1)
		}, true, false},
		{"another snapshot in the bytes", func(e *outbox.Entry) {
			e.Payload = bytes.Replace(e.Payload, []byte(e.SnapshotID.String()), []byte(uuid.NewString()), 1)
		}, false, false},
	} {
		// The entry genuine[1] (chunk 0) is, in a snapshot of its own.
		e := genuine[1]
		revision++
		e.SnapshotID, e.Revision = uuid.New(), revision
		e.EntityKey = envelope.ChunkKey(e.SnapshotID, 0)
		e.Payload = bytes.Replace(genuine[1].Payload, []byte(genuine[1].SnapshotID.String()), []byte(e.SnapshotID.String()), 1)
		e.Payload = bytes.Replace(e.Payload, fmt.Appendf(nil, `],"revision":%d,`, genuine[1].Revision), fmt.Appendf(nil, `],"revision":%d,`, revision), 1)
		c.change(&e)
		require.NoError(t, s.Outbox().WithVessel(ctx, bodyVessel, func(tx outbox.Tx) error { return tx.PutEntries(ctx, []outbox.Entry{e}) }))
		key := count(t, s, `SELECT compact FROM outbox WHERE snapshot_id = ?`, e.SnapshotID[:])
		part := count(t, s, `SELECT length(payload) = 0 FROM outbox WHERE snapshot_id = ?`, e.SnapshotID[:])
		require.Equal(t, c.key, key == 1, "%s: type and key rebuilt", c.name)
		require.Equal(t, c.part, part == 1, "%s: bytes around the records rebuilt", c.name)
		requireStored(t, s, bodyVessel, []outbox.Entry{e})
	}
}

// TestCompactDamaged: a compact row whose columns changed at rest — one
// the rebuild reads, or one it keeps empty — reads as damaged, naming the
// entry, and so does one that says it is not compact.
func TestCompactDamaged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	records := examples.Scaled(150)
	for name, set := range map[string]string{
		"revision":    `revision = revision + 1000`,
		"digest":      `digest = zeroblob(32)`,
		"entity_type": `entity_type = 'signalk_catalog_chunk_v2'`,
		"entity_key":  `entity_key = 'x'`,
		"payload":     `payload = x'7b7d'`,
		"body_at":     `body_at = 0`,
		"compact":     `compact = 0`,
	} {
		s := openBoard(t)
		mine := commitCycle(t, s, bodyVessel, 1, records)
		requireStored(t, s, bodyVessel, mine)
		require.NoError(t, s.Exec(ctx, `UPDATE outbox SET `+set+` WHERE snapshot_id = ? AND chunk_index = 1`, mine[0].SnapshotID[:]))
		_, err := storedEntries(t, s, bodyVessel, mine[0].SnapshotID)
		require.ErrorIs(t, err, sqlitestore.ErrDamaged, name)
		require.ErrorContains(t, err, "(chunk 1)", name)
	}
}

// TestPendingUsesItsIndex: the queries of the pending entries search
// outbox_pending, which holds those alone, rather than the vessel's rows.
func TestPendingUsesItsIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "board.db")
	s, err := sqlitestore.Open(ctx, path)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	db, err := sql.Open("sqlite3", "file:"+path)
	require.NoError(t, err)
	defer db.Close()
	for query, params := range sqlitestore.PendingQueries {
		require.Contains(t, queryPlan(t, db, query, make([]any, params)...), "INDEX outbox_pending (vessel_id=?)", query)
	}
	var partial string
	require.NoError(t, db.QueryRow(`SELECT sql FROM sqlite_schema WHERE name = 'outbox_pending'`).Scan(&partial))
	require.Contains(t, partial, "WHERE state = 'pending'", "outbox_pending holds the pending entries alone")
}

// TestMigrateV6Outbox opens a board file of schema version 6, written by
// the code of version 6 (testdata/outbox_v6.db.gz: the example boat's
// cycles 1 and 2, delivered, 3, pending, and 4, pending, of a changed
// unit; chunk entries share their records): it migrates without
// rewriting a row, its pending entries publish byte for byte as stored,
// its delivered chunks still answer chunk references, and the next
// cycles are stored compact.
func TestMigrateV6Outbox(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v6.db")
	gunzipTo(t, "testdata/outbox_v6.db.gz", path)
	vessel := uuid.MustParse("3c1e8f52-7a4d-4b9e-a0c6-51d2e9f7b834")
	// What version 6 stored: the payload whole, its body put back.
	old := readOldOutbox(t, path, 6, `SELECT o.entity_key, o.snapshot_id, CASE WHEN o.body_id IS NULL THEN o.payload
			ELSE CAST(substr(o.payload, 1, o.body_at) || b.body || substr(o.payload, o.body_at + 1) AS BLOB) END, o.state
		FROM outbox AS o LEFT JOIN outbox_bodies AS b ON b.id = o.body_id ORDER BY o.revision, o.chunk_index`)
	var delivered uuid.UUID
	for _, key := range old.delivered {
		if strings.HasSuffix(key, "/1") {
			delivered = old.snapshot[key]
		}
	}
	require.NotEqual(t, uuid.UUID{}, delivered, "fixture: a delivered chunk")

	s, err := sqlitestore.Open(ctx, path)
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, int64(sqlitestore.SchemaVersion), count(t, s, `PRAGMA user_version`))
	require.Zero(t, count(t, s, `SELECT count(*) FROM outbox WHERE compact != 0`), "the migration rewrote rows")
	require.NotZero(t, count(t, s, `SELECT count(*) FROM outbox WHERE body_id IS NOT NULL`), "fixture: entries sharing their records")
	check, err := s.IntegrityCheck(ctx)
	require.NoError(t, err)
	require.Equal(t, "ok", check)
	old.requirePublished(t, s, vessel)
	old.requireDeliveredChunk(t, s, vessel, delivered)

	// New cycles share the records held, and are stored compact.
	bodies := count(t, s, `SELECT count(*) FROM outbox_bodies`)
	next := commitCycle(t, s, vessel, 5, examples.Boat())
	require.Equal(t, bodies, count(t, s, `SELECT count(*) FROM outbox_bodies`))
	require.Equal(t, int64(len(next)), count(t, s, `SELECT count(*) FROM outbox WHERE snapshot_id = ? AND compact = 1`, next[0].SnapshotID[:]))
	requireStored(t, s, vessel, next)
}
