package mysqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/internal/dbtest"
	"github.com/yachtmemory/sourcecatalog/mysqlstore"
	"github.com/yachtmemory/sourcecatalog/outbox"
	"github.com/yachtmemory/sourcecatalog/outbox/outboxtest"
)

// TestOutboxConformance runs the outbox conformance suite on MariaDB, with a
// fresh schema for every store the suite asks for.
func TestOutboxConformance(t *testing.T) {
	dbtest.MySQL(t)
	outboxtest.Run(t, func(t *testing.T) outbox.Store {
		return mysqlstore.NewOutbox(migrated(t))
	})
}

// TestOutboxRows reads a commit back from the tables themselves: one row
// per entity, the manifest at chunk_index -1, the canonical bytes and
// digests as committed, the revision counter in the vessel row.
func TestOutboxRows(t *testing.T) {
	db := migrated(t)
	ctx := context.Background()
	vessel := uuid.New()
	c := outbox.NewCycle(vessel, t0, catalogOf(t, 150, catalog.UnitOf("m"), "environment.depth"))
	com, err := outbox.NewWriter(mysqlstore.NewOutbox(db)).Commit(ctx, c)
	require.NoError(t, err)
	require.Greater(t, len(com.Entries), 2)

	rows, err := db.QueryContext(ctx, `SELECT snapshot_id, chunk_index, revision, entity_type, entity_key, payload, digest, state,
		LOWER(HEX(digest)) = SHA2(payload, 256)
		FROM signalk_catalog_outbox_v2 WHERE vessel_id = ? ORDER BY chunk_index`, vessel[:])
	require.NoError(t, err)
	defer rows.Close()
	var got []outbox.Entry
	for rows.Next() {
		e := outbox.Entry{VesselID: vessel}
		var snap, digest []byte
		var state string
		var hashOfBytes bool
		require.NoError(t, rows.Scan(&snap, &e.ChunkIndex, &e.Revision, &e.EntityType, &e.EntityKey, &e.Payload, &digest, &state, &hashOfBytes))
		e.SnapshotID = uuid.UUID(snap)
		copy(e.Digest[:], digest)
		e.State = outbox.State(state)
		assert.Equal(t, e.ChunkIndex == sourcecatalog.NoIndex, hashOfBytes,
			"only the manifest's digest is the hash of its bytes (a chunk's is its payload_sha256)")
		got = append(got, e)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, com.Entries, got)
	assert.Equal(t, sourcecatalog.NoIndex, got[0].ChunkIndex, "the manifest's row")

	var last int64
	require.NoError(t, db.QueryRowContext(ctx, `SELECT last_revision FROM signalk_catalog_outbox_vessels_v2 WHERE vessel_id = ?`, vessel[:]).Scan(&last))
	assert.Equal(t, t0.UnixMilli(), com.Revision, "a fresh store's revision is floored by the discovery time (SPEC.md §2.4)")
	assert.Equal(t, com.Revision, last, "the floored revision is the counter's")
}

// TestOutboxAcrossProcesses commits cycles of one vessel from separate
// pools, as separate processes would: the vessel row lock serialises them.
func TestOutboxAcrossProcesses(t *testing.T) {
	db := migrated(t)
	vessel := uuid.New()
	const workers = 8
	revs := make([]int64, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own, err := sql.Open("mysql", connDSN(t, db))
			if err != nil {
				errs[i] = err
				return
			}
			defer own.Close()
			c := outbox.NewCycle(vessel, t0, catalogOf(t, 20+i, catalog.UnitOf("m"), fmt.Sprintf("w%d", i)))
			// Counted, so that the revisions show the serialisation.
			com, err := outbox.NewWriter(mysqlstore.NewOutbox(own), outbox.WithRevisionFloor(false)).Commit(context.Background(), c)
			revs[i], errs[i] = com.Revision, err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	slices.Sort(revs)
	assert.Equal(t, []int64{1, 2, 3, 4, 5, 6, 7, 8}, revs)
}

// deadlock looks like the driver's error for MySQL error 1213.
type deadlock struct{ Number uint16 }

func (d *deadlock) Error() string { return fmt.Sprintf("Error %d: Deadlock found", d.Number) }

// TestOutboxRetriesTransientFailures checks that a deadlock re-runs the
// callback in a new transaction, the first run's writes and revision
// rolled back, and that the retries are bounded.
func TestOutboxRetriesTransientFailures(t *testing.T) {
	db := migrated(t)
	ctx := context.Background()
	vessel := uuid.New()
	store := mysqlstore.NewOutbox(db, mysqlstore.WithRetries(2))
	entry := func(rev int64, payload string) outbox.Entry {
		id := uuid.New()
		return outbox.Entry{VesselID: vessel, SnapshotID: id, Revision: rev, EntityType: sourcecatalog.ManifestEntityType,
			EntityKey: id.String(), ChunkIndex: sourcecatalog.NoIndex, Payload: []byte(payload), State: outbox.Pending}
	}

	runs := 0
	var kept outbox.Entry
	err := store.WithVessel(ctx, vessel, func(tx outbox.Tx) error {
		runs++
		rev, err := tx.NextRevision(ctx, 0)
		if err != nil {
			return err
		}
		require.Equal(t, int64(1), rev, "run %d: the first run's revision was rolled back", runs)
		kept = entry(rev, fmt.Sprintf("run %d", runs))
		if err := tx.PutEntries(ctx, []outbox.Entry{kept}); err != nil {
			return err
		}
		if runs == 1 {
			return fmt.Errorf("insert: %w", &deadlock{1213})
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 2, runs)

	runs = 0
	err = store.WithVessel(ctx, vessel, func(tx outbox.Tx) error {
		runs++
		if _, err := tx.NextRevision(ctx, 0); err != nil {
			return err
		}
		return &deadlock{1205}
	})
	require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable)
	var d *deadlock
	require.True(t, errors.As(err, &d), "the last failure is kept")
	assert.Equal(t, 3, runs, "one attempt and two retries")

	require.NoError(t, store.WithVessel(ctx, vessel, func(tx outbox.Tx) error {
		pending, err := tx.Pending(ctx, 10)
		require.NoError(t, err)
		require.Equal(t, []outbox.Entry{kept}, pending, "only the committed run's entry")
		rev, err := tx.NextRevision(ctx, 0)
		require.NoError(t, err)
		require.Equal(t, int64(2), rev)
		return nil
	}))
}

func TestOutboxSchemaChecked(t *testing.T) {
	db := migrated(t)
	ctx := context.Background()
	_, err := db.ExecContext(ctx, "ALTER TABLE signalk_catalog_outbox_v2 DROP COLUMN digest")
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, "DROP TABLE signalk_catalog_outbox_vessels_v2")
	require.NoError(t, err)
	var se *mysqlstore.SchemaError
	require.ErrorAs(t, mysqlstore.CheckSchema(ctx, db), &se)
	assert.Equal(t, []string{"signalk_catalog_outbox_v2.digest", "signalk_catalog_outbox_vessels_v2"}, se.Missing)
}
