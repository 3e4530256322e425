package finalizetest

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/internal/suite"
)

var concurrencyCases = []testCase{
	{"FinalizeOnce", testFinalizeOnce},
	{"RevisionsRace", testRevisionsRace},
	{"ReceiveSameMessage", testReceiveSameMessage},
	{"ReceiveAll", testReceiveAll},
	{"Vessels", testVessels},
}

type finalized struct {
	out finalize.Outcome
	err error
}

func testFinalizeOnce(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a := e.build(1, baseInventory())
	e.activate(a)
	s := e.build(2, changedInventory(t).withSensors("sensor", 150, "m"))
	e.deliverAll(messagesOf(t, s), envelope.Staged)
	res := suite.Parallel(8, func(int) finalized {
		out, err := e.r.Finalize(e.ctx, e.vessel, idOf(s))
		return finalized{out, err}
	})
	activated := 0
	for _, r := range res {
		require.NoError(t, r.err)
		if r.out.Status == finalize.Activated {
			activated++
			require.Equal(t, e.outcome(finalize.Activated, s, s), e.sansUsage(r.out))
		} else {
			require.Equal(t, e.outcome(finalize.AlreadyActive, s, s), e.sansUsage(r.out))
		}
	}
	require.Equal(t, 1, activated, "exactly one Finalize activates")
	e.requireActive(a, s)
}

// testRevisionsRace finalizes five staged revisions at once, started in a
// random order: the highest ends active, and the catalog is the model's
// for the revisions that were activated, in revision order.
func testRevisionsRace(t *testing.T, newStore NewStore) {
	base := seed(t)
	for iter := range 10 {
		rng := rand.New(rand.NewPCG(base, uint64(iter)))
		e := newEnv(t, newStore)
		invs := []inventory{
			baseInventory(),
			changedInventory(t),
			baseInventory().withSensors("sensor", 150, "m"),
			changedInventory(t).withSensors("probe", 40, "m"),
			baseInventory().without("navigation.state").withSensors("sensor", 60, "m"),
		}
		snaps := make([]*envelope.Snapshot, len(invs))
		for i, inv := range invs {
			snaps[i] = e.build(int64(i+1), inv)
			e.deliverAll(messagesOf(t, snaps[i]), envelope.Staged)
		}
		order := rng.Perm(len(snaps))
		res := suite.Parallel(len(snaps), func(i int) finalized {
			out, err := e.r.Finalize(e.ctx, e.vessel, idOf(snaps[order[i]]))
			return finalized{out, err}
		})
		var activated []*envelope.Snapshot
		for i, r := range res {
			s := snaps[order[i]]
			require.NoError(t, r.err, "iteration %d", iter)
			switch r.out.Status {
			case finalize.Activated:
				activated = append(activated, s)
			case finalize.Superseded:
			default:
				require.Fail(t, "unexpected outcome", "iteration %d: %+v", iter, r.out)
			}
		}
		last := snaps[len(snaps)-1]
		require.Contains(t, activated, last, "iteration %d: the highest revision is activated", iter)
		slices.SortFunc(activated, func(a, b *envelope.Snapshot) int { return cmp.Compare(a.Manifest.Revision, b.Manifest.Revision) })
		require.Equal(t, expect(e.vessel, activated...), e.active(), "iteration %d", iter)
		for _, s := range snaps[:len(snaps)-1] {
			require.Equal(t, e.outcome(finalize.Superseded, s, last), e.finalize(idOf(s)))
		}
	}
}

type received struct {
	rc  envelope.Receipt
	err error
}

func testReceiveSameMessage(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	s := e.build(1, baseInventory().withSensors("sensor", 150, "m"))
	msgs := messagesOf(t, s)
	for _, m := range []message{msgs[2], msgs[0], msgs[4]} {
		res := suite.Parallel(8, func(int) received {
			rc, err := e.send(m)
			return received{rc, err}
		})
		staged := 0
		for _, r := range res {
			require.NoError(t, r.err)
			if r.rc.Status == envelope.Staged {
				staged++
			}
			requireReceipt(t, m, r.rc.Status, r.rc)
		}
		require.Equal(t, 1, staged, "%s staged exactly once", m.name)
	}
	e.requireMissing(idOf(s), 0, 2)
	e.deliverAll([]message{msgs[1], msgs[3]}, envelope.Staged)
	require.Equal(t, e.outcome(finalize.Activated, s, s), e.finalize(idOf(s)))
	e.requireActive(s)
}

// testReceiveAll delivers every message of two snapshots three times over
// from eight goroutines while others finalize.
func testReceiveAll(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a := e.build(1, baseInventory())
	e.activate(a)
	s := e.build(2, changedInventory(t).withSensors("sensor", 150, "m"))
	s2 := e.build(3, baseInventory().withSensors("probe", 150, "m"))
	var work []message
	for range 3 {
		work = append(work, messagesOf(t, s)...)
		work = append(work, messagesOf(t, s2)...)
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(work), func(i, j int) { work[i], work[j] = work[j], work[i] })
	const workers = 8
	type result struct {
		rcs  []received
		outs []finalized
	}
	res := suite.Parallel(workers, func(w int) result {
		var r result
		for i := w; i < len(work); i += workers {
			rc, err := e.send(work[i])
			r.rcs = append(r.rcs, received{rc, err})
			if i%3 == 0 {
				out, err := e.r.Finalize(e.ctx, e.vessel, idOf(s))
				r.outs = append(r.outs, finalized{out, err})
			}
		}
		return r
	})
	staged := map[envelope.Receipt]int{}
	activated := 0
	for _, r := range res {
		for _, x := range r.rcs {
			require.NoError(t, x.err)
			if x.rc.Status == envelope.Staged {
				staged[sansComplete(x.rc)]++
			}
		}
		for _, x := range r.outs {
			require.NoError(t, x.err)
			if x.out.Status == finalize.Activated {
				activated++
			}
		}
	}
	for _, m := range append(messagesOf(t, s), messagesOf(t, s2)...) {
		require.Equal(t, 1, staged[m.receipt(envelope.Staged)], "%s of %s staged exactly once", m.name, m.want.SnapshotID)
	}
	if out := e.finalize(idOf(s)); out.Status == finalize.Activated {
		activated++
	}
	require.Equal(t, 1, activated)
	require.Equal(t, e.outcome(finalize.Activated, s2, s2), e.finalize(idOf(s2)))
	e.requireActive(a, s, s2)
}

// testVessels runs four vessels' histories at once over one store.
func testVessels(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	const vessels = 4
	envs := make([]*env, vessels)
	snaps := make([][]*envelope.Snapshot, vessels)
	var msgs [vessels][][]message
	for v := range vessels {
		envs[v] = e.forVessel(e.ids.next())
		for rev, inv := range []inventory{baseInventory(), changedInventory(t).withSensors("sensor", 150, "m"), baseInventory()} {
			s := envs[v].build(int64(rev+1), inv)
			snaps[v] = append(snaps[v], s)
			msgs[v] = append(msgs[v], messagesOf(t, s))
		}
	}
	errs := suite.Parallel(vessels, func(v int) []error {
		var errs []error
		for i, s := range snaps[v] {
			for _, m := range msgs[v][i] {
				_, err := envs[v].send(m)
				errs = append(errs, err)
			}
			out, err := envs[v].r.Finalize(e.ctx, envs[v].vessel, idOf(s))
			errs = append(errs, err)
			if err == nil && out.Status != finalize.Activated {
				errs = append(errs, errUnexpected(out))
			}
		}
		return errs
	})
	for v := range vessels {
		for _, err := range errs[v] {
			require.NoError(t, err, "vessel %d", v)
		}
		envs[v].requireActive(snaps[v]...)
	}
}

type unexpectedOutcome finalize.Outcome

func (u unexpectedOutcome) Error() string { return "unexpected outcome " + string(u.Status) }

func errUnexpected(out finalize.Outcome) error { return unexpectedOutcome(out) }
