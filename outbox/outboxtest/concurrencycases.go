package outboxtest

import (
	"cmp"
	"fmt"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/internal/suite"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

var concurrencyCases = []testCase{
	{"CyclesOfOneVessel", testConcurrentCycles},
	{"RetriesOfOneCycle", testConcurrentRetries},
	{"Vessels", testConcurrentVessels},
	{"PublisherSeesWholeSnapshots", testPublishWhileCommitting},
}

type committed struct {
	com outbox.Commit
	err error
}

// testConcurrentCycles commits eight cycles of one vessel at once: they get
// distinct, gap-free revisions, each with its own complete entry set.
func testConcurrentCycles(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	const n = 8
	cycles := make([]outbox.Cycle, n)
	for i := range cycles {
		cycles[i] = e.cycle(inv(fmt.Sprintf("c%d", i), 1+i*23))
	}
	w := countingWriter(e.store)
	res := suite.Parallel(n, func(i int) committed {
		com, err := w.Commit(e.ctx, cycles[i])
		return committed{com, err}
	})
	var revs []int64
	var all []outbox.Entry
	for i, r := range res {
		require.NoError(t, r.err, "cycle %d", i)
		require.False(t, r.com.Retried, "cycle %d", i)
		requireCommitted(t, cycles[i], r.com.Revision, r.com.Entries)
		require.Equal(t, r.com.Entries, e.entries(cycles[i].SnapshotID), "cycle %d: committed as returned", i)
		revs = append(revs, r.com.Revision)
		all = append(all, r.com.Entries...)
	}
	slices.Sort(revs)
	require.Equal(t, []int64{1, 2, 3, 4, 5, 6, 7, 8}, revs, "distinct, gap-free revisions")
	slices.SortStableFunc(all, func(a, b outbox.Entry) int { return cmp.Compare(a.Revision, b.Revision) })
	require.Equal(t, all, e.pending())
	e.requireNextRevision(n + 1)
}

// testConcurrentRetries commits one cycle from eight goroutines at once:
// one commits it, the others are answered its revision and entries.
func testConcurrentRetries(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	c := e.cycle(inv("a", 60))
	w := countingWriter(e.store)
	res := suite.Parallel(8, func(int) committed {
		com, err := w.Commit(e.ctx, c)
		return committed{com, err}
	})
	first := 0
	for i, r := range res {
		require.NoError(t, r.err, "commit %d", i)
		if !r.com.Retried {
			first++
		}
		require.Equal(t, int64(1), r.com.Revision, "commit %d", i)
		requireCommitted(t, c, 1, r.com.Entries)
		require.Equal(t, res[0].com.Entries, r.com.Entries, "commit %d", i)
	}
	require.Equal(t, 1, first, "exactly one commit writes")
	require.Equal(t, res[0].com.Entries, e.pending())
	e.requireNextRevision(2)
}

// testConcurrentVessels commits four cycles of each of four vessels, all
// at once: every vessel counts its own revisions.
func testConcurrentVessels(t *testing.T, newStore NewStore) {
	store := newStore(t)
	const vessels, each = 4, 4
	envs := make([]*env, vessels)
	var cycles []outbox.Cycle
	for v := range envs {
		envs[v] = envOn(t, store, uuid.New())
		for i := range each {
			cycles = append(cycles, envs[v].cycle(inv(fmt.Sprintf("v%d.c%d", v, i), 2+i)))
		}
	}
	w := countingWriter(store)
	res := suite.Parallel(len(cycles), func(i int) committed {
		com, err := w.Commit(envs[0].ctx, cycles[i])
		return committed{com, err}
	})
	revs := make(map[uuid.UUID][]int64)
	for i, r := range res {
		require.NoError(t, r.err, "cycle %d", i)
		requireCommitted(t, cycles[i], r.com.Revision, r.com.Entries)
		revs[cycles[i].VesselID] = append(revs[cycles[i].VesselID], r.com.Revision)
	}
	for _, e := range envs {
		got := revs[e.vessel]
		slices.Sort(got)
		require.Equal(t, []int64{1, 2, 3, 4}, got, "vessel %s", e.vessel)
		require.Len(t, e.pending(), each*2, "vessel %s: its own entries only", e.vessel)
		e.requireNextRevision(each + 1)
	}
}

// testPublishWhileCommitting publishes while cycles are committed: a pass
// sends every entry of a snapshot or none, as a commit is atomic, and in
// the end everything is delivered once.
func testPublishWhileCommitting(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	const n = 12
	cycles := make([]outbox.Cycle, n)
	for i := range cycles {
		cycles[i] = e.cycle(inv(fmt.Sprintf("c%d", i), 110+i))
	}
	size := make(map[uuid.UUID]int)
	done := make(chan []committed)
	go func() {
		w := countingWriter(e.store)
		var out []committed
		for _, c := range cycles {
			com, err := w.Commit(e.ctx, c)
			out = append(out, committed{com, err})
		}
		done <- out
	}()
	rec := &recorder{}
	p := e.publisher(e.store, rec)
	var passes [][]outbox.Entry
	var res []committed
	for res == nil {
		select {
		case res = <-done:
		default:
		}
		before := len(rec.entries())
		_, err := p.Publish(e.ctx)
		require.NoError(t, err)
		passes = append(passes, rec.entries()[before:])
	}
	total := 0
	for i, r := range res {
		require.NoError(t, r.err, "cycle %d", i)
		size[cycles[i].SnapshotID] = len(r.com.Entries)
		total += len(r.com.Entries)
	}
	for i, pass := range passes {
		got := make(map[uuid.UUID]int)
		for _, en := range pass {
			got[en.SnapshotID]++
		}
		for id, k := range got {
			require.Equal(t, size[id], k, "pass %d sent %d of the %d entries of %s", i, k, size[id], id)
		}
	}
	require.Empty(t, e.pending())
	require.Len(t, rec.entries(), total, "each entry sent once")
	t.Logf("%d passes", len(passes))
}
