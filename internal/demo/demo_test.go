package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	outboxmem "github.com/yachtmemory/sourcecatalog/outbox/memstore"
)

func runDemo(t *testing.T, cfg Config) (Report, string) {
	t.Helper()
	var out bytes.Buffer
	r, err := Run(context.Background(), cfg, &out)
	require.NoError(t, err, "%s", out.String())
	return r, out.String()
}

// checkFinal checks a successful report's final state against the two
// cycles' records.
func checkFinal(t *testing.T, r Report) {
	t.Helper()
	first, second, _, err := scans()
	require.NoError(t, err)
	require.Len(t, r.Cycles, 2)
	c1, c2 := r.Cycles[0], r.Cycles[1]
	assert.Equal(t, examples.VesselID, r.VesselID)
	assert.Equal(t, int64(1), c1.Revision)
	assert.Equal(t, int64(2), c2.Revision)
	assert.NotEqual(t, c1.SnapshotID, c2.SnapshotID)
	for _, id := range []uuid.UUID{c1.SnapshotID, c2.SnapshotID} {
		assert.Equal(t, uuid.Version(4), id.Version())
	}
	assert.Equal(t, finalize.Superseded, c1.Final)
	assert.Equal(t, finalize.AlreadyActive, c2.Final)
	// Over HTTP the server activates each snapshot on the receipt that
	// completes it, so the demo's Finalize finds it already active.
	done := finalize.Activated
	if r.HTTP != nil {
		done = finalize.AlreadyActive
		assert.Equal(t, 2, r.Stats.ServerActivations)
	}
	assert.Equal(t, done, firstDone(c1.Outcomes))
	assert.Equal(t, done, firstDone(c2.Outcomes))
	assert.Equal(t, int64(2), r.ActiveRevision)
	assert.Equal(t, c2.SnapshotID, r.ActiveSnapshot)

	// Every outbox entry delivered; every message staged exactly once.
	assert.Equal(t, c1.Entries+c2.Entries, r.Entries)
	assert.Equal(t, r.Entries, r.Delivered)
	s := r.Stats
	assert.Equal(t, r.Entries, s.Staged)
	assert.Equal(t, s.Deliveries, s.Staged+s.AlreadyReceived)
	assert.Equal(t, s.Reordered, s.Released, "every held-back request arrives in the end")
	assert.Equal(t, s.Deliveries, s.Sent-s.DroppedRequests-s.Reordered+s.Duplicated+s.Released)

	// The inventory: cycle 2 current with last-seen 2; what left kept,
	// not current, first and last seen 1; first-seen 1 throughout.
	inCycle2 := map[catalog.Key][]byte{}
	for _, rec := range second {
		inCycle2[rec.Key()] = rec.Canonical()
	}
	require.Len(t, r.Inventory, len(first))
	assert.Equal(t, len(second), r.Current)
	assert.Equal(t, len(first)-len(second), r.NotCurrent)
	for _, it := range r.Inventory {
		rec, current := inCycle2[key(it)]
		assert.Equal(t, current, it.CurrentlyObserved, identity(it))
		assert.Equal(t, int64(1), it.FirstSeen.Revision, identity(it))
		assert.True(t, it.FirstSeen.At.Equal(scanTime(1)), identity(it))
		if current {
			assert.Equal(t, int64(2), it.LastSeen.Revision, identity(it))
			assert.True(t, it.LastSeen.At.Equal(scanTime(2)), identity(it))
			assert.Equal(t, rec, it.Record, identity(it))
		} else {
			assert.Equal(t, int64(1), it.LastSeen.Revision, identity(it))
		}
	}

	// The difference between the activations: one source changed, the
	// anchor light's path, observation and source left.
	var changed, left []string
	for _, c := range r.Changes {
		switch c.What {
		case "changed":
			changed = append(changed, c.After.Key.Kind.String()+" "+identity(c.After))
			require.NotNil(t, c.Before)
			assert.NotEqual(t, c.Before.Record, c.After.Record)
			assert.Equal(t, inCycle2[key(c.After)], c.After.Record, "the changed source's record is cycle 2's")
			assert.Contains(t, difference(c.Before.Record, c.After.Record), `meta.softwareVersion "3.11" → "3.12"`)
		case "left":
			left = append(left, c.After.Key.Kind.String()+" "+identity(c.After))
			assert.False(t, c.After.CurrentlyObserved)
			assert.Equal(t, int64(1), c.After.FirstSeen.Revision)
			assert.Equal(t, int64(1), c.After.LastSeen.Revision)
		default:
			t.Errorf("unexpected change %s of %s", c.What, identity(c.After))
		}
	}
	require.Len(t, changed, 1)
	assert.Regexp(t, `^source can0\.`, changed[0])
	assert.ElementsMatch(t, []string{
		"path " + leavingPath,
		"source " + leftSource(t, first),
		"observation " + leavingPath + " ← " + leftSource(t, first),
	}, left)
}

func leftSource(t *testing.T, records []*catalog.Record) string {
	for _, r := range records {
		if o, ok := r.AsObservation(); ok && o.Path == leavingPath {
			return o.SourceRef
		}
	}
	t.Fatal("no observation of " + leavingPath)
	return ""
}

// firstDone is the first outcome that is not staging.
func firstDone(list []finalize.OutcomeStatus) finalize.OutcomeStatus {
	for _, o := range list {
		if o != finalize.Staging {
			return o
		}
	}
	return ""
}

func TestRunSeeds(t *testing.T) {
	var total LinkStats
	ids := map[uuid.UUID]uint64{}
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			r, out := runDemo(t, Config{Seed: seed})
			assert.Equal(t, seed, r.Seed)
			assert.Equal(t, DefaultLink, r.Link)
			checkFinal(t, r)
			for _, c := range r.Cycles {
				if other, dup := ids[c.SnapshotID]; dup {
					t.Errorf("seed %d reuses snapshot id %s of seed %d", seed, c.SnapshotID, other)
				}
				ids[c.SnapshotID] = seed
			}
			assert.Contains(t, out, "verified: active revision 2 is cycle 2's snapshot")
			s := r.Stats
			total.Sent += s.Sent
			total.DroppedRequests += s.DroppedRequests
			total.DroppedReceipts += s.DroppedReceipts
			total.Duplicated += s.Duplicated
			total.Reordered += s.Reordered
			total.Late += s.Late
			total.AlreadyReceived += s.AlreadyReceived
		})
	}
	t.Logf("over 20 seeds: %+v", total)
	assert.Positive(t, total.DroppedRequests, "requests lost")
	assert.Positive(t, total.DroppedReceipts, "receipts lost after staging")
	assert.Positive(t, total.Duplicated, "requests duplicated")
	assert.Positive(t, total.Reordered, "requests reordered")
	assert.Positive(t, total.Late, "requests arriving after publishing ended")
	assert.Positive(t, total.AlreadyReceived, "identical retries answered already_received")
}

func TestRunIsDeterministic(t *testing.T) {
	outputs := map[string]uint64{}
	for _, seed := range []uint64{1, 3, 7} {
		r1, a := runDemo(t, Config{Seed: seed})
		r2, b := runDemo(t, Config{Seed: seed})
		assert.Equal(t, a, b, "seed %d prints other bytes the second time", seed)
		assert.Equal(t, r1.Stats, r2.Stats)
		assert.Equal(t, r1.Cycles[1].SnapshotID, r2.Cycles[1].SnapshotID)
		if other, dup := outputs[a]; dup {
			t.Errorf("seeds %d and %d print the same output", other, seed)
		}
		outputs[a] = seed
	}
}

func TestRunOutput(t *testing.T) {
	_, out := runDemo(t, Config{Seed: 7})
	for _, want := range []string{
		"sourcecatalog demo: seed 7, vessel " + examples.VesselID.String() + ", outbox memstore, receiver store memstore\n",
		"cycle 1: the example boat (57 paths from 15 sources)\n",
		"  commit: revision 1, snapshot ",
		"cycle 2: 56 paths from 14 sources, 15 minutes later\n",
		"got firmware 3.12, was 3.11\n",
		"  commit: revision 2, snapshot ",
		"  pass 1: sent 3, ",
		"report\n",
		"  inventory:  129 items: 126 currently observed, 3 not currently observed\n",
		"    left     path        " + leavingPath + "; not currently observed, first seen 1, last seen 1\n",
		`meta.softwareVersion "3.11" → "3.12"; currently observed, first seen 1, last seen 2` + "\n",
		"verified: active revision 2 is cycle 2's snapshot; 129 inventory items as expected; 6 of 6 outbox entries delivered\n",
	} {
		assert.Contains(t, out, want)
	}
}

func TestRunPerfectLink(t *testing.T) {
	r, out := runDemo(t, Config{Seed: 1, Link: &Link{}})
	checkFinal(t, r)
	assert.Equal(t, LinkStats{Sent: 6, Deliveries: 6, Staged: 6}, r.Stats)
	for _, c := range r.Cycles {
		assert.Equal(t, 1, c.Passes)
		assert.Equal(t, []finalize.OutcomeStatus{finalize.Activated}, c.Outcomes)
	}
	assert.Contains(t, out, "acknowledged 3 (no losses); finalize: activated, active revision 1")
}

func TestRunGivesUpAfterMaxPasses(t *testing.T) {
	var out bytes.Buffer
	_, err := Run(context.Background(), Config{Seed: 1, Link: &Link{DropRequest: 0.99}, MaxPasses: 3}, &out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "after 3 publish passes")
}

func TestRunRefusesBadLink(t *testing.T) {
	for _, l := range []Link{{DropRequest: 1}, {Duplicate: -0.1}, {Reorder: 0.5}} {
		_, err := Run(context.Background(), Config{Link: &l}, &bytes.Buffer{})
		assert.Error(t, err, "%+v", l)
	}
}

func TestRunRefusesAStoreInUse(t *testing.T) {
	store := memstore.New()
	r, _ := runDemo(t, Config{Seed: 2, ReceiverStore: store})
	checkFinal(t, r)
	var out bytes.Buffer
	_, err := Run(context.Background(), Config{Seed: 2, ReceiverStore: store}, &out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "already holds state for the demo vessel")
}

// forgetfulStore never retires items: what leaves the selection stays
// currently observed. The demo's verification must catch it.
type forgetfulStore struct{ finalize.Store }

type forgetfulTx struct{ finalize.Tx }

func (s forgetfulStore) WithVessel(ctx context.Context, id uuid.UUID, fn func(finalize.Tx) error) error {
	return s.Store.WithVessel(ctx, id, func(tx finalize.Tx) error { return fn(forgetfulTx{tx}) })
}

func (forgetfulTx) RetireItems(context.Context, []catalog.Key, finalize.Seen) error { return nil }

// sloppyStore overwrites first-seen.
type sloppyStore struct{ finalize.Store }

type sloppyTx struct{ finalize.Tx }

func (s sloppyStore) WithVessel(ctx context.Context, id uuid.UUID, fn func(finalize.Tx) error) error {
	return s.Store.WithVessel(ctx, id, func(tx finalize.Tx) error { return fn(sloppyTx{tx}) })
}

func (t sloppyTx) Items(ctx context.Context) ([]finalize.Item, error) {
	items, err := t.Tx.Items(ctx)
	for i := range items {
		if !items[i].CurrentlyObserved {
			items[i].FirstSeen.Revision = 2
		}
	}
	return items, err
}

func TestRunDetectsAWrongFinalState(t *testing.T) {
	for name, store := range map[string]finalize.Store{
		"items never retired":    forgetfulStore{memstore.New()},
		"first-seen overwritten": sloppyStore{memstore.New()},
	} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			_, err := Run(context.Background(), Config{Seed: 4, ReceiverStore: store}, &out)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "wrong final state")
			assert.Contains(t, out.String(), "FAILED: ")
			assert.NotContains(t, out.String(), "verified:")
		})
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestRunReportsWriteErrors(t *testing.T) {
	_, err := Run(context.Background(), Config{Seed: 1}, failingWriter{})
	assert.ErrorContains(t, err, "disk full")
}

func TestDifference(t *testing.T) {
	assert.Equal(t, `label "a" → "b", meta.x 1 → 2, meta.y (absent) → true`,
		difference([]byte(`{"kind":"source","label":"a","meta":{"x":1},"source_ref":"s"}`),
			[]byte(`{"kind":"source","label":"b","meta":{"x":2,"y":true},"source_ref":"s"}`)))
	assert.Equal(t, `meta (absent) → {"x":1}`,
		difference([]byte(`{"kind":"path","path":"a"}`), []byte(`{"kind":"path","meta":{"x":1},"path":"a"}`)))
}

func TestOutcomes(t *testing.T) {
	assert.Equal(t, "staging ×2 → activated → already_active",
		outcomes([]finalize.OutcomeStatus{"staging", "staging", "activated", "already_active"}))
}

// checkContinued checks a successful run on stores that earlier runs,
// begun on new stores, left: the cycles take the two revisions after the
// outbox's last, the second is active, and every item keeps its first
// sighting at revision 1 (cycle 1 is the example boat, which selects every
// item any cycle selects).
func checkContinued(t *testing.T, r Report, last int64) {
	t.Helper()
	require.Len(t, r.Cycles, 2)
	c1, c2 := r.Cycles[0], r.Cycles[1]
	assert.Equal(t, last, r.LastRevision)
	assert.Equal(t, last+1, c1.Revision)
	assert.Equal(t, last+2, c2.Revision)
	assert.Equal(t, c2.Revision, r.ActiveRevision)
	assert.Equal(t, c2.SnapshotID, r.ActiveSnapshot)
	assert.Equal(t, finalize.Superseded, c1.Final)
	assert.Equal(t, finalize.AlreadyActive, c2.Final)
	assert.Equal(t, c1.Entries+c2.Entries, r.Delivered)
	assert.Zero(t, r.Pending)
	first, second, _, err := scans()
	require.NoError(t, err)
	require.Len(t, r.Inventory, len(first))
	assert.Equal(t, len(second), r.Current)
	for _, it := range r.Inventory {
		assert.Equal(t, int64(1), it.FirstSeen.Revision, identity(it))
		assert.True(t, it.FirstSeen.At.Equal(scanTime(1)), identity(it))
		want := c2.Revision
		if !it.CurrentlyObserved {
			want = c1.Revision
		}
		assert.Equal(t, want, it.LastSeen.Revision, identity(it))
		assert.True(t, it.LastSeen.At.Equal(scanTime(want)), identity(it))
	}
}

func TestRunContinuesOnItsStores(t *testing.T) {
	box, store := outboxmem.New(), memstore.New()
	cfg := Config{Seed: 1, OutboxStore: box, ReceiverStore: store}
	r1, _ := runDemo(t, cfg)
	checkFinal(t, r1)
	// 20 runs make 40 snapshots, beyond the 32 finalized ones a receiver
	// keeps by default: the demo's retention keeps it going.
	for run, last := 2, int64(2); run <= 20; run, last = run+1, last+2 {
		r, out := runDemo(t, cfg)
		checkContinued(t, r, last)
		assert.Len(t, r.Earlier, len(r1.Inventory), "run %d starts from what the earlier runs left", run)
		assert.NotEqual(t, r1.Cycles[0].SnapshotID, r.Cycles[0].SnapshotID, "run %d draws new snapshot ids", run)
		assert.Contains(t, out, fmt.Sprintf("resume: the outbox is at revision %d from earlier runs, 0 entries still pending\n", last))
		assert.Contains(t, out, "  reconcile: nothing complete left staging\n")
		assert.Contains(t, out, fmt.Sprintf("  commit: revision %d, ", last+1))
		assert.Contains(t, out, fmt.Sprintf("  changes from revision %d to revision %d:\n", last+1, last+2))
		assert.Contains(t, out, fmt.Sprintf("    left     path        %s; not currently observed, first seen 1, last seen %d\n", leavingPath, last+1))
		assert.Contains(t, out, fmt.Sprintf("\nverified: active revision %d is cycle 2's snapshot; 129 inventory items as expected; 6 of 6 outbox entries delivered\n", last+2))
	}
}

// A receiver that holds state the outbox did not write is refused: the
// demo's revisions would collide with it.
func TestRunRefusesAReceiverAheadOfItsOutbox(t *testing.T) {
	box, store := outboxmem.New(), memstore.New()
	runDemo(t, Config{Seed: 2, OutboxStore: box, ReceiverStore: store})
	_, err := Run(context.Background(), Config{Seed: 2, ReceiverStore: store}, &bytes.Buffer{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "already holds state for the demo vessel")
	assert.Contains(t, err.Error(), "up to revision 2, but the outbox is at revision 0")

	// A new receiver behind a used outbox is fine: it starts at the
	// outbox's next revision.
	r, _ := runDemo(t, Config{Seed: 2, OutboxStore: box})
	assert.Equal(t, int64(3), r.Cycles[0].Revision)
	assert.Equal(t, int64(4), r.ActiveRevision)
	assert.Empty(t, r.Earlier)
}

var errKilled = errors.New("killed")

// A run stopped at any step, as if killed there, leaves stores on which
// the next run resumes: it publishes what is pending, reconciles the
// snapshot the stopped run did not finalize, and finishes at the next
// revisions with the history intact.
func TestRunResumesAStoppedRun(t *testing.T) {
	for _, tc := range []struct {
		stop       Step
		last       int64 // the outbox's last revision after the stop
		pending    int   // entries left pending
		reconciled int64 // the revision the resume activates; 0 for none
	}{
		{Step{Cycle: 1, What: StepCommitted}, 1, 3, 1},
		{Step{Cycle: 1, What: StepPublished, Pass: 2}, 1, 1, 1},
		{Step{Cycle: 1, What: StepActivated}, 1, 0, 0},
		{Step{Cycle: 2, What: StepCommitted}, 2, 3, 2},
		{Step{Cycle: 2, What: StepPublished, Pass: 1}, 2, 1, 2},
	} {
		t.Run(tc.stop.String(), func(t *testing.T) {
			box, store := outboxmem.New(), memstore.New()
			var seen []string
			cfg := Config{Seed: 1, OutboxStore: box, ReceiverStore: store, AfterStep: func(s Step) error {
				seen = append(seen, s.String())
				if s == tc.stop {
					return errKilled
				}
				return nil
			}}
			var out bytes.Buffer
			_, err := Run(context.Background(), cfg, &out)
			require.ErrorIs(t, err, errKilled, "the run never reached %s; steps: %q", tc.stop, seen)

			cfg.AfterStep = nil
			r, rerun := runDemo(t, cfg)
			assert.Equal(t, tc.pending, r.Resumed, rerun)
			assert.Contains(t, rerun, fmt.Sprintf("resume: the outbox is at revision %d from earlier runs, %s still pending\n", tc.last, plural(tc.pending, "entry")))
			if tc.reconciled == 0 {
				assert.Empty(t, r.Reconciled)
			} else {
				require.Len(t, r.Reconciled, 1, rerun)
				assert.Equal(t, tc.reconciled, r.Reconciled[0].Revision)
				assert.Equal(t, finalize.Activated, r.Reconciled[0].Status)
				assert.Contains(t, rerun, fmt.Sprintf("  reconcile: snapshot %s revision %d: activated, active revision %d\n",
					r.Reconciled[0].SnapshotID, tc.reconciled, tc.reconciled))
			}
			checkContinued(t, r, tc.last)
		})
	}
}

func TestStepsAreReached(t *testing.T) {
	var steps []string
	_, err := Run(context.Background(), Config{Seed: 1, Link: &Link{}, AfterStep: func(s Step) error {
		steps = append(steps, s.String())
		return nil
	}}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, []string{
		"cycle 1 committed", "cycle 1 pass 1 published", "cycle 1 activated",
		"cycle 2 committed", "cycle 2 pass 1 published", "cycle 2 activated",
	}, steps)
}
