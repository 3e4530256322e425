package finalizetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/internal/suite"
)

// Cases for stores that share one transaction among concurrent WithVessel
// calls (group commit): a failing callback must roll back alone, and a
// failure of the shared commit must leave every caller able to retry.
var batchCases = []testCase{
	{"FailingCallbacks", testFailingCallbacks},
	{"FailedCommitRetried", testFailedCommitRetried},
}

// testFailingCallbacks runs many WithVessel calls at once, two per
// vessel: one writes the vessel's pointer and a snapshot and returns nil,
// the other writes other values and returns an error of its own. Every
// failing call returns its own error (==), every other one nil; what the
// failing ones wrote is invisible, what the others wrote is there — in
// whichever order the two calls of a vessel ran.
func testFailingCallbacks(t *testing.T, newStore NewStore) {
	store := newStore(t)
	e := envOn(t, store)
	const vessels, rounds = 12, 3
	for round := range rounds {
		ids := make([]uuid.UUID, vessels)
		for i := range ids {
			ids[i] = e.ids.next()
		}
		state := func(i int, failing bool) (finalize.VesselState, finalize.Snapshot) {
			rev := int64(round*100 + i + 1)
			if failing {
				rev += 50
			}
			v := finalize.VesselState{ActiveSnapshot: e.ids.next(), ActiveRevision: rev, ActiveDiscoveredAt: epoch}
			v.ActiveDocument[0] = byte(rev)
			return v, finalize.Snapshot{ID: v.ActiveSnapshot, Revision: rev, State: finalize.StateStaging, ChunkCount: 1, RecordCount: 1}
		}
		wantErrs := make([]error, 2*vessels)
		writes := make([]struct {
			v finalize.VesselState
			s finalize.Snapshot
		}, 2*vessels)
		for k := range writes {
			writes[k].v, writes[k].s = state(k/2, k%2 == 1)
			if k%2 == 1 {
				wantErrs[k] = fmt.Errorf("callback %d of round %d fails", k, round)
			}
		}
		got := suite.Parallel(2*vessels, func(k int) error {
			return store.WithVessel(e.ctx, ids[k/2], func(tx finalize.Tx) error {
				if err := tx.SetVessel(e.ctx, writes[k].v); err != nil {
					return err
				}
				if err := tx.PutSnapshot(e.ctx, writes[k].s); err != nil {
					return err
				}
				return wantErrs[k]
			})
		})
		for k, err := range got {
			if wantErrs[k] == nil {
				require.NoError(t, err, "round %d: call %d returned nil from its callback", round, k)
			} else {
				require.True(t, err == wantErrs[k], "round %d: call %d returns its own callback's error unchanged; got %v", round, k, err)
			}
		}
		for i, id := range ids {
			ok, bad := writes[2*i], writes[2*i+1]
			require.NoError(t, store.WithVessel(e.ctx, id, func(tx finalize.Tx) error {
				v, err := tx.Vessel(e.ctx)
				require.NoError(t, err)
				require.Equal(t, ok.v, v, "round %d vessel %d: the pointer of the call that returned nil", round, i)
				snaps, err := tx.Snapshots(e.ctx)
				require.NoError(t, err)
				require.Len(t, snaps, 1, "round %d vessel %d: only the snapshot of the call that returned nil", round, i)
				require.Equal(t, ok.s.ID, snaps[0].ID)
				_, err = tx.Snapshot(e.ctx, bad.s.ID)
				require.Error(t, err, "round %d vessel %d: the failing call's snapshot is invisible", round, i)
				return nil
			}), "read back")
		}
	}
}

// testFailedCommitRetried plays the crash scenario on several vessels at
// once through one FaultStore, failing one commit point (or losing its
// acknowledgement) while the others' transactions run beside it — the
// point where a store committing them together would fail all of them.
// Each vessel stops at its first error, as a process that dies would;
// then a fresh Receiver re-delivers everything for every vessel: every
// receipt issued is durable, and every vessel ends with b's catalog
// exactly.
func testFailedCommitRetried(t *testing.T, newStore NewStore) {
	const vessels = 3
	for _, fault := range []struct {
		kind Fault
		n    int
	}{{FailCommit, 4}, {LoseAck, 8}} {
		t.Run(fmt.Sprintf("%s-%03d", fault.kind, fault.n), func(t *testing.T) {
			store := newStore(t)
			envs := make([]*env, vessels)
			scs := make([]crashScenario, vessels)
			for i := range envs {
				envs[i] = envNamed(t, fmt.Sprintf("%s/%d", t.Name(), i), store)
				scs[i] = newCrashScenario(envs[i])
				envs[i].activate(scs[i].a)
			}
			fs := NewFaultStore(store)
			fs.Inject(fault.kind, fault.n)
			type run struct {
				receipts []*envelope.Receipt
				failed   int
				err      error
			}
			runs := suite.Parallel(vessels, func(i int) run {
				e, sc := envs[i].over(finalize.NewReceiver(fs, crashOptions...)), scs[i]
				r := run{receipts: make([]*envelope.Receipt, len(sc.msgs)), failed: -1}
				for k, m := range sc.msgs {
					rc, err := e.send(m)
					if err != nil {
						r.failed, r.err = k, err
						return r
					}
					r.receipts[k] = &rc
				}
				if _, err := e.r.Finalize(e.ctx, e.vessel, idOf(sc.b)); err != nil {
					r.failed, r.err = len(sc.msgs), err
				}
				return r
			})
			require.True(t, fs.Fired(), "the fault was injected")
			failures := 0
			for i, r := range runs {
				if r.err != nil {
					failures++
					require.True(t, errors.Is(r.err, ErrInjected), "vessel %d: only the injected failure: %v", i, r.err)
				}
			}
			require.Equal(t, 1, failures, "one transaction failed")
			for i, r := range runs {
				e, sc := envs[i], scs[i]
				re := e.over(finalize.NewReceiver(store, crashOptions...))
				for k, m := range sc.msgs {
					status := envelope.Staged
					switch {
					case r.receipts[k] != nil:
						requireReceipt(t, m, envelope.Staged, *r.receipts[k], "vessel %d: the receipt issued", i)
						status = envelope.AlreadyReceived
					case fault.kind == LoseAck && k == r.failed:
						status = envelope.AlreadyReceived
					}
					rc, err := re.send(m)
					require.NoError(t, err, "vessel %d: re-deliver %s", i, m.name)
					requireReceipt(t, m, status, rc, "vessel %d: re-deliver %s", i, m.name)
				}
				re.reconcile()
				require.Equal(t, re.outcome(finalize.AlreadyActive, sc.b, sc.b), re.finalize(idOf(sc.b)), "vessel %d", i)
				require.Equal(t, expect(e.vessel, sc.a, sc.b), re.active(), "vessel %d: recovered: b's catalog", i)
			}
		})
	}
}
