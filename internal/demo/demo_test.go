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
	assert.Equal(t, finalize.Activated, firstDone(c1.Outcomes))
	assert.Equal(t, finalize.Activated, firstDone(c2.Outcomes))
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
	inCycle2 := map[finalize.ItemKey][]byte{}
	for _, rec := range second {
		inCycle2[finalize.ItemKey{Kind: rec.Kind(), Path: rec.PathName(), SourceRef: rec.SourceRef()}] = rec.Canonical()
	}
	require.Len(t, r.Inventory, len(first))
	assert.Equal(t, len(second), r.Current)
	assert.Equal(t, len(first)-len(second), r.NotCurrent)
	for _, it := range r.Inventory {
		rec, current := inCycle2[key(it)]
		assert.Equal(t, current, it.CurrentlyObserved, identity(it))
		assert.Equal(t, int64(1), it.FirstSeen.Revision, identity(it))
		assert.True(t, it.FirstSeen.At.Equal(firstScan), identity(it))
		if current {
			assert.Equal(t, int64(2), it.LastSeen.Revision, identity(it))
			assert.True(t, it.LastSeen.At.Equal(secondScan), identity(it))
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
			changed = append(changed, c.After.Kind.String()+" "+identity(c.After))
			require.NotNil(t, c.Before)
			assert.NotEqual(t, c.Before.Record, c.After.Record)
			assert.Equal(t, inCycle2[key(c.After)], c.After.Record, "the changed source's record is cycle 2's")
			assert.Contains(t, difference(c.Before.Record, c.After.Record), `meta.softwareVersion "3.11" → "3.12"`)
		case "left":
			left = append(left, c.After.Kind.String()+" "+identity(c.After))
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
		if o != finalize.StatusStaging {
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
		"sourcecatalog demo: seed 7, vessel " + examples.VesselID.String() + ", receiver store memstore\n",
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

func (forgetfulTx) RetireItems(context.Context, []finalize.ItemKey, finalize.Seen) error { return nil }

// sloppyStore overwrites first-seen.
type sloppyStore struct{ finalize.Store }

type sloppyTx struct{ finalize.Tx }

func (s sloppyStore) WithVessel(ctx context.Context, id uuid.UUID, fn func(finalize.Tx) error) error {
	return s.Store.WithVessel(ctx, id, func(tx finalize.Tx) error { return fn(sloppyTx{tx}) })
}

func (t sloppyTx) Items(ctx context.Context) ([]finalize.Item, error) {
	items, err := t.Tx.Items(ctx)
	for i := range items {
		if !items[i].Current {
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
