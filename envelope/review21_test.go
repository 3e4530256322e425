package envelope

import (
	"bytes"
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
)

// fullChunkRecords returns 100 records whose canonical body is exactly
// MaxChunkBody bytes: a chunk at both record limits at once.
func fullChunkRecords(t *testing.T) []*catalog.Record {
	t.Helper()
	pad := 1
	meta := func(i int) string {
		if i == 48 {
			return metaJSON(strings.Repeat("y", pad))
		}
		return metaJSON("y")
	}
	recs := makeCatalog(t, 49, 2, meta)
	require.Len(t, recs, 100)
	pad += sourcecatalog.MaxChunkBody - bodyLen(recs)
	require.Greater(t, pad, 1, "fixture")
	recs = makeCatalog(t, 49, 2, meta)
	require.Equal(t, sourcecatalog.MaxChunkBody, bodyLen(recs), "fixture: the body at its limit")
	return recs
}

// A reference to a chunk held at both limits — 100 records, a body of
// exactly 16,384 bytes — resolves, at a revision with one digit more, to
// the chunk that revision builds, byte for byte; its wrapped request is
// exactly that whole chunk's (SPEC.md §6.6, §7.2).
func TestReview21ResolveAtTheLimits(t *testing.T) {
	recs := fullChunkRecords(t)
	in := input(recs)
	in.Revision = 9
	held := mustBuild(t, in)
	in.SnapshotID, in.Revision = testSnapshot2, 10
	later := mustBuild(t, in)
	require.Len(t, held.Chunks, 1)
	require.Len(t, later.Chunks, 1)
	require.Equal(t, 100, later.Chunks[0].Len())
	require.Equal(t, held.Chunks[0].PayloadSHA256(), later.Chunks[0].PayloadSHA256())
	got, err := NewChunkRef(later.Chunks[0]).Resolve(held.Chunks[0].Canonical())
	require.NoError(t, err)
	assert.Equal(t, string(later.Chunks[0].Canonical()), string(got.Canonical()))
	assert.Equal(t, sourcecatalog.MaxChunkBody, got.BodyLen())
	assert.Equal(t, wrappedLen(t, DefaultWrapper{}, later.Chunks[0]), wrappedLen(t, DefaultWrapper{}, got))
	assert.Equal(t, wrappedLen(t, DefaultWrapper{}, held.Chunks[0])+1, wrappedLen(t, DefaultWrapper{}, got), "one digit more of revision")
}

// Held bytes whose records' body is over MaxChunkBody are no chunk's
// canonical bytes, whatever their digest: hash_mismatch, no chunk, even
// when the reference names the digest of exactly that body (SPEC.md
// §6.6: stored bytes are never trusted).
func TestReview21ResolveRefusesAnOversizedHeldBody(t *testing.T) {
	recs := fullChunkRecords(t)
	held := mustBuild(t, input(recs)).Chunks[0]
	for _, extra := range []int{1, len(bodyOpen) + len(bodyClose)} {
		stored := bytes.Replace(held.Canonical(), []byte(`"d":"y`), []byte(`"d":"`+strings.Repeat("y", extra+1)), 1)
		from := bytes.Index(stored, []byte(`"records":[`)) + len(`"records":[`)
		records := stored[from:bytes.LastIndex(stored, []byte(`],"revision":`))]
		h := sha256.New()
		h.Write([]byte(bodyOpen))
		h.Write(records)
		h.Write([]byte(bodyClose))
		var sum canonical.Digest
		h.Sum(sum[:0])
		require.Equal(t, sourcecatalog.MaxChunkBody+extra, len(bodyOpen)+len(records)+len(bodyClose), "fixture")
		ref := *NewChunkRef(held)
		ref.payload = sum
		got, err := ref.Resolve(stored)
		assert.True(t, got == nil, "a body of %d bytes over the limit: no chunk", extra)
		requireOne(t, err, at(sourcecatalog.ErrHashMismatch, 0, -1, "payload_sha256"))
	}
}
