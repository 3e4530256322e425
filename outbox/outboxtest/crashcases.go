package outboxtest

import (
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

var crashCases = []testCase{
	{"CommitEveryPoint", testCommitEveryPoint},
	{"PublishEveryPoint", testPublishEveryPoint},
}

// faultPoints lists every fault a scenario with ops operations and commits
// commit points can take.
func faultPoints(ops, commits int) []struct {
	kind Fault
	n    int
} {
	var out []struct {
		kind Fault
		n    int
	}
	for _, f := range []struct {
		kind Fault
		n    int
	}{{FailOp, ops}, {FailCommit, commits}, {LoseAck, commits}} {
		for k := 1; k <= f.n; k++ {
			out = append(out, struct {
				kind Fault
				n    int
			}{f.kind, k})
		}
	}
	return out
}

// testCommitEveryPoint commits cycle a, then counts the operations and
// commit points of a clean commit of cycle b and, for every one of them,
// commits b on a fresh store failing there — a failed operation, a failed
// commit, a commit whose acknowledgement is lost. After the failure either
// nothing of b is visible and its revision is not consumed, or (lost
// acknowledgement) all of b is; committing b again, as a restarted process
// would, answers b's revision and entries (Retried exactly when the commit
// had happened), and the next cycle gets the next revision: no revision is
// lost or handed out twice.
func testCommitEveryPoint(t *testing.T, newStore NewStore) {
	vessel := uuid.New()
	proto := envOn(t, nil, vessel)
	a, b, c := proto.cycle(inv("a", 30)), proto.cycle(inv("b", 150)), proto.cycle(inv("c", 4))
	setup := func(t *testing.T) (*env, outbox.Commit) {
		e := envOn(t, newStore(t), vessel)
		return e, e.commit(a)
	}

	e, ca := setup(t)
	fs := NewFaultStore(e.store)
	cb, err := countingWriter(fs).Commit(e.ctx, b)
	require.NoError(t, err)
	require.Equal(t, int64(2), cb.Revision)
	requireCommitted(t, b, 2, cb.Entries)
	ops, commits := fs.Counts()
	require.Equal(t, 1, commits, "one transaction per commit")
	t.Logf("a commit: %d operations, %d commit point", ops, commits)

	for _, p := range faultPoints(ops, commits) {
		t.Run(fmt.Sprintf("%s-%02d", p.kind, p.n), func(t *testing.T) {
			e, _ := setup(t)
			fs := NewFaultStore(e.store)
			fs.Inject(p.kind, p.n)
			com, err := countingWriter(fs).Commit(e.ctx, b)
			require.True(t, fs.Fired(), "the fault was injected")
			require.ErrorIs(t, err, ErrInjected, "the failure reaches the caller")
			require.Zero(t, com, "no commit with an error")

			if p.kind == LoseAck {
				require.Equal(t, cb.Entries, e.entries(b.SnapshotID), "committed: every entry of b")
				require.Equal(t, entriesOf(ca.Entries, cb.Entries), e.pending())
				e.requireNextRevision(3)
			} else {
				e.requireUnwritten(b, ca.Entries, 2)
			}

			// Restart: commit the same cycle again.
			again, err := countingWriter(e.store).Commit(e.ctx, b)
			require.NoError(t, err, "retry")
			require.Equal(t, p.kind == LoseAck, again.Retried, "Retried exactly when the first commit happened")
			require.Equal(t, cb, outbox.Commit{Revision: again.Revision, Entries: again.Entries}, "b's revision and entries, whatever happened")
			require.Equal(t, cb.Entries, e.entries(b.SnapshotID))

			next := e.commit(c)
			require.Equal(t, int64(3), next.Revision, "no revision lost or reused")
			require.Equal(t, entriesOf(ca.Entries, cb.Entries, next.Entries), e.pending())
		})
	}
}

// testPublishEveryPoint counts the operations and commit points of a clean
// Publish pass and, for every one of them, publishes on a fresh store
// failing there, then publishes again as a restarted process would. Every
// entry ends delivered; an entry is sent again exactly when it was still
// pending after the failure (at least once), and an entry recorded as
// delivered is never sent again.
func testPublishEveryPoint(t *testing.T, newStore NewStore) {
	vessel := uuid.New()
	proto := envOn(t, nil, vessel)
	a, b := proto.cycle(inv("a", 130)), proto.cycle(inv("b", 3))
	setup := func(t *testing.T) (*env, []outbox.Entry) {
		e := envOn(t, newStore(t), vessel)
		return e, entriesOf(e.commit(a).Entries, e.commit(b).Entries)
	}

	e, all := setup(t)
	fs := NewFaultStore(e.store)
	rec := &recorder{}
	pass, err := outbox.NewPublisher(fs, vessel, rec, outbox.WithReceiverV2(true)).Publish(e.ctx)
	require.NoError(t, err)
	require.Equal(t, outbox.Pass{Sent: len(all), Delivered: len(all)}, pass)
	require.Equal(t, all, rec.entries())
	ops, commits := fs.Counts()
	t.Logf("a pass over %d entries: %d operations, %d commit points", len(all), ops, commits)

	for _, p := range faultPoints(ops, commits) {
		t.Run(fmt.Sprintf("%s-%02d", p.kind, p.n), func(t *testing.T) {
			e, all := setup(t)
			fs := NewFaultStore(e.store)
			fs.Inject(p.kind, p.n)
			rec := &recorder{}
			_, err := outbox.NewPublisher(fs, vessel, rec, outbox.WithReceiverV2(true)).Publish(e.ctx)
			require.True(t, fs.Fired(), "the fault was injected")
			require.ErrorIs(t, err, ErrInjected, "the failure reaches the caller")

			sent := rec.count()
			stillPending := make(map[string]bool)
			for _, en := range e.pending() {
				stillPending[en.EntityKey] = true
			}
			for _, en := range all {
				if sent[en.EntityKey] == 0 {
					require.True(t, stillPending[en.EntityKey], "%s: never sent, so still pending", en.EntityKey)
				}
			}

			// Restart: a fresh Publisher on the store.
			_, err = outbox.NewPublisher(e.store, vessel, rec, outbox.WithReceiverV2(true)).Publish(e.ctx)
			require.NoError(t, err)
			require.Empty(t, e.pending(), "every entry delivered in the end")
			total := rec.count()
			for _, en := range all {
				want := sent[en.EntityKey]
				if stillPending[en.EntityKey] {
					want++
				}
				require.Equal(t, want, total[en.EntityKey], "%s: sent again exactly when still pending", en.EntityKey)
				require.GreaterOrEqual(t, total[en.EntityKey], 1, "%s: sent at least once", en.EntityKey)
			}
			for _, en := range append(e.entries(a.SnapshotID), e.entries(b.SnapshotID)...) {
				require.Equal(t, outbox.Delivered, en.State, en.EntityKey)
			}
		})
	}
}
