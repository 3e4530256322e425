package outboxtest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/internal/suite"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// Cases for stores that share one transaction among concurrent WithVessel
// calls (group commit): a failing callback must roll back alone, and a
// failure of the shared commit must leave every caller able to retry.
var batchCases = []testCase{
	{"FailingCallbacks", testFailingCallbacks},
	{"FailedCommitRetried", testFailedCommitRetried},
}

// testFailingCallbacks runs many WithVessel calls at once, two per
// vessel: one allocates a revision and writes an entry and returns nil,
// the other allocates a higher one, writes another entry and returns an
// error of its own. Every failing call returns its own error (==), every
// other one nil; what the failing ones wrote is invisible, what the
// others wrote is there — in whichever order the two calls of a vessel
// ran.
func testFailingCallbacks(t *testing.T, newStore NewStore) {
	const failingFloor = 50 // the failing calls' revision, whichever call runs first
	store := newStore(t)
	const vessels = 12
	envs := make([]*env, vessels)
	for i := range envs {
		envs[i] = envOn(t, store, uuid.New())
	}
	entry := func(i, k int) outbox.Entry {
		payload := []byte(fmt.Sprintf(`{"call":%d}`, k))
		snap := uuid.New()
		rev := int64(1)
		if k%2 == 1 {
			rev = failingFloor
		}
		return outbox.Entry{VesselID: envs[i].vessel, SnapshotID: snap, Revision: rev, EntityType: sourcecatalog.ManifestEntityType,
			EntityKey: envelope.ManifestKey(snap), ChunkIndex: sourcecatalog.NoIndex, Payload: payload, Digest: canonical.Sum(payload), State: outbox.Pending}
	}
	entries := make([]outbox.Entry, 2*vessels)
	wantErrs := make([]error, 2*vessels)
	for k := range entries {
		entries[k] = entry(k/2, k)
		if k%2 == 1 {
			wantErrs[k] = fmt.Errorf("callback %d fails", k)
		}
	}
	got := suite.Parallel(2*vessels, func(k int) error {
		e := envs[k/2]
		return store.WithVessel(e.ctx, e.vessel, func(tx outbox.Tx) error {
			floor := int64(0)
			if wantErrs[k] != nil {
				floor = failingFloor
			}
			if _, err := tx.NextRevision(e.ctx, floor); err != nil {
				return err
			}
			if err := tx.PutEntries(e.ctx, []outbox.Entry{entries[k]}); err != nil {
				return err
			}
			return wantErrs[k]
		})
	})
	for k, err := range got {
		if wantErrs[k] == nil {
			require.NoError(t, err, "call %d returned nil from its callback", k)
		} else {
			require.True(t, err == wantErrs[k], "call %d returns its own callback's error unchanged; got %v", k, err)
		}
	}
	for i, e := range envs {
		require.Equal(t, []outbox.Entry{entries[2*i]}, e.entries(entries[2*i].SnapshotID), "vessel %d: the entry of the call that returned nil", i)
		e.requireNoEntries(entries[2*i+1].SnapshotID)
		e.requireNextRevision(2)
	}
}

// testFailedCommitRetried commits a cycle on several vessels at once
// through one FaultStore, failing one commit point (or losing its
// acknowledgement) while the others' transactions run beside it — the
// point where a store committing them together would fail all of them —
// then commits every vessel's cycle again, as a restarted process would:
// each vessel ends with its cycle at revision 1 and its entries, Retried
// exactly where a commit had happened.
func testFailedCommitRetried(t *testing.T, newStore NewStore) {
	const vessels = 6
	for _, fault := range []struct {
		kind Fault
		n    int
	}{{FailCommit, 3}, {LoseAck, 2}} {
		t.Run(fmt.Sprintf("%s-%02d", fault.kind, fault.n), func(t *testing.T) {
			store := newStore(t)
			envs := make([]*env, vessels)
			cycles := make([]outbox.Cycle, vessels)
			for i := range envs {
				envs[i] = envOn(t, store, uuid.New())
				cycles[i] = envs[i].cycle(inv(fmt.Sprintf("v%d", i), 40))
			}
			fs := NewFaultStore(store)
			fs.Inject(fault.kind, fault.n)
			type result struct {
				com outbox.Commit
				err error
			}
			res := suite.Parallel(vessels, func(i int) result {
				com, err := countingWriter(fs).Commit(envs[i].ctx, cycles[i])
				return result{com, err}
			})
			require.True(t, fs.Fired(), "the fault was injected")
			failures := 0
			for i, r := range res {
				if r.err != nil {
					failures++
					require.True(t, errors.Is(r.err, ErrInjected), "vessel %d: only the injected failure: %v", i, r.err)
				}
			}
			require.Equal(t, 1, failures, "one transaction failed")
			for i, r := range res {
				e := envs[i]
				again, err := countingWriter(store).Commit(e.ctx, cycles[i])
				require.NoError(t, err, "vessel %d: retry", i)
				require.Equal(t, int64(1), again.Revision, "vessel %d", i)
				requireCommitted(t, cycles[i], 1, again.Entries)
				require.Equal(t, r.err == nil || fault.kind == LoseAck, again.Retried, "vessel %d: Retried exactly where the commit happened", i)
				if r.err == nil {
					require.Equal(t, r.com.Entries, again.Entries, "vessel %d", i)
				}
				require.Equal(t, again.Entries, e.entries(cycles[i].SnapshotID), "vessel %d", i)
				e.requireNextRevision(2)
			}
		})
	}
}
