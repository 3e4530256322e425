package envelope

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
)

// TestChunkRefRoundTrip: a chunk's reference has the chunk's members but
// its records, in canonical bytes, and decodes again to itself.
func TestChunkRefRoundTrip(t *testing.T) {
	s := mustBuild(t, input(makeCatalog(t, 150, 3, nil)))
	for _, c := range s.Chunks {
		r := NewChunkRef(c)
		assert.Equal(t, c.VesselID(), r.VesselID())
		assert.Equal(t, c.SnapshotID(), r.SnapshotID())
		assert.Equal(t, c.Revision(), r.Revision())
		assert.Equal(t, c.Index(), r.Index())
		assert.Equal(t, c.PayloadSHA256(), r.PayloadSHA256())
		want := strings.Replace(string(c.Canonical()), string(c.canon[c.recStart-len(`,"records":[`):c.recEnd+1]), "", 1)
		assert.Equal(t, want, string(r.Canonical()), "the chunk's canonical bytes without the records member")
		again, err := DecodeChunkRef(r.Canonical())
		require.NoError(t, err)
		assert.Equal(t, r, again)
		out, err := canonical.Transform(r.Canonical())
		require.NoError(t, err)
		assert.Equal(t, string(out), string(r.Canonical()), "canonical")
	}
}

// TestChunkRefDecodeRefuses: the steps of SPEC.md §6.1 and the value
// checks of §6.3, located at the chunk once chunk_index is read.
func TestChunkRefDecodeRefuses(t *testing.T) {
	s := mustBuild(t, input(makeCatalog(t, 10, 2, nil)))
	good := string(NewChunkRef(s.Chunks[0]).Canonical())
	with := func(member, value string) string {
		var o map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(good), &o))
		if value == "" {
			delete(o, member)
		} else {
			o[member] = json.RawMessage(value)
		}
		b, err := json.Marshal(o)
		require.NoError(t, err)
		return string(b)
	}
	for _, tc := range []struct {
		name, text string
		want       where
	}{
		{"not JSON", good[:len(good)-1], at(sourcecatalog.ErrMalformedJSON, -1, -1, "")},
		{"not an object", `[1]`, at(sourcecatalog.ErrInvalidValue, -1, -1, "")},
		{"records present", with("records", "[]"), at(sourcecatalog.ErrUnknownField, -1, -1, "records")},
		{"record_count is no member", with("record_count", "1"), at(sourcecatalog.ErrUnknownField, -1, -1, "record_count")},
		{"payload missing", with("payload_sha256", ""), at(sourcecatalog.ErrMissingField, -1, -1, "payload_sha256")},
		{"index 256", with("chunk_index", "256"), at(sourcecatalog.ErrInvalidValue, -1, -1, "chunk_index")},
		{"payload not a digest", with("payload_sha256", `"ab"`), at(sourcecatalog.ErrInvalidValue, 0, -1, "payload_sha256")},
		{"another protocol", with("protocol", `"yachtmemory.source-catalog.v3"`), at(sourcecatalog.ErrUnsupported, 0, -1, "protocol")},
		{"revision 0", with("revision", "0"), at(sourcecatalog.ErrInvalidValue, 0, -1, "revision")},
		{"snapshot not v4", with("snapshot_id", `"8d3f2a61-4b7c-1e9d-a1f0-2c6b5e7d9a38"`), at(sourcecatalog.ErrInvalidValue, 0, -1, "snapshot_id")},
		{"vessel nil", with("vessel_id", `"00000000-0000-0000-0000-000000000000"`), at(sourcecatalog.ErrInvalidValue, 0, -1, "vessel_id")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := DecodeChunkRef([]byte(tc.text))
			assert.Nil(t, r)
			requireOne(t, err, tc.want)
		})
	}
}

// TestChunkRefResolve: a reference resolved against the bytes of an
// earlier snapshot's chunk with the same payload is byte for byte the
// chunk the later snapshot built; bytes of other records, or that do not
// decode, are a hash mismatch and no chunk.
func TestChunkRefResolve(t *testing.T) {
	recs := makeCatalog(t, 150, 3, nil)
	first := mustBuild(t, input(recs))
	in := input(recs)
	in.SnapshotID, in.Revision = testSnapshot2, 123456789
	second := mustBuild(t, in)
	require.Equal(t, len(first.Chunks), len(second.Chunks))
	for i, c := range second.Chunks {
		got, err := NewChunkRef(c).Resolve(first.Chunks[i].Canonical())
		require.NoError(t, err)
		assert.Equal(t, string(c.Canonical()), string(got.Canonical()), "chunk %d", i)
		assert.Equal(t, c.Len(), got.Len())
		assert.Equal(t, c.Entry(c.Len()-1), got.Entry(got.Len()-1))
		again, err := DecodeChunk(got.Canonical())
		require.NoError(t, err)
		assert.Equal(t, c.PayloadSHA256(), again.PayloadSHA256())
	}
	ref := NewChunkRef(second.Chunks[1])
	for name, stored := range map[string][]byte{
		"another chunk's bytes":    first.Chunks[0].Canonical(),
		"bytes that do not decode": first.Chunks[1].Canonical()[:50],
		"records edited, digest kept": []byte(strings.Replace(string(first.Chunks[1].Canonical()),
			"navigation.p", "navigation.q", 1)),
	} {
		t.Run(name, func(t *testing.T) {
			got, err := ref.Resolve(stored)
			assert.Nil(t, got)
			requireOne(t, err, at(sourcecatalog.ErrHashMismatch, 1, -1, "payload_sha256"))
		})
	}
}
