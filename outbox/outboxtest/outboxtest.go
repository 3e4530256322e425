// Package outboxtest is the conformance suite of package outbox: any
// outbox.Store — outbox/memstore, mysqlstore.Outbox, an integrator's own — runs
// the on-board rules (SPEC.md §7.4–§7.5; draft 0.1.0, "Completion, retries, and
// atomic activation", item 1) through outbox.Writer and outbox.Publisher,
// and must pass.
//
//	func TestOutbox(t *testing.T) {
//		outboxtest.Run(t, func(t *testing.T) outbox.Store { return mystore.New(t) })
//	}
//
// Run reports each behaviour as its own subtest, each on a fresh store. It
// checks the Tx contract directly; what Writer.Commit writes, byte for byte,
// against digests computed here from the records; a crash at every
// operation and commit point of a Commit and of a Publish pass, injected by
// FaultStore, which store-specific tests may use too; concurrent cycles of
// one vessel; and the Publisher's capability gate, receipts, retries,
// conflicts and tampered bytes against a recording fake transport. The Tx
// checks include that every method answers a done context with its error,
// that WithVessel returns the callback's error itself and that payloads
// read stay as they were after the transaction; a failure names the rule
// it checks. A store that keeps its data somewhere a process can close and
// open again should also pass RunReopen, which reopens it after every
// transaction (see finalizetest.RunReopen for an example).
package outboxtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/internal/suite"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// NewStore returns a fresh, empty store. Run calls it once per subtest
// and once per iteration of its crash tests; the store may use t for
// cleanup.
type NewStore = func(t *testing.T) outbox.Store

// Run runs the conformance suite against the stores newStore makes. The
// suite passes under the race detector for a correct Store.
func Run(t *testing.T, newStore NewStore) { suite.Run(t, "outboxtest", groups, newStore) }

type testCase = suite.Case[NewStore]

var groups = []suite.Group[NewStore]{
	{"Store", storeCases},
	{"Writer", writerCases},
	{"Crash", crashCases},
	{"Concurrency", concurrencyCases},
	{"Floor", floorCases},
	{"Publisher", publisherCases},
	{"ChunkRef", chunkRefCases},
	{"Batch", batchCases},
}

// epoch is the discovery time of the first cycle of a test; each further
// cycle is discovered a few minutes later.
var epoch = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// env is one vessel of one test over one store.
type env struct {
	t      *testing.T
	ctx    context.Context
	store  outbox.Store
	vessel uuid.UUID
	at     time.Time
}

func newEnv(t *testing.T, newStore NewStore) *env {
	t.Helper()
	store := newStore(t)
	require.NotNil(t, store, "newStore returned nil")
	return envOn(t, store, uuid.New())
}

func envOn(t *testing.T, store outbox.Store, vessel uuid.UUID) *env {
	return &env{t: t, ctx: context.Background(), store: store, vessel: vessel, at: epoch}
}

// over returns a copy of e that talks to store.
func (e *env) over(store outbox.Store) *env {
	c := *e
	c.store = store
	return &c
}

// cycle starts a discovery cycle of inv, discovered a few minutes after the
// previous one.
func (e *env) cycle(inv inventory) outbox.Cycle {
	e.t.Helper()
	e.at = e.at.Add(7*time.Minute + 13*time.Second)
	return outbox.NewCycle(e.vessel, e.at, inv.records(e.t))
}

// countingWriter is a Writer without the revision floor, whose revisions
// count 1, 2, 3: the cases that check other rules expect them. The Floor
// group checks the floor.
func countingWriter(store outbox.Store) *outbox.Writer {
	return outbox.NewWriter(store, outbox.WithRevisionFloor(false))
}

// commit commits c, which must succeed with a new revision.
func (e *env) commit(c outbox.Cycle) outbox.Commit {
	e.t.Helper()
	com, err := countingWriter(e.store).Commit(e.ctx, c)
	require.NoError(e.t, err, "commit %s", c.SnapshotID)
	require.False(e.t, com.Retried, "a first commit is not a retry")
	return com
}

// in runs fn in a transaction that must succeed.
func (e *env) in(fn func(tx outbox.Tx) error) {
	e.t.Helper()
	require.NoError(e.t, e.store.WithVessel(e.ctx, e.vessel, fn), "WithVessel")
}

// entries returns the committed entries of a snapshot, which must exist.
func (e *env) entries(id uuid.UUID) []outbox.Entry {
	e.t.Helper()
	var out []outbox.Entry
	e.in(func(tx outbox.Tx) error {
		var err error
		out, err = tx.Entries(e.ctx, id)
		return err
	})
	return out
}

// requireNoEntries requires that nothing of the snapshot is committed.
func (e *env) requireNoEntries(id uuid.UUID) {
	e.t.Helper()
	e.in(func(tx outbox.Tx) error {
		got, err := tx.Entries(e.ctx, id)
		require.ErrorIs(e.t, err, sourcecatalog.ErrNotFound, "no entry of snapshot %s: got %d", id, len(got))
		return nil
	})
}

// pending returns every pending entry of the vessel.
func (e *env) pending() []outbox.Entry {
	e.t.Helper()
	var out []outbox.Entry
	e.in(func(tx outbox.Tx) error {
		var err error
		out, err = tx.Pending(e.ctx, 1<<20)
		return err
	})
	return out
}

// errProbe rolls back the transaction of requireNextRevision.
var errProbe = errors.New("outboxtest: probe rolled back")

// requireNextRevision requires that the vessel's next revision is want,
// probing in a transaction that is rolled back, so that it consumes nothing.
func (e *env) requireNextRevision(want int64) {
	e.t.Helper()
	var got int64
	err := e.store.WithVessel(e.ctx, e.vessel, func(tx outbox.Tx) error {
		var err error
		if got, err = tx.NextRevision(e.ctx, 0); err != nil {
			return err
		}
		return errProbe
	})
	require.ErrorIs(e.t, err, errProbe, "probe")
	require.Equal(e.t, want, got, "the next revision (nothing consumed it)")
}

// entriesOf concatenates entry lists.
func entriesOf(lists ...[]outbox.Entry) []outbox.Entry {
	var out []outbox.Entry
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}
