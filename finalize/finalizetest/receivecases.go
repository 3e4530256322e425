package finalizetest

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

var receiveCases = []testCase{
	{"AnyOrder", testAnyOrder},
	{"IdenticalRetry", testIdenticalRetry},
	{"ChunkConflict", testChunkConflict},
	{"ManifestConflict", testManifestConflict},
	{"RevisionMismatch", testRevisionMismatch},
	{"ChunkBeyondChunkCount", testChunkBeyondChunkCount},
	{"ContradictionEitherOrder", testContradictionEitherOrder},
}

var admissionCases = []testCase{
	{"ForeignVessel", testForeignVessel},
	{"UnregisteredVessel", testUnregisteredVessel},
	{"Unsupported", testUnsupported},
	{"Malformed", testMalformed},
	{"InvalidRecord", testInvalidRecord},
	{"PayloadHash", testPayloadHash},
	{"CancelledContext", testCancelledContext},
}

// changedInventory is baseInventory after a few changes of every kind: a
// unit, path metadata, a value type, a selected source, source metadata;
// one path leaves and one appears.
func changedInventory(t require.TestingT) inventory {
	return baseInventory().
		with(t, "navigation.speedOverGround", func(s *sel) { s.unit = catalog.UnitOf("kn") }).
		with(t, "environment.depth.belowTransducer", func(s *sel) { s.meta = `{"displayName":"Depth below transducer"}` }).
		with(t, "notifications.mob", func(s *sel) { s.vt = catalog.Object }).
		with(t, "environment.wind.speedApparent", func(s *sel) { s.source = srcDerived }).
		withSource(srcBattery, src{label: "can1", typ: "NMEA2000", meta: `{"manufacturerName":"Victron"}`}).
		without("steering.autopilot.engaged").
		plus(sel{path: "environment.water.temperature", unit: catalog.UnitOf("K"), source: srcDepth, vt: catalog.Number})
}

// delivery tracks which messages of which snapshots were delivered, to know
// the receipt status and missing pieces to expect.
type delivery map[uuid.UUID]map[string]bool

// note records the delivery of m and reports whether it was delivered before.
func (d delivery) note(m message) (seen bool) {
	id := m.want.SnapshotID
	if d[id] == nil {
		d[id] = map[string]bool{}
	}
	seen = d[id][m.name]
	d[id][m.name] = true
	return seen
}

// complete reports whether every message of s was delivered.
func (d delivery) complete(s *envelope.Snapshot) bool {
	got := d[idOf(s)]
	if !got["manifest"] {
		return false
	}
	for _, c := range s.Chunks {
		if !got["chunk "+strconv.Itoa(c.Index())] {
			return false
		}
	}
	return true
}

// requireStaging checks a StatusStaging outcome of s against what was
// delivered: s is incomplete and the missing pieces are those not delivered.
func (d delivery) requireStaging(t *testing.T, s *envelope.Snapshot, out finalize.Outcome) {
	t.Helper()
	got := d[idOf(s)]
	require.False(t, d.complete(s), "a complete snapshot is not staging: %+v", out)
	require.Equal(t, !got["manifest"], out.MissingManifest, "MissingManifest")
	if got["manifest"] {
		var want []int
		for _, c := range s.Chunks {
			if !got["chunk "+strconv.Itoa(c.Index())] {
				want = append(want, c.Index())
			}
		}
		require.Equal(t, want, out.MissingChunks, "MissingChunks")
	}
}

// rivals are messages of one snapshot of which every two contradict each
// other: a manifest, a chunk at its chunk_count, a chunk of another
// revision. Whichever arrives first is staged; the others are refused.
type rivals struct {
	msgs   []message
	chunks int    // the manifest's chunk_count
	winner string // the name of the first delivered, "" before
}

func newRivals(t *testing.T, e *env) (*rivals, uuid.UUID) {
	t.Helper()
	id := e.ids.next()
	inv := baseInventory().withSensors("rival", 40, "m")
	s := messagesOf(t, e.buildAs(id, 7, inv))
	more := messagesOf(t, e.buildAs(id, 7, inv.withSensors("more", 150, "m")))
	other := messagesOf(t, e.buildAs(id, 8, inv))
	require.Greater(t, len(more), len(s), "fixture: a chunk at the chunk_count")
	r := &rivals{msgs: []message{s[0], more[len(s)], other[1]}, chunks: len(s) - 1}
	for i, n := range []string{"rival manifest", "rival chunk at chunk_count", "rival chunk of revision 8"} {
		r.msgs[i].name = n
	}
	return r, id
}

// deliver sends m, one of r's messages, and requires the answer its order
// earns.
func (r *rivals) deliver(t *testing.T, e *env, m message, at string) {
	t.Helper()
	rc, err := e.send(m)
	switch r.winner {
	case "":
		r.winner = m.name
		require.NoError(t, err, "%s: the first of the rivals, %s, is staged", at, m.name)
		requireReceipt(t, m, envelope.Staged, rc, at)
	case m.name:
		require.NoError(t, err, "%s: %s", at, m.name)
		requireReceipt(t, m, envelope.AlreadyReceived, rc, at)
	default:
		require.ErrorIs(t, err, sourcecatalog.ErrConflict, "%s: %s after %s", at, m.name, r.winner)
		require.Zero(t, rc, "%s: a refused message gets no receipt", at)
	}
}

// requireStaging requires out, an outcome of the rivals' snapshot, to show
// only the winner staged.
func (r *rivals) requireStaging(t *testing.T, out finalize.Outcome, at string) {
	t.Helper()
	require.Equal(t, finalize.Staging, out.Status, at)
	var rev int64
	for _, m := range r.msgs {
		if m.name == r.winner {
			rev = m.want.Revision
		}
	}
	require.Equal(t, rev, out.Revision, "%s: %q staged", at, r.winner)
	manifest := r.winner == r.msgs[0].name
	require.Equal(t, !manifest, out.MissingManifest, at)
	if manifest {
		var all []int
		for i := range r.chunks {
			all = append(all, i)
		}
		require.Equal(t, all, out.MissingChunks, at)
	}
}

// testAnyOrder is the property test: whatever the order of a snapshot's
// manifest and chunks, with duplicates, retries, a straggler of an older
// revision, messages that contradict each other and Finalize or Reconcile
// tried at any point, the receiver ends in the same state — the model's —
// and refuses the same messages: of the contradicting ones, all but the
// first to arrive.
func testAnyOrder(t *testing.T, newStore NewStore) {
	base := seed(t)
	const iterations = 30
	var first *catalogView
	for iter := range iterations {
		rng := rand.New(rand.NewPCG(base, uint64(iter)))
		e := newEnv(t, newStore)
		a := e.build(5, baseInventory().withSensors("sensor", 40, "m"))
		b := e.build(6, changedInventory(t).withSensors("sensor", 150, "m"))
		old := e.build(3, baseInventory().without("navigation.state").withSensors("probe", 120, "m"))
		require.GreaterOrEqual(t, len(b.Chunks), 4, "fixture: b is multi-chunk")
		e.activate(a)
		wantA, wantB := expect(e.vessel, a), expect(e.vessel, a, b)
		riv, rivalID := newRivals(t, e)

		var seq []message
		for _, m := range slices.Concat(messagesOf(t, b), messagesOf(t, old), riv.msgs) {
			for range 1 + rng.IntN(3) {
				seq = append(seq, m)
			}
		}
		rng.Shuffle(len(seq), func(i, j int) { seq[i], seq[j] = seq[j], seq[i] })

		at := func(i int) string { return "iteration " + strconv.Itoa(iter) + " step " + strconv.Itoa(i) }
		snaps := map[uuid.UUID]*envelope.Snapshot{idOf(b): b, idOf(old): old}
		d := delivery{}
		activated := 0
		for i, m := range seq {
			if m.want.SnapshotID == rivalID {
				riv.deliver(t, e, m, at(i))
				continue
			}
			rc, err := e.send(m)
			require.NoError(t, err, "%s: receive %s", at(i), m.name)
			status := envelope.Staged
			if d.note(m) {
				status = envelope.AlreadyReceived
			}
			requireReceipt(t, m, status, rc, "%s: receipt of %s", at(i), m.name)
			require.Equal(t, d.complete(snaps[m.want.SnapshotID]), rc.Complete, "%s: receipt of %s reports the set complete exactly when every message of the snapshot was delivered (SPEC.md §9.1)", at(i), m.name)

			switch rng.IntN(8) {
			case 0:
				out := e.finalize(idOf(b))
				switch out.Status {
				case finalize.Staging:
					d.requireStaging(t, b, out)
					require.Equal(t, idOf(a), out.ActiveSnapshot, at(i))
				case finalize.Activated:
					activated++
					require.Equal(t, e.outcome(finalize.Activated, b, b), out, at(i))
				default:
					require.Equal(t, e.outcome(finalize.AlreadyActive, b, b), out, at(i))
				}
			case 1:
				out := e.finalize(idOf(old))
				if out.Status == finalize.Staging {
					d.requireStaging(t, old, out)
				} else {
					require.True(t, d.complete(old), at(i))
					require.Equal(t, finalize.Superseded, out.Status, at(i))
				}
			case 2:
				for _, out := range e.reconcile() {
					switch out.SnapshotID {
					case idOf(b):
						require.Equal(t, finalize.Activated, out.Status, at(i))
						activated++
					case idOf(old):
						require.Equal(t, finalize.Superseded, out.Status, at(i))
					default:
						require.Fail(t, "Reconcile finalized an unknown snapshot", at(i))
					}
				}
			case 3:
				v := e.active()
				if v.Snapshot == idOf(a).String() {
					require.Equal(t, wantA, v, at(i))
				} else {
					require.Equal(t, wantB, v, at(i))
				}
			case 4:
				riv.requireStaging(t, e.finalize(rivalID), at(i))
			}
		}
		for _, out := range e.reconcile() {
			if out.SnapshotID == idOf(b) && out.Status == finalize.Activated {
				activated++
			}
		}
		require.Equal(t, 1, activated, "iteration %d: activated exactly once", iter)
		require.Equal(t, e.outcome(finalize.AlreadyActive, b, b), e.finalize(idOf(b)))
		require.Equal(t, e.outcome(finalize.Superseded, old, b), e.finalize(idOf(old)))
		riv.requireStaging(t, e.finalize(rivalID), "iteration "+strconv.Itoa(iter)+": end")
		v := e.active()
		require.Equal(t, wantB, v, "iteration %d: final state is the model's", iter)
		if first == nil {
			first = &v
		} else {
			require.Equal(t, *first, v, "iteration %d: same final state as iteration 0", iter)
		}
	}
}

func testIdenticalRetry(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	s := e.build(1, inventory{}.withSensors("sensor", 150, "m"))
	msgs := messagesOf(t, s)
	require.Len(t, msgs, 5, "fixture: 150 sensors are 301 records in 4 chunks")

	first := make([]envelope.Receipt, len(msgs))
	for i, m := range msgs {
		rc, err := e.send(m)
		require.NoError(t, err)
		requireReceipt(t, m, envelope.Staged, rc, m.name)
		require.Equal(t, i == len(msgs)-1, rc.Complete, "%s: a receipt reports the set complete once the manifest and every chunk are staged (SPEC.md §9.1)", m.name)
		first[i] = rc
	}
	retry := func() {
		t.Helper()
		for i := len(msgs) - 1; i >= 0; i-- {
			rc, err := e.send(msgs[i])
			require.NoError(t, err, msgs[i].name)
			require.Equal(t, envelope.AlreadyReceived, rc.Status, msgs[i].name)
			require.True(t, rc.Matches(first[i]), "a retry gets a matching receipt")
			require.True(t, rc.Complete, "%s: a retry after the set is complete reports it complete", msgs[i].name)
			rc.Status, rc.Complete = envelope.Staged, first[i].Complete
			require.Equal(t, first[i], rc, "equal apart from the status and completeness")
		}
	}
	retry()
	require.False(t, first[0].Matches(first[1]), "receipts of different messages differ")
	require.Equal(t, expect(e.vessel), e.active(), "receipts never activate")

	require.Equal(t, e.outcome(finalize.Activated, s, s), e.finalize(idOf(s)))
	retry()
	e.requireActive(s)
	require.Equal(t, e.outcome(finalize.AlreadyActive, s, s), e.finalize(idOf(s)))
	e.requireActive(s)
}

// requireUnchanged requires the outcome of Finalize and the active catalog
// to be what they were.
func (e *env) requireUnchanged(id uuid.UUID, out finalize.Outcome, view catalogView) {
	e.t.Helper()
	require.Equal(e.t, view, e.active(), "active catalog unchanged")
	require.Equal(e.t, out, e.finalize(id), "Finalize outcome unchanged")
}

func testChunkConflict(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a := e.build(1, baseInventory())
	e.activate(a)
	s := e.build(2, baseInventory().withSensors("sensor", 150, "m"))
	other := e.buildAs(idOf(s), 2, baseInventory().withSensors("probe", 150, "m"))
	msgs, others := messagesOf(t, s), messagesOf(t, other)
	require.Len(t, others, len(msgs))

	// Before the manifest.
	e.deliver(msgs[1], envelope.Staged)
	e.refuse(others[1], sourcecatalog.ErrConflict)
	e.deliver(msgs[1], envelope.AlreadyReceived)

	// With the manifest, the set incomplete.
	e.deliver(msgs[0], envelope.Staged)
	e.deliverAll(msgs[2:len(msgs)-1], envelope.Staged)
	last := len(msgs) - 1
	out, view := e.finalize(idOf(s)), e.active()
	require.Equal(t, []int{last - 1}, out.MissingChunks)
	for i := 1; i < last; i++ {
		require.NotEqual(t, msgs[i].raw, others[i].raw, "fixture: other bytes at chunk %d", i-1)
		e.refuse(others[i], sourcecatalog.ErrConflict)
		e.requireUnchanged(idOf(s), out, view)
		e.deliver(msgs[i], envelope.AlreadyReceived)
	}

	// Completed and activated: the conflicting bytes left no trace.
	e.deliver(msgs[last], envelope.Staged)
	require.Equal(t, e.outcome(finalize.Activated, s, s), e.finalize(idOf(s)))
	e.requireActive(a, s)
	out, view = e.outcome(finalize.AlreadyActive, s, s), e.active()
	for i := 1; i < len(msgs); i++ {
		e.refuse(others[i], sourcecatalog.ErrConflict)
		e.requireUnchanged(idOf(s), out, view)
	}
}

func testManifestConflict(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a := e.build(1, baseInventory())
	e.activate(a)
	s := e.build(2, changedInventory(t).withSensors("sensor", 150, "m"))
	msgs := messagesOf(t, s)

	// Other manifests of the same snapshot: another document, another
	// revision, only another discovery time.
	other := messagesOf(t, e.buildAs(idOf(s), 2, baseInventory()))[0]
	otherRev := messagesOf(t, e.buildAs(idOf(s), 3, changedInventory(t).withSensors("sensor", 150, "m")))[0]
	m := s.Manifest
	m.DiscoveredAt = m.DiscoveredAt.Add(1e9)
	otherTime := manifestMessage(t, m.Canonical())
	conflicting := []message{other, otherRev, otherTime}

	e.deliver(msgs[0], envelope.Staged)
	e.deliver(msgs[1], envelope.Staged)
	out, view := e.finalize(idOf(s)), e.active()
	require.Equal(t, finalize.Staging, out.Status)
	for _, c := range conflicting {
		e.refuse(c, sourcecatalog.ErrConflict)
		e.requireUnchanged(idOf(s), out, view)
	}
	e.deliver(msgs[0], envelope.AlreadyReceived)

	e.deliverAll(msgs[2:], envelope.Staged)
	require.Equal(t, e.outcome(finalize.Activated, s, s), e.finalize(idOf(s)))
	e.requireActive(a, s)
	out, view = e.outcome(finalize.AlreadyActive, s, s), e.active()
	for _, c := range conflicting {
		e.refuse(c, sourcecatalog.ErrConflict)
		e.requireUnchanged(idOf(s), out, view)
	}
}

func testRevisionMismatch(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a := e.build(1, baseInventory())
	e.activate(a)
	inv := baseInventory().withSensors("sensor", 150, "m")
	s := e.build(7, inv)
	s8 := e.buildAs(idOf(s), 8, inv) // the same records at another revision
	msgs, msgs8 := messagesOf(t, s), messagesOf(t, s8)
	require.Equal(t, msgs[1].want.Digest, msgs8[1].want.Digest, "fixture: same payload")

	e.deliver(msgs[1], envelope.Staged)
	out, view := e.finalize(idOf(s)), e.active()
	e.refuse(msgs8[1], sourcecatalog.ErrConflict) // same index and payload, other revision
	e.refuse(msgs8[2], sourcecatalog.ErrConflict) // another index
	e.refuse(msgs8[0], sourcecatalog.ErrConflict) // the manifest
	e.requireUnchanged(idOf(s), out, view)

	e.deliver(msgs[0], envelope.Staged)
	out = e.finalize(idOf(s))
	e.refuse(msgs8[3], sourcecatalog.ErrConflict)
	e.refuse(msgs8[0], sourcecatalog.ErrConflict)
	e.requireUnchanged(idOf(s), out, view)

	e.deliverAll(msgs[2:], envelope.Staged)
	require.Equal(t, e.outcome(finalize.Activated, s, s), e.finalize(idOf(s)))
	e.requireActive(a, s)
}

func testChunkBeyondChunkCount(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	s := e.build(1, baseInventory())
	require.Len(t, s.Chunks, 1, "fixture: one chunk")
	big := e.buildAs(idOf(s), 1, baseInventory().withSensors("sensor", 150, "m"))
	msgs, bigs := messagesOf(t, s), messagesOf(t, big)

	e.deliver(msgs[0], envelope.Staged)
	for _, m := range bigs[2:] { // chunk indexes 1.. beyond chunk_count 1
		e.refuse(m, sourcecatalog.ErrConflict)
	}
	e.requireMissing(idOf(s), 0)
	e.deliver(msgs[1], envelope.Staged)
	require.Equal(t, e.outcome(finalize.Activated, s, s), e.finalize(idOf(s)))
	e.requireActive(s)
}

// testContradictionEitherOrder: of two messages of a snapshot that
// contradict each other — a chunk index at or beyond the manifest's
// chunk_count, another revision — whichever arrives first is staged and
// the other is refused with ErrConflict and no receipt, in either order.
func testContradictionEitherOrder(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a := e.build(1, baseInventory())
	e.activate(a)
	big := baseInventory().withSensors("sensor", 250, "m")
	for _, tc := range []struct {
		name  string
		rival func(id uuid.UUID) message // contradicts the manifest of a one-chunk snapshot
	}{
		{"chunk 4 and chunk_count 1", func(id uuid.UUID) message {
			msgs := messagesOf(t, e.buildAs(id, 2, big))
			require.Greater(t, len(msgs), 5, "fixture: a chunk index 4")
			return msgs[5]
		}},
		{"chunk 1 and chunk_count 1", func(id uuid.UUID) message { return messagesOf(t, e.buildAs(id, 2, big))[2] }},
		{"another revision", func(id uuid.UUID) message { return messagesOf(t, e.buildAs(id, 3, baseInventory()))[1] }},
	} {
		for _, rivalFirst := range []bool{true, false} {
			s := e.build(2, changedInventory(t))
			msgs := messagesOf(t, s)
			require.Len(t, msgs, 2, "fixture: one chunk")
			manifest, rival := msgs[0], tc.rival(idOf(s))
			first, second := manifest, rival
			if rivalFirst {
				first, second = rival, manifest
			}
			t.Logf("%s: %s first", tc.name, first.name)
			view := e.active()
			e.deliver(first, envelope.Staged)
			for range 2 {
				e.refuse(second, sourcecatalog.ErrConflict)
				e.deliver(first, envelope.AlreadyReceived)
			}
			out := e.finalize(idOf(s))
			require.Equal(t, finalize.Staging, out.Status, tc.name)
			require.Equal(t, first.want.Revision, out.Revision, "%s: only %s is staged", tc.name, first.name)
			require.Equal(t, !first.manifest, out.MissingManifest, "%s: only %s is staged", tc.name, first.name)
			if first.manifest {
				require.Equal(t, []int{0}, out.MissingChunks, tc.name)
			}
			require.Equal(t, view, e.active(), tc.name)
			e.discard(idOf(s))
		}
	}
}

// forVessel returns a copy of e for another vessel over the same store.
func (e *env) forVessel(id uuid.UUID) *env {
	c := *e
	c.vessel, c.origin = id, finalize.Origin{VesselID: id}
	return &c
}

func (e *env) refuseAs(origin finalize.Origin, m message, class error) {
	e.t.Helper()
	rc, err := e.sendAs(origin, m)
	require.ErrorIs(e.t, err, class, "receive %s", m.name)
	require.Zero(e.t, rc, "a refused message gets no receipt")
}

func testForeignVessel(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	s := e.build(1, baseInventory().withSensors("sensor", 150, "m"))
	msgs := messagesOf(t, s)
	stranger := e.forVessel(e.ids.next())

	// A message naming e's vessel from another authenticated origin.
	e.refuseAs(stranger.origin, msgs[0], sourcecatalog.ErrForeignVessel)
	e.requireNothingStaged(idOf(s))
	stranger.requireNothingStaged(idOf(s))

	e.refuseAs(stranger.origin, msgs[2], sourcecatalog.ErrForeignVessel)
	e.deliver(msgs[0], envelope.Staged)
	e.deliver(msgs[1], envelope.Staged)
	e.deliverAll(msgs[3:], envelope.Staged)
	e.requireMissing(idOf(s), 1)
	stranger.requireNothingStaged(idOf(s))

	e.deliverLastAndActivate(s, msgs[2])
	require.Equal(t, expect(stranger.vessel), stranger.active())
}

// registry is a VesselRegistry the test controls.
type registry struct {
	mu    sync.Mutex
	known map[uuid.UUID]bool
	err   error
}

func (r *registry) IsRegistered(_ context.Context, id uuid.UUID) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.known[id], r.err
}

func (r *registry) set(id uuid.UUID, known bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.known[id], r.err = known, err
}

func testUnregisteredVessel(t *testing.T, newStore NewStore) {
	reg := &registry{known: map[uuid.UUID]bool{}}
	e := newEnv(t, newStore, finalize.WithRegistry(reg))
	reg.set(e.vessel, true, nil)

	u := e.forVessel(e.ids.next())
	su := u.build(1, baseInventory())
	for _, m := range messagesOf(t, su) {
		u.refuse(m, sourcecatalog.ErrUnregisteredVessel)
	}
	u.requireNothingStaged(idOf(su))

	s := e.build(1, baseInventory().withSensors("sensor", 150, "m"))
	e.activate(s)

	broken := errors.New("registry down")
	reg.set(e.vessel, true, broken)
	s2 := e.build(2, changedInventory(t))
	for _, m := range messagesOf(t, s2) {
		e.refuse(m, broken)
		e.refuse(m, sourcecatalog.ErrStoreUnavailable)
	}
	reg.set(e.vessel, false, nil)
	for _, m := range messagesOf(t, s2) {
		e.refuse(m, sourcecatalog.ErrUnregisteredVessel)
	}
	e.refuse(messagesOf(t, s)[1], sourcecatalog.ErrUnregisteredVessel)
	reg.set(e.vessel, true, nil)
	e.requireNothingStaged(idOf(s2))
	e.requireActive(s)
	e.activate(s2)
	e.requireActive(s, s2)
}

func testUnsupported(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	s := e.build(1, baseInventory().withSensors("sensor", 150, "m"))
	msgs := messagesOf(t, s)
	manifest := func(old, new string) message {
		return message{name: "manifest " + new, manifest: true, raw: replaceOnce(t, msgs[0].raw, old, new)}
	}
	protocol := `"protocol":"` + sourcecatalog.Protocol + `"`
	e.refuse(manifest(`"scope":"`+sourcecatalog.Scope+`"`, `"scope":"all-sources"`), sourcecatalog.ErrUnsupported)
	e.refuse(manifest(`"inventory_coverage":"`+sourcecatalog.Coverage+`"`, `"inventory_coverage":"all-sources"`), sourcecatalog.ErrUnsupported)
	e.refuse(manifest(protocol, `"protocol":"yachtmemory.source-catalog.v3"`), sourcecatalog.ErrUnsupported)
	e.refuse(manifest(`"transport_complete":true`, `"transport_complete":false`), sourcecatalog.ErrIncompleteScan)
	e.requireNothingStaged(idOf(s))

	chunk := message{name: "chunk 1 v3", raw: replaceOnce(t, msgs[2].raw, protocol, `"protocol":"yachtmemory.source-catalog.v3"`)}
	e.refuse(chunk, sourcecatalog.ErrUnsupported)
	e.deliver(msgs[0], envelope.Staged)
	e.deliver(msgs[1], envelope.Staged)
	e.deliverAll(msgs[3:], envelope.Staged)
	e.requireMissing(idOf(s), 1)
	e.deliverLastAndActivate(s, msgs[2])
}

func testMalformed(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	s := e.build(1, baseInventory().withSensors("sensor", 150, "m"))
	msgs := messagesOf(t, s)
	m, c := msgs[0].raw, msgs[2].raw
	cases := []struct {
		name     string
		manifest bool
		raw      []byte
		class    error
	}{
		{"truncated manifest", true, m[:len(m)-1], sourcecatalog.ErrMalformedJSON},
		{"manifest with trailing bytes", true, append(slices.Clone(m), " x"...), sourcecatalog.ErrMalformedJSON},
		{"manifest with a duplicate name", true, slices.Concat([]byte(`{"revision":1,`), m[1:]), sourcecatalog.ErrMalformedJSON},
		{"manifest with invalid UTF-8", true, replaceOnce(t, m, `"scope":"current`, "\"scope\":\"\xffcurrent"), sourcecatalog.ErrMalformedJSON},
		{"not JSON", true, []byte("scope=current-selected-sources"), sourcecatalog.ErrMalformedJSON},
		{"manifest with an unknown field", true, slices.Concat([]byte(`{"all_sources":true,`), m[1:]), sourcecatalog.ErrUnknownField},
		{"manifest without scope", true, replaceOnce(t, m, `"scope":"`+sourcecatalog.Scope+`",`, ``), sourcecatalog.ErrMissingField},
		{"revision as a float", true, replaceOnce(t, m, `"revision":1,`, `"revision":1.0,`), sourcecatalog.ErrInvalidValue},
		{"truncated chunk", false, c[:len(c)/2], sourcecatalog.ErrMalformedJSON},
		{"chunk with a duplicate name", false, slices.Concat([]byte(`{"chunk_index":1,`), c[1:]), sourcecatalog.ErrMalformedJSON},
		{"chunk with an unknown field", false, slices.Concat([]byte(`{"partial":false,`), c[1:]), sourcecatalog.ErrUnknownField},
	}
	for _, tc := range cases {
		e.refuse(message{name: tc.name, manifest: tc.manifest, raw: tc.raw}, tc.class)
	}
	e.requireNothingStaged(idOf(s))
	e.deliver(msgs[0], envelope.Staged)
	e.deliver(msgs[1], envelope.Staged)
	e.deliverAll(msgs[3:], envelope.Staged)
	e.requireMissing(idOf(s), 1)
	e.deliverLastAndActivate(s, msgs[2])
}

// testInvalidRecord: receive validates every record (schema); a chunk with
// an invalid record, its payload hash correct, stages nothing.
func testInvalidRecord(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	s := e.build(1, baseInventory().withSensors("sensor", 150, "m"))
	msgs := messagesOf(t, s)
	good := canonicalRecords(s.Chunks[1].Records())
	cases := []struct {
		name   string
		record string
		class  error
	}{
		{"empty path segment", `{"kind":"path","path":"navigation..speedOverGround"}`, sourcecatalog.ErrInvalidValue},
		{"unknown value type", `{"kind":"observation","path":"a.b","source_ref":"x","value_type":"float"}`, sourcecatalog.ErrInvalidValue},
		{"unknown kind", `{"kind":"device","path":"a.b"}`, sourcecatalog.ErrInvalidValue},
		{"unknown member", `{"color":"red","kind":"path","path":"a.b"}`, sourcecatalog.ErrUnknownField},
		{"missing value type", `{"kind":"observation","path":"a.b","source_ref":"x"}`, sourcecatalog.ErrMissingField},
		{"control character", `{"kind":"source","source_ref":"can0\u0007"}`, sourcecatalog.ErrInvalidValue},
		{"unit not a string", `{"kind":"path","path":"a.b","unit":5}`, sourcecatalog.ErrInvalidValue},
	}
	for _, tc := range cases {
		records := slices.Clone(good)
		records[len(records)/2] = []byte(tc.record)
		raw := rawChunk(e.vessel, idOf(s), 1, 1, records)
		e.refuse(message{name: tc.name, raw: raw}, tc.class)
	}
	e.requireNothingStaged(idOf(s))
	e.deliver(msgs[0], envelope.Staged)
	for _, tc := range cases {
		raw := rawChunk(e.vessel, idOf(s), 1, 1, [][]byte{[]byte(tc.record)})
		e.refuse(message{name: tc.name + " alone", raw: raw}, tc.class)
	}
	e.deliver(msgs[1], envelope.Staged)
	e.deliverAll(msgs[3:], envelope.Staged)
	e.requireMissing(idOf(s), 1)
	e.deliverLastAndActivate(s, msgs[2])
}

func testPayloadHash(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	s := e.build(1, baseInventory().withSensors("sensor", 150, "m"))
	msgs := messagesOf(t, s)
	payload := msgs[2].want.Digest
	wrong := payload
	wrong[31] ^= 1
	bad := message{name: "chunk 1 with a wrong payload hash", raw: replaceOnce(t, msgs[2].raw, payload.String(), wrong.String())}
	e.refuse(bad, sourcecatalog.ErrHashMismatch)

	// The records changed under a correct-looking hash.
	recs := canonicalRecords(s.Chunks[1].Records())
	recs[0] = replaceOnce(t, slices.Clone(recs[0]), `"unit":"m"`, `"unit":"ft"`)
	tampered := rawChunk(e.vessel, idOf(s), 1, 1, recs)
	tampered = replaceOnce(t, tampered, canonical.Sum(rawBody(recs)).String(), payload.String())
	e.refuse(message{name: "chunk 1 with changed records", raw: tampered}, sourcecatalog.ErrHashMismatch)

	e.requireNothingStaged(idOf(s))
	e.deliver(msgs[0], envelope.Staged)
	e.deliver(msgs[1], envelope.Staged)
	e.deliverAll(msgs[3:], envelope.Staged)
	e.refuse(bad, sourcecatalog.ErrHashMismatch)
	e.requireMissing(idOf(s), 1)
	e.deliverLastAndActivate(s, msgs[2])
}

// testCancelledContext: with its context cancelled, every method of the
// Receiver fails with an error wrapping ErrStoreUnavailable and
// context.Canceled, and changes nothing.
func testCancelledContext(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a := e.build(1, baseInventory())
	e.activate(a)
	s := e.build(2, changedInventory(t).withSensors("sensor", 150, "m"))
	msgs := messagesOf(t, s)
	e.deliverAll(msgs[:2], envelope.Staged)

	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	calls := map[string]func() error{
		"ReceiveManifest": func() error { _, err := e.r.ReceiveManifest(ctx, e.origin, msgs[0].raw); return err },
		"ReceiveChunk":    func() error { _, err := e.r.ReceiveChunk(ctx, e.origin, msgs[2].raw); return err },
		"Finalize":        func() error { _, err := e.r.Finalize(ctx, e.vessel, idOf(s)); return err },
		"Reconcile":       func() error { _, err := e.r.Reconcile(ctx, e.vessel); return err },
		"Discard":         func() error { return e.r.Discard(ctx, e.vessel, idOf(s)) },
		"Prune":           func() error { return e.r.Prune(ctx, e.vessel, 0) },
		"Active":          func() error { _, err := e.r.Active(ctx, e.vessel); return err },
		"Usage":           func() error { _, err := e.r.Usage(ctx, e.vessel); return err },
	}
	for name, call := range calls {
		err := call()
		require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable, name)
		require.ErrorIs(t, err, context.Canceled, name)
	}
	e.requireMissing(idOf(s), 1, 2, 3)
	e.requireActive(a)
	e.deliverAll(msgs[2:], envelope.Staged)
	require.Equal(t, e.outcome(finalize.Activated, s, s), e.finalize(idOf(s)))
}
