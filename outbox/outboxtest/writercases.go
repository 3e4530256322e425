package outboxtest

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// Writer.Commit: one cycle, one transaction, every entry or none.
var writerCases = []testCase{
	{"CommitWritesEverything", testCommit},
	{"RevisionsFollowOneAnother", testRevisions},
	{"EmptyInventory", testEmptyInventory},
	{"LargestSnapshot", testLargestSnapshot},
	{"IncompleteScan", testIncompleteScan},
	{"InvalidRecords", testInvalidRecords},
	{"RetryIsIdempotent", testRetry},
	{"SameSnapshotOtherRecords", testSameSnapshotOtherRecords},
	{"RerunCallbacks", testWriterRerun},
}

func testCommit(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	fs := NewFaultStore(e.store)
	c := e.cycle(inv("environment.depth", 120))
	com, err := countingWriter(fs).Commit(e.ctx, c)
	require.NoError(t, err)
	require.False(t, com.Retried)
	require.Equal(t, int64(1), com.Revision, "the first revision is 1")
	requireCommitted(t, c, 1, com.Entries)
	require.GreaterOrEqual(t, len(com.Entries), 4, "fixture: several chunks")

	ops, commits := fs.Counts()
	require.Equal(t, 1, commits, "one transaction")
	calls := fs.Calls()
	require.Equal(t, 1, calls["NextRevision"], "one revision allocated")
	require.Equal(t, len(com.Entries), calls["PutEntries"], "every entry put once")
	t.Logf("a commit: %d operations %v", ops, calls)

	require.Equal(t, com.Entries, e.entries(c.SnapshotID), "committed as returned")
	require.Equal(t, com.Entries, e.pending(), "every entry pending")
	e.requireNextRevision(2)
}

func testRevisions(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	var all []outbox.Entry
	for i, in := range []inventory{inv("a", 3), inv("b", 130), inv("a", 3)} {
		c := e.cycle(in)
		com := e.commit(c)
		require.Equal(t, int64(i+1), com.Revision, "revisions follow one another")
		requireCommitted(t, c, com.Revision, com.Entries)
		all = append(all, com.Entries...)
	}
	require.Equal(t, all, e.pending())
	e.requireNextRevision(4)
}

func testEmptyInventory(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	c := e.cycle(inv("none", 0))
	require.Empty(t, c.Records)
	com := e.commit(c)
	requireCommitted(t, c, 1, com.Entries)
	require.Equal(t, com.Entries, e.entries(c.SnapshotID))
}

// testLargestSnapshot commits a snapshot at the protocol's limits: 25,599
// records in 256 chunks.
func testLargestSnapshot(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	c := e.cycle(bareInv("p", (sourcecatalog.MaxRecords-1)/2))
	require.Len(t, c.Records, sourcecatalog.MaxRecords-1)
	com := e.commit(c)
	require.Len(t, com.Entries, 1+sourcecatalog.MaxChunks)
	requireCommitted(t, c, 1, com.Entries)
	require.Equal(t, com.Entries, e.entries(c.SnapshotID))
	require.Equal(t, com.Entries, e.pending())
}

// requireUnwritten requires that the failed commit of c left nothing, and
// that the vessel's state is committed entries and next revision.
func (e *env) requireUnwritten(c outbox.Cycle, committed []outbox.Entry, next int64) {
	e.t.Helper()
	e.requireNoEntries(c.SnapshotID)
	require.Equal(e.t, committed, e.pending(), "the committed entries only")
	e.requireNextRevision(next)
}

func testIncompleteScan(t *testing.T, newStore NewStore) {
	for _, tc := range []struct {
		name                 string
		truncated, uncertain bool
	}{{"Truncated", true, false}, {"PaginationUncertain", false, true}, {"Both", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, newStore)
			w := countingWriter(e.store)
			c := e.cycle(inv("a", 20))
			c.Truncated, c.PaginationUncertain = tc.truncated, tc.uncertain
			com, err := w.Commit(e.ctx, c)
			require.ErrorIs(t, err, sourcecatalog.ErrIncompleteScan)
			require.Zero(t, com)
			e.requireUnwritten(c, nil, 1)

			// The complete scan of a new cycle commits at revision 1.
			done := e.cycle(inv("a", 20))
			require.Equal(t, int64(1), e.commit(done).Revision)

			// A committed cycle retried with an incomplete scan fails too
			// and changes nothing.
			retry := done
			retry.Truncated, retry.PaginationUncertain = tc.truncated, tc.uncertain
			com, err = w.Commit(e.ctx, retry)
			require.ErrorIs(t, err, sourcecatalog.ErrIncompleteScan)
			require.Zero(t, com)
			require.Equal(t, e.entries(done.SnapshotID), e.pending())
			e.requireNextRevision(2)
		})
	}
}

func testInvalidRecords(t *testing.T, newStore NewStore) {
	notRandom := uuid.New()
	notRandom[6] = notRandom[6]&0x0f | 0x10 // version 1
	big := []byte(`{"description":"` + strings.Repeat("x", sourcecatalog.MaxChunkBody) + `"}`)
	cases := []struct {
		name  string
		edit  func(t *testing.T, c *outbox.Cycle)
		class error
	}{
		{"NilVessel", func(_ *testing.T, c *outbox.Cycle) { c.VesselID = uuid.Nil }, sourcecatalog.ErrInvalidValue},
		{"NilSnapshot", func(_ *testing.T, c *outbox.Cycle) { c.SnapshotID = uuid.Nil }, sourcecatalog.ErrInvalidValue},
		{"SnapshotNotRandom", func(_ *testing.T, c *outbox.Cycle) { c.SnapshotID = notRandom }, sourcecatalog.ErrInvalidValue},
		{"NilRecord", func(_ *testing.T, c *outbox.Cycle) { c.Records = append(c.Records, nil) }, sourcecatalog.ErrInvalidValue},
		{"ObservationWithoutPath", func(_ *testing.T, c *outbox.Cycle) {
			c.Records = slices.DeleteFunc(c.Records, func(r *catalog.Record) bool {
				return r.Kind() == catalog.KindPath && r.PathName() == "a.sensor003"
			})
		}, sourcecatalog.ErrIntegrity},
		{"UnreferencedSource", func(t *testing.T, c *outbox.Cycle) {
			r, err := catalog.NewSource(catalog.Source{SourceRef: "can9.unused"})
			require.NoError(t, err)
			c.Records = append(c.Records, r)
		}, sourcecatalog.ErrIntegrity},
		{"DuplicatePath", func(_ *testing.T, c *outbox.Cycle) {
			i := slices.IndexFunc(c.Records, func(r *catalog.Record) bool { return r.Kind() == catalog.KindPath })
			c.Records = append(c.Records, c.Records[i])
		}, sourcecatalog.ErrIntegrity},
		{"TooManyRecords", func(t *testing.T, c *outbox.Cycle) {
			c.Records = bareInv("p", sourcecatalog.MaxRecords/2).records(t)
			require.Len(t, c.Records, sourcecatalog.MaxRecords+1)
		}, sourcecatalog.ErrLimitExceeded},
		{"RecordTooLarge", func(t *testing.T, c *outbox.Cycle) {
			for i, r := range c.Records {
				if p, ok := r.AsPath(); ok {
					p.Meta = big
					var err error
					c.Records[i], err = catalog.NewPath(p)
					require.NoError(t, err)
					return
				}
			}
		}, sourcecatalog.ErrRecordTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, newStore)
			before := e.commit(e.cycle(inv("b", 4)))
			c := e.cycle(inv("a", 10))
			tc.edit(t, &c)
			com, err := countingWriter(e.store).Commit(e.ctx, c)
			require.ErrorIs(t, err, tc.class)
			require.Zero(t, com)
			e.requireUnwritten(c, before.Entries, 2)
			if c.VesselID != e.vessel {
				envOn(t, e.store, c.VesselID).requireNextRevision(1)
			}
		})
	}
}

func testRetry(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	w := countingWriter(e.store)
	c := e.cycle(inv("a", 120))
	first := e.commit(c)
	requireSameCommit := func(c outbox.Cycle, states ...outbox.State) {
		t.Helper()
		again, err := w.Commit(e.ctx, c)
		require.NoError(t, err)
		require.True(t, again.Retried, "a retried cycle is reported as such")
		require.Equal(t, first.Revision, again.Revision, "a retried cycle keeps its revision")
		require.Len(t, again.Entries, len(first.Entries))
		for i := range first.Entries {
			require.True(t, bytes.Equal(first.Entries[i].Payload, again.Entries[i].Payload), "entry %d: byte-identical", i)
			want := first.Entries[i]
			if states != nil {
				want.State = states[i]
			}
			require.Equal(t, want, again.Entries[i], "entry %d", i)
		}
	}

	requireSameCommit(c)
	requireSameCommit(c)
	shuffled := c
	shuffled.Records = slices.Clone(c.Records)
	slices.Reverse(shuffled.Records)
	requireSameCommit(shuffled) // the same document
	require.Equal(t, first.Entries, e.pending(), "nothing written twice")
	e.requireNextRevision(2)

	// Partly published: the retry still answers the committed entries.
	e.setState(first.Entries[0], outbox.Delivered)
	e.setState(first.Entries[1], outbox.Stopped)
	states := make([]outbox.State, len(first.Entries))
	for i := range states {
		states[i] = outbox.Pending
	}
	states[0], states[1] = outbox.Delivered, outbox.Stopped
	requireSameCommit(c, states...)

	next := e.commit(e.cycle(inv("b", 3)))
	require.Equal(t, int64(2), next.Revision)
	requireSameCommit(c, states...)
	e.requireNextRevision(3)
}

func testSameSnapshotOtherRecords(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	w := countingWriter(e.store)
	c := e.cycle(inv("a", 10))
	first := e.commit(c)
	for name, records := range map[string][]*catalog.Record{
		"Other":       inv("b", 10).records(t),
		"Fewer":       inv("a", 9).records(t),
		"More":        inv("a", 11).records(t),
		"ChangedUnit": inv("a", 10).withUnit("ft").records(t),
		"Empty":       nil,
	} {
		other := c
		other.Records = records
		com, err := w.Commit(e.ctx, other)
		require.ErrorIs(t, err, sourcecatalog.ErrConflict, name)
		require.Zero(t, com, name)
		require.Equal(t, first.Entries, e.entries(c.SnapshotID), "%s: the committed entries are untouched", name)
		require.Equal(t, first.Entries, e.pending(), name)
		e.requireNextRevision(2)
	}
}

// testWriterRerun commits through a store that runs every callback twice,
// the first run rolled back: the Writer's callback depends on nothing but
// the transaction.
func testWriterRerun(t *testing.T, newStore NewStore) {
	raw := newEnv(t, newStore)
	fs := NewFaultStore(raw.store)
	fs.Rerun(true)
	e := raw.over(fs)
	var all []outbox.Entry
	cycles := []outbox.Cycle{e.cycle(inv("a", 5)), e.cycle(inv("b", 120)), e.cycle(inv("c", 1))}
	for i, c := range cycles {
		com := e.commit(c)
		require.Equal(t, int64(i+1), com.Revision)
		requireCommitted(t, c, com.Revision, com.Entries)
		all = append(all, com.Entries...)
	}
	again, err := countingWriter(fs).Commit(e.ctx, cycles[1])
	require.NoError(t, err)
	require.True(t, again.Retried)
	require.Equal(t, int64(2), again.Revision)
	other := cycles[0]
	other.Records = inv("d", 2).records(t)
	_, err = countingWriter(fs).Commit(e.ctx, other)
	require.ErrorIs(t, err, sourcecatalog.ErrConflict)
	require.Equal(t, all, raw.pending())
	raw.requireNextRevision(4)
}
