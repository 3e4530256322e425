package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/internal/dbtest"
	"github.com/yachtmemory/sourcecatalog/outbox"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// fileState is what a demo database file holds for the example vessel,
// read with sqlitestore directly.
type fileState struct {
	active    finalize.Catalog
	snapshots map[int64]finalize.Snapshot // by revision
	pending   int                         // outbox entries still pending
	revisions int64                       // the outbox's last revision
}

func readFile(t *testing.T, path string) fileState {
	t.Helper()
	ctx := context.Background()
	s, err := sqlitestore.Open(ctx, path)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	var st fileState
	st.active, err = finalize.NewReceiver(s).Active(ctx, examples.VesselID)
	require.NoError(t, err)
	st.snapshots = map[int64]finalize.Snapshot{}
	require.NoError(t, s.WithVessel(ctx, examples.VesselID, func(tx finalize.Tx) error {
		snaps, err := tx.Snapshots(ctx)
		for _, sn := range snaps {
			st.snapshots[sn.Revision] = sn
		}
		return err
	}))
	errPeek := errors.New("roll back")
	err = s.Outbox().WithVessel(ctx, examples.VesselID, func(tx outbox.Tx) error {
		pending, err := tx.Pending(ctx, math.MaxInt)
		if err != nil {
			return err
		}
		st.pending = len(pending)
		next, err := tx.NextRevision(ctx, 0)
		if err != nil {
			return err
		}
		st.revisions = next - 1
		return errPeek
	})
	require.ErrorIs(t, err, errPeek)
	return st
}

// checkHistory checks a file after successful runs that ended at revision
// last: last active, nothing pending, and every item of the inventory
// first seen at revision 1.
func checkHistory(t *testing.T, st fileState, last int64) {
	t.Helper()
	assert.Equal(t, last, st.active.Revision)
	assert.Equal(t, last, st.revisions)
	assert.Zero(t, st.pending)
	require.Len(t, st.active.Items, 129)
	for _, it := range st.active.Items {
		assert.Equal(t, int64(1), it.FirstSeen.Revision, "%s %s %s", it.Key.Kind, it.Key.Path, it.Key.SourceRef)
	}
}

func TestDemoSQLiteContinues(t *testing.T) {
	file := filepath.Join(t.TempDir(), "demo.db")
	first := cli(t, "", "demo", "--sqlite", file)
	require.Equal(t, exitOK, first.code, first.stderr)
	assert.Contains(t, first.stdout, ", outbox sqlitestore "+file+", receiver store sqlitestore "+file+"\n")
	assert.NotContains(t, first.stdout, "resume:", "a new file has nothing to resume")
	assert.Contains(t, first.stdout, "\nverified: active revision 2 is cycle 2's snapshot")
	checkHistory(t, readFile(t, file), 2)

	// Apart from the store names, a new file prints what memory does.
	mem := cli(t, "", "demo")
	names := regexp.MustCompile(`, outbox [^\n]*\n`)
	assert.Equal(t, names.ReplaceAllString(mem.stdout, "\n"), names.ReplaceAllString(first.stdout, "\n"))

	second := cli(t, "", "demo", "--sqlite", file)
	require.Equal(t, exitOK, second.code, "stdout:\n%s\nstderr:\n%s", second.stdout, second.stderr)
	for _, want := range []string{
		"\nresume: the outbox is at revision 2 from earlier runs, 0 entries still pending\n",
		"\n  active: revision 2, snapshot ",
		"\n  commit: revision 3, ",
		"\n  commit: revision 4, ",
		"\n  snapshot 1: revision 3 ",
		"\n  active:     revision 4, snapshot ",
		"\n  changes from revision 3 to revision 4:\n",
		"\n    left     path        electrical.switches.anchorLight.state; not currently observed, first seen 1, last seen 3\n",
		"; currently observed, first seen 1, last seen 4\n",
		"\nverified: active revision 4 is cycle 2's snapshot; 129 inventory items as expected; 6 of 6 outbox entries delivered\n",
	} {
		assert.Contains(t, second.stdout, want)
	}
	st := readFile(t, file)
	checkHistory(t, st, 4)
	assert.Len(t, st.snapshots, 4, "the receiver keeps every snapshot of both runs")
}

// The stores of a demo with --sqlite and --mysql: the outbox in the file,
// the receiver in MariaDB.
func TestDemoSQLiteOutboxMySQLReceiver(t *testing.T) {
	cfg := dbtest.MySQL(t)
	cfg.DBName = ""
	file := filepath.Join(t.TempDir(), "boat.db")
	for run, last := 1, int64(0); run <= 2; run, last = run+1, last+2 {
		r := cli(t, "", "demo", "--sqlite", file, "--mysql", cfg.FormatDSN())
		require.Equal(t, exitOK, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
		assert.Regexp(t, `, outbox sqlitestore \S+boat.db, receiver store mysqlstore on .* \(throwaway\)\n`, r.stdout)
		// A throwaway receiver starts empty each time; the outbox carries on.
		assert.Contains(t, r.stdout, fmt.Sprintf("\nverified: active revision %d is cycle 2's snapshot", last+2))
		assert.Contains(t, r.stdout, fmt.Sprintf("; not currently observed, first seen %d, last seen %d\n", last+1, last+1))
	}
	st := readFile(t, file)
	assert.Equal(t, int64(4), st.revisions)
	assert.Zero(t, st.pending)
	assert.Empty(t, st.snapshots, "the receiver side of the file is not used")
}

func TestDemoSQLiteRefusesABadFile(t *testing.T) {
	dir := t.TempDir()
	notDB := writeFile(t, dir, "notes.txt", []byte("not a database, just some text that is long enough to be read"))
	for _, tc := range []struct {
		name, path, stderr string
	}{
		{"a directory", dir, "sourcecatalog demo: "},
		{"not a database", notDB, "sourcecatalog demo: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cli(t, "", "demo", "--sqlite", tc.path)
			assert.Equal(t, exitInvalid, r.code)
			assert.Contains(t, r.stderr, tc.stderr)
			assert.Contains(t, r.stderr, "not a source catalog database")
			assert.Empty(t, r.stdout)
		})
	}
}
