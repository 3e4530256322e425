package mysqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
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
	"github.com/yachtmemory/sourcecatalog/internal/dbtest"
	"github.com/yachtmemory/sourcecatalog/mysqlstore"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 123456789, time.UTC)

// catalogOf returns n paths with one observation each and one source.
func catalogOf(t testing.TB, n int, unit catalog.Unit, prefix string) []*catalog.Record {
	var records []*catalog.Record
	for i := range n {
		path := fmt.Sprintf("%s.sensor%03d", prefix, i)
		p, err := catalog.NewPath(catalog.Path{Path: path, Unit: unit})
		require.NoError(t, err)
		o, err := catalog.NewObservation(catalog.Observation{Path: path, SourceRef: "can0.c0788c00e7e04312", ValueType: catalog.Number})
		require.NoError(t, err)
		records = append(records, p, o)
	}
	src, err := catalog.NewSource(catalog.Source{SourceRef: "can0.c0788c00e7e04312"})
	require.NoError(t, err)
	return append(records, src)
}

func build(t testing.TB, vessel uuid.UUID, rev int64, records []*catalog.Record) *envelope.Snapshot {
	snap, err := envelope.Build(envelope.Input{VesselID: vessel, SnapshotID: uuid.New(), Revision: rev,
		DiscoveredAt: t0.Add(time.Duration(rev) * time.Hour), Records: records})
	require.NoError(t, err)
	return snap
}

func deliver(t testing.TB, r *finalize.Receiver, snap *envelope.Snapshot) {
	ctx := context.Background()
	o := finalize.Origin{VesselID: snap.Manifest.VesselID}
	_, err := r.ReceiveManifest(ctx, o, snap.Manifest.Canonical())
	require.NoError(t, err)
	for _, c := range snap.Chunks {
		_, err := r.ReceiveChunk(ctx, o, c.Canonical())
		require.NoError(t, err)
	}
}

func activate(t testing.TB, r *finalize.Receiver, snap *envelope.Snapshot) {
	deliver(t, r, snap)
	out, err := r.Finalize(context.Background(), snap.Manifest.VesselID, snap.Manifest.SnapshotID)
	require.NoError(t, err)
	require.Equal(t, finalize.Activated, out.Status)
}

func TestUnitTriStateAndCaseSensitivePaths(t *testing.T) {
	db := migrated(t)
	r := finalize.NewReceiver(mysqlstore.New(db))
	vessel := uuid.New()
	mk := func(path string, u catalog.Unit) []*catalog.Record {
		p, err := catalog.NewPath(catalog.Path{Path: path, Unit: u})
		require.NoError(t, err)
		o, err := catalog.NewObservation(catalog.Observation{Path: path, SourceRef: "s", ValueType: catalog.String})
		require.NoError(t, err)
		return []*catalog.Record{p, o}
	}
	var records []*catalog.Record
	records = append(records, mk("navigation.state", catalog.NoUnit())...)     // null
	records = append(records, mk("navigation.State", catalog.Unit{})...)       // absent, differs only in case
	records = append(records, mk("navigation.state ", catalog.UnitOf("m"))...) // differs by a trailing space
	src, _ := catalog.NewSource(catalog.Source{SourceRef: "s"})
	records = append(records, src)
	activate(t, r, build(t, vessel, 1, records))

	cat, err := r.Active(context.Background(), vessel)
	require.NoError(t, err)
	units := map[string]string{}
	for _, it := range cat.Items {
		if it.Key.Kind != catalog.KindPath {
			continue
		}
		rec, err := catalog.Decode(it.Record)
		require.NoError(t, err)
		p, _ := rec.AsPath()
		units[it.Key.Path] = p.Unit.String()
		assert.Equal(t, t0.Add(time.Hour), it.FirstSeen.At, "nanoseconds survive")
	}
	assert.Equal(t, map[string]string{"navigation.state": "null", "navigation.State": "(absent)", "navigation.state ": "m"}, units)

	var present, null int
	require.NoError(t, db.QueryRow(`SELECT SUM(unit_present), SUM(unit IS NULL) FROM signalk_catalog_paths_v2`).Scan(&present, &null))
	assert.Equal(t, 2, present, "null and string units are present, the absent one is not")
	assert.Equal(t, 2, null, "absent and null have no unit text")
}

func TestConcurrentFinalizeFromSeveralConnections(t *testing.T) {
	db := migrated(t)
	vessel := uuid.New()
	snap := build(t, vessel, 1, catalogOf(t, 150, catalog.UnitOf("m"), "environment.depth"))
	deliver(t, finalize.NewReceiver(mysqlstore.New(db)), snap)

	const workers = 8
	var wg sync.WaitGroup
	outs := make([]finalize.Outcome, workers)
	errs := make([]error, workers)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each worker has its own Receiver and pool, as separate
			// processes would.
			own, _ := sql.Open("mysql", connDSN(t, db))
			defer own.Close()
			outs[i], errs[i] = finalize.NewReceiver(mysqlstore.New(own)).Finalize(context.Background(), vessel, snap.Manifest.SnapshotID)
		}()
	}
	wg.Wait()
	activated := 0
	for i := range workers {
		require.NoError(t, errs[i])
		switch outs[i].Status {
		case finalize.Activated:
			activated++
		case finalize.AlreadyActive:
		default:
			t.Errorf("worker %d: %s", i, outs[i].Status)
		}
	}
	assert.Equal(t, 1, activated, "exactly one activation")
}

// connDSN returns the DSN of db's schema.
func connDSN(t testing.TB, db *sql.DB) string {
	var name string
	require.NoError(t, db.QueryRow("SELECT DATABASE()").Scan(&name))
	cfg := dbtest.MySQL(t).Clone()
	cfg.DBName = name
	return cfg.FormatDSN()
}

// pausingStore pauses every transaction that writes inventory items right
// after the write, until the test lets it go.
type pausingStore struct {
	finalize.Store
	paused chan struct{}
	resume chan struct{}
}

func (p *pausingStore) WithVessel(ctx context.Context, id uuid.UUID, fn func(finalize.Tx) error) error {
	return p.Store.WithVessel(ctx, id, func(tx finalize.Tx) error { return fn(&pausingTx{tx, p}) })
}

type pausingTx struct {
	finalize.Tx
	p *pausingStore
}

func (t *pausingTx) PutItems(ctx context.Context, items []finalize.Item) error {
	if err := t.Tx.PutItems(ctx, items); err != nil {
		return err
	}
	t.p.paused <- struct{}{}
	<-t.p.resume
	return nil
}

func TestKilledSessionMidActivation(t *testing.T) {
	db := migrated(t)
	ctx := context.Background()
	vessel := uuid.New()
	plain := finalize.NewReceiver(mysqlstore.New(db))
	a := build(t, vessel, 1, catalogOf(t, 120, catalog.UnitOf("m"), "environment.depth"))
	activate(t, plain, a)
	before, err := plain.Active(ctx, vessel)
	require.NoError(t, err)

	b := build(t, vessel, 2, catalogOf(t, 130, catalog.UnitOf("ft"), "environment.depth"))
	deliver(t, plain, b)
	ps := &pausingStore{Store: mysqlstore.New(db, mysqlstore.WithRetries(0)), paused: make(chan struct{}), resume: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := finalize.NewReceiver(ps).Finalize(ctx, vessel, b.Manifest.SnapshotID)
		done <- err
	}()
	<-ps.paused
	// The activation has written items and holds an open transaction.
	var thread int64
	// Only this test's schema: other tests may share the server.
	require.NoError(t, db.QueryRow(`SELECT t.trx_mysql_thread_id FROM information_schema.INNODB_TRX t
		JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id
		WHERE t.trx_rows_modified > 0 AND p.DB = DATABASE()`).Scan(&thread))
	_, err = db.Exec(fmt.Sprintf("KILL %d", thread))
	require.NoError(t, err)
	close(ps.resume)
	require.Error(t, <-done, "the killed activation fails")

	fresh := finalize.NewReceiver(mysqlstore.New(db))
	mid, err := fresh.Active(ctx, vessel)
	require.NoError(t, err)
	assert.Equal(t, before, mid, "the old catalog is still active, untouched")

	outs, err := fresh.Reconcile(ctx, vessel)
	require.NoError(t, err)
	require.Len(t, outs, 1)
	assert.Equal(t, finalize.Activated, outs[0].Status)
	after, err := fresh.Active(ctx, vessel)
	require.NoError(t, err)
	assert.Equal(t, b.Manifest.SnapshotID, after.SnapshotID)
}

// v1Tables creates the v1 tables with sample rows, as an installed v1
// receiver would have them.
var v1Tables = []string{
	`CREATE TABLE signalk_catalog_state (vessel_id CHAR(36) PRIMARY KEY, revision INT, payload TEXT, updated_at DATETIME)`,
	`CREATE TABLE signalk_discovery_snapshots (id INT AUTO_INCREMENT PRIMARY KEY, vessel_id CHAR(36), taken_at DATETIME, body JSON)`,
	`CREATE TABLE signalk_discovered_paths (vessel_id CHAR(36), path VARCHAR(255), unit VARCHAR(32), first_seen DATETIME, PRIMARY KEY (vessel_id, path))`,
	`CREATE TABLE signalk_discovered_sources (vessel_id CHAR(36), source_ref VARCHAR(255), label VARCHAR(255), PRIMARY KEY (vessel_id, source_ref))`,
	`INSERT INTO signalk_catalog_state VALUES ('8d4b0a52-0000-4000-8000-000000000001', 7, '{"paths":3}', '2025-01-01 00:00:00')`,
	`INSERT INTO signalk_discovery_snapshots (vessel_id, taken_at, body) VALUES ('8d4b0a52-0000-4000-8000-000000000001', '2025-01-01 00:00:00', '{"a": [1, 2]}')`,
	`INSERT INTO signalk_discovered_paths VALUES ('8d4b0a52-0000-4000-8000-000000000001', 'navigation.speedOverGround', 'm/s', '2025-01-01 00:00:00')`,
	`INSERT INTO signalk_discovered_sources VALUES ('8d4b0a52-0000-4000-8000-000000000001', 'can0.c0788c00e7e04312', 'can0')`,
}

func dumpV1(t *testing.T, db *sql.DB) string {
	var b strings.Builder
	for _, table := range []string{"signalk_catalog_state", "signalk_discovery_snapshots", "signalk_discovered_paths", "signalk_discovered_sources"} {
		var name, create string
		require.NoError(t, db.QueryRow("SHOW CREATE TABLE "+table).Scan(&name, &create))
		b.WriteString(create + "\n")
		var sum sql.NullInt64
		require.NoError(t, db.QueryRow("CHECKSUM TABLE "+table+" EXTENDED").Scan(&name, &sum))
		fmt.Fprintf(&b, "%s checksum %v\n", table, sum)
	}
	return b.String()
}

func TestV1TablesUntouched(t *testing.T) {
	db, _ := testSchema(t)
	for _, stmt := range v1Tables {
		_, err := db.Exec(stmt)
		require.NoError(t, err)
	}
	before := dumpV1(t, db)
	require.NoError(t, mysqlstore.Migrate(context.Background(), db))
	r := finalize.NewReceiver(mysqlstore.New(db))
	vessel := uuid.New()
	activate(t, r, build(t, vessel, 1, catalogOf(t, 50, catalog.UnitOf("m"), "navigation")))
	activate(t, r, build(t, vessel, 2, catalogOf(t, 40, catalog.NoUnit(), "navigation")))
	require.NoError(t, r.Prune(context.Background(), vessel, 0))
	assert.Equal(t, before, dumpV1(t, db), "v1 tables are byte-identical after a full cycle")
}

// TestLostTransactionCommitsNothing: when the server ends a transaction
// behind the callback's back (as a Galera node does to a local transaction
// a replicated one aborts), nothing that ran afterwards commits, and the
// transaction is retried from the start.
func TestLostTransactionCommitsNothing(t *testing.T) {
	db := migrated(t)
	db.SetMaxOpenConns(1) // every check below sees the connection the store used
	ctx := context.Background()
	vessel := uuid.New()
	snap := build(t, vessel, 1, catalogOf(t, 40, catalog.UnitOf("m"), "environment.depth"))
	deliver(t, finalize.NewReceiver(mysqlstore.New(db)), snap)
	count := func(query string) int {
		var n int
		require.NoError(t, db.QueryRow(query).Scan(&n))
		return n
	}
	requireCleanSession := func() {
		var autocommit, inTx int
		require.NoError(t, db.QueryRow("SELECT @@autocommit, @@in_transaction").Scan(&autocommit, &inTx))
		require.Equal(t, 1, autocommit, "the pooled connection is back in autocommit mode")
		require.Equal(t, 0, inTx, "with no transaction open")
	}

	always := mysqlstore.New(db, mysqlstore.WithRetries(2))
	mysqlstore.EndTransactions(always, mysqlstore.AfterLock, 3)
	_, err := finalize.NewReceiver(always).Finalize(ctx, vessel, snap.Manifest.SnapshotID)
	requireClass(t, err, sourcecatalog.ErrStoreUnavailable)
	require.ErrorIs(t, err, mysqlstore.ErrTransactionLost)
	assert.Zero(t, count("SELECT COUNT(*) FROM signalk_catalog_paths_v2"), "no item of the lost activations committed")
	assert.Zero(t, count("SELECT COUNT(*) FROM signalk_catalog_vessels_v2 WHERE active_snapshot_id IS NOT NULL"), "nothing activated")
	assert.Equal(t, 1, count("SELECT COUNT(*) FROM signalk_catalog_snapshots_v2 WHERE state = 'staging'"), "the snapshot is still staging")
	requireCleanSession()

	// A receive, whose last statement is the snapshot write conditioned
	// on the token: a lost one writes nothing, and says so.
	next := build(t, vessel, 2, catalogOf(t, 40, catalog.UnitOf("m"), "environment.depth"))
	for i, raw := range [][]byte{next.Manifest.Canonical(), next.Chunks[0].Canonical()} {
		receive := finalize.NewReceiver(always).ReceiveChunk
		if i == 0 {
			receive = finalize.NewReceiver(always).ReceiveManifest
		}
		mysqlstore.EndTransactions(always, mysqlstore.AfterLock, 3)
		_, err = receive(ctx, finalize.Origin{VesselID: vessel}, raw)
		require.ErrorIs(t, err, mysqlstore.ErrTransactionLost, "message %d", i)
		assert.Zero(t, count("SELECT COUNT(*) FROM signalk_catalog_snapshots_v2 WHERE revision = 2"), "message %d: no snapshot row of the lost receives", i)
		assert.Zero(t, count(mysqlstore.Inline("SELECT COUNT(*) FROM signalk_catalog_chunks_v2 WHERE snapshot_id = ?", next.Manifest.SnapshotID[:])), "message %d: no chunk", i)
		requireCleanSession()
	}

	var retried []uint16
	once := mysqlstore.New(db, mysqlstore.WithRetryObserver(func(n uint16) { retried = append(retried, n) }))
	mysqlstore.EndTransactions(once, mysqlstore.AfterLock, 1)
	out, err := finalize.NewReceiver(once).Finalize(ctx, vessel, snap.Manifest.SnapshotID)
	require.NoError(t, err)
	assert.Equal(t, finalize.Activated, out.Status)
	assert.Equal(t, []uint16{0}, retried, "one retry, for the lost transaction")
	assert.Equal(t, 40, count("SELECT COUNT(*) FROM signalk_catalog_paths_v2 WHERE currently_observed"))
	requireCleanSession()

	box := mysqlstore.NewOutbox(db, mysqlstore.WithRetries(1))
	mysqlstore.EndOutboxTransactions(box, mysqlstore.AfterLock, 2)
	err = box.WithVessel(ctx, vessel, func(tx outbox.Tx) error {
		_, err := tx.NextRevision(ctx, 0)
		return err
	})
	require.ErrorIs(t, err, mysqlstore.ErrTransactionLost)
	require.NoError(t, box.WithVessel(ctx, vessel, func(tx outbox.Tx) error {
		rev, err := tx.NextRevision(ctx, 0)
		assert.Equal(t, int64(1), rev, "the lost transactions allocated nothing")
		return err
	}))
	requireCleanSession()
}

// TestActivationBatchesStatements: activation writes and retires items with
// multi-row statements, not one statement per record.
func TestActivationBatchesStatements(t *testing.T) {
	db := migrated(t)
	db.SetMaxOpenConns(1) // the session counters below are the store's
	ctx := context.Background()
	vessel := uuid.New()
	statements := func() (inserts, updates int) {
		var name string
		require.NoError(t, db.QueryRow("SHOW SESSION STATUS LIKE 'Com_insert'").Scan(&name, &inserts))
		require.NoError(t, db.QueryRow("SHOW SESSION STATUS LIKE 'Com_update'").Scan(&name, &updates))
		return inserts, updates
	}
	cases := []struct {
		batch                  int
		prefix                 string
		maxInserts, maxUpdates int
	}{
		// 601 new items in one statement per kind; nothing to retire.
		{batch: 500, prefix: "environment.depth", maxInserts: 6, maxUpdates: 4},
		// 600 new items and 600 retired, 100 rows a statement.
		{batch: 100, prefix: "environment.temperature", maxInserts: 12, maxUpdates: 16},
	}
	for rev, tc := range cases {
		r := finalize.NewReceiver(mysqlstore.New(db, mysqlstore.WithBatchSize(tc.batch)))
		snap := build(t, vessel, int64(rev+1), catalogOf(t, 300, catalog.UnitOf("m"), tc.prefix)) // 601 records
		deliver(t, r, snap)
		i0, u0 := statements()
		out, err := r.Finalize(ctx, vessel, snap.Manifest.SnapshotID)
		require.NoError(t, err)
		require.Equal(t, finalize.Activated, out.Status)
		i1, u1 := statements()
		assert.LessOrEqual(t, i1-i0, tc.maxInserts, "batch %d: INSERT statements", tc.batch)
		assert.LessOrEqual(t, u1-u0, tc.maxUpdates, "batch %d: UPDATE statements", tc.batch)
	}
}

// TestTransactionsReadCommitted: a transaction reads at READ COMMITTED (a
// change committed while it runs is seen by its next read), set for that
// transaction only: the session's own level is left as it was, and with
// it every other user of the pool.
func TestTransactionsReadCommitted(t *testing.T) {
	db := migrated(t)
	db.SetMaxOpenConns(2)
	ctx := context.Background()
	_, err := db.ExecContext(ctx, "CREATE TABLE probe (id INT PRIMARY KEY, v INT NOT NULL) ENGINE=InnoDB")
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, "INSERT INTO probe VALUES (1, 0)")
	require.NoError(t, err)
	var sessionLevel, defaultLevel string
	require.NoError(t, db.QueryRowContext(ctx, "SELECT @@global.tx_isolation").Scan(&defaultLevel))
	var first, second int
	store := mysqlstore.New(db)
	mysqlstore.OnLock(store, func(ctx context.Context, q mysqlstore.Querier) {
		require.NoError(t, q.QueryRowContext(ctx, "SELECT v, @@session.tx_isolation FROM probe WHERE id = 1").Scan(&first, &sessionLevel))
		_, err := db.ExecContext(ctx, "UPDATE probe SET v = v + 1 WHERE id = 1") // another connection, committed
		require.NoError(t, err)
		require.NoError(t, q.QueryRowContext(ctx, "SELECT v FROM probe WHERE id = 1").Scan(&second))
	})
	require.NoError(t, store.WithVessel(ctx, uuid.New(), func(finalize.Tx) error { return nil }))
	assert.Equal(t, first+1, second, "the transaction sees what was committed while it ran")
	assert.Equal(t, defaultLevel, sessionLevel, "the session's own isolation level is untouched")
}

// TestChunkLookupInTheTransaction: Chunk answers from the digests read
// with the snapshots, and a transaction sees its own PutChunk and
// DeleteSnapshot there.
func TestChunkLookupInTheTransaction(t *testing.T) {
	db := migrated(t)
	ctx := context.Background()
	store := mysqlstore.New(db)
	vessel, id := uuid.New(), uuid.New()
	staged := finalize.StagedChunk{Snapshot: id, Index: 0, Canonical: []byte(`{"a":0}`), Payload: canonical.Sum([]byte("0"))}
	require.NoError(t, store.WithVessel(ctx, vessel, func(tx finalize.Tx) error {
		require.NoError(t, tx.PutSnapshot(ctx, finalize.Snapshot{ID: id, Revision: 1, State: finalize.StateStaging}))
		return tx.PutChunk(ctx, staged)
	}))
	require.NoError(t, store.WithVessel(ctx, vessel, func(tx finalize.Tx) error {
		_, err := tx.Snapshot(ctx, id) // reads the staged digests
		require.NoError(t, err)
		got, err := tx.Chunk(ctx, id, 0)
		require.NoError(t, err)
		assert.Equal(t, staged, got, "a chunk staged before")
		_, err = tx.Chunk(ctx, id, 1)
		require.ErrorIs(t, err, sourcecatalog.ErrNotFound, "no chunk at 1 yet")
		put := finalize.StagedChunk{Snapshot: id, Index: 1, Canonical: []byte(`{"a":1}`), Payload: canonical.Sum([]byte("1"))}
		require.NoError(t, tx.PutChunk(ctx, put))
		got, err = tx.Chunk(ctx, id, 1)
		require.NoError(t, err, "the transaction's own PutChunk")
		assert.Equal(t, put, got)
		require.NoError(t, tx.DeleteSnapshot(ctx, id))
		_, err = tx.Chunk(ctx, id, 0)
		require.ErrorIs(t, err, sourcecatalog.ErrNotFound, "deleted with its snapshot")
		return nil
	}))
}
