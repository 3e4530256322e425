package finalizetest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

var crashCases = []testCase{
	{"EveryPoint", testCrashEveryPoint},
	{"RerunCallbacks", testRerunCallbacks},
}

// crashScenario is the scenario the crash tests break: snapshot a is
// active; every message of b arrives, in a fixed order that is not the
// index order, and b is finalized, which activates it and, with retention,
// prunes a.
type crashScenario struct {
	a, b *envelope.Snapshot
	msgs []message
}

func newCrashScenario(e *env) crashScenario {
	a := e.build(1, baseInventory().withSensors("sensor", 120, "m"))
	b := e.build(2, changedInventory(e.t).withSensors("sensor", 150, "m"))
	msgs := messagesOf(e.t, b)
	require.Len(e.t, msgs, 5, "fixture")
	order := []int{3, 0, 1, 4, 2}
	sc := crashScenario{a: a, b: b}
	for _, i := range order {
		sc.msgs = append(sc.msgs, msgs[i])
	}
	return sc
}

var crashOptions = []finalize.Option{finalize.WithRetention(1)}

// run plays the scenario until the first error, as a process that dies
// there would. It returns the receipts issued, by message, and which step
// failed (len(msgs) for Finalize) with its error.
func (sc crashScenario) run(e *env) (receipts []*envelope.Receipt, failed int, err error) {
	e.t.Helper()
	receipts = make([]*envelope.Receipt, len(sc.msgs))
	for i, m := range sc.msgs {
		rc, err := e.send(m)
		if err != nil {
			require.Zero(e.t, rc, "no receipt with an error")
			return receipts, i, err
		}
		requireReceipt(e.t, m, envelope.Staged, rc)
		receipts[i] = &rc
	}
	out, err := e.r.Finalize(e.ctx, e.vessel, idOf(sc.b))
	if err != nil {
		require.Zero(e.t, out, "no outcome with an error")
		return receipts, len(sc.msgs), err
	}
	// Checked elsewhere; reading them here would move the fault points.
	out.Usage, out.SupersededByActive = finalize.Usage{}, 0
	require.Equal(e.t, e.outcome(finalize.Activated, sc.b, sc.b), out)
	return receipts, -1, nil
}

// testCrashEveryPoint counts the operations and commit points of a clean
// run of the scenario, then for every one of them runs the scenario on a
// fresh store failing there — a failed operation, a failed commit, a
// commit whose acknowledgement is lost — and recovers as a restarted
// process would: a fresh Receiver re-delivers every message and runs
// Reconcile. The state after the failure is exactly a's or b's catalog,
// never a mix; every receipt issued is durable; the recovery activates b.
func testCrashEveryPoint(t *testing.T, newStore NewStore) {
	name := t.Name()
	setup := func(t *testing.T) (*env, crashScenario) {
		e := envNamed(t, name, newStore(t))
		sc := newCrashScenario(e)
		e.activate(sc.a)
		return e, sc
	}

	// The clean run: how many points, and the two catalogs.
	e, sc := setup(t)
	wantA := e.active()
	require.Equal(t, expect(e.vessel, sc.a), wantA)
	fs := NewFaultStore(e.store)
	_, failed, err := sc.run(e.over(finalize.NewReceiver(fs, crashOptions...)))
	require.NoError(t, err)
	require.Equal(t, -1, failed)
	require.False(t, fs.Fired())
	ops, commits := fs.Counts()
	assert.Equal(t, len(sc.msgs)+1, commits, "one transaction per message and one for Finalize")
	wantB := e.active()
	require.Equal(t, expect(e.vessel, sc.a, sc.b), wantB)
	t.Logf("scenario: %d operations, %d commit points", ops, commits)

	for _, fault := range []struct {
		kind Fault
		n    int
	}{{FailOp, ops}, {FailCommit, commits}, {LoseAck, commits}} {
		for k := 1; k <= fault.n; k++ {
			t.Run(fmt.Sprintf("%s-%03d", fault.kind, k), func(t *testing.T) {
				e, sc := setup(t)
				fs := NewFaultStore(e.store)
				fs.Inject(fault.kind, k)
				receipts, failed, err := sc.run(e.over(finalize.NewReceiver(fs, crashOptions...)))
				require.True(t, fs.Fired(), "the fault was injected")
				require.ErrorIs(t, err, ErrInjected, "the injected failure reaches the caller")

				after := e.active()
				bActive := after.Snapshot == idOf(sc.b).String()
				if bActive {
					require.Equal(t, wantB, after, "after the failure: b's catalog exactly")
				} else {
					require.Equal(t, wantA, after, "after the failure: a's catalog exactly")
				}

				// Restart: a fresh receiver on the same store.
				re := e.over(finalize.NewReceiver(e.store, crashOptions...))
				for i, m := range sc.msgs {
					status := envelope.Staged // rolled back, or never sent
					switch {
					case receipts[i] != nil:
						status = envelope.AlreadyReceived // a receipt is durable
					case fault.kind == LoseAck && i == failed:
						status = envelope.AlreadyReceived // committed, acknowledgement lost
					}
					rc, err := re.send(m)
					require.NoError(t, err, "re-deliver %s", m.name)
					requireReceipt(t, m, status, rc, "re-deliver %s (receipt issued: %v)", m.name, receipts[i] != nil)
				}
				outs := re.reconcile()
				if bActive {
					require.Empty(t, outs)
				} else {
					require.Equal(t, []finalize.Outcome{re.outcome(finalize.Activated, sc.b, sc.b)}, outs)
				}
				require.Equal(t, re.outcome(finalize.AlreadyActive, sc.b, sc.b), re.finalize(idOf(sc.b)))
				require.Equal(t, wantB, re.active(), "recovered: b's catalog")
				re.requireNothingStaged(idOf(sc.a)) // pruned by the retention, once
			})
		}
	}
}

// testRerunCallbacks runs a whole history through a store that runs every
// transaction callback twice, the first run rolled back: the Receiver's
// callbacks must depend on nothing but the transaction.
func testRerunCallbacks(t *testing.T, newStore NewStore) {
	fs := NewFaultStore(newStore(t))
	fs.Rerun(true)
	e := envOn(t, fs)
	a := e.build(1, baseInventory())
	e.activate(a)
	b := e.build(3, changedInventory(t).withSensors("sensor", 150, "m"))
	msgs := messagesOf(t, b)
	for _, m := range msgs[:4] {
		e.deliver(m, envelope.Staged)
		e.deliver(m, envelope.AlreadyReceived)
	}
	e.requireMissing(idOf(b), 3)
	e.requireMissing(idOf(b), 3)
	low := e.build(2, baseInventory().withSensors("probe", 20, "m"))
	e.deliverAll(messagesOf(t, low), envelope.Staged)
	e.deliver(msgs[4], envelope.Staged)
	require.Equal(t, []finalize.Outcome{
		e.outcome(finalize.Activated, b, b),
		e.outcome(finalize.Superseded, low, b),
	}, e.reconcile())
	require.Equal(t, e.outcome(finalize.AlreadyActive, b, b), e.finalize(idOf(b)))

	conflict := e.build(3, baseInventory())
	e.deliverAll(messagesOf(t, conflict), envelope.Staged)
	out, err := e.r.Finalize(e.ctx, e.vessel, idOf(conflict))
	require.ErrorIs(t, err, sourcecatalog.ErrRevisionConflict)
	require.Equal(t, finalize.Rejected, out.Status)

	c := e.build(4, baseInventory().withSensors("sensor", 150, "m"))
	e.activate(c)
	e.requireActive(a, b, c)
	require.ErrorIs(t, e.r.Discard(e.ctx, e.vessel, idOf(c)), finalize.ErrActiveSnapshot)
	e.discard(idOf(a))
	e.prune(0)
	e.requireNothingStaged(idOf(b))
	e.requireActive(a, b, c)
}
