package mysqlstore_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	mathrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/finalizetest"
	"github.com/yachtmemory/sourcecatalog/internal/dbtest"
	"github.com/yachtmemory/sourcecatalog/mysqlstore"
)

// The Galera tests run against a three-node cluster named by
// SOURCECATALOG_GALERA_DSNS (one DSN per node, comma-separated; bash
// scripts/test.sh starts one). SOURCECATALOG_GALERA_DIR, the directory
// scripts/galera.sh keeps its nodes in, lets a test kill and restart one.

const (
	galeraDSNsEnv = "SOURCECATALOG_GALERA_DSNS"
	galeraDirEnv  = "SOURCECATALOG_GALERA_DIR"
)

// Retries seen by the Galera tests, by server error number.
var galeraRetries sync.Map // uint16 -> *atomic.Int64

func countRetry(number uint16) {
	v, _ := galeraRetries.LoadOrStore(number, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

func retries(number uint16) int64 {
	if v, ok := galeraRetries.Load(number); ok {
		return v.(*atomic.Int64).Load()
	}
	return 0
}

func logRetries(t *testing.T) {
	t.Logf("retries so far: 1213 (deadlock or certification failure) %d, 1047 (node not ready) %d, 1205 (lock wait timeout) %d, lost transaction %d",
		retries(1213), retries(1047), retries(1205), retries(0))
}

func galeraConfigs(t testing.TB) []*mysql.Config {
	t.Helper()
	env := dbtest.Env(t, galeraDSNsEnv, "the Galera tests", "bash scripts/test.sh starts a three-node cluster")
	var out []*mysql.Config
	for _, dsn := range strings.Split(env, ",") {
		cfg, err := mysql.ParseDSN(strings.TrimSpace(dsn))
		require.NoError(t, err)
		out = append(out, cfg)
	}
	require.Len(t, out, 3, "%s must name three nodes", galeraDSNsEnv)
	return out
}

// cluster is one test schema on the cluster: a pool per node and a pool
// whose connections go to the three nodes in turn.
type cluster struct {
	nodes    []*sql.DB
	spread   *sql.DB
	spreader *spreadConnector
	cfgs     []*mysql.Config
}

// spreadConnector opens each new connection on the next node.
type spreadConnector struct {
	conns  []driver.Connector
	next   atomic.Uint32
	opened [3]atomic.Int64 // connections opened per node
}

func (c *spreadConnector) Connect(ctx context.Context) (driver.Conn, error) {
	n := int(c.next.Add(1)) % len(c.conns)
	c.opened[n].Add(1)
	return c.conns[n].Connect(ctx)
}

func (c *spreadConnector) Driver() driver.Driver { return c.conns[0].Driver() }

func galeraSchema(t testing.TB) *cluster {
	t.Helper()
	cfgs := galeraConfigs(t)
	admin, err := sql.Open("mysql", cfgs[0].FormatDSN())
	require.NoError(t, err)
	t.Cleanup(func() { admin.Close() })
	var suffix [6]byte
	rand.Read(suffix[:])
	name := "sourcecatalog_test_" + hex.EncodeToString(suffix[:])
	_, err = admin.Exec("CREATE DATABASE " + name + " CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin")
	require.NoError(t, err)
	t.Cleanup(func() {
		if _, err := admin.Exec("DROP DATABASE " + name); err != nil {
			t.Logf("drop %s: %v", name, err)
		}
	})
	c := &cluster{}
	var connectors []driver.Connector
	for _, cfg := range cfgs {
		cfg = cfg.Clone()
		cfg.DBName = name
		cfg.Timeout = 5 * time.Second
		c.cfgs = append(c.cfgs, cfg)
		conn, err := mysql.NewConnector(cfg)
		require.NoError(t, err)
		connectors = append(connectors, conn)
		db := sql.OpenDB(conn)
		db.SetMaxOpenConns(16)
		t.Cleanup(func() { db.Close() })
		c.nodes = append(c.nodes, db)
	}
	c.spreader = &spreadConnector{conns: connectors}
	c.spread = sql.OpenDB(c.spreader)
	c.spread.SetMaxOpenConns(24)
	c.spread.SetMaxIdleConns(0) // every transaction on a new connection, on the next node
	t.Cleanup(func() { c.spread.Close() })
	require.NoError(t, mysqlstore.Migrate(context.Background(), c.nodes[0]))
	// DDL reaches every node before the test starts. It waits behind
	// replication, which a stalled applier ("BF lock wait long", seen for
	// tens of seconds under contention) can hold up.
	for _, db := range c.nodes {
		require.Eventually(t, func() bool { return mysqlstore.CheckSchema(context.Background(), db) == nil }, 120*time.Second, 50*time.Millisecond)
	}
	return c
}

// active returns the vessel's active catalog read through each node.
func (c *cluster) active(t *testing.T, vessel uuid.UUID) []finalize.Catalog {
	t.Helper()
	var out []finalize.Catalog
	for _, db := range c.nodes {
		cat, err := finalize.NewReceiver(galeraStore(db)).Active(context.Background(), vessel)
		require.NoError(t, err)
		out = append(out, cat)
	}
	return out
}

func galeraStore(db *sql.DB) *mysqlstore.Store {
	return mysqlstore.New(db, mysqlstore.WithRetryObserver(countRetry), mysqlstore.WithRetries(30))
}

// TestGaleraConformance runs the concurrency and crash groups of the
// finalize conformance suite with the Store's connections spread over the
// three nodes.
func TestGaleraConformance(t *testing.T) {
	galeraConfigs(t)
	var spreaders []*spreadConnector
	finalizetest.RunGroups(t, func(t *testing.T) finalize.Store {
		c := galeraSchema(t)
		spreaders = append(spreaders, c.spreader)
		return galeraStore(c.spread)
	}, "Concurrency", "Crash")
	for node := range 3 {
		var opened int64
		for _, s := range spreaders {
			opened += s.opened[node].Load()
		}
		assert.Positive(t, opened, "node %d served the suite's transactions", node+1)
	}
	logRetries(t)
}

// TestGaleraCausalReads holds node 2's applier back and finalizes through
// node 2 a snapshot staged through node 1: the transaction waits until
// node 2 has applied the staging, and activates on its first attempt.
func TestGaleraCausalReads(t *testing.T) {
	c := galeraSchema(t)
	ctx := context.Background()
	vessel := uuid.New()
	snap := build(t, vessel, 1, catalogOf(t, 60, catalog.UnitOf("m"), "propulsion.port"))

	// While a session of node 2 holds this read lock, node 2 cannot apply
	// the chunk receipts.
	lock, err := c.nodes[1].Conn(ctx)
	require.NoError(t, err)
	defer lock.Close()
	_, err = lock.ExecContext(ctx, "FLUSH TABLES signalk_catalog_chunks_v2 WITH READ LOCK")
	require.NoError(t, err)
	deliver(t, finalize.NewReceiver(galeraStore(c.nodes[0])), snap)
	var unlocked atomic.Bool
	go func() {
		time.Sleep(time.Second)
		unlocked.Store(true)
		lock.ExecContext(ctx, "UNLOCK TABLES")
	}()

	retried := 0
	lagging := mysqlstore.New(c.nodes[1], mysqlstore.WithRetryObserver(func(uint16) { retried++ }))
	out, err := finalize.NewReceiver(lagging).Finalize(ctx, vessel, snap.Manifest.SnapshotID)
	require.NoError(t, err)
	assert.True(t, unlocked.Load(), "the finalize waited for node 2 to apply the staging")
	assert.Equal(t, finalize.Activated, out.Status, "every chunk is seen")
	assert.Zero(t, retried, "no attempt ran on stale reads")
}

func TestGaleraFinalizeThroughAllNodes(t *testing.T) {
	c := galeraSchema(t)
	ctx := context.Background()
	for round := range 5 {
		vessel := uuid.New()
		snap := build(t, vessel, 1, catalogOf(t, 150, catalog.UnitOf("m"), "environment.depth"))
		deliver(t, finalize.NewReceiver(galeraStore(c.nodes[round%3])), snap)
		const perNode = 3
		var wg sync.WaitGroup
		outs := make([]finalize.Outcome, 3*perNode)
		errs := make([]error, 3*perNode)
		for i := range outs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := finalize.NewReceiver(galeraStore(c.nodes[i%3]))
				outs[i], errs[i] = r.Finalize(ctx, vessel, snap.Manifest.SnapshotID)
			}()
		}
		wg.Wait()
		activated := 0
		for i := range outs {
			require.NoError(t, errs[i], "finalize through node %d", i%3+1)
			switch outs[i].Status {
			case finalize.Activated:
				activated++
			case finalize.AlreadyActive:
			default:
				t.Errorf("round %d worker %d: %s", round, i, outs[i].Status)
			}
		}
		assert.Equal(t, 1, activated, "round %d: exactly one activation across the cluster", round)
	}
	logRetries(t)
}

func TestGaleraCompetingRevisions(t *testing.T) {
	c := galeraSchema(t)
	ctx := context.Background()
	for round := range 4 {
		vessel := uuid.New()
		var snaps []*snapshotRef
		var last []*catalog.Record
		for rev := int64(1); rev <= 5; rev++ {
			// Each revision selects other paths, so an activation that
			// missed a newer one leaves items it should have retired.
			last = catalogOf(t, 20+int(rev), catalog.UnitOf("m"), "navigation.r"+strconv.FormatInt(rev, 10))
			snap := build(t, vessel, rev, last)
			deliver(t, finalize.NewReceiver(galeraStore(c.nodes[int(rev)%3])), snap)
			snaps = append(snaps, &snapshotRef{id: snap.Manifest.SnapshotID, rev: rev})
		}
		rng := mathrand.New(mathrand.NewPCG(uint64(round), 42))
		rng.Shuffle(len(snaps), func(i, j int) { snaps[i], snaps[j] = snaps[j], snaps[i] })
		outs := make([]finalize.Outcome, len(snaps))
		var wg sync.WaitGroup
		for i, s := range snaps {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var err error
				outs[i], err = finalize.NewReceiver(galeraStore(c.nodes[i%3])).Finalize(ctx, vessel, s.id)
				assert.NoError(t, err)
			}()
		}
		wg.Wait()
		for i, s := range snaps {
			want := finalize.Superseded
			if s.rev == 5 {
				want = finalize.Activated
			}
			if outs[i].Status != finalize.Activated {
				assert.Equal(t, want, outs[i].Status, "round %d: revision %d through node %d", round, s.rev, i%3+1)
			}
		}
		for n, cat := range c.active(t, vessel) {
			assert.Equal(t, int64(5), cat.Revision, "round %d: the highest revision is active, read through node %d", round, n+1)
			var current []string
			for _, it := range cat.Items {
				if it.CurrentlyObserved {
					current = append(current, string(it.Record))
				}
			}
			var want []string
			for _, r := range last {
				want = append(want, string(r.Canonical()))
			}
			assert.ElementsMatch(t, want, current, "round %d: the current items are revision 5's, read through node %d", round, n+1)
		}
	}
	logRetries(t)
}

// TestGaleraCertificationFailureAtCommit makes the loser learn at COMMIT:
// node 2 lags (its applier is held), revision 2 activates through node 1,
// and a finalize of revision 1 through node 2, without the causality wait,
// reads the stale state and would activate revision 1. Its COMMIT fails
// certification with 1213; the re-run reads the winner's result.
func TestGaleraCertificationFailureAtCommit(t *testing.T) {
	c := galeraSchema(t)
	ctx := context.Background()
	vessel := uuid.New()
	first := build(t, vessel, 1, catalogOf(t, 40, catalog.UnitOf("m"), "tanks.fuel"))
	second := build(t, vessel, 2, catalogOf(t, 40, catalog.UnitOf("L"), "tanks.fuel"))
	for _, s := range []*envelope.Snapshot{first, second} {
		deliver(t, finalize.NewReceiver(galeraStore(c.nodes[0])), s)
	}
	c.active(t, vessel) // every node has applied the staging

	// A write to a table of its own that node 2 cannot apply while one of
	// its sessions holds a read lock on it: node 2's applier stops there,
	// before revision 2's activation.
	_, err := c.nodes[0].Exec("CREATE TABLE applier_gate (id INT PRIMARY KEY) ENGINE=InnoDB")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		var n int
		return c.nodes[1].QueryRow("SELECT COUNT(*) FROM applier_gate").Scan(&n) == nil
	}, 30*time.Second, 50*time.Millisecond)
	gate, err := c.nodes[1].Conn(ctx)
	require.NoError(t, err)
	defer gate.Close()
	_, err = gate.ExecContext(ctx, "FLUSH TABLES applier_gate WITH READ LOCK")
	require.NoError(t, err)
	_, err = c.nodes[0].Exec("INSERT INTO applier_gate VALUES (1)")
	require.NoError(t, err)
	out, err := finalize.NewReceiver(galeraStore(c.nodes[0])).Finalize(ctx, vessel, second.Manifest.SnapshotID)
	require.NoError(t, err)
	require.Equal(t, finalize.Activated, out.Status)
	go func() {
		time.Sleep(time.Second)
		gate.ExecContext(ctx, "UNLOCK TABLES")
	}()

	var retried []uint16
	stale := mysqlstore.New(c.nodes[1], mysqlstore.WithGalera(false), mysqlstore.WithRetries(30),
		mysqlstore.WithRetryObserver(func(n uint16) { retried = append(retried, n) }))
	out, err = finalize.NewReceiver(stale).Finalize(ctx, vessel, first.Manifest.SnapshotID)
	require.NoError(t, err)
	assert.Equal(t, finalize.Superseded, out.Status, "the re-run sees revision 2 active")
	assert.Equal(t, int64(2), out.ActiveRevision)
	require.NotEmpty(t, retried, "the stale attempt did not commit")
	assert.Equal(t, uint16(1213), retried[0], "it failed certification")
	for n, cat := range c.active(t, vessel) {
		assert.Equal(t, second.Manifest.SnapshotID, cat.SnapshotID, "read through node %d", n+1)
	}
}

// TestGaleraConflictingManifests sends two manifests for one snapshot id,
// with other documents, through two nodes at once: exactly one is staged,
// the other is refused as a conflict, whichever node wins.
func TestGaleraConflictingManifests(t *testing.T) {
	c := galeraSchema(t)
	ctx := context.Background()
	for round := range 8 {
		vessel, id := uuid.New(), uuid.New()
		var raws [2][]byte
		for i := range raws {
			snap, err := envelope.Build(envelope.Input{VesselID: vessel, SnapshotID: id, Revision: 1, DiscoveredAt: t0,
				Records: catalogOf(t, 10+i, catalog.UnitOf("m"), "navigation")})
			require.NoError(t, err)
			raws[i] = snap.Manifest.Canonical()
		}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i := range raws {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := finalize.NewReceiver(galeraStore(c.nodes[(round+i)%3]))
				_, errs[i] = r.ReceiveManifest(ctx, finalize.Origin{VesselID: vessel}, raws[i])
			}()
		}
		wg.Wait()
		staged, conflicts := 0, 0
		for _, err := range errs {
			switch {
			case err == nil:
				staged++
			case errors.Is(err, sourcecatalog.ErrConflict):
				conflicts++
			default:
				t.Errorf("round %d: %v", round, err)
			}
		}
		assert.Equal(t, 1, staged, "round %d: one manifest staged", round)
		assert.Equal(t, 1, conflicts, "round %d: the other refused as a conflict", round)
	}
	logRetries(t)
}

// TestGaleraTransactionLostBeforeCommit: a transaction the node ends during
// the check before COMMIT would leave COMMIT committing an empty
// transaction; the store finds out from the session's last written GTID,
// reports nothing as done, and retries.
func TestGaleraTransactionLostBeforeCommit(t *testing.T) {
	c := galeraSchema(t)
	ctx := context.Background()
	vessel := uuid.New()
	snap := build(t, vessel, 1, catalogOf(t, 30, catalog.UnitOf("m"), "tanks.fuel"))
	deliver(t, finalize.NewReceiver(galeraStore(c.nodes[0])), snap)

	always := mysqlstore.New(c.nodes[1], mysqlstore.WithRetries(2))
	mysqlstore.EndTransactions(always, mysqlstore.AfterCheck, 3)
	_, err := finalize.NewReceiver(always).Finalize(ctx, vessel, snap.Manifest.SnapshotID)
	require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable)
	require.ErrorIs(t, err, mysqlstore.ErrTransactionLost)
	for n, cat := range c.active(t, vessel) {
		assert.Zero(t, cat.Revision, "nothing is active, read through node %d", n+1)
	}

	var retried []uint16
	once := mysqlstore.New(c.nodes[1], mysqlstore.WithRetryObserver(func(n uint16) { retried = append(retried, n) }))
	mysqlstore.EndTransactions(once, mysqlstore.AfterCheck, 1)
	out, err := finalize.NewReceiver(once).Finalize(ctx, vessel, snap.Manifest.SnapshotID)
	require.NoError(t, err)
	assert.Equal(t, finalize.Activated, out.Status)
	assert.Equal(t, []uint16{0}, retried, "one retry, for the lost transaction")
	for n, cat := range c.active(t, vessel) {
		assert.Equal(t, int64(1), cat.Revision, "read through node %d", n+1)
	}
}

type snapshotRef struct {
	id  uuid.UUID
	rev int64
}

func TestGaleraReceiptsThroughOneNodeFinalizeThroughAnother(t *testing.T) {
	c := galeraSchema(t)
	ctx := context.Background()
	for round := range 12 {
		vessel := uuid.New()
		snap := build(t, vessel, 1, catalogOf(t, 150, catalog.UnitOf("m"), "tanks.fuel"))
		a, b := round%3, (round+1)%3
		deliver(t, finalize.NewReceiver(galeraStore(c.nodes[a])), snap)
		out, err := finalize.NewReceiver(galeraStore(c.nodes[b])).Finalize(ctx, vessel, snap.Manifest.SnapshotID)
		require.NoError(t, err)
		require.Equal(t, finalize.Activated, out.Status, "round %d: receipts through node %d, finalize through node %d: no false staging", round, a+1, b+1)
	}
}

// nodeDir returns the directory of galera node n (1-based).
func nodeDir(t *testing.T, n int) string {
	dir := dbtest.Env(t, galeraDirEnv, "the node-kill test", "")
	return filepath.Join(dir, "node"+strconv.Itoa(n))
}

func nodePid(t *testing.T, n int) int {
	b, err := os.ReadFile(filepath.Join(nodeDir(t, n), "mariadbd.pid"))
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	return pid
}

func wsrepStatus(db *sql.DB, name string) string {
	var k, v string
	// name is one of this file's constants; SHOW takes no placeholders.
	if err := db.QueryRow("SHOW STATUS LIKE '"+name+"'").Scan(&k, &v); err != nil {
		return "error: " + err.Error()
	}
	return v
}

func TestGaleraNodeKilledDuringActivation(t *testing.T) {
	c := galeraSchema(t)
	ctx := context.Background()
	const victim = 3
	nodeDir(t, victim) // skips without the cluster's directory
	vessel := uuid.New()
	a := build(t, vessel, 1, catalogOf(t, 120, catalog.UnitOf("m"), "propulsion.port"))
	activate(t, finalize.NewReceiver(galeraStore(c.nodes[0])), a)
	before, err := finalize.NewReceiver(galeraStore(c.nodes[0])).Active(ctx, vessel)
	require.NoError(t, err)
	b := build(t, vessel, 2, catalogOf(t, 130, catalog.UnitOf("rad/s"), "propulsion.port"))
	deliver(t, finalize.NewReceiver(galeraStore(c.nodes[1])), b)

	ps := &pausingStore{Store: mysqlstore.New(c.nodes[victim-1], mysqlstore.WithRetries(0)), paused: make(chan struct{}), resume: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := finalize.NewReceiver(ps).Finalize(ctx, vessel, b.Manifest.SnapshotID)
		done <- err
	}()
	<-ps.paused
	require.NoError(t, syscall.Kill(nodePid(t, victim), syscall.SIGKILL), "SIGKILL node %d", victim)
	t.Cleanup(func() { restartNode(t, c, victim) }) // the cluster must be whole for later tests
	close(ps.resume)
	require.Error(t, <-done, "the activation on the killed node fails")

	require.Eventually(t, func() bool { return wsrepStatus(c.nodes[0], "wsrep_cluster_size") == "2" }, 30*time.Second, 100*time.Millisecond)
	assert.Equal(t, "Primary", wsrepStatus(c.nodes[1], "wsrep_cluster_status"), "the survivors keep quorum")
	mid, err := finalize.NewReceiver(galeraStore(c.nodes[0])).Active(ctx, vessel)
	require.NoError(t, err)
	assert.Equal(t, before, mid, "the old catalog is still active, never a mix")

	outs, err := finalize.NewReceiver(galeraStore(c.nodes[1])).Reconcile(ctx, vessel)
	require.NoError(t, err)
	require.Len(t, outs, 1)
	assert.Equal(t, finalize.Activated, outs[0].Status, "Reconcile through a survivor completes")
	after, err := finalize.NewReceiver(galeraStore(c.nodes[0])).Active(ctx, vessel)
	require.NoError(t, err)
	assert.Equal(t, b.Manifest.SnapshotID, after.SnapshotID)

	restartNode(t, c, victim)
	rejoined, err := finalize.NewReceiver(galeraStore(c.nodes[victim-1])).Active(ctx, vessel)
	require.NoError(t, err)
	assert.Equal(t, after, rejoined, "the restarted node reads the same active catalog")
	logRetries(t)
}

// restartNode starts node n again, if it is down, and waits until it is
// synced; meanwhile a Store on that node keeps reading, counting the 1047
// answers of a node not yet ready.
func restartNode(t *testing.T, c *cluster, n int) {
	if err := syscall.Kill(nodePid(t, n), 0); err == nil && wsrepStatus(c.nodes[n-1], "wsrep_local_state_comment") == "Synced" {
		return
	}
	out, err := exec.Command("bash", filepath.Join(nodeDir(t, n), "start.sh")).CombinedOutput()
	require.NoError(t, err, "restart node %d: %s", n, out)
	probe := galeraStore(c.nodes[n-1])
	require.Eventually(t, func() bool {
		if wsrepStatus(c.nodes[n-1], "wsrep_local_state_comment") != "Synced" {
			_ = probe.WithVessel(context.Background(), uuid.New(), func(finalize.Tx) error { return nil })
			return false
		}
		return wsrepStatus(c.nodes[0], "wsrep_cluster_size") == "3"
	}, 120*time.Second, 200*time.Millisecond, "node %d rejoins", n)
}

// BenchmarkGaleraActivation reports the first activation of a maximal
// snapshot on the cluster against the same on the single server.
func BenchmarkGaleraActivation(b *testing.B) {
	c := galeraSchema(b)
	single := migrated(b)
	records := examples.Scaled(25600)
	var onCluster, onSingle time.Duration
	for range b.N {
		onSingle += activateTimed(b, mysqlstore.New(single), scaledSnapshot(b, uuid.New(), 1, records))
		onCluster += activateTimed(b, mysqlstore.New(c.nodes[0]), scaledSnapshot(b, uuid.New(), 1, records))
	}
	b.ReportMetric(ms(onCluster)/float64(b.N), "cluster_ms")
	b.ReportMetric(ms(onSingle)/float64(b.N), "single_ms")
	b.ReportMetric(float64(onCluster)/float64(onSingle), "x_single")
}

// TestGaleraNodeNotReady isolates one node from the group, which then
// answers 1047 (not ready for application use): a Store on it retries a
// bounded number of times, then reports the store unavailable; once the
// node is back, the retried transaction goes through.
func TestGaleraNodeNotReady(t *testing.T) {
	c := galeraSchema(t)
	ctx := context.Background()
	isolated := c.nodes[1]
	isolate := func(on bool) {
		v := "0"
		if on {
			v = "1"
		}
		_, err := isolated.Exec("SET GLOBAL wsrep_provider_options = 'gmcast.isolate=" + v + "'")
		require.NoError(t, err)
	}
	isolate(true)
	t.Cleanup(func() {
		isolate(false)
		require.Eventually(t, func() bool {
			return wsrepStatus(isolated, "wsrep_local_state_comment") == "Synced" && wsrepStatus(c.nodes[0], "wsrep_cluster_size") == "3"
		}, 60*time.Second, 100*time.Millisecond, "the isolated node rejoins")
	})
	require.Eventually(t, func() bool { return wsrepStatus(isolated, "wsrep_ready") == "OFF" }, 30*time.Second, 50*time.Millisecond)

	before := retries(1047)
	short := mysqlstore.New(isolated, mysqlstore.WithRetryObserver(countRetry), mysqlstore.WithRetries(3))
	err := short.WithVessel(ctx, uuid.New(), func(finalize.Tx) error { return nil })
	require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable, "after the bound the node is unavailable")
	n, ok := mysqlstore.ErrorNumber(err)
	assert.True(t, ok && n == 1047, "the cause is 1047, got %d", n)
	assert.Equal(t, before+3, retries(1047), "three re-runs, all on 1047")

	done := make(chan error, 1)
	go func() {
		// A rejoining node refuses causal reads until it is synced again,
		// which can take ten seconds and more on a loaded machine.
		patient := mysqlstore.New(isolated, mysqlstore.WithRetryObserver(countRetry), mysqlstore.WithRetries(120))
		done <- patient.WithVessel(ctx, uuid.New(), func(finalize.Tx) error { return nil })
	}()
	time.Sleep(300 * time.Millisecond)
	isolate(false)
	require.NoError(t, <-done, "the transaction retried until the node was ready again")
	logRetries(t)
}
