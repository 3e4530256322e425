package finalizetest

import (
	"bytes"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

// Cases of SPEC.md §8.4's verification by identity: a set identical to
// the active snapshot need not be decoded again, but whatever differs
// from it, or from what was verified, is verified in full.
var identityCases = []testCase{
	{"PointerOnly", testIdentityPointerOnly},
	{"Damaged", testIdentityDamaged},
	{"ActiveChunksOtherSet", testIdentityActiveChunksOtherSet},
	{"StoreFailure", testIdentityStoreFailure},
}

// PointerOnly: the same document at a higher revision activates by
// moving the pointer and, with it, the last-seen of the items it selects;
// no item is written or retired, records and first-seen are kept, and
// the history of items no longer selected too. The same document at the
// active revision or below is still already_active or superseded.
func testIdentityPointerOnly(t *testing.T, newStore NewStore) {
	fs := NewFaultStore(newStore(t))
	e := envOn(t, fs)
	const (
		sog   = "navigation.speedOverGround"
		depth = "environment.depth.belowTransducer"
	)
	inv1 := baseInventory().withSensors("sensor", 150, "m")
	inv2 := inv1.without(depth)
	s1, s2 := e.build(1, inv1), e.build(2, inv2)
	e.activate(s1)
	e.activate(s2)
	before := e.active()

	s3 := e.build(3, inv2)
	require.Equal(t, s2.Manifest.DocumentSHA256, s3.Manifest.DocumentSHA256, "fixture: same document")
	e.deliverAll(messagesOf(t, s3), envelope.Staged)
	fs.ResetCalls()
	require.Equal(t, e.outcome(finalize.Activated, s3, s3), e.finalize(idOf(s3)))
	calls := fs.Calls()
	require.Zero(t, calls["PutItems"], "no item written")
	require.Zero(t, calls["RetireItems"], "no item retired")
	require.Zero(t, calls["SetIndex"], "the record index kept")
	require.Equal(t, 1, calls["SetVessel"], "only the pointer")
	e.requireActive(s1, s2, s3)
	after := e.active()
	require.Equal(t, len(before.Items), len(after.Items))
	for i, it := range after.Items {
		was := before.Items[i]
		require.Equal(t, was.Record, it.Record, "record of %s %s %s", it.Kind, it.Path, it.SourceRef)
		require.Equal(t, was.FirstSeen, it.FirstSeen, "first seen of %s %s %s", it.Kind, it.Path, it.SourceRef)
		require.Equal(t, was.Current, it.Current)
	}
	e.requireItem(after, "path", sog, "", s1, s3, true)
	e.requireItem(after, "path", depth, "", s1, s1, false)

	twin := e.build(3, inv2)
	low := e.build(2, inv2)
	for _, s := range []*envelope.Snapshot{twin, low} {
		e.deliverAll(messagesOf(t, s), envelope.Staged)
	}
	require.Equal(t, e.outcome(finalize.AlreadyActive, twin, s3), e.finalize(idOf(twin)))
	require.Equal(t, e.outcome(finalize.Superseded, low, s3), e.finalize(idOf(low)))
	e.requireActive(s1, s2, s3)
	require.Equal(t, after, e.active())
}

// Damaged: a set that claims the active document but whose staged bytes
// or digests changed after they were received, or whose manifest claims
// another record count or document digest than its chunks', is verified
// in full and rejected, the active
// catalog untouched; the same set undamaged then activates by identity.
func testIdentityDamaged(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	inv := baseInventory().withSensors("sensor", 150, "m")
	a := e.build(1, inv)
	e.activate(a)
	cases := []struct {
		name   string
		class  error
		damage func(s *finalize.Snapshot, chunks []finalize.StagedChunk)
	}{
		{"record bytes", sourcecatalog.ErrHashMismatch, func(_ *finalize.Snapshot, chunks []finalize.StagedChunk) {
			b := chunks[1].Canonical
			require.Contains(t, string(b), `"unit":"m"}`)
			chunks[1].Canonical = bytes.Replace(b, []byte(`"unit":"m"}`), []byte(`"unit":"ft"}`), 1)
		}},
		{"chunk digest", sourcecatalog.ErrHashMismatch, func(_ *finalize.Snapshot, chunks []finalize.StagedChunk) {
			chunks[2].Payload[0] ^= 1
		}},
		{"chunk and digest", sourcecatalog.ErrHashMismatch, func(s *finalize.Snapshot, chunks []finalize.StagedChunk) {
			// Other records with their own, consistent digest.
			records := canonicalRecords(a.Chunks[1].Records())
			k := slices.IndexFunc(records, func(r []byte) bool { return bytes.Contains(r, []byte(`"unit":"m"`)) })
			require.GreaterOrEqual(t, k, 0, "fixture: a record in metres")
			records[k] = bytes.Replace(records[k], []byte(`"unit":"m"`), []byte(`"unit":"ft"`), 1)
			c := rawChunk(e.vessel, s.ID, s.Revision, 1, records)
			s.StagedBytes += int64(len(c) - len(chunks[1].Canonical))
			chunks[1].Canonical, chunks[1].Payload = c, canonical.Sum(rawBody(records))
		}},
		{"chunk revision", sourcecatalog.ErrIntegrity, func(s *finalize.Snapshot, chunks []finalize.StagedChunk) {
			chunks[0].Canonical = rawChunk(e.vessel, s.ID, s.Revision+1, 0, canonicalRecords(a.Chunks[0].Records()))
		}},
		{"manifest digest", sourcecatalog.ErrHashMismatch, func(s *finalize.Snapshot, _ []finalize.StagedChunk) {
			s.ManifestDigest[0] ^= 1
		}},
		{"record count", sourcecatalog.ErrIntegrity, func(s *finalize.Snapshot, _ []finalize.StagedChunk) {
			restage(t, s, func(m *envelope.Manifest) { m.RecordCount-- })
		}},
		{"document digest", sourcecatalog.ErrHashMismatch, func(s *finalize.Snapshot, _ []finalize.StagedChunk) {
			restage(t, s, func(m *envelope.Manifest) { m.DocumentSHA256[0] ^= 1 })
		}},
	}
	for i, tc := range cases {
		s := e.build(int64(2+i), inv)
		require.Equal(t, a.Manifest.DocumentSHA256, s.Manifest.DocumentSHA256, "fixture: the active document")
		snap, chunks := stagedOf(t, s)
		tc.damage(&snap, chunks)
		e.stage(snap, chunks)
		out, err := e.r.Finalize(e.ctx, e.vessel, idOf(s))
		require.NoError(t, err, tc.name)
		require.Equal(t, finalize.Rejected, out.Status, tc.name)
		require.ErrorIs(t, out.Err, tc.class, tc.name)
		e.requireActive(a)
	}
	s := e.build(int64(2+len(cases)), inv)
	snap, chunks := stagedOf(t, s)
	e.stage(snap, chunks)
	require.Equal(t, e.outcome(finalize.Activated, s, s), e.finalize(idOf(s)))
	e.requireActive(a, s)
}

// restage replaces s's manifest with one changed by change, staged as
// receiving it would have staged it.
func restage(t *testing.T, s *finalize.Snapshot, change func(*envelope.Manifest)) {
	m, err := envelope.DecodeManifest(s.Manifest)
	require.NoError(t, err)
	change(&m)
	s.StagedBytes -= int64(len(s.Manifest))
	s.Manifest = m.Canonical()
	s.ManifestDigest, s.RecordCount = canonical.Sum(s.Manifest), m.RecordCount
	s.StagedBytes += int64(len(s.Manifest))
}

// stagedOf returns what receiving every message of s stages.
func stagedOf(t *testing.T, s *envelope.Snapshot) (finalize.Snapshot, []finalize.StagedChunk) {
	msgs := messagesOf(t, s)
	snap := finalize.Snapshot{
		ID: idOf(s), Revision: s.Manifest.Revision, State: finalize.StateStaging,
		Manifest: msgs[0].raw, ManifestDigest: canonical.Sum(msgs[0].raw),
		ChunkCount: len(s.Chunks), RecordCount: s.Manifest.RecordCount,
		ChunksStaged: len(s.Chunks), StagedBytes: stagedBytes(msgs),
	}
	var chunks []finalize.StagedChunk
	for _, c := range s.Chunks {
		chunks = append(chunks, finalize.StagedChunk{Snapshot: idOf(s), Index: c.Index(), Canonical: bytes.Clone(c.Canonical()), Payload: c.PayloadSHA256()})
	}
	return snap, chunks
}

// ActiveChunksOtherSet: chunks the receiver verified before, each with
// the payload digest of a chunk of the active snapshot, do not make a
// valid set together: another set of them is verified in full, and one
// that claims the active document, record count and chunk count with its
// chunks in another order is rejected too.
func testIdentityActiveChunksOtherSet(t *testing.T, newStore NewStore) {
	setup := func(t *testing.T) (*env, *envelope.Snapshot) {
		e := newEnv(t, newStore)
		a := e.build(1, baseInventory().withSensors("sensor", 150, "m"))
		require.Greater(t, len(a.Chunks), 2, "fixture: chunks to reorder")
		e.activate(a)
		return e, a
	}
	t.Run("chunk twice", func(t *testing.T) {
		e, a := setup(t)
		cuts := chunkRecords(a)
		cuts[1] = cuts[0]
		set := newHandSet(e.vessel, e.ids.next(), 2, e.next(), cuts)
		e.requireRejected(set.messages(t), sourcecatalog.ErrIntegrity, a)
	})
	t.Run("claims the active document", func(t *testing.T) {
		e, a := setup(t)
		cuts := chunkRecords(a)
		cuts[0], cuts[1] = cuts[1], cuts[0]
		set := newHandSet(e.vessel, e.ids.next(), 2, e.next(), cuts)
		set.manifest.DocumentSHA256 = a.Manifest.DocumentSHA256
		require.Equal(t, a.Manifest.RecordCount, set.manifest.RecordCount)
		e.requireRejected(set.messages(t), sourcecatalog.ErrHashMismatch, a)
	})
}

// chunkRecords returns the canonical records of each chunk of s.
func chunkRecords(s *envelope.Snapshot) [][][]byte {
	var cuts [][][]byte
	for _, c := range s.Chunks {
		cuts = append(cuts, slices.Clone(canonicalRecords(c.Records())))
	}
	return cuts
}

// StoreFailure: a store failure at any operation of a Finalize that
// verifies by identity — reading the active snapshot's chunks included —
// is the call's error, and changes nothing; the next call activates.
func testIdentityStoreFailure(t *testing.T, newStore NewStore) {
	fs := NewFaultStore(newStore(t))
	e := envOn(t, fs)
	inv := baseInventory().withSensors("sensor", 150, "m")
	a, b := e.build(1, inv), e.build(2, inv)
	e.activate(a)
	e.deliverAll(messagesOf(t, b), envelope.Staged)
	for n := 1; ; n++ {
		before, _ := fs.Counts()
		fs.Inject(FailOp, before+n)
		out, err := e.r.Finalize(e.ctx, e.vessel, idOf(b))
		fired := fs.Fired()
		fs.Inject(NoFault, 0)
		if !fired {
			require.NoError(t, err)
			require.Equal(t, e.outcome(finalize.Activated, b, b), e.sansUsage(out))
			require.Greater(t, n, 3, "fixture: operations failed")
			break
		}
		require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable, "operation %d", n)
		require.ErrorIs(t, err, ErrInjected, "operation %d", n)
		require.Zero(t, out, "operation %d", n)
		e.requireActive(a)
	}
	e.requireActive(a, b)
}
