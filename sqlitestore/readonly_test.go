package sqlitestore_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/outbox"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// v2File makes a file of schema version 2 at path holding one snapshot
// with its manifest, one staged chunk and one outbox entry, written as
// version 2 wrote them (no checksums).
func v2File(t *testing.T, path string, vessel, snap uuid.UUID) {
	t.Helper()
	sqliteFile(t, path, sqlitestore.SchemaV1, sqlitestore.SchemaV2,
		"PRAGMA application_id = 1498628913", "PRAGMA user_version = 2",
		fmt.Sprintf(`INSERT INTO snapshots (vessel_id, snapshot_id, revision, state, manifest, manifest_sha256, chunk_count,
			record_count, chunks_staged, staged_bytes) VALUES (x'%x', x'%x', 7, 'staging', x'6d', x'%064x', 2, 3, 1, 2)`, vessel[:], snap[:], 1),
		fmt.Sprintf(`INSERT INTO chunks VALUES (x'%x', x'%x', 0, x'%064x', x'63')`, vessel[:], snap[:], 2),
		fmt.Sprintf(`INSERT INTO outbox VALUES (x'%x', x'%x', -1, 7, 'signalk_catalog_manifest_v2', 'k', x'70', x'%064x', 'pending')`,
			vessel[:], snap[:], 3))
}

// TestMigrateV2 opens a file of version 2: the migration writes the
// checksum of every row, so that each still reads as it was.
func TestMigrateV2(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v2.db")
	vessel, snap := uuid.New(), uuid.New()
	v2File(t, path, vessel, snap)
	s, err := sqlitestore.Open(ctx, path)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.WithVessel(ctx, vessel, func(tx finalize.Tx) error {
		got, err := tx.Snapshot(ctx, snap)
		require.NoError(t, err)
		require.Equal(t, []byte("m"), got.Manifest)
		require.Equal(t, int64(7), got.Revision)
		c, err := tx.Chunk(ctx, snap, 0)
		require.NoError(t, err)
		require.Equal(t, []byte("c"), c.Canonical)
		require.Equal(t, byte(2), c.Payload[31])
		return nil
	}))
	require.NoError(t, s.Outbox().WithVessel(ctx, vessel, func(tx outbox.Tx) error {
		es, err := tx.Entries(ctx, snap)
		require.NoError(t, err)
		require.Len(t, es, 1)
		require.Equal(t, []byte("p"), es[0].Payload)
		return nil
	}))
}

// TestReadOnly: WithReadOnly creates nothing and migrates nothing — a
// missing path, an empty file and an older schema are refused and left
// as they were — and reads a current file without writing to it: a write
// fails without poisoning the handle.
func TestReadOnly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ro := sqlitestore.WithReadOnly()

	missing := filepath.Join(dir, "missing.db")
	_, err := sqlitestore.Open(ctx, missing, ro)
	require.ErrorIs(t, err, sqlitestore.ErrInvalidFile)
	require.ErrorContains(t, err, "no such file")
	for _, p := range []string{missing, missing + ".lock", missing + "-journal"} {
		_, err := os.Lstat(p)
		require.ErrorIs(t, err, fs.ErrNotExist, "%s was created", p)
	}

	empty := filepath.Join(dir, "empty.db")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	_, err = sqlitestore.Open(ctx, empty, ro)
	require.ErrorIs(t, err, sqlitestore.ErrInvalidFile)
	require.ErrorContains(t, err, "empty file")
	fi, err := os.Stat(empty)
	require.NoError(t, err)
	require.Zero(t, fi.Size(), "the empty file was written")

	old := filepath.Join(dir, "v2.db")
	v2File(t, old, uuid.New(), uuid.New())
	before := snapshotFile(old)
	_, err = sqlitestore.Open(ctx, old, ro)
	require.ErrorIs(t, err, sqlitestore.ErrInvalidFile)
	require.ErrorContains(t, err, "older than this build's")
	require.Equal(t, before, snapshotFile(old), "the older file was migrated")

	current := filepath.Join(dir, "current.db")
	s, err := sqlitestore.Open(ctx, current)
	require.NoError(t, err)
	var l ledger
	require.NoError(t, runCycle(ctx, s, 1, l.ack))
	require.NoError(t, s.Close())
	before = snapshotFile(current)
	s, err = sqlitestore.Open(ctx, current, ro)
	require.NoError(t, err)
	r := receiver(s)
	st, err := r.Status(ctx, faultVessel)
	require.NoError(t, err)
	require.Equal(t, int64(1), st.Active.ActiveRevision)
	err = s.WithVessel(ctx, faultVessel, func(tx finalize.Tx) error {
		return tx.SetVessel(ctx, finalize.VesselState{})
	})
	require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable)
	require.ErrorContains(t, err, "read-only")
	require.False(t, errors.Is(err, sqlitestore.ErrPoisoned), "a refused write poisons the handle: %v", err)
	_, err = r.Status(ctx, faultVessel)
	require.NoError(t, err, "the handle still reads")
	require.NoError(t, s.Close())
	require.Equal(t, before, snapshotFile(current), "a read-only Store wrote the file")
}

// TestReadOnlyHotJournal: in a rollback journal (a WAL has none), a
// transaction cut short by a power cut leaves a hot journal, which a read-only Open cannot roll back: it says so, and a
// read-write Open recovers the file, after which a read-only one opens.
func TestReadOnlyHotJournal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base, _ := journalBaseline(t, "truncate")
	for n := 1; n < 200; n++ {
		fs := base.PowerCut()
		s := openJournal(t, fs, "truncate")
		fs.Arm(n)
		var l ledger
		if faultCycles(ctx, s, &l) == nil {
			break // past the end of the cycle
		}
		s.Close()
		cut := fs.PowerCut()
		_, err := sqlitestore.Open(ctx, dbPath, sqlitestore.WithVFS(cut.name), sqlitestore.WithReadOnly())
		if err == nil {
			continue // no hot journal at this cut
		}
		require.ErrorContains(t, err, "hot journal")
		require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable)
		require.NoError(t, openJournal(t, cut, "truncate").Close(), "a read-write Open recovers")
		again, err := sqlitestore.Open(ctx, dbPath, sqlitestore.WithVFS(cut.name), sqlitestore.WithReadOnly())
		require.NoError(t, err)
		require.NoError(t, again.Close())
		return
	}
	t.Fatal("no cut point left a hot journal")
}
