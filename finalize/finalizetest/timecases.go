package finalizetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

// A store keeps every discovery time the protocol accepts exactly: any
// year from 0000 to 9999, to the nanosecond.
var timeCases = []testCase{
	{"ExtremeDiscoveryTimes", testExtremeTimes},
}

// extremeTimes are discovery times at and beyond the edges of common
// encodings, in increasing order: the first and last instants the
// protocol accepts, and the instants just outside the range of Unix
// nanoseconds in an int64 (1677-09-21T00:12:43.145224192Z to
// 2262-04-11T23:47:16.854775807Z).
var extremeTimes = []string{
	"0000-01-01T00:00:00Z",
	"1500-06-01T00:00:00Z",
	"1677-09-21T00:12:43.145224191Z",
	"2262-04-11T23:47:16.854775808Z",
	"2300-01-01T00:00:00Z",
	"9999-12-31T23:59:59.999999999Z",
}

// testExtremeTimes activates snapshots discovered at extremeTimes in turn.
// Each selects one path of its own, which leaves with the next snapshot, so
// every time is stored as a first seen, a last seen and the active
// discovery time. Each must read back equal and in UTC, through the
// receiver that wrote it and through a new one.
func testExtremeTimes(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	at := map[int64]time.Time{} // discovery time by revision
	var snaps []*envelope.Snapshot
	for i, text := range extremeTimes {
		when, err := envelope.ParseTime(text)
		require.NoError(t, err, "fixture time %s", text)
		rev := int64(i + 1)
		inv := baseInventory().plus(sel{path: "environment.step" + pad3(i), unit: catalog.UnitOf("s"), source: srcDerived, vt: catalog.Number})
		s, err := envelope.Build(envelope.Input{
			VesselID: e.vessel, SnapshotID: e.ids.next(), Revision: rev, DiscoveredAt: when, Records: inv.records(t),
		})
		require.NoError(t, err, "fixture snapshot discovered at %s", text)
		e.activate(s)
		at[rev] = when
		snaps = append(snaps, s)
		requireExactTimes(t, e.activeCatalog(), at, rev)
		e.requireActive(snaps...)
	}
	again := e.over(finalize.NewReceiver(e.store))
	requireExactTimes(t, again.activeCatalog(), at, int64(len(extremeTimes)))
	again.requireActive(snaps...)
}

// activeCatalog returns the active catalog as the receiver returns it.
func (e *env) activeCatalog() finalize.Catalog {
	e.t.Helper()
	c, err := e.r.Active(e.ctx, e.vessel)
	require.NoError(e.t, err, "Active")
	return c
}

// requireExactTimes requires the catalog's discovery time to be that of
// revision active, and every first and last seen time that of the revision
// it names, each equal to the nanosecond and in UTC.
func requireExactTimes(t *testing.T, c finalize.Catalog, at map[int64]time.Time, active int64) {
	t.Helper()
	require.Equal(t, active, c.Revision, "active revision")
	requireTime(t, "the active discovery time", at[active], c.DiscoveredAt)
	for _, it := range c.Items {
		for _, s := range []struct {
			what string
			seen finalize.Seen
		}{{"first seen", it.FirstSeen}, {"last seen", it.LastSeen}} {
			want, ok := at[s.seen.Revision]
			require.True(t, ok, "%s of %s %s %s: revision %d was never activated", s.what, it.Key.Kind, it.Key.Path, it.Key.SourceRef, s.seen.Revision)
			requireTime(t, s.what+" of "+it.Key.Kind.String()+" "+it.Key.Path+" "+it.Key.SourceRef, want, s.seen.At)
		}
	}
}

func requireTime(t *testing.T, what string, want, got time.Time) {
	t.Helper()
	require.True(t, want.Equal(got), "%s: got %v, want %v", what, got, want)
	require.Same(t, time.UTC, got.Location(), "%s: in UTC, got %v", what, got)
}
