// Package finalizetest is the conformance suite of package finalize: any
// finalize.Store — memstore, a database store, an integrator's own — runs
// a finalize.Receiver through every rule of the receiver (SPEC.md §8; draft
// 0.1.0, "Completion, retries, and atomic activation") and must pass.
//
//	func TestConformance(t *testing.T) {
//		finalizetest.Run(t, func(t *testing.T) finalize.Store { return mystore.New(t) })
//	}
//
// Run checks the active catalog against a model of the inventory written
// from the rules, not from the implementation, and reports each behaviour
// as its own subtest. It also checks the Tx contract directly — every
// method answers a done context with its error, WithVessel returns the
// callback's error itself, byte slices read stay as they were after the
// transaction — and enumerates crashes at every operation and commit point
// of a scenario with FaultStore, which store-specific tests may use too.
// A failure names the rule it checks.
//
// A store that keeps its data somewhere a process can close and open again
// should also pass RunReopen, which reopens it after every transaction:
//
//	finalizetest.RunReopen(t, func(t *testing.T) (finalize.Store, func() (finalize.Store, error)) {
//		path := filepath.Join(t.TempDir(), "catalog.db")
//		s, err := mystore.Open(path)
//		require.NoError(t, err)
//		t.Cleanup(func() { s.Close() }) // the last store opened
//		return s, func() (finalize.Store, error) {
//			if err := s.Close(); err != nil {
//				return nil, err
//			}
//			s, err = mystore.Open(path)
//			return s, err
//		}
//	})
//
// The randomised tests (the message-order property test and the revision
// race) log their seed; set the environment variable FINALIZETEST_SEED to
// that value to repeat a run.
package finalizetest

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/internal/suite"
)

// NewStore returns a fresh, empty store. Run calls it once per subtest and
// once per iteration of its property and crash tests; the store may use t
// for cleanup.
type NewStore = func(t *testing.T) finalize.Store

// Run runs the conformance suite against the stores newStore makes. The
// suite passes under the race detector for a correct Store.
func Run(t *testing.T, newStore NewStore) { RunGroups(t, newStore) }

// Groups names the groups of subtests Run runs, in order.
func Groups() []string { return suite.Names(groups) }

// RunGroups runs only the named groups of the suite (all of them when none
// is named), for stores where the whole suite is costly to repeat, such as
// a cluster running the concurrency and crash groups. An unknown name fails
// the test.
func RunGroups(t *testing.T, newStore NewStore, names ...string) {
	suite.Run(t, "finalizetest", groups, newStore, names...)
}

type testCase = suite.Case[NewStore]

var groups = []suite.Group[NewStore]{
	{"Store", storeCases},
	{"Receive", receiveCases},
	{"Admission", admissionCases},
	{"Finalize", finalizeCases},
	{"Revision", revisionCases},
	{"Rejected", rejectedCases},
	{"Identity", identityCases},
	{"History", historyCases},
	{"Time", timeCases},
	{"Staging", stagingCases},
	{"Status", statusCases},
	{"Crash", crashCases},
	{"Concurrency", concurrencyCases},
	{"ChunkRef", chunkRefCases},
	{"ManifestIndex", indexCases},
	{"Batch", batchCases},
	{"WhenComplete", whenCompleteCases},
}

// seed returns the seed of a randomised test, logging it.
func seed(t *testing.T) uint64 {
	t.Helper()
	if s := os.Getenv("FINALIZETEST_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "FINALIZETEST_SEED")
		t.Logf("seed %d (from FINALIZETEST_SEED)", n)
		return n
	}
	n := uint64(time.Now().UnixNano())
	t.Logf("seed %d (set FINALIZETEST_SEED=%d to repeat)", n, n)
	return n
}

// env is one vessel of one test over one store, with its receiver.
type env struct {
	t      *testing.T
	ctx    context.Context
	store  finalize.Store
	r      *finalize.Receiver
	vessel uuid.UUID
	origin finalize.Origin
	ids    *idSource
	at     time.Time
}

func newEnv(t *testing.T, newStore NewStore, opts ...finalize.Option) *env {
	t.Helper()
	store := newStore(t)
	require.NotNil(t, store, "newStore returned nil")
	return envOn(t, store, opts...)
}

// envOn makes the environment of a test over store. Identifiers and times
// depend only on the test's name, so envs of one test agree.
func envOn(t *testing.T, store finalize.Store, opts ...finalize.Option) *env {
	return envNamed(t, t.Name(), store, opts...)
}

// envNamed is envOn with identifiers drawn from name, so that subtests
// share them.
func envNamed(t *testing.T, name string, store finalize.Store, opts ...finalize.Option) *env {
	ids := newIDSource(name)
	vessel := ids.next()
	return &env{
		t: t, ctx: context.Background(), store: store, r: finalize.NewReceiver(store, opts...),
		vessel: vessel, origin: finalize.Origin{VesselID: vessel}, ids: ids, at: epoch,
	}
}

// over returns a copy of e that talks through r.
func (e *env) over(r *finalize.Receiver) *env {
	c := *e
	c.r = r
	return &c
}

// build builds a snapshot of inv at rev with a new snapshot id.
func (e *env) build(rev int64, inv inventory) *envelope.Snapshot {
	e.t.Helper()
	return e.buildAs(e.ids.next(), rev, inv)
}

// buildAs builds a snapshot with the given id; each build is discovered
// a few minutes after the previous one.
func (e *env) buildAs(id uuid.UUID, rev int64, inv inventory) *envelope.Snapshot {
	e.t.Helper()
	e.at = e.at.Add(7*time.Minute + 13*time.Second)
	s, err := envelope.Build(envelope.Input{
		VesselID: e.vessel, SnapshotID: id, Revision: rev, DiscoveredAt: e.at, Records: inv.records(e.t),
	})
	require.NoError(e.t, err, "fixture snapshot")
	return s
}

// next returns the next discovery time, for hand-made sets.
func (e *env) next() time.Time {
	e.at = e.at.Add(7*time.Minute + 13*time.Second)
	return e.at
}

func (e *env) send(m message) (envelope.Receipt, error) {
	return e.sendAs(e.origin, m)
}

func (e *env) sendAs(origin finalize.Origin, m message) (envelope.Receipt, error) {
	if m.manifest {
		return e.r.ReceiveManifest(e.ctx, origin, m.raw)
	}
	if m.ref {
		return e.r.ReceiveChunkRef(e.ctx, origin, m.raw)
	}
	return e.r.ReceiveChunk(e.ctx, origin, m.raw)
}

// deliver sends m and requires the receipt it should get with status want.
func (e *env) deliver(m message, want envelope.ReceiptStatus) {
	e.t.Helper()
	rc, err := e.send(m)
	require.NoError(e.t, err, "receive %s", m.name)
	requireReceipt(e.t, m, want, rc, "receipt of %s", m.name)
}

func (e *env) deliverAll(msgs []message, want envelope.ReceiptStatus) {
	e.t.Helper()
	for _, m := range msgs {
		e.deliver(m, want)
	}
}

// refuse sends m and requires an error of class; nothing may be received.
func (e *env) refuse(m message, class error) {
	e.t.Helper()
	rc, err := e.send(m)
	require.ErrorIs(e.t, err, class, "receive %s", m.name)
	require.Zero(e.t, rc, "a refused message gets no receipt")
}

// finalize finalizes id and returns the outcome without its Usage, which
// it requires to be the vessel's usage now (see sansUsage).
func (e *env) finalize(id uuid.UUID) finalize.Outcome {
	e.t.Helper()
	out, err := e.r.Finalize(e.ctx, e.vessel, id)
	require.NoError(e.t, err, "finalize %s", id)
	return e.sansUsage(out)
}

// activate delivers every message of s and finalizes it, which must
// activate it.
func (e *env) activate(s *envelope.Snapshot) {
	e.t.Helper()
	e.deliverAll(messagesOf(e.t, s), envelope.Staged)
	out := e.finalize(s.Manifest.SnapshotID)
	require.Equal(e.t, finalize.Activated, out.Status, "finalize %s: %+v", s.Manifest.SnapshotID, out)
}

// deliverLastAndActivate delivers the last missing message of s and
// requires that Finalize activates s and that s is the active catalog.
func (e *env) deliverLastAndActivate(s *envelope.Snapshot, last message) {
	e.t.Helper()
	e.deliver(last, envelope.Staged)
	require.Equal(e.t, e.outcome(finalize.Activated, s, s), e.finalize(idOf(s)))
	e.requireActive(s)
}

func (e *env) active() catalogView {
	e.t.Helper()
	c, err := e.r.Active(e.ctx, e.vessel)
	require.NoError(e.t, err, "Active")
	return viewOf(c)
}

// requireActive requires the active catalog to be the model's after snaps.
func (e *env) requireActive(snaps ...*envelope.Snapshot) {
	e.t.Helper()
	require.Equal(e.t, expect(e.vessel, snaps...), e.active(), "active catalog")
}

func (e *env) reconcile() []finalize.Outcome {
	e.t.Helper()
	outs, err := e.r.Reconcile(e.ctx, e.vessel)
	require.NoError(e.t, err, "Reconcile")
	for i := range outs {
		// As they were after each Finalize: unknown now.
		outs[i].Usage, outs[i].SupersededByActive = finalize.Usage{}, 0
	}
	return outs
}

// requireNothingStaged requires that no message of the snapshot is staged.
func (e *env) requireNothingStaged(id uuid.UUID) {
	e.t.Helper()
	out := e.finalize(id)
	require.Equal(e.t, finalize.Staging, out.Status)
	require.True(e.t, out.MissingManifest, "nothing staged: the manifest is missing")
	require.Zero(e.t, out.Revision, "nothing of the snapshot is staged")
}

// requireMissing requires Finalize to find exactly these chunks missing,
// the manifest being staged.
func (e *env) requireMissing(id uuid.UUID, chunks ...int) {
	e.t.Helper()
	out := e.finalize(id)
	require.Equal(e.t, finalize.Staging, out.Status)
	require.False(e.t, out.MissingManifest, "the manifest is staged")
	require.Equal(e.t, chunks, out.MissingChunks, "missing chunks")
}

// outcome is the Outcome Finalize must return.
func (e *env) outcome(status finalize.OutcomeStatus, s *envelope.Snapshot, active *envelope.Snapshot) finalize.Outcome {
	out := finalize.Outcome{Status: status, VesselID: e.vessel, SnapshotID: s.Manifest.SnapshotID, Revision: s.Manifest.Revision}
	if active != nil {
		out.ActiveSnapshot, out.ActiveRevision = active.Manifest.SnapshotID, active.Manifest.Revision
	}
	return out
}

// idOf is the snapshot id of s.
func idOf(s *envelope.Snapshot) uuid.UUID { return s.Manifest.SnapshotID }
