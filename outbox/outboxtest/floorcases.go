package outboxtest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// The revision floor (SPEC.md §2.4): a store that was emptied, replaced or
// restored from an old copy still allocates revisions above every one the
// vessel allocated before, given a clock that moved on; a clock that went
// backwards never lowers a revision; a time in the future never lifts one
// above the clock.
var floorCases = []testCase{
	{"NextRevisionFloor", testNextRevisionFloor},
	{"FreshStoreStartsAtTheClock", testFloorFreshStore},
	{"ClockBackwards", testFloorClockBackwards},
	{"FutureTimeCapped", testFloorFutureCapped},
	{"ReplacedStore", testFloorReplacedStore},
	{"RestoredOldCopy", testFloorRestoredCopy},
}

// millis is t in whole milliseconds since the Unix epoch, computed here
// rather than by the Writer's own function.
func millis(t time.Time) int64 { return t.Unix()*1000 + int64(t.Nanosecond()/1e6) }

// floorEnv is an env whose cycles start at base, a few hours before now,
// with a fraction of a millisecond that the floor drops.
func floorEnv(t *testing.T, newStore NewStore) *env {
	e := newEnv(t, newStore)
	e.at = time.Now().UTC().Add(-6 * time.Hour).Truncate(time.Second).Add(123_456_789)
	return e
}

// floored commits c with a Writer that floors revisions (the default).
func (e *env) floored(c outbox.Cycle) outbox.Commit {
	e.t.Helper()
	com, err := outbox.NewWriter(e.store).Commit(e.ctx, c)
	require.NoError(e.t, err, "commit %s", c.SnapshotID)
	require.False(e.t, com.Retried, "a first commit is not a retry")
	for _, en := range com.Entries {
		require.Equal(e.t, com.Revision, en.Revision, "every entry carries the commit's revision")
	}
	return com
}

// testNextRevisionFloor checks the Tx contract: the larger of last+1 and
// the floor, persisted with the transaction, and 53-bit values kept.
func testNextRevisionFloor(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	next := func(tx outbox.Tx, floor, want int64, why string) {
		t.Helper()
		got, err := tx.NextRevision(e.ctx, floor)
		require.NoError(t, err, "NextRevision(%d)", floor)
		require.Equal(t, want, got, "NextRevision(%d): %s", floor, why)
	}
	e.in(func(tx outbox.Tx) error {
		next(tx, 1000, 1000, "a fresh store starts at the floor")
		next(tx, 0, 1001, "no floor: one more than the last")
		next(tx, 1001, 1002, "a floor at the last revision: one more")
		return nil
	})
	e.in(func(tx outbox.Tx) error {
		next(tx, 500, 1003, "a lower floor never lowers the revision (persisted by the commit)")
		return nil
	})
	err := e.store.WithVessel(e.ctx, e.vessel, func(tx outbox.Tx) error {
		next(tx, sourcecatalog.MaxRevision, sourcecatalog.MaxRevision, "the floor at the largest revision")
		return errProbe
	})
	require.ErrorIs(t, err, errProbe)
	e.requireNextRevision(1004) // the rolled-back floor left nothing
	const big = int64(1) << 52
	e.in(func(tx outbox.Tx) error { next(tx, big+7, big+7, "a 53-bit floor"); return nil })
	e.requireNextRevision(big + 8)
}

func testFloorFreshStore(t *testing.T, newStore NewStore) {
	e := floorEnv(t, newStore)
	c1 := e.cycle(inv("nav", 5))
	com := e.floored(c1)
	require.Equal(t, millis(c1.DiscoveredAt), com.Revision, "a fresh store's first revision is the discovery time in milliseconds")
	c2 := e.cycle(inv("nav", 6))
	require.Equal(t, millis(c2.DiscoveredAt), e.floored(c2).Revision, "the next cycle, minutes later, is floored again")
	e.requireNextRevision(millis(c2.DiscoveredAt) + 1)

	// A retry allocates nothing, whatever the clock says now.
	again, err := outbox.NewWriter(e.store).Commit(e.ctx, c1)
	require.NoError(t, err)
	require.True(t, again.Retried)
	require.Equal(t, com.Revision, again.Revision, "a retried cycle keeps its revision")
}

func testFloorClockBackwards(t *testing.T, newStore NewStore) {
	e := floorEnv(t, newStore)
	first := e.floored(e.cycle(inv("nav", 5)))
	e.at = e.at.Add(-24 * time.Hour)
	back := e.floored(e.cycle(inv("nav", 6)))
	require.Equal(t, first.Revision+1, back.Revision, "a clock a day back: one more than the last revision")
	same := e.floored(outbox.NewCycle(e.vessel, e.at, inv("nav", 7).records(t)))
	require.Equal(t, back.Revision+1, same.Revision, "the same discovery time again: one more")

	// A clock before 1970 floors nothing.
	old := newEnv(t, newStore)
	old.at = time.Date(1969, 12, 31, 23, 0, 0, 0, time.UTC)
	require.Equal(t, int64(1), old.floored(old.cycle(inv("nav", 5))).Revision, "a time before 1970 floors nothing")
}

func testFloorFutureCapped(t *testing.T, newStore NewStore) {
	e := floorEnv(t, newStore)
	before := millis(time.Now())
	c := outbox.NewCycle(e.vessel, time.Now().AddDate(40, 0, 0), inv("nav", 5).records(t))
	com := e.floored(c)
	after := millis(time.Now())
	require.GreaterOrEqual(t, com.Revision, before, "a time in the future is floored at the clock")
	require.LessOrEqual(t, com.Revision, after, "a time in the future never lifts the revision above the clock")
	require.Equal(t, com.Revision+1, e.floored(e.cycle(inv("nav", 6))).Revision, "a later cycle at an earlier time: one more")
}

// testFloorReplacedStore: the store is lost between two cycles and a new,
// empty one takes its place.
func testFloorReplacedStore(t *testing.T, newStore NewStore) {
	e := floorEnv(t, newStore)
	var last int64
	for n := range 3 {
		last = e.floored(e.cycle(inv("nav", 5+n))).Revision
	}
	fresh := e.over(newStore(t))
	fresh.requireNextRevision(1) // newStore made an empty store
	c := fresh.cycle(inv("nav", 9))
	com := fresh.floored(c)
	require.Greater(t, com.Revision, last, "the replaced store's first revision exceeds every revision of the lost one")
	require.Equal(t, millis(c.DiscoveredAt), com.Revision)
}

// testFloorRestoredCopy: the store is restored from a copy taken after its
// first cycle, after two more cycles were committed (and sent).
func testFloorRestoredCopy(t *testing.T, newStore NewStore) {
	e := floorEnv(t, newStore)
	c1 := e.cycle(inv("nav", 5))
	first := e.floored(c1)
	old := e.over(newStore(t))
	require.Equal(t, first, old.floored(c1), "the copy holds what the store held then")
	var last int64
	for n := range 2 {
		last = e.floored(e.cycle(inv("nav", 6+n))).Revision
	}
	old.at = e.at // the clock moved on
	com := old.floored(old.cycle(inv("nav", 9)))
	require.Greater(t, com.Revision, last, "the restored copy's next revision exceeds what the newer store allocated")
	require.Equal(t, entriesOf(first.Entries, com.Entries), old.pending(), "the copy's own entries, oldest first")
}
