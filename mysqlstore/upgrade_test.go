package mysqlstore_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
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
	"github.com/yachtmemory/sourcecatalog/mysqlstore"
)

// The upgrade fixtures: testdata/schema_v2_1.sql is the DDL of the _v2
// tables as the package wrote them while the record index was kept in
// segments only (shape 1), and testdata/written_v2_1.sql the rows that
// code wrote for upgradeWritten, dumped with mariadb-dump. The tests load
// both, run Migrate, and compare the result with a schema the current code
// wrote from the start.

var upgradeNamespace = uuid.MustParse("6f1b2a4e-3c2d-4e5f-8a9b-0c1d2e3f4a5b")

// fixedID returns a version 4 UUID, as the protocol requires, that
// follows from name alone.
func fixedID(name string) uuid.UUID {
	id := uuid.NewSHA1(upgradeNamespace, []byte(name))
	id[6] = id[6]&0x0f | 0x40
	id[8] = id[8]&0x3f | 0x80
	return id
}

// upgradeVessel returns the fixed id of the upgrade scenario's vessel name.
func upgradeVessel(name string) uuid.UUID { return fixedID("vessel " + name) }

// upgradeSnapshot builds a snapshot of the scenario: every id and time
// follows from the vessel, the revision and the records.
func upgradeSnapshot(vessel string, rev int64, records []*catalog.Record) *envelope.Snapshot {
	id := upgradeVessel(vessel)
	snap, err := envelope.Build(envelope.Input{VesselID: id,
		SnapshotID:   fixedID(fmt.Sprintf("snapshot %s %d", vessel, rev)),
		Revision:     rev,
		DiscoveredAt: time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC).Add(time.Duration(rev) * time.Hour), Records: records})
	if err != nil {
		panic(err)
	}
	return snap
}

// upgradeWritten are the activations in the fixture's rows, in order:
// a vessel "a" whose records change, then shrink (some retire); a vessel
// "b" activated once.
func upgradeWritten() []*envelope.Snapshot {
	return []*envelope.Snapshot{
		upgradeSnapshot("a", 1, examples.Scaled(300)),
		upgradeSnapshot("a", 2, examples.WithChangedUnits(examples.Scaled(300), 6)),
		upgradeSnapshot("a", 3, examples.Scaled(240)),
		upgradeSnapshot("b", 1, examples.Scaled(100)),
	}
}

// upgradeNext are the activations after the upgrade: a record of "a"
// changes, records of "b" change and others appear.
func upgradeNext() []*envelope.Snapshot {
	return []*envelope.Snapshot{
		upgradeSnapshot("a", 4, examples.WithChangedUnits(examples.Scaled(240), 3)),
		upgradeSnapshot("b", 2, examples.WithChangedUnits(examples.Scaled(130), 2)),
	}
}

// loadSQL runs the statements of a fixture in testdata (gzipped when its
// name says so) on db.
func loadSQL(t *testing.T, db *sql.DB, name string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	if strings.HasSuffix(name, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		require.NoError(t, err)
		raw, err = io.ReadAll(zr)
		require.NoError(t, err)
	}
	stmts := mysqlstore.Statements(string(raw))
	require.NotEmpty(t, stmts)
	for _, q := range stmts {
		_, err := db.Exec(q)
		require.NoError(t, err, "%s: %.200s", name, q)
	}
}

// vesselView is what a vessel's state reads as: the active pointer, the
// record index and the inventory in canonical order.
type vesselView struct {
	State finalize.VesselState
	Index []finalize.IndexEntry
	Items []finalize.Item
}

func viewOf(t *testing.T, s *mysqlstore.Store, vessel uuid.UUID) vesselView {
	t.Helper()
	ctx := context.Background()
	var v vesselView
	require.NoError(t, s.WithVessel(ctx, vessel, func(tx finalize.Tx) (err error) {
		if v.State, err = tx.Vessel(ctx); err != nil {
			return err
		}
		if v.Index, err = tx.Index(ctx); err != nil {
			return err
		}
		v.Items, err = tx.Items(ctx)
		return err
	}))
	slices.SortFunc(v.Items, func(a, b finalize.Item) int { return a.Key.Compare(b.Key) })
	return v
}

// TestUpgradeFromShape1: a schema of shape 1 with the rows that code
// wrote is refused by CheckSchema, migrated by Migrate, and then reads,
// activates and answers exactly as a schema the current code wrote from
// the start: the same active pointers, indexes and inventories, before
// and after further activations, which move each vessel's index to the
// base and delta.
func TestUpgradeFromShape1(t *testing.T) {
	ctx := context.Background()
	old, _ := testSchema(t)
	loadSQL(t, old, "schema_v2_1.sql")
	loadSQL(t, old, "written_v2_1.sql.gz")
	var se *mysqlstore.SchemaError
	require.ErrorAs(t, mysqlstore.CheckSchema(ctx, old), &se, "shape 1 lacks what the code needs")
	assert.Contains(t, se.Missing, "signalk_catalog_vessels_v2.index_stamp")
	assert.Contains(t, se.Missing, "signalk_catalog_index_base_v2")
	var segments int
	require.NoError(t, old.QueryRow("SELECT COUNT(*) FROM signalk_catalog_index_segments_v2").Scan(&segments))
	require.Positive(t, segments, "the fixture keeps its indexes in segments")

	require.NoError(t, mysqlstore.Migrate(ctx, old))
	require.NoError(t, mysqlstore.CheckSchema(ctx, old))
	require.NoError(t, mysqlstore.Migrate(ctx, old), "Migrate is idempotent")

	fresh := migrated(t)
	ref := finalize.NewReceiver(mysqlstore.New(fresh))
	for _, s := range upgradeWritten() {
		activate(t, ref, s)
	}
	upgraded := mysqlstore.New(old)
	vessels := []uuid.UUID{upgradeVessel("a"), upgradeVessel("b")}
	for _, v := range vessels {
		want := viewOf(t, mysqlstore.New(fresh), v)
		require.NotEmpty(t, want.Index)
		require.Equal(t, want, viewOf(t, upgraded, v), "vessel %v as shape 1 wrote it", v)
	}

	// A snapshot the old code staged is answered as received.
	r := finalize.NewReceiver(upgraded)
	again := upgradeWritten()[1]
	rc, err := r.ReceiveChunk(ctx, finalize.Origin{VesselID: again.Manifest.VesselID}, again.Chunks[0].Canonical())
	require.NoError(t, err)
	assert.Equal(t, envelope.AlreadyReceived, rc.Status)

	for _, s := range upgradeNext() {
		activate(t, ref, s)
		activate(t, r, s)
	}
	for _, v := range vessels {
		want := viewOf(t, mysqlstore.New(fresh), v)
		require.Equal(t, want, viewOf(t, mysqlstore.New(old), v), "vessel %v activated after the upgrade", v)
		require.Equal(t, want, viewOf(t, upgraded, v), "vessel %v, the index kept by the Store that wrote it", v)
	}
	var moved int
	require.NoError(t, old.QueryRow("SELECT COUNT(*) FROM signalk_catalog_index_segments_v2").Scan(&moved))
	assert.Equal(t, len(vessels), moved, "each vessel's segments moved, its marker left")
}
