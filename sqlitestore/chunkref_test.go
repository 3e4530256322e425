package sqlitestore_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/outbox"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// TestChunkRefLookups: a file of an older schema migrates to version 4,
// whose indexes serve the lookups by payload digest of chunk references
// (with version 5's shared bodies); the lookups find the migrated rows,
// and a damaged row is hash_mismatch, never bytes passed on, and fails no
// transaction.
func TestChunkRefLookups(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v2.db")
	vessel, snap := uuid.New(), uuid.New()
	v2File(t, path, vessel, snap)
	s, err := sqlitestore.Open(ctx, path)
	require.NoError(t, err)
	var payload canonical.Digest
	payload[31] = 2
	find := func() (finalize.StagedChunk, error) {
		var c finalize.StagedChunk
		var ferr error
		err := s.WithVessel(ctx, vessel, func(tx finalize.Tx) error {
			c, ferr = tx.(finalize.PayloadTx).ChunkByPayload(ctx, payload)
			return nil
		})
		if ferr == nil {
			ferr = err // the store does not commit a transaction a read failed in
		}
		return c, ferr
	}
	c, err := find()
	require.NoError(t, err)
	require.Equal(t, finalize.StagedChunk{Snapshot: snap, Index: 0, Canonical: []byte("c"), Payload: payload}, c)
	require.NoError(t, s.WithVessel(ctx, uuid.New(), func(tx finalize.Tx) error {
		_, err := tx.(finalize.PayloadTx).ChunkByPayload(ctx, payload)
		require.ErrorIs(t, err, sourcecatalog.ErrNotFound, "another vessel's chunk")
		return nil
	}))
	require.NoError(t, s.Outbox().WithVessel(ctx, vessel, func(tx outbox.Tx) error {
		var d canonical.Digest
		d[31] = 3
		_, err := tx.(outbox.DeliveredTx).DeliveredChunk(ctx, d, 100)
		require.ErrorIs(t, err, sourcecatalog.ErrNotFound, "a pending manifest is no delivered chunk")
		return nil
	}))

	require.NoError(t, s.Exec(ctx, `UPDATE chunks SET chunk_canonical = x'64'`))
	_, err = find()
	require.ErrorIs(t, err, sourcecatalog.ErrHashMismatch, "a damaged row: the sender sends the chunk whole")
	require.Equal(t, sourcecatalog.ErrHashMismatch, sourcecatalog.Class(err))
	require.Contains(t, err.Error(), "snapshot "+snap.String()+" chunk 0")
	require.NoError(t, s.Close())

	db, err := sql.Open("sqlite3", "file:"+path)
	require.NoError(t, err)
	defer db.Close()
	var version int
	require.NoError(t, db.QueryRow("PRAGMA user_version").Scan(&version))
	require.Equal(t, sqlitestore.SchemaVersion, version)
	for query, index := range map[string]string{
		`SELECT chunk_canonical FROM chunks WHERE vessel_id = x'00' AND payload_sha256 = x'00' LIMIT 1`: "chunks_payload",
		`SELECT payload FROM outbox WHERE vessel_id = x'00' AND digest = x'00' AND revision < 9 AND chunk_index >= 0
			AND body_id IS NULL AND state = 'delivered' ORDER BY revision DESC LIMIT 1`: "outbox_digest",
		`SELECT id, first_revision FROM outbox_bodies WHERE vessel_id = x'00' AND digest = x'00'`: "sqlite_autoindex_outbox_bodies_1",
		`SELECT payload FROM outbox WHERE vessel_id = x'00' AND state = 'delivered' AND revision < 9 AND revision >= 3
			AND body_id = 1 ORDER BY revision DESC, chunk_index DESC LIMIT 1`: "revision>? AND revision<?", // an index's range
	} {
		require.Contains(t, queryPlan(t, db, query), index, "the lookup uses its index")
	}
}

// queryPlan returns SQLite's plan of query with args, its steps joined
// with "; ".
func queryPlan(t *testing.T, db *sql.DB, query string, args ...any) string {
	t.Helper()
	rows, err := db.Query("EXPLAIN QUERY PLAN "+query, args...)
	require.NoError(t, err)
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
		plan = append(plan, detail)
	}
	require.NoError(t, rows.Err())
	return strings.Join(plan, "; ")
}
