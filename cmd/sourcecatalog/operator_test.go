package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/internal/dbtest"
	"github.com/yachtmemory/sourcecatalog/mysqlstore"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// The operator commands' --json documents, decoded strictly: a renamed or
// added field fails the tests.

type statusOut struct {
	Vessels []vesselOut `json:"vessels"`
}

type vesselOut struct {
	VesselID    string     `json:"vessel_id"`
	Active      *activeOut `json:"active"`
	LastOutcome *lastOut   `json:"last_outcome"`
	Usage       usageOut   `json:"usage"`
	Superseded  int        `json:"superseded_by_active"`
	Snapshots   []snapOut  `json:"snapshots"`
}

type activeOut struct {
	SnapshotID   string `json:"snapshot_id"`
	Revision     int64  `json:"revision"`
	DiscoveredAt string `json:"discovered_at"`
}

type lastOut struct {
	SnapshotID string `json:"snapshot_id"`
	Revision   int64  `json:"revision"`
	Outcome    string `json:"outcome"`
	Reason     string `json:"reason"`
}

type usageOut struct {
	IncompleteSnapshots gaugeOut `json:"incomplete_snapshots"`
	IncompleteBytes     gaugeOut `json:"incomplete_bytes"`
	RetainedSnapshots   gaugeOut `json:"retained_snapshots"`
	RetainedBytes       gaugeOut `json:"retained_bytes"`
	Highest             float64  `json:"highest"`
}

type gaugeOut struct {
	Used     int64   `json:"used"`
	Limit    int64   `json:"limit"`
	Fraction float64 `json:"fraction"`
}

type snapOut struct {
	SnapshotID      string `json:"snapshot_id"`
	Revision        int64  `json:"revision"`
	State           string `json:"state"`
	Outcome         string `json:"outcome"`
	Reason          string `json:"reason"`
	ChunkCount      int    `json:"chunk_count"`
	RecordCount     int    `json:"record_count"`
	ChunksStaged    int    `json:"chunks_staged"`
	StagedBytes     int64  `json:"staged_bytes"`
	MissingManifest bool   `json:"missing_manifest"`
	MissingChunks   []int  `json:"missing_chunks"`
	Complete        bool   `json:"complete"`
}

type reconcileOut struct {
	Vessels []struct {
		VesselID string `json:"vessel_id"`
		Outcomes []struct {
			SnapshotID       string  `json:"snapshot_id"`
			Revision         int64   `json:"revision"`
			Outcome          string  `json:"outcome"`
			Reason           string  `json:"reason"`
			ActiveSnapshotID *string `json:"active_snapshot_id"`
			ActiveRevision   int64   `json:"active_revision"`
		} `json:"outcomes"`
		Error string `json:"error"`
	} `json:"vessels"`
}

type discardOut struct {
	VesselID   string `json:"vessel_id"`
	SnapshotID string `json:"snapshot_id"`
	Discarded  bool   `json:"discarded"`
	Revision   int64  `json:"revision"`
	State      string `json:"state"`
}

type pruneOut struct {
	Keep    int `json:"keep"`
	Vessels []struct {
		VesselID string `json:"vessel_id"`
		Pruned   []struct {
			SnapshotID string `json:"snapshot_id"`
			Revision   int64  `json:"revision"`
			State      string `json:"state"`
		} `json:"pruned"`
		Retained int    `json:"retained"`
		Error    string `json:"error"`
	} `json:"vessels"`
}

// jsonOf runs a command with --json, requires exit 0 and decodes.
func jsonOf(t *testing.T, v any, args ...string) {
	t.Helper()
	r := cli(t, "", append(args, "--json")...)
	require.Equal(t, exitOK, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	decodeStrict(t, r.stdout, v)
}

func statusOf(t *testing.T, args ...string) statusOut {
	t.Helper()
	var out statusOut
	jsonOf(t, &out, append([]string{"status"}, args...)...)
	return out
}

// ---------------------------------------------------------------------------
// Stores and staged state

// An opBackend is a kind of receiver store the operator commands run on.
// fresh returns an empty store's --store argument and a function that runs
// fn on a Receiver over it, the store open only meanwhile.
type opBackend struct {
	name  string
	fresh func(t *testing.T) (arg string, with func(fn func(r *finalize.Receiver)))
}

var sqliteBackend = opBackend{"sqlite", func(t *testing.T) (string, func(func(*finalize.Receiver))) {
	path := filepath.Join(t.TempDir(), "shore.db")
	s, err := sqlitestore.Open(context.Background(), path) // status creates none
	require.NoError(t, err)
	require.NoError(t, s.Close())
	return "sqlite:" + path, func(fn func(*finalize.Receiver)) {
		s, err := sqlitestore.Open(context.Background(), path)
		require.NoError(t, err)
		defer func() { require.NoError(t, s.Close()) }()
		fn(finalize.NewReceiver(s))
	}
}}

// sqliteHeldBackend is sqliteBackend with the file held open, as serve
// holds it, by a Store that writes the tests' snapshots and closes only
// at the end: its commits stay in the WAL while the operator commands
// (other connections, as other processes are) read and write the file.
var sqliteHeldBackend = opBackend{"sqlite-held", func(t *testing.T) (string, func(func(*finalize.Receiver))) {
	path := filepath.Join(t.TempDir(), "shore.db")
	s, err := sqlitestore.Open(context.Background(), path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return "sqlite:" + path, func(fn func(*finalize.Receiver)) {
		fn(finalize.NewReceiver(s))
		fi, err := os.Stat(path + "-wal")
		require.NoError(t, err)
		require.Positive(t, fi.Size(), "the held Store's commits are in the WAL")
	}
}}

// mysqlBackend makes a throwaway database for each store, on the server
// dbtest.MySQLEnv names.
var mysqlBackend = opBackend{"mysql", func(t *testing.T) (string, func(func(*finalize.Receiver))) {
	cfg, admin := mysqlAdmin(t)
	cfg.DBName = throwawayDatabase(t, admin, "sourcecatalog_cmdtest_")
	ctx := context.Background()
	db, err := sql.Open("mysql", cfg.FormatDSN())
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	require.NoError(t, mysqlstore.Migrate(ctx, db))
	return "mysql:" + cfg.FormatDSN(), func(fn func(*finalize.Receiver)) { fn(finalize.NewReceiver(mysqlstore.New(db))) }
}}

var origin = finalize.Origin{VesselID: examples.VesselID}

// snapshotAt builds records as the example vessel's snapshot of revision,
// discovered revision minutes after atFlag.
func snapshotAt(t *testing.T, revision int64, records []*catalog.Record) *envelope.Snapshot {
	t.Helper()
	at, err := envelope.ParseTime(atFlag)
	require.NoError(t, err)
	s, err := envelope.Build(envelope.Input{
		VesselID: examples.VesselID, SnapshotID: uuid.New(), Revision: revision,
		DiscoveredAt: at.Add(time.Duration(revision) * time.Minute), Records: records,
	})
	require.NoError(t, err)
	return s
}

// stage stages the snapshot's manifest, when asked, and the given chunks.
func stage(t *testing.T, r *finalize.Receiver, s *envelope.Snapshot, manifest bool, chunks ...int) {
	t.Helper()
	ctx := context.Background()
	if manifest {
		_, err := r.ReceiveManifest(ctx, origin, s.Manifest.Canonical())
		require.NoError(t, err)
	}
	for _, i := range chunks {
		_, err := r.ReceiveChunk(ctx, origin, s.Chunks[i].Canonical())
		require.NoError(t, err)
	}
}

// stageAll stages every message of the snapshot, without finalizing it.
func stageAll(t *testing.T, r *finalize.Receiver, s *envelope.Snapshot) {
	t.Helper()
	all := make([]int, len(s.Chunks))
	for i := range all {
		all[i] = i
	}
	stage(t, r, s, true, all...)
}

// activate stages the snapshot in full and finalizes it: activated.
func activate(t *testing.T, r *finalize.Receiver, s *envelope.Snapshot) {
	t.Helper()
	stageAll(t, r, s)
	out, err := r.Finalize(context.Background(), examples.VesselID, s.Manifest.SnapshotID)
	require.NoError(t, err)
	require.Equal(t, finalize.Activated, out.Status)
}

// ---------------------------------------------------------------------------
// The operator commands, on each store

func TestOperatorSQLite(t *testing.T) { runOperator(t, sqliteBackend) }

// TestOperatorSQLiteHeld runs the operator commands on an SQLite file
// another Store holds open, its commits in the WAL.
func TestOperatorSQLiteHeld(t *testing.T) { runOperator(t, sqliteHeldBackend) }

// TestOperatorMySQL runs the operator commands on MariaDB when
// SOURCECATALOG_MYSQL_DSN is set; under CI=true a missing setting fails.
func TestOperatorMySQL(t *testing.T) {
	dbtest.MySQL(t)
	runOperator(t, mysqlBackend)
	t.Run("commit", func(t *testing.T) {
		arg, _ := mysqlBackend.fresh(t)
		boat := recordsFile(t, t.TempDir(), "boat.json", examples.Boat())
		const snap = "0b1f9a52-3c55-4a8e-9d3e-6f1c2b7a4d10"
		first := commitJSONOf(t, "--store", arg, "--vessel", vesselFlag, "--discovered-at", atFlag, boat)
		second := commitJSONOf(t, "--store", arg, "--vessel", vesselFlag, "--discovered-at", atFlag, "--snapshot", snap, boat)
		retry := commitJSONOf(t, "--store", arg, "--vessel", vesselFlag, "--discovered-at", atFlag, "--snapshot", snap, boat)
		// Floored by the discovery time in milliseconds (SPEC §2.4), then counted.
		const floor = 1777636800000 // 2026-05-01T12:00:00Z
		assert.Equal(t, []int64{floor, floor + 1, floor + 1}, []int64{first.Revision, second.Revision, retry.Revision})
		assert.True(t, retry.Retried)
	})
}

func runOperator(t *testing.T, b opBackend) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, arg string, with func(func(*finalize.Receiver)))
	}{
		{"status", testStatus},
		{"status superseded", testStatusSuperseded},
		{"reconcile", testReconcile},
		{"discard", testDiscard},
		{"prune", testPrune},
	} {
		t.Run(tc.name, func(t *testing.T) {
			arg, with := b.fresh(t)
			tc.run(t, arg, with)
		})
	}
}

func testStatus(t *testing.T, store string, with func(func(*finalize.Receiver))) {
	assert.Equal(t, statusOut{Vessels: []vesselOut{}}, statusOf(t, "--store", store))
	r := cli(t, "", "status", "--store", store)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, "no vessel has a staged or an active snapshot\n", r.stdout)

	active := snapshotAt(t, 1, examples.Boat())
	partial := snapshotAt(t, 2, examples.Scaled(600))
	headless := snapshotAt(t, 3, examples.Scaled(300))
	require.Greater(t, len(partial.Chunks), 4)
	with(func(r *finalize.Receiver) {
		activate(t, r, active)
		stage(t, r, partial, true, 0, 2)
		stage(t, r, headless, false, 1)
	})

	all := statusOf(t, "--store", store)
	one := statusOf(t, "--vessel", vesselFlag, "--store", store)
	assert.Equal(t, all, one)
	require.Len(t, one.Vessels, 1)
	v := one.Vessels[0]
	assert.Equal(t, vesselFlag, v.VesselID)
	assert.Equal(t, &activeOut{SnapshotID: active.Manifest.SnapshotID.String(), Revision: 1, DiscoveredAt: "2026-05-01T12:01:00Z"}, v.Active)
	assert.Equal(t, &lastOut{SnapshotID: active.Manifest.SnapshotID.String(), Revision: 1, Outcome: "activated"}, v.LastOutcome)
	assert.Equal(t, gaugeOut{Used: 2, Limit: 8, Fraction: 0.25}, v.Usage.IncompleteSnapshots)
	assert.Equal(t, gaugeOut{Used: 1, Limit: 32, Fraction: 1.0 / 32}, v.Usage.RetainedSnapshots)
	assert.Equal(t, 0.25, v.Usage.Highest)

	require.Len(t, v.Snapshots, 3)
	h, p, a := v.Snapshots[0], v.Snapshots[1], v.Snapshots[2]
	assert.Equal(t, snapOut{
		SnapshotID: headless.Manifest.SnapshotID.String(), Revision: 3, State: "staging",
		ChunksStaged: 1, StagedBytes: h.StagedBytes, MissingManifest: true, MissingChunks: []int{},
	}, h)
	var missing []int
	for i := 1; i < len(partial.Chunks); i++ {
		if i != 2 {
			missing = append(missing, i)
		}
	}
	assert.Equal(t, snapOut{
		SnapshotID: partial.Manifest.SnapshotID.String(), Revision: 2, State: "staging",
		ChunkCount: len(partial.Chunks), RecordCount: 600, ChunksStaged: 2, StagedBytes: p.StagedBytes,
		MissingChunks: missing,
	}, p)
	assert.Equal(t, p.StagedBytes+h.StagedBytes, v.Usage.IncompleteBytes.Used)
	assert.Positive(t, h.StagedBytes)
	assert.Equal(t, "activated", a.State)
	assert.Equal(t, "activated", a.Outcome)
	assert.Equal(t, a.StagedBytes, v.Usage.RetainedBytes.Used)

	r = cli(t, "", "status", "--store", store)
	require.Equal(t, exitOK, r.code, r.stderr)
	for _, want := range []string{
		"vessel " + vesselFlag + "\n",
		"  active:       revision 1, snapshot " + active.Manifest.SnapshotID.String() + ", discovered 2026-05-01T12:01:00Z\n",
		"  last outcome: revision 1, snapshot " + active.Manifest.SnapshotID.String() + ": activated\n",
		"  usage of finalize.DefaultLimits:\n    incomplete snapshots          2 of 8           25.0%\n",
		"  snapshots: 3 staged\n",
		fmt.Sprintf("    revision 3 snapshot %s: staging, manifest missing, 1 chunk staged, %d bytes\n", headless.Manifest.SnapshotID, h.StagedBytes),
		fmt.Sprintf("    revision 2 snapshot %s: staging, 2 of %d chunks staged, %d bytes, missing chunks 1, 3-%d\n", partial.Manifest.SnapshotID, len(partial.Chunks), p.StagedBytes, len(partial.Chunks)-1),
		"    revision 1 snapshot " + active.Manifest.SnapshotID.String() + ": activated\n",
	} {
		assert.Contains(t, r.stdout, want)
	}

	// A vessel the store knows nothing of.
	other := uuid.New()
	assert.Equal(t, statusOut{Vessels: []vesselOut{{VesselID: other.String(), Usage: usageOut{
		IncompleteSnapshots: gaugeOut{Limit: 8}, IncompleteBytes: gaugeOut{Limit: 64 << 20},
		RetainedSnapshots: gaugeOut{Limit: 32}, RetainedBytes: gaugeOut{Limit: 256 << 20},
	}, Snapshots: []snapOut{}}}}, statusOf(t, "--store", store, "--vessel", other.String()))
}

// testStatusSuperseded: a vessel whose revisions went backwards is
// flagged (SPEC.md §8.4), in text and in JSON, until a higher revision
// activates.
func testStatusSuperseded(t *testing.T, store string, with func(func(*finalize.Receiver))) {
	active := snapshotAt(t, 40, examples.Boat())
	with(func(r *finalize.Receiver) { activate(t, r, active) })
	const warning = "superseded by the active revision since it was activated: while this grows, the vessel sends revisions below one it sent before (a lost or restored on-board store, SPEC.md §2.4, §8.4)\n"
	r := cli(t, "", "status", "--store", store)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.NotContains(t, r.stdout, "warning:")
	for n := 1; n <= 2; n++ {
		low := snapshotAt(t, int64(n), examples.Scaled(10+n)) // a counter that started again
		with(func(r *finalize.Receiver) {
			stageAll(t, r, low)
			out, err := r.Finalize(context.Background(), examples.VesselID, low.Manifest.SnapshotID)
			require.NoError(t, err)
			require.Equal(t, finalize.Superseded, out.Status)
		})
		v := statusOf(t, "--store", store).Vessels
		require.Len(t, v, 1)
		assert.Equal(t, n, v[0].Superseded, "superseded_by_active")
		r := cli(t, "", "status", "--store", store)
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Contains(t, r.stdout, "\n  warning:      "+plural(n, "snapshot")+" "+warning)
		assert.Contains(t, r.stdout, fmt.Sprintf("    revision %d snapshot %s: superseded: revision 40, snapshot %s, was active\n", n, low.Manifest.SnapshotID, active.Manifest.SnapshotID))
	}
	with(func(r *finalize.Receiver) { activate(t, r, snapshotAt(t, 41, examples.Boat())) })
	v := statusOf(t, "--store", store).Vessels
	require.Len(t, v, 1)
	assert.Zero(t, v[0].Superseded, "a higher revision activated: nothing superseded by it")
	r = cli(t, "", "status", "--store", store)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.NotContains(t, r.stdout, "warning:")
}

func testReconcile(t *testing.T, store string, with func(func(*finalize.Receiver))) {
	var out reconcileOut
	jsonOf(t, &out, "reconcile", "--store", store)
	assert.Empty(t, out.Vessels)
	assert.NotNil(t, out.Vessels, "[] rather than null")
	r := cli(t, "", "reconcile", "--store", store)
	assert.Equal(t, "no vessel has staging work\n", r.stdout)

	first, second, third := snapshotAt(t, 1, examples.Boat()), snapshotAt(t, 2, examples.Scaled(300)), snapshotAt(t, 3, examples.Boat())
	with(func(r *finalize.Receiver) {
		activate(t, r, first)
		stageAll(t, r, second) // complete, left by a crash before Finalize
		stage(t, r, third, true)
	})
	jsonOf(t, &out, "reconcile", "--store", store)
	require.Len(t, out.Vessels, 1)
	v := out.Vessels[0]
	assert.Equal(t, vesselFlag, v.VesselID)
	assert.Empty(t, v.Error)
	require.Len(t, v.Outcomes, 1, "the incomplete snapshot is left staging")
	o := v.Outcomes[0]
	assert.Equal(t, second.Manifest.SnapshotID.String(), o.SnapshotID)
	assert.Equal(t, "activated", o.Outcome)
	require.NotNil(t, o.ActiveSnapshotID)
	assert.Equal(t, second.Manifest.SnapshotID.String(), *o.ActiveSnapshotID)
	assert.Equal(t, int64(2), o.ActiveRevision)
	st := statusOf(t, "--store", store).Vessels[0]
	assert.Equal(t, int64(2), st.Active.Revision)

	r = cli(t, "", "reconcile", "--store", store)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, "vessel "+vesselFlag+": nothing to finalize\n", r.stdout)

	// Another document at the active revision is rejected: an outcome, not
	// a failure of the command.
	clash := snapshotAt(t, 2, examples.Boat())
	with(func(r *finalize.Receiver) { stageAll(t, r, clash) })
	r = cli(t, "", "reconcile", "--store", store, "--vessel", vesselFlag)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Regexp(t, `^vessel `+vesselFlag+`: revision 2 snapshot `+clash.Manifest.SnapshotID.String()+`: rejected \(sourcecatalog: revision conflict: .*\); active revision 2\n$`, r.stdout)
	var rejected *snapOut
	for _, sn := range statusOf(t, "--store", store).Vessels[0].Snapshots {
		if sn.SnapshotID == clash.Manifest.SnapshotID.String() {
			rejected = &sn
		}
	}
	require.NotNil(t, rejected)
	assert.Equal(t, "rejected", rejected.State)
	assert.Equal(t, "rejected", rejected.Outcome)
	assert.Contains(t, r.stdout, "("+rejected.Reason+")", "the reason status shows")
}

func testDiscard(t *testing.T, store string, with func(func(*finalize.Receiver))) {
	active, staged := snapshotAt(t, 1, examples.Boat()), snapshotAt(t, 2, examples.Scaled(300))
	with(func(r *finalize.Receiver) {
		activate(t, r, active)
		stage(t, r, staged, true, 0)
	})
	id := func(s *envelope.Snapshot) string { return s.Manifest.SnapshotID.String() }

	for _, extra := range [][]string{nil, {"--json"}} {
		r := cli(t, "", append([]string{"discard", "--store", store, "--vessel", vesselFlag, "--snapshot", id(active)}, extra...)...)
		assert.Equal(t, exitInvalid, r.code)
		assert.Empty(t, r.stdout)
		assert.Contains(t, r.stderr, "sourcecatalog discard: snapshot "+id(active)+" is the active snapshot of vessel "+vesselFlag+" (revision 1), which is never removed; nothing discarded\n")
	}
	assert.Len(t, statusOf(t, "--store", store).Vessels[0].Snapshots, 2)

	var out discardOut
	jsonOf(t, &out, "discard", "--store", store, "--vessel", vesselFlag, "--snapshot", id(staged))
	assert.Equal(t, discardOut{VesselID: vesselFlag, SnapshotID: id(staged), Discarded: true, Revision: 2, State: "staging"}, out)
	snaps := statusOf(t, "--store", store).Vessels[0].Snapshots
	require.Len(t, snaps, 1)
	assert.Equal(t, id(active), snaps[0].SnapshotID)

	r := cli(t, "", "discard", "--store", store, "--vessel", vesselFlag, "--snapshot", id(staged))
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, "nothing to discard: vessel "+vesselFlag+" has no snapshot "+id(staged)+" staged\n", r.stdout)
}

func testPrune(t *testing.T, store string, with func(func(*finalize.Receiver))) {
	var snaps []*envelope.Snapshot
	for rev := int64(1); rev <= 4; rev++ {
		snaps = append(snaps, snapshotAt(t, rev, examples.Boat()))
	}
	staging := snapshotAt(t, 5, examples.Boat())
	with(func(r *finalize.Receiver) {
		for _, s := range snaps {
			activate(t, r, s)
		}
		stage(t, r, staging, true)
	})

	var out pruneOut
	jsonOf(t, &out, "prune", "--store", store, "--vessel", vesselFlag, "--keep", "2")
	assert.Equal(t, 2, out.Keep)
	require.Len(t, out.Vessels, 1)
	v := out.Vessels[0]
	assert.Equal(t, vesselFlag, v.VesselID)
	assert.Empty(t, v.Error)
	assert.Equal(t, 2, v.Retained)
	require.Len(t, v.Pruned, 2)
	assert.Equal(t, []int64{2, 1}, []int64{v.Pruned[0].Revision, v.Pruned[1].Revision})
	assert.Equal(t, snaps[0].Manifest.SnapshotID.String(), v.Pruned[1].SnapshotID)
	assert.Equal(t, "activated", v.Pruned[0].State, "activated once, then replaced")

	// Keeping none keeps the active snapshot, and a snapshot staging.
	r := cli(t, "", "prune", "--store", store, "--all", "--keep", "0")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, "vessel "+vesselFlag+": pruned 1 snapshot (revisions 3), 1 retained\n", r.stdout)
	left := statusOf(t, "--store", store).Vessels[0].Snapshots
	require.Len(t, left, 2)
	assert.Equal(t, []int64{5, 4}, []int64{left[0].Revision, left[1].Revision})
	assert.Equal(t, "staging", left[0].State)
}

func TestOperatorUsage(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "shore.db")
	for _, tc := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"status without store", []string{"status"}, "--store is required"},
		{"status argument", []string{"status", "--store", db, "extra"}, `unexpected argument "extra": status takes no arguments`},
		{"status nil vessel", []string{"status", "--store", db, "--vessel", "00000000-0000-0000-0000-000000000000"}, "--vessel must be"},
		{"status json value", []string{"status", "--store", db, "--json=yes"}, "--json takes no value"},
		{"status unknown flag", []string{"status", "--store", db, "--all"}, `unknown flag "--all"`},
		{"reconcile without store", []string{"reconcile", "--vessel", vesselFlag}, "--store is required"},
		{"reconcile vessel twice", []string{"reconcile", "--store", db, "--vessel", vesselFlag, "--vessel", vesselFlag}, "given more than once"},
		{"discard without vessel", []string{"discard", "--store", db, "--snapshot", snapFlag}, "--vessel is required"},
		{"discard without snapshot", []string{"discard", "--store", db, "--vessel", vesselFlag}, "--snapshot is required"},
		{"prune without keep", []string{"prune", "--store", db, "--vessel", vesselFlag}, "--keep is required"},
		{"prune without vessel or all", []string{"prune", "--store", db, "--keep", "2"}, "give --vessel UUID or --all"},
		{"prune vessel and all", []string{"prune", "--store", db, "--keep", "2", "--all", "--vessel", vesselFlag}, "give --vessel UUID or --all"},
		{"prune negative keep", []string{"prune", "--store", db, "--all", "--keep", "-1"}, "--keep must be digits"},
		{"prune keep leading zero", []string{"prune", "--store", db, "--all", "--keep", "02"}, "--keep must be digits"},
		{"prune keep too large", []string{"prune", "--store", db, "--all", "--keep", "1000001"}, "--keep must be digits, 0 to 1000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cli(t, "", tc.args...)
			assert.Equal(t, exitUsage, r.code, r.stderr)
			assert.Empty(t, r.stdout)
			assert.Contains(t, r.stderr, tc.stderr)
			assert.Contains(t, r.stderr, "Usage: sourcecatalog "+tc.args[0]+" ")
		})
	}
}

func TestOperatorStoreFails(t *testing.T) {
	dir := t.TempDir()
	notDB := writeFile(t, dir, "notes.txt", []byte("not a database, just some text that is long enough to be read"))
	for _, name := range []string{"status", "reconcile"} {
		r := cli(t, "", name, "--store", "sqlite:"+notDB)
		assert.Equal(t, exitInvalid, r.code)
		assert.Empty(t, r.stdout)
		assert.Contains(t, r.stderr, "sourcecatalog "+name+": ")
	}
	// memory is a store like any other, and empty.
	r := cli(t, "", "status", "--store", "memory", "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.JSONEq(t, `{"vessels":[]}`, r.stdout)
}

func TestHelpOfTheNewCommands(t *testing.T) {
	for _, name := range []string{"commit", "publish", "status", "reconcile", "discard", "prune"} {
		r := cli(t, "", "help", name)
		require.Equal(t, exitOK, r.code)
		c := lookup(name)
		assert.NotContains(t, c.synopsis+c.summary+c.help, "TODO")
		assert.Contains(t, r.stdout, "Exit status: 0")
		// Every flag the command takes is documented.
		fs := flagsOf(t, name)
		for _, f := range fs {
			assert.Contains(t, c.help, "  --"+f+" ", "help %s documents --%s", name, f)
			assert.Contains(t, c.synopsis, "--"+f, "synopsis of %s names --%s", name, f)
		}
	}
}

// flagsOf returns the flags a command accepts, found by asking it for
// each candidate: an unknown flag is a usage error naming it.
func flagsOf(t *testing.T, name string) []string {
	t.Helper()
	var known []string
	for _, f := range []string{"store", "vessel", "snapshot", "discovered-at", "json", "url", "ca", "cert", "key", "token-file", "receiver-v2", "timeout", "give-up-after", "all", "keep"} {
		r := cli(t, "", name, "--"+f+"=x", "--nosuchflag")
		require.Equal(t, exitUsage, r.code)
		if !strings.Contains(r.stderr, `unknown flag "--`+f+`"`) {
			known = append(known, f)
		}
	}
	return known
}

// A vessel whose reconciliation fails — here its retained bound is full —
// is reported, and the command exits 1; prune makes room.
func TestReconcileFailure(t *testing.T) {
	store, with := sqliteBackend.fresh(t)
	n := int64(finalize.DefaultLimits.RetainedSnapshots)
	last := snapshotAt(t, n+1, examples.Boat())
	with(func(r *finalize.Receiver) {
		for rev := int64(1); rev <= n; rev++ {
			activate(t, r, snapshotAt(t, rev, examples.Boat()))
		}
		stageAll(t, r, last)
	})
	r := cli(t, "", "reconcile", "--store", store, "--json")
	assert.Equal(t, exitInvalid, r.code)
	var out reconcileOut
	decodeStrict(t, r.stdout, &out)
	require.Len(t, out.Vessels, 1)
	assert.Contains(t, out.Vessels[0].Error, "staging exhausted")
	assert.Empty(t, out.Vessels[0].Outcomes)
	assert.Contains(t, r.stderr, "sourcecatalog reconcile: the reconciliation of 1 vessel failed\n")

	st := statusOf(t, "--store", store).Vessels[0]
	assert.Equal(t, 1.0, st.Usage.RetainedSnapshots.Fraction)
	assert.Equal(t, 1.0, st.Usage.Highest)

	r = cli(t, "", "prune", "--store", store, "--vessel", vesselFlag, "--keep", "8")
	require.Equal(t, exitOK, r.code, r.stderr)
	r = cli(t, "", "reconcile", "--store", store)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, fmt.Sprintf(": activated; active revision %d\n", n+1))
}
