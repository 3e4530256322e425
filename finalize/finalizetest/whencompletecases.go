package finalizetest

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

// whenCompleteCases hold a Store to a Receiver that finalizes a set in
// the transaction staging its last message (finalize.WithFinalizeWhenComplete,
// SPEC.md §8.6): staging and activation commit together, and the
// inventory is the model's; a Finalize that fails there rolls back all it
// wrote, and the message is staged alone.
var whenCompleteCases = []testCase{
	{"LastChunk", testWhenCompleteLastChunk},
	{"Index", testWhenCompleteIndex},
	{"FailsStagesAlone", testWhenCompleteFails},
}

// stageLast stages every message of s but the last, then the last through
// the Stage method of its kind, and returns what that call reported; the
// set must then be complete.
func (e *env) stageLast(s *envelope.Snapshot) finalize.Staged {
	e.t.Helper()
	msgs := messagesOf(e.t, s)
	e.deliverAll(msgs[:len(msgs)-1], envelope.Staged)
	last := msgs[len(msgs)-1]
	var st finalize.Staged
	var err error
	if last.manifest {
		st, err = e.r.StageManifest(e.ctx, e.origin, last.raw)
	} else {
		c, derr := envelope.DecodeChunk(last.raw)
		require.NoError(e.t, derr, "fixture chunk")
		st, err = e.r.StageChunk(e.ctx, e.origin, c)
	}
	require.NoError(e.t, err, "stage %s", last.name)
	requireReceipt(e.t, last, envelope.Staged, st.Receipt, "receipt of %s", last.name)
	require.True(e.t, st.Receipt.Complete, "the last message completes the set")
	return st
}

// requireRun requires st to report a Finalize run with the message that
// had outcome status for s, with active the active snapshot after it.
func (e *env) requireRun(st finalize.Staged, status finalize.OutcomeStatus, s, active *envelope.Snapshot) {
	e.t.Helper()
	require.NotNil(e.t, st.FinalizeRun, "Finalize ran with the message")
	require.NoError(e.t, st.FinalizeRun.Err)
	require.Equal(e.t, e.outcome(status, s, active), e.sansUsage(st.FinalizeRun.Outcome), "the run's outcome")
	require.False(e.t, st.NeedsFinalize(), "nothing left to finalize")
}

// LastChunk: a first snapshot and a changed one, each activated by the
// message completing it, leave the inventory of the model, with history;
// a Finalize after them reports the second already active.
func testWhenCompleteLastChunk(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore, finalize.WithFinalizeWhenComplete())
	inv := baseInventory().withSensors("sensor", 150, "m")
	s1 := e.build(1, inv)
	e.requireRun(e.stageLast(s1), finalize.Activated, s1, s1)
	e.requireActive(s1)
	s2 := e.build(2, inv.withSensors("other", 20, "V"))
	e.requireRun(e.stageLast(s2), finalize.Activated, s2, s2)
	e.requireActive(s1, s2)
	require.Equal(t, e.outcome(finalize.AlreadyActive, s2, s2), e.finalize(idOf(s2)))
}

// Index: an identical snapshot's index that resolves every chunk is
// staged and activated in its transaction, its chunks staged byte for
// byte as if sent whole.
func testWhenCompleteIndex(t *testing.T, newStore NewStore) {
	e, inv, s1 := refBoat(t, newStore)
	e = e.over(finalize.NewReceiver(e.store, finalize.WithFinalizeWhenComplete()))
	if !e.requireLookup() {
		return
	}
	s2 := e.build(2, inv)
	st, err := e.r.StageManifestIndex(e.ctx, e.origin, indexOf(t, s2).Canonical())
	require.NoError(t, err)
	require.Zero(t, st.Receipt.Missing.Len(), "every chunk held")
	e.requireRun(st, finalize.Activated, s2, s2)
	got, _ := e.staged(idOf(s2))
	require.Equal(t, wholeChunks(s2), got, "the staged chunks are the whole chunks, byte for byte")
	e.requireActive(s1, s2)
}

// FailsStagesAlone: a Finalize that fails in the transaction — the
// retained bound full — leaves nothing of its own: the message is staged
// alone, the active catalog is untouched, and a later Finalize with room
// activates the set.
func testWhenCompleteFails(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	inv := baseInventory().withSensors("sensor", 150, "m")
	s1 := e.build(1, inv)
	e.activate(s1)
	full := e.over(finalize.NewReceiver(e.store, finalize.WithFinalizeWhenComplete(), finalize.WithLimits(finalize.Limits{
		IncompleteSnapshots: 8, IncompleteBytes: 1 << 30, RetainedSnapshots: 1, RetainedBytes: 1 << 30,
	})))
	s2 := e.build(2, inv.withSensors("other", 20, "V"))
	st := full.stageLast(s2)
	require.Nil(t, st.FinalizeRun, "the failed Finalize is not reported as run")
	require.True(t, st.NeedsFinalize(), "Finalize is still to run")
	e.requireActive(s1)
	_, err := full.r.Finalize(e.ctx, e.vessel, idOf(s2))
	require.ErrorIs(t, err, sourcecatalog.ErrStagingExhausted, "the bound is still full")
	e.requireActive(s1)
	require.Equal(t, e.outcome(finalize.Activated, s2, s2), e.finalize(idOf(s2)))
	e.requireActive(s1, s2)
}
