package finalizetest

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

var stagingCases = []testCase{
	{"IncompleteCount", testIncompleteCount},
	{"IncompleteBytes", testIncompleteBytes},
	{"RetainedCount", testRetainedCount},
	{"RetainedBytes", testRetainedBytes},
	{"Discard", testDiscard},
	{"DiscardActive", testDiscardActive},
	{"Prune", testPrune},
	{"NoAutomaticPruning", testNoAutomaticPruning},
	{"Retention", testRetention},
	{"RetentionMakesRoom", testRetentionMakesRoom},
	{"RetentionKeepsActive", testRetentionKeepsActive},
	{"Usage", testUsage},
}

// roomy is a bound no test reaches.
const roomy = 1 << 30

func (e *env) discard(id uuid.UUID) {
	e.t.Helper()
	require.NoError(e.t, e.r.Discard(e.ctx, e.vessel, id), "Discard")
}

func (e *env) prune(keep int) {
	e.t.Helper()
	require.NoError(e.t, e.r.Prune(e.ctx, e.vessel, keep), "Prune")
}

// storedUsage sums what the store holds for the vessel, by bound, with the
// limits of e's receiver.
func (e *env) storedUsage() finalize.Usage {
	e.t.Helper()
	u, err := e.r.Usage(e.ctx, e.vessel)
	require.NoError(e.t, err, "Usage")
	var stored finalize.Usage
	e.in(func(tx finalize.Tx) error {
		all, err := tx.Snapshots(e.ctx)
		stored = finalize.Usage{}
		for _, s := range all {
			g, b := &stored.RetainedSnapshots, &stored.RetainedBytes
			if s.State == finalize.StateStaging {
				g, b = &stored.IncompleteSnapshots, &stored.IncompleteBytes
			}
			g.Used++
			b.Used += s.StagedBytes
		}
		return err
	})
	stored.IncompleteSnapshots.Limit, stored.IncompleteBytes.Limit = u.IncompleteSnapshots.Limit, u.IncompleteBytes.Limit
	stored.RetainedSnapshots.Limit, stored.RetainedBytes.Limit = u.RetainedSnapshots.Limit, u.RetainedBytes.Limit
	require.Equal(e.t, stored, u, "Usage is what the store holds")
	return u
}

// sansUsage requires out.Usage to be the vessel's usage now, and returns
// out without it, for comparison, and without SupersededByActive, which
// Revision/SupersededByActive checks.
func (e *env) sansUsage(out finalize.Outcome) finalize.Outcome {
	e.t.Helper()
	require.Equal(e.t, e.storedUsage(), out.Usage, "Outcome.Usage")
	out.Usage, out.SupersededByActive = finalize.Usage{}, 0
	return out
}

// requireExhausted requires Finalize to fail closed with
// ErrStagingExhausted, changing nothing.
func (e *env) requireExhausted(id uuid.UUID) {
	e.t.Helper()
	out, err := e.r.Finalize(e.ctx, e.vessel, id)
	require.ErrorIs(e.t, err, sourcecatalog.ErrStagingExhausted)
	require.Zero(e.t, out, "no outcome when Finalize fails")
}

func testIncompleteCount(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore, finalize.WithLimits(finalize.Limits{
		IncompleteSnapshots: 2, IncompleteBytes: roomy, RetainedSnapshots: roomy, RetainedBytes: roomy,
	}))
	a := e.build(1, baseInventory())
	e.activate(a)
	s1 := e.build(2, changedInventory(t).withSensors("sensor", 150, "m"))
	s2 := e.build(3, baseInventory().withSensors("probe", 150, "m"))
	s3 := e.build(4, changedInventory(t))
	m1, m2, m3 := messagesOf(t, s1), messagesOf(t, s2), messagesOf(t, s3)

	e.deliver(m1[0], envelope.Staged)
	e.deliver(m2[2], envelope.Staged)
	e.refuse(m3[0], sourcecatalog.ErrStagingExhausted) // a third incomplete snapshot
	e.refuse(m3[1], sourcecatalog.ErrStagingExhausted)
	e.requireNothingStaged(idOf(s3))
	e.deliver(m1[0], envelope.AlreadyReceived) // retries are still answered
	e.deliver(m2[2], envelope.AlreadyReceived)
	e.deliver(m1[1], envelope.Staged) // staged snapshots still grow
	e.requireActive(a)

	e.discard(idOf(s2))
	e.requireNothingStaged(idOf(s2))
	e.deliverAll(m3, envelope.Staged)
	e.refuse(m2[2], sourcecatalog.ErrStagingExhausted)

	// Finalizing frees room too.
	e.deliverAll(m1[2:], envelope.Staged)
	require.Equal(t, finalize.Activated, e.finalize(idOf(s1)).Status)
	require.Equal(t, finalize.Activated, e.finalize(idOf(s3)).Status)
	e.deliverAll(m2, envelope.Staged)
	require.Equal(t, finalize.Superseded, e.finalize(idOf(s2)).Status)
	e.requireActive(a, s1, s3)
}

func testIncompleteBytes(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a := e.build(1, baseInventory())
	e.activate(a)
	s1 := e.build(2, changedInventory(t).withSensors("sensor", 150, "m"))
	s2 := e.build(3, changedInventory(t).withSensors("probe", 150, "m"))
	m1, m2 := messagesOf(t, s1), messagesOf(t, s2)
	size1 := stagedBytes(m1)
	require.LessOrEqual(t, stagedBytes(m2), size1, "fixture")
	limits := func(bytes int64) finalize.Option {
		return finalize.WithLimits(finalize.Limits{IncompleteSnapshots: roomy, IncompleteBytes: bytes, RetainedSnapshots: roomy, RetainedBytes: roomy})
	}

	// One byte short of s1: its last chunk does not fit.
	tight := e.over(finalize.NewReceiver(e.store, limits(size1-1)))
	last := len(m1) - 1
	tight.deliverAll(m1[:last], envelope.Staged)
	tight.refuse(m1[last], sourcecatalog.ErrStagingExhausted)
	tight.requireMissing(idOf(s1), last-1)
	tight.deliverAll(m1[:last], envelope.AlreadyReceived)
	tight.requireActive(a)

	// Exactly s1: nothing else fits until s1 is finalized.
	exact := e.over(finalize.NewReceiver(e.store, limits(size1)))
	exact.deliver(m1[last], envelope.Staged)
	exact.refuse(m2[0], sourcecatalog.ErrStagingExhausted)
	exact.refuse(m2[1], sourcecatalog.ErrStagingExhausted)
	exact.requireNothingStaged(idOf(s2))
	require.Equal(t, finalize.Activated, exact.finalize(idOf(s1)).Status)
	exact.deliverAll(m2, envelope.Staged)
	require.Equal(t, finalize.Activated, exact.finalize(idOf(s2)).Status)
	exact.requireActive(a, s1, s2)
}

func testRetainedCount(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore, finalize.WithLimits(finalize.Limits{
		IncompleteSnapshots: roomy, IncompleteBytes: roomy, RetainedSnapshots: 2, RetainedBytes: roomy,
	}))
	s1 := e.build(1, baseInventory())
	s2 := e.build(2, changedInventory(t))
	e.activate(s1)
	e.activate(s2)
	s3 := e.build(3, baseInventory().withSensors("sensor", 150, "m"))
	low := e.build(1, changedInventory(t).withSensors("probe", 10, "m"))
	m3 := messagesOf(t, s3)
	e.deliverAll(m3, envelope.Staged)
	e.deliverAll(messagesOf(t, low), envelope.Staged)
	for range 2 {
		e.requireExhausted(idOf(s3))
		e.requireExhausted(idOf(low)) // superseded snapshots are retained too
		e.requireActive(s1, s2)
	}
	e.deliverAll(m3, envelope.AlreadyReceived)

	e.prune(1)
	e.requireNothingStaged(idOf(s1))
	require.Equal(t, e.outcome(finalize.AlreadyActive, s2, s2), e.finalize(idOf(s2)))
	require.Equal(t, e.outcome(finalize.Activated, s3, s3), e.finalize(idOf(s3)))
	e.requireActive(s1, s2, s3) // pruning never touches the inventory
	e.requireExhausted(idOf(low))
}

func testRetainedBytes(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	s1 := e.build(1, baseInventory().withSensors("sensor", 100, "m"))
	s2 := e.build(2, changedInventory(t))
	s3 := e.build(3, baseInventory().withSensors("probe", 150, "m"))
	total := stagedBytes(messagesOf(t, s1)) + stagedBytes(messagesOf(t, s2)) + stagedBytes(messagesOf(t, s3))
	e.r = finalize.NewReceiver(e.store, finalize.WithLimits(finalize.Limits{
		IncompleteSnapshots: roomy, IncompleteBytes: roomy, RetainedSnapshots: roomy, RetainedBytes: total - 1,
	}))
	e.activate(s1)
	e.activate(s2)
	e.deliverAll(messagesOf(t, s3), envelope.Staged)
	e.requireExhausted(idOf(s3))
	e.requireActive(s1, s2)
	e.deliverAll(messagesOf(t, s2), envelope.AlreadyReceived)
	e.deliverAll(messagesOf(t, s3), envelope.AlreadyReceived)
	e.requireExhausted(idOf(s3))
	e.discard(idOf(s1))
	e.requireNothingStaged(idOf(s1))
	require.Equal(t, e.outcome(finalize.Activated, s3, s3), e.finalize(idOf(s3)))
	e.requireActive(s1, s2, s3)
}

func testDiscard(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a := e.build(1, baseInventory())
	e.activate(a)
	s := e.build(2, changedInventory(t).withSensors("sensor", 150, "m"))
	msgs := messagesOf(t, s)
	e.deliverAll(msgs[:3], envelope.Staged)
	e.discard(idOf(s))
	e.requireNothingStaged(idOf(s))
	e.discard(e.ids.next()) // unknown: not an error
	e.requireActive(a)

	e.deliverAll(msgs, envelope.Staged) // staged afresh
	require.Equal(t, finalize.Activated, e.finalize(idOf(s)).Status)
	e.discard(idOf(a)) // replaced: may go
	e.requireNothingStaged(idOf(a))
	e.requireActive(a, s) // the inventory is never touched
}

func testDiscardActive(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a := e.build(1, baseInventory().withSensors("sensor", 150, "m"))
	e.activate(a)
	twin := e.build(1, baseInventory().withSensors("sensor", 150, "m"))
	e.deliverAll(messagesOf(t, twin), envelope.Staged)
	require.Equal(t, finalize.AlreadyActive, e.finalize(idOf(twin)).Status)

	err := e.r.Discard(e.ctx, e.vessel, idOf(a))
	require.ErrorIs(t, err, finalize.ErrActiveSnapshot)
	require.Equal(t, e.outcome(finalize.AlreadyActive, a, a), e.finalize(idOf(a)), "the active snapshot is kept")
	e.deliverAll(messagesOf(t, a), envelope.AlreadyReceived)
	e.requireActive(a)
	e.discard(idOf(twin)) // not the active one
	e.requireNothingStaged(idOf(twin))
	e.requireActive(a)
}

func testPrune(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	s1 := e.build(1, baseInventory())
	s2 := e.build(2, changedInventory(t))
	s3 := e.build(3, baseInventory().withSensors("sensor", 150, "m"))
	for _, s := range []*envelope.Snapshot{s1, s2, s3} {
		e.activate(s)
	}
	bad := e.build(9, changedInventory(t).withSensors("probe", 150, "m")) // rejected
	badMsgs := messagesOf(t, bad)
	m := bad.Manifest
	m.RecordCount++
	badMsgs[0] = manifestMessage(t, m.Canonical())
	e.deliverAll(badMsgs, envelope.Staged)
	require.Equal(t, finalize.Rejected, e.finalize(idOf(bad)).Status)
	s4 := e.build(10, changedInventory(t).withSensors("sensor", 150, "m")) // staging
	m4 := messagesOf(t, s4)
	e.deliverAll(m4[:3], envelope.Staged)

	e.prune(2) // the two newest finalized by revision: bad and s3
	e.requireNothingStaged(idOf(s1))
	e.requireNothingStaged(idOf(s2))
	require.Equal(t, finalize.Rejected, e.finalize(idOf(bad)).Status)
	require.Equal(t, finalize.AlreadyActive, e.finalize(idOf(s3)).Status)

	e.prune(0) // never the active one, never one still staging
	e.requireNothingStaged(idOf(bad))
	require.Equal(t, e.outcome(finalize.AlreadyActive, s3, s3), e.finalize(idOf(s3)))
	e.deliverAll(messagesOf(t, s3), envelope.AlreadyReceived)
	e.deliverAll(m4[:3], envelope.AlreadyReceived)
	e.requireMissing(idOf(s4), 2, 3)
	e.requireActive(s1, s2, s3)

	e.deliverAll(m4[3:], envelope.Staged)
	require.Equal(t, finalize.Activated, e.finalize(idOf(s4)).Status)
	e.requireActive(s1, s2, s3, s4)
}

func testNoAutomaticPruning(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	var snaps []*envelope.Snapshot
	for rev := range int64(5) {
		inv := baseInventory()
		if rev%2 == 1 {
			inv = changedInventory(t)
		}
		s := e.build(rev+1, inv)
		e.activate(s)
		snaps = append(snaps, s)
	}
	for _, s := range snaps[:4] {
		require.Equal(t, e.outcome(finalize.Superseded, s, snaps[4]), e.finalize(idOf(s)), "kept by default")
		e.deliverAll(messagesOf(t, s), envelope.AlreadyReceived)
	}
	e.requireActive(snaps...)
}

func testRetention(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore, finalize.WithRetention(1))
	s1 := e.build(1, baseInventory())
	s2 := e.build(2, changedInventory(t))
	s3 := e.build(3, baseInventory().withSensors("sensor", 150, "m"))
	e.activate(s1)
	e.activate(s2)
	e.requireNothingStaged(idOf(s1))
	staging := e.build(7, changedInventory(t))
	sm := messagesOf(t, staging)
	e.deliverAll(sm[1:], envelope.Staged)
	e.activate(s3)
	e.requireNothingStaged(idOf(s2))
	require.Equal(t, finalize.AlreadyActive, e.finalize(idOf(s3)).Status)
	e.deliverAll(sm[1:], envelope.AlreadyReceived) // staging snapshots are never pruned
	e.requireActive(s1, s2, s3)
}

// testRetentionMakesRoom: with retention, a full retained bound is made
// room for by pruning the oldest, never the active one.
func testRetentionMakesRoom(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore, finalize.WithRetention(5), finalize.WithLimits(finalize.Limits{
		IncompleteSnapshots: roomy, IncompleteBytes: roomy, RetainedSnapshots: 2, RetainedBytes: roomy,
	}))
	s1 := e.build(1, baseInventory())
	s2 := e.build(2, changedInventory(t))
	s3 := e.build(3, baseInventory().withSensors("sensor", 150, "m"))
	e.activate(s1)
	e.activate(s2)
	e.activate(s3)
	e.requireNothingStaged(idOf(s1))
	require.Equal(t, e.outcome(finalize.Superseded, s2, s3), e.finalize(idOf(s2)))
	e.requireActive(s1, s2, s3)
}

// testRetentionKeepsActive: making room never prunes the active snapshot,
// even when it is the oldest finalized one (a rejected snapshot of a higher
// revision is retained beside it).
func testRetentionKeepsActive(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore, finalize.WithRetention(5), finalize.WithLimits(finalize.Limits{
		IncompleteSnapshots: roomy, IncompleteBytes: roomy, RetainedSnapshots: 2, RetainedBytes: roomy,
	}))
	s1 := e.build(1, baseInventory())
	e.activate(s1)
	// Revision 5, every chunk valid alone, the set not: rejected.
	var records [][]byte
	for _, r := range recordsOf(e.build(5, baseInventory())) {
		if r.SourceRef() != srcDepth || r.PathName() != "" {
			records = append(records, r.Canonical())
		}
	}
	bad := newHandSet(e.vessel, e.ids.next(), 5, e.next(), splitRecords(records, 90))
	e.deliverAll(bad.messages(t), envelope.Staged)
	require.Equal(t, finalize.Rejected, e.finalize(bad.manifest.SnapshotID).Status)

	s2 := e.build(2, changedInventory(t))
	e.activate(s2) // the retained bound is full: room is made
	require.Equal(t, e.outcome(finalize.Superseded, s1, s2), e.finalize(idOf(s1)), "the snapshot active when room was made is kept")
	require.True(t, e.finalize(bad.manifest.SnapshotID).MissingManifest, "the rejected one was pruned")
	e.requireActive(s1, s2)
}

// testUsage: Usage, and Outcome.Usage, count exactly what is staged and
// retained, in snapshots and in the bytes of the messages staged, after
// every receipt, refusal, Finalize, Prune and Discard.
func testUsage(t *testing.T, newStore NewStore) {
	limits := finalize.Limits{IncompleteSnapshots: 3, IncompleteBytes: roomy, RetainedSnapshots: 4, RetainedBytes: 2 * roomy}
	e := newEnv(t, newStore, finalize.WithLimits(limits))
	var want finalize.Usage
	want.IncompleteSnapshots.Limit, want.IncompleteBytes.Limit = 3, roomy
	want.RetainedSnapshots.Limit, want.RetainedBytes.Limit = 4, 2*roomy
	check := func(step string) {
		t.Helper()
		u, err := e.r.Usage(e.ctx, e.vessel)
		require.NoError(t, err, step)
		require.Equal(t, want, u, step)
	}
	incomplete := func(snapshots int64, msgs []message) {
		want.IncompleteSnapshots.Used += snapshots
		want.IncompleteBytes.Used += stagedBytes(msgs)
	}
	retain := func(snapshots int64, msgs []message) {
		want.RetainedSnapshots.Used += snapshots
		want.RetainedBytes.Used += stagedBytes(msgs)
	}
	check("nothing staged")

	s1 := e.build(1, baseInventory())
	s2 := e.build(2, changedInventory(t).withSensors("sensor", 150, "m"))
	s3 := e.build(3, baseInventory().withSensors("probe", 150, "m"))
	m1, m2, m3 := messagesOf(t, s1), messagesOf(t, s2), messagesOf(t, s3)
	e.deliver(m2[2], envelope.Staged)
	incomplete(1, m2[2:3])
	check("a chunk of s2")
	e.deliverAll(m2[:2], envelope.Staged)
	incomplete(0, m2[:2])
	check("s2 growing")
	e.deliverAll(m2[:3], envelope.AlreadyReceived)
	e.refuse(messagesOf(t, e.buildAs(idOf(s2), 2, baseInventory()))[0], sourcecatalog.ErrConflict)
	check("retries and refusals stage nothing")

	e.deliverAll(m1, envelope.Staged)
	incomplete(1, m1)
	check("s1 complete")
	out, err := e.r.Finalize(e.ctx, e.vessel, idOf(s1))
	require.NoError(t, err)
	require.Equal(t, finalize.Activated, out.Status)
	incomplete(-1, nil)
	want.IncompleteBytes.Used -= stagedBytes(m1)
	retain(1, m1)
	require.Equal(t, want, out.Usage, "Outcome.Usage after the activation")
	check("s1 activated")
	require.Equal(t, 0.25, out.Usage.RetainedSnapshots.Fraction(), "1 of 4 retained")
	require.Equal(t, 1.0/3, out.Usage.Highest(), "the fullest bound: 1 of 3 incomplete")

	e.deliverAll(m2[3:], envelope.Staged)
	incomplete(0, m2[3:])
	e.deliverAll(m3[:1], envelope.Staged)
	incomplete(1, m3[:1])
	check("s3 started")
	require.Equal(t, 2.0/3, e.storedUsage().Highest(), "the fullest bound: 2 of 3 incomplete")
	require.Equal(t, finalize.Activated, e.finalize(idOf(s2)).Status)
	incomplete(-1, nil)
	want.IncompleteBytes.Used -= stagedBytes(m2)
	retain(1, m2)
	check("s2 activated")

	e.prune(1)
	retain(-1, nil)
	want.RetainedBytes.Used -= stagedBytes(m1)
	check("s1 pruned")
	e.discard(idOf(s3))
	incomplete(-1, nil)
	want.IncompleteBytes.Used -= stagedBytes(m3[:1])
	check("s3 discarded")
	require.ErrorIs(t, e.r.Discard(e.ctx, e.vessel, idOf(s2)), finalize.ErrActiveSnapshot)
	check("the active snapshot is not discarded")
	require.Equal(t, finalize.Usage{
		IncompleteSnapshots: finalize.Gauge{Limit: 3}, IncompleteBytes: finalize.Gauge{Limit: roomy},
		RetainedSnapshots: finalize.Gauge{Used: 1, Limit: 4}, RetainedBytes: finalize.Gauge{Used: stagedBytes(m2), Limit: 2 * roomy},
	}, want, "the test's own sums")
}
