package finalizetest

import (
	"bytes"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

var finalizeCases = []testCase{
	{"NothingActive", testNothingActive},
	{"MissingChunk", testMissingChunk},
	{"MissingManifest", testMissingManifest},
	{"ChunkCountBeyondSet", testChunkCountBeyondSet},
	{"Reconcile", testReconcile},
	{"EmptySnapshot", testEmptySnapshot},
}

var revisionCases = []testCase{
	{"Lower", testLowerRevision},
	{"SameRevisionOtherDocument", testSameRevisionOtherDocument},
	{"SameRevisionSameDocument", testSameRevisionSameDocument},
	{"Higher", testHigherRevision},
	{"HigherSameDocument", testHigherSameDocument},
	{"ReportedAgain", testReportedAgain},
	{"SupersededByActive", testSupersededByActive},
}

var rejectedCases = []testCase{
	{"RecordCount", testRejectRecordCount},
	{"DocumentHash", testRejectDocumentHash},
	{"UnknownSourceAcrossChunks", testRejectUnknownSource},
	{"DuplicateAcrossChunks", testRejectDuplicate},
	{"OrderAcrossChunks", testRejectOrder},
	{"ChunkBeyondCount", testRejectChunkBeyondCount},
	{"EmptyChunk", testRejectEmptyChunk},
	{"TamperedStaging", testRejectTampered},
	{"SchemaInStaging", testRejectSchema},
}

func testNothingActive(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	c, err := e.r.Active(e.ctx, e.vessel)
	require.NoError(t, err)
	require.Equal(t, e.vessel, c.VesselID)
	require.Equal(t, uuid.Nil, c.SnapshotID)
	require.Zero(t, c.Revision)
	require.True(t, c.DiscoveredAt.IsZero())
	require.Empty(t, c.Items)
	require.Equal(t, expect(e.vessel), viewOf(c))

	unknown := e.ids.next()
	require.Equal(t, finalize.Outcome{
		Status: finalize.Staging, VesselID: e.vessel, SnapshotID: unknown, MissingManifest: true,
	}, e.finalize(unknown), "an unknown snapshot: nothing staged, nothing active")
	require.Empty(t, e.reconcile())

	// Staged but not finalized: still nothing active.
	s := e.build(4, baseInventory())
	e.deliverAll(messagesOf(t, s), envelope.Staged)
	require.Equal(t, expect(e.vessel), e.active())
	require.Equal(t, e.outcome(finalize.Activated, s, s), e.finalize(idOf(s)))
	e.requireActive(s)
	c, err = e.r.Active(e.ctx, e.vessel)
	require.NoError(t, err)
	require.Equal(t, idOf(s), c.SnapshotID)
	require.Equal(t, int64(4), c.Revision)
	require.True(t, s.Manifest.DiscoveredAt.Equal(c.DiscoveredAt))
}

func testMissingChunk(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a := e.build(1, baseInventory())
	e.activate(a)
	s := e.build(2, changedInventory(t).withSensors("sensor", 150, "m"))
	msgs := messagesOf(t, s)
	e.deliverAll(slices.Delete(slices.Clone(msgs), 3, 4), envelope.Staged) // chunk 2 missing

	want := e.outcome(finalize.Staging, s, a)
	want.MissingChunks = []int{2}
	for range 3 {
		require.Equal(t, want, e.finalize(idOf(s)), "Finalize of an incomplete set is idempotent")
		e.requireActive(a)
	}
	require.Empty(t, e.reconcile(), "Reconcile leaves incomplete snapshots staging")
	require.Equal(t, want, e.finalize(idOf(s)))
	e.requireActive(a)

	e.deliver(msgs[3], envelope.Staged)
	require.Equal(t, e.outcome(finalize.Activated, s, s), e.finalize(idOf(s)), "resumed")
	e.requireActive(a, s)
	for range 2 {
		require.Equal(t, e.outcome(finalize.AlreadyActive, s, s), e.finalize(idOf(s)))
		e.requireActive(a, s)
	}
}

func testMissingManifest(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a := e.build(1, baseInventory())
	e.activate(a)
	s := e.build(2, changedInventory(t).withSensors("sensor", 150, "m"))
	msgs := messagesOf(t, s)
	e.deliverAll(msgs[1:], envelope.Staged)

	want := e.outcome(finalize.Staging, s, a)
	want.MissingManifest = true
	require.Equal(t, want, e.finalize(idOf(s)), "chunk indexes are unknown without the manifest")
	require.Equal(t, want, e.finalize(idOf(s)))
	require.Empty(t, e.reconcile())
	e.requireActive(a)

	e.deliver(msgs[0], envelope.Staged)
	require.Equal(t, e.outcome(finalize.Activated, s, s), e.finalize(idOf(s)))
	require.Equal(t, e.outcome(finalize.AlreadyActive, s, s), e.finalize(idOf(s)))
	e.requireActive(a, s)
}

// testChunkCountBeyondSet: a manifest claiming one chunk more than exists
// keeps the snapshot staging, waiting for it.
func testChunkCountBeyondSet(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a := e.build(1, baseInventory())
	e.activate(a)
	s := e.build(2, changedInventory(t).withSensors("sensor", 150, "m"))
	m := s.Manifest
	m.ChunkCount++
	msgs := messagesOf(t, s)
	msgs[0] = manifestMessage(t, m.Canonical())
	e.deliverAll(msgs, envelope.Staged)
	e.requireMissing(idOf(s), len(s.Chunks))
	require.Empty(t, e.reconcile())
	e.requireMissing(idOf(s), len(s.Chunks))
	e.requireActive(a)
}

// testReconcile: snapshots complete but never finalized, as after a crash
// between the last receipt and Finalize, are finalized by Reconcile,
// highest revision first.
func testReconcile(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a := e.build(1, baseInventory())
	e.activate(a)
	s2 := e.build(2, changedInventory(t))
	s3 := e.build(3, changedInventory(t).withSensors("sensor", 150, "m"))
	s4 := e.build(4, baseInventory())
	e.deliverAll(messagesOf(t, s2), envelope.Staged)
	e.deliverAll(messagesOf(t, s3), envelope.Staged)
	e.deliverAll(messagesOf(t, s4)[1:], envelope.Staged) // incomplete
	require.Equal(t, []finalize.Outcome{
		e.outcome(finalize.Activated, s3, s3),
		e.outcome(finalize.Superseded, s2, s3),
	}, e.reconcile())
	e.requireActive(a, s3)
	require.Empty(t, e.reconcile(), "nothing left to reconcile")
	out := e.outcome(finalize.Staging, s4, s3)
	out.MissingManifest = true
	require.Equal(t, out, e.finalize(idOf(s4)))
}

// testEmptySnapshot: an empty selection is one chunk without records;
// activating it leaves every item not currently selected, deleting none.
func testEmptySnapshot(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a := e.build(1, baseInventory())
	e.activate(a)
	empty := e.build(2, inventory{})
	require.Len(t, empty.Chunks, 1)
	require.Zero(t, empty.Manifest.RecordCount)
	e.activate(empty)
	e.requireActive(a, empty)
	v := e.active()
	require.Len(t, v.Items, len(recordsOf(a)), "nothing deleted")
	for _, it := range v.Items {
		require.False(t, it.Current)
		require.Equal(t, seenView(finalize.Seen{Revision: 1, At: a.Manifest.DiscoveredAt}), it.LastSeen)
	}
	back := e.build(3, baseInventory())
	e.activate(back)
	e.requireActive(a, empty, back)
}

// revisionSetup activates a at revision 5 over an earlier catalog.
func revisionSetup(t *testing.T, newStore NewStore) (e *env, first, a *envelope.Snapshot) {
	e = newEnv(t, newStore)
	first = e.build(2, baseInventory().withSensors("sensor", 20, "m"))
	e.activate(first)
	a = e.build(5, changedInventory(t).withSensors("sensor", 150, "m"))
	e.activate(a)
	return e, first, a
}

// testSupersededByActive: a vessel whose revisions went backwards (a lost
// or restored on-board store, SPEC.md §2.4) is counted, from what the
// Store keeps, until a higher revision activates (§8.4).
func testSupersededByActive(t *testing.T, newStore NewStore) {
	e, first, a := revisionSetup(t, newStore)
	count := func(id uuid.UUID, want int, why string) {
		t.Helper()
		out, err := e.r.Finalize(e.ctx, e.vessel, id)
		require.NoError(t, err)
		require.Equal(t, want, out.SupersededByActive, "Outcome: %s", why)
		st, err := e.r.Status(e.ctx, e.vessel)
		require.NoError(t, err)
		require.Equal(t, want, st.SupersededByActive, "Status: %s", why)
	}
	count(idOf(a), 0, "the active snapshot superseded nothing yet")
	count(idOf(first), 0, "a snapshot replaced by an activation is not superseded by the active one")
	for rev := int64(1); rev <= 3; rev++ {
		low := e.build(rev, baseInventory().withSensors("probe", int(rev), "m"))
		e.deliverAll(messagesOf(t, low), envelope.Staged)
		count(idOf(low), int(rev), "a cycle below the active revision after a reset")
		count(idOf(low), int(rev), "reported again: nothing new")
	}
	high := e.build(6, baseInventory())
	e.activate(high)
	count(idOf(high), 0, "an activation starts the count again")
}

func testLowerRevision(t *testing.T, newStore NewStore) {
	e, first, a := revisionSetup(t, newStore)
	low := e.build(3, baseInventory().withSensors("probe", 150, "m"))
	e.deliverAll(messagesOf(t, low), envelope.Staged)
	for range 2 {
		require.Equal(t, e.outcome(finalize.Superseded, low, a), e.finalize(idOf(low)))
		e.requireActive(first, a)
	}
	require.Equal(t, e.outcome(finalize.AlreadyActive, a, a), e.finalize(idOf(a)))
}

func testSameRevisionOtherDocument(t *testing.T, newStore NewStore) {
	e, first, a := revisionSetup(t, newStore)
	other := e.build(5, baseInventory().withSensors("probe", 150, "m"))
	e.deliverAll(messagesOf(t, other), envelope.Staged)
	for range 2 {
		out, err := e.r.Finalize(e.ctx, e.vessel, idOf(other))
		require.ErrorIs(t, err, sourcecatalog.ErrRevisionConflict)
		require.Equal(t, finalize.Rejected, out.Status)
		require.ErrorIs(t, out.Err, sourcecatalog.ErrRevisionConflict)
		out.Err = nil
		require.Equal(t, e.outcome(finalize.Rejected, other, a), e.sansUsage(out))
		e.requireActive(first, a)
	}
	out, err := e.r.Reconcile(e.ctx, e.vessel)
	require.NoError(t, err)
	require.Empty(t, out)
}

func testSameRevisionSameDocument(t *testing.T, newStore NewStore) {
	e, first, a := revisionSetup(t, newStore)
	twin := e.build(5, changedInventory(t).withSensors("sensor", 150, "m"))
	require.Equal(t, a.Manifest.DocumentSHA256, twin.Manifest.DocumentSHA256, "fixture: same document")
	require.NotEqual(t, idOf(a), idOf(twin))
	e.deliverAll(messagesOf(t, twin), envelope.Staged)
	for range 2 {
		require.Equal(t, e.outcome(finalize.AlreadyActive, twin, a), e.finalize(idOf(twin)), "the active snapshot stays the one first activated")
		e.requireActive(first, a)
	}
}

func testHigherRevision(t *testing.T, newStore NewStore) {
	e, first, a := revisionSetup(t, newStore)
	high := e.build(9, baseInventory().withSensors("probe", 150, "m"))
	e.deliverAll(messagesOf(t, high), envelope.Staged)
	require.Equal(t, e.outcome(finalize.Activated, high, high), e.finalize(idOf(high)))
	e.requireActive(first, a, high)
	require.Equal(t, e.outcome(finalize.AlreadyActive, high, high), e.finalize(idOf(high)))
	require.Equal(t, e.outcome(finalize.Superseded, a, high), e.finalize(idOf(a)), "replaced since")
	e.requireActive(first, a, high)
}

// testHigherSameDocument: a new revision with the active document moves the
// pointer; the items' history follows it.
func testHigherSameDocument(t *testing.T, newStore NewStore) {
	e, first, a := revisionSetup(t, newStore)
	same := e.build(6, changedInventory(t).withSensors("sensor", 150, "m"))
	require.Equal(t, a.Manifest.DocumentSHA256, same.Manifest.DocumentSHA256, "fixture: same document")
	e.deliverAll(messagesOf(t, same), envelope.Staged)
	require.Equal(t, e.outcome(finalize.Activated, same, same), e.finalize(idOf(same)))
	e.requireActive(first, a, same)
}

// testReportedAgain: a finalized snapshot reports its outcome again, in
// the light of what is active now.
func testReportedAgain(t *testing.T, newStore NewStore) {
	e, first, a := revisionSetup(t, newStore)
	low := e.build(3, baseInventory())
	twin := e.build(5, changedInventory(t).withSensors("sensor", 150, "m"))
	high := e.build(7, baseInventory().withSensors("probe", 10, "m"))
	for _, s := range []*envelope.Snapshot{low, twin, high} {
		e.deliverAll(messagesOf(t, s), envelope.Staged)
	}
	require.Equal(t, e.outcome(finalize.Superseded, low, a), e.finalize(idOf(low)))
	require.Equal(t, e.outcome(finalize.AlreadyActive, twin, a), e.finalize(idOf(twin)))
	require.Equal(t, e.outcome(finalize.Activated, high, high), e.finalize(idOf(high)))

	require.Equal(t, e.outcome(finalize.Superseded, first, high), e.finalize(idOf(first)))
	require.Equal(t, e.outcome(finalize.Superseded, a, high), e.finalize(idOf(a)))
	require.Equal(t, e.outcome(finalize.Superseded, low, high), e.finalize(idOf(low)))
	require.Equal(t, e.outcome(finalize.Superseded, twin, high), e.finalize(idOf(twin)),
		"the twin of a replaced snapshot is no longer already active")
	require.Equal(t, e.outcome(finalize.AlreadyActive, high, high), e.finalize(idOf(high)))
	e.requireActive(first, a, high)
}

// rejectSetup activates a valid snapshot under which bad sets are tried.
func rejectSetup(t *testing.T, newStore NewStore) (*env, *envelope.Snapshot) {
	e := newEnv(t, newStore)
	a := e.build(1, baseInventory().withSensors("sensor", 30, "m"))
	e.activate(a)
	return e, a
}

// requireRejected delivers a bad set whose every message is valid alone
// and requires Finalize to reject it with class, repeatably, activating
// nothing; a valid snapshot of the same revision still activates after.
func (e *env) requireRejected(msgs []message, class error, a *envelope.Snapshot) {
	e.t.Helper()
	t := e.t
	id, rev := msgs[0].want.SnapshotID, msgs[0].want.Revision
	e.deliverAll(msgs, envelope.Staged)
	for range 2 {
		out, err := e.r.Finalize(e.ctx, e.vessel, id)
		require.NoError(t, err, "a rejected set is an outcome, not an error")
		require.Equal(t, finalize.Rejected, out.Status, "%+v", out)
		require.ErrorIs(t, out.Err, class, "rejected for the right reason")
		require.Equal(t, finalize.Outcome{
			Status: finalize.Rejected, VesselID: e.vessel, SnapshotID: id, Revision: rev,
			ActiveSnapshot: idOf(a), ActiveRevision: a.Manifest.Revision, Err: out.Err,
		}, e.sansUsage(out))
		e.requireActive(a)
	}
	e.deliverAll(msgs, envelope.AlreadyReceived)
	require.Empty(t, e.reconcile(), "a rejected snapshot is not reconciled again")
	e.requireActive(a)

	good := e.build(rev, changedInventory(t))
	e.activate(good)
	e.requireActive(a, good)
}

func testRejectRecordCount(t *testing.T, newStore NewStore) {
	e, a := rejectSetup(t, newStore)
	s := e.build(2, baseInventory().withSensors("sensor", 150, "m"))
	msgs := messagesOf(t, s)
	m := s.Manifest
	m.RecordCount--
	msgs[0] = manifestMessage(t, m.Canonical())
	e.requireRejected(msgs, sourcecatalog.ErrIntegrity, a)
}

func testRejectDocumentHash(t *testing.T, newStore NewStore) {
	e, a := rejectSetup(t, newStore)
	s := e.build(2, baseInventory().withSensors("sensor", 150, "m"))
	msgs := messagesOf(t, s)
	m := s.Manifest
	m.DocumentSHA256[0] ^= 0x80
	msgs[0] = manifestMessage(t, m.Canonical())
	e.requireRejected(msgs, sourcecatalog.ErrHashMismatch, a)
}

// splitRecords cuts records into runs of at most n.
func splitRecords(records [][]byte, n int) [][][]byte {
	var out [][][]byte
	for len(records) > n {
		out = append(out, records[:n])
		records = records[n:]
	}
	return append(out, records)
}

func testRejectUnknownSource(t *testing.T, newStore NewStore) {
	e, a := rejectSetup(t, newStore)
	s := e.build(2, baseInventory().withSensors("sensor", 150, "m"))
	var records [][]byte
	for _, r := range recordsOf(s) {
		if r.SourceRef() != srcDepth || r.PathName() != "" {
			records = append(records, r.Canonical()) // drop the depth source record
		}
	}
	set := newHandSet(e.vessel, e.ids.next(), 2, e.next(), splitRecords(records, 90))
	e.requireRejected(set.messages(t), sourcecatalog.ErrIntegrity, a)
}

func testRejectDuplicate(t *testing.T, newStore NewStore) {
	e, a := rejectSetup(t, newStore)
	s := e.build(2, baseInventory().withSensors("sensor", 150, "m"))
	records := canonicalRecords(recordsOf(s))
	cuts := splitRecords(records, 80)
	// The first chunk's last path again at the start of the second.
	cuts[1] = slices.Insert(slices.Clone(cuts[1]), 0, cuts[0][len(cuts[0])-1])
	set := newHandSet(e.vessel, e.ids.next(), 2, e.next(), cuts)
	e.requireRejected(set.messages(t), sourcecatalog.ErrIntegrity, a)
}

func testRejectOrder(t *testing.T, newStore NewStore) {
	e, a := rejectSetup(t, newStore)
	s := e.build(2, baseInventory().withSensors("sensor", 150, "m"))
	cuts := splitRecords(canonicalRecords(recordsOf(s)), 80)
	cuts[0], cuts[1] = cuts[1], cuts[0] // each chunk sorted, the set not
	set := newHandSet(e.vessel, e.ids.next(), 2, e.next(), cuts)
	e.requireRejected(set.messages(t), sourcecatalog.ErrIntegrity, a)
}

// testRejectChunkBeyondCount: a staged set with a chunk index beyond its
// manifest's chunk_count, which receiving refuses in either order (see
// testManifestAfterChunkBeyond) but an older receiver may have left, is
// rejected.
func testRejectChunkBeyondCount(t *testing.T, newStore NewStore) {
	e, a := rejectSetup(t, newStore)
	s := e.build(2, baseInventory().withSensors("sensor", 150, "m"))
	msgs := messagesOf(t, s)
	m := s.Manifest
	m.ChunkCount--
	manifest := m.Canonical()
	snap := finalize.Snapshot{
		ID: idOf(s), Revision: m.Revision, State: finalize.StateStaging,
		Manifest: manifest, ManifestDigest: canonical.Sum(manifest),
		ChunkCount: m.ChunkCount, RecordCount: m.RecordCount, ChunksStaged: len(s.Chunks),
		StagedBytes: stagedBytes(msgs[1:]) + int64(len(manifest)),
	}
	var chunks []finalize.StagedChunk
	for _, c := range s.Chunks {
		chunks = append(chunks, finalize.StagedChunk{Snapshot: idOf(s), Index: c.Index(), Canonical: c.Canonical(), Payload: c.PayloadSHA256()})
	}
	e.stage(snap, chunks)
	for range 2 {
		out, err := e.r.Finalize(e.ctx, e.vessel, idOf(s))
		require.NoError(t, err, "a rejected set is an outcome, not an error")
		require.Equal(t, finalize.Rejected, out.Status, "%+v", out)
		require.ErrorIs(t, out.Err, sourcecatalog.ErrIntegrity)
		e.requireActive(a)
	}
}

func testRejectEmptyChunk(t *testing.T, newStore NewStore) {
	e, a := rejectSetup(t, newStore)
	s := e.build(2, baseInventory())
	cuts := [][][]byte{canonicalRecords(recordsOf(s)), nil}
	set := newHandSet(e.vessel, e.ids.next(), 2, e.next(), cuts)
	e.requireRejected(set.messages(t), sourcecatalog.ErrIntegrity, a)
}

// testRejectTampered: Finalize verifies the staged bytes again rather than
// trust the store; a set whose staged bytes changed is rejected.
func testRejectTampered(t *testing.T, newStore NewStore) {
	e, a := rejectSetup(t, newStore)
	cases := []struct {
		name   string
		tamper func(s *finalize.Snapshot, chunks []finalize.StagedChunk)
	}{
		{"chunk bytes", func(_ *finalize.Snapshot, chunks []finalize.StagedChunk) {
			b := chunks[1].Canonical
			require.Contains(t, string(b), `"unit":"m"}`)
			chunks[1].Canonical = bytes.Replace(b, []byte(`"unit":"m"}`), []byte(`"unit":"ft"}`), 1)
		}},
		{"chunk digest", func(_ *finalize.Snapshot, chunks []finalize.StagedChunk) {
			chunks[2].Payload[0] ^= 1
		}},
		{"manifest digest", func(s *finalize.Snapshot, _ []finalize.StagedChunk) {
			s.ManifestDigest[0] ^= 1
		}},
	}
	for i, tc := range cases {
		s := e.build(int64(2+i), baseInventory().withSensors("sensor", 150, "m"))
		msgs := messagesOf(t, s)
		snap := finalize.Snapshot{
			ID: idOf(s), Revision: s.Manifest.Revision, State: finalize.StateStaging,
			Manifest: msgs[0].raw, ManifestDigest: canonical.Sum(msgs[0].raw),
			ChunkCount: len(s.Chunks), RecordCount: s.Manifest.RecordCount,
			ChunksStaged: len(s.Chunks), StagedBytes: stagedBytes(msgs),
		}
		var chunks []finalize.StagedChunk
		for _, c := range s.Chunks {
			chunks = append(chunks, finalize.StagedChunk{Snapshot: idOf(s), Index: c.Index(), Canonical: c.Canonical(), Payload: c.PayloadSHA256()})
		}
		tc.tamper(&snap, chunks)
		e.stage(snap, chunks)
		out, err := e.r.Finalize(e.ctx, e.vessel, idOf(s))
		require.NoError(t, err, tc.name)
		require.Equal(t, finalize.Rejected, out.Status, tc.name)
		require.ErrorIs(t, out.Err, sourcecatalog.ErrHashMismatch, tc.name)
		e.requireActive(a)
	}
}

// stage writes a staged snapshot straight into the store, as a receiver
// that skipped a check, or an older one, might have left it.
func (e *env) stage(snap finalize.Snapshot, chunks []finalize.StagedChunk) {
	e.t.Helper()
	e.in(func(tx finalize.Tx) error {
		if err := tx.PutSnapshot(e.ctx, snap); err != nil {
			return err
		}
		for _, c := range chunks {
			if err := tx.PutChunk(e.ctx, c); err != nil {
				return err
			}
		}
		return nil
	})
}

// testRejectSchema: Finalize checks every record against the schema again;
// a staged set whose hashes all agree but that holds a record the schema
// refuses is rejected.
func testRejectSchema(t *testing.T, newStore NewStore) {
	e, a := rejectSetup(t, newStore)
	s := e.build(2, baseInventory().withSensors("sensor", 150, "m"))
	records := canonicalRecords(recordsOf(s))
	records[len(records)/2] = []byte(`{"kind":"path","path":"a.b","unit":5}`)
	cuts := splitRecords(records, 90)
	set := newHandSet(e.vessel, e.ids.next(), 2, e.next(), cuts)
	manifest := set.manifest.Canonical()
	snap := finalize.Snapshot{
		ID: set.manifest.SnapshotID, Revision: 2, State: finalize.StateStaging,
		Manifest: manifest, ManifestDigest: canonical.Sum(manifest),
		ChunkCount: len(cuts), RecordCount: len(records), ChunksStaged: len(cuts), StagedBytes: int64(len(manifest)),
	}
	var chunks []finalize.StagedChunk
	for i, raw := range set.chunks {
		snap.StagedBytes += int64(len(raw))
		chunks = append(chunks, finalize.StagedChunk{Snapshot: snap.ID, Index: i, Canonical: raw, Payload: canonical.Sum(rawBody(cuts[i]))})
	}
	e.stage(snap, chunks)
	out, err := e.r.Finalize(e.ctx, e.vessel, snap.ID)
	require.NoError(t, err, "a rejected set is an outcome, not an error")
	require.Equal(t, finalize.Rejected, out.Status, "%+v", out)
	require.ErrorIs(t, out.Err, sourcecatalog.ErrInvalidValue)
	e.requireActive(a)
}
