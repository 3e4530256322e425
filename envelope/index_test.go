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

func payloadsOf(s *Snapshot) []canonical.Digest {
	var ds []canonical.Digest
	for _, c := range s.Chunks {
		ds = append(ds, c.PayloadSHA256())
	}
	return ds
}

// TestManifestIndexRoundTrip: an index is the manifest's canonical bytes
// with payload_sha256s before protocol, and decodes again to itself.
func TestManifestIndexRoundTrip(t *testing.T) {
	s := mustBuild(t, input(makeCatalog(t, 150, 3, nil)))
	x, err := NewManifestIndex(s.Manifest, payloadsOf(s))
	require.NoError(t, err)
	out, err := canonical.Transform(x.Canonical())
	require.NoError(t, err)
	assert.Equal(t, string(out), string(x.Canonical()), "canonical")
	var o map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(x.Canonical(), &o))
	delete(o, "payload_sha256s")
	b, _ := json.Marshal(o)
	m, err := canonical.Transform(b)
	require.NoError(t, err)
	assert.Equal(t, string(s.Manifest.Canonical()), string(m), "the manifest's members")
	again, err := DecodeManifestIndex(x.Canonical())
	require.NoError(t, err)
	assert.Equal(t, x, again)
	assert.Equal(t, s.Manifest, again.Manifest())
	for i, c := range s.Chunks {
		assert.Equal(t, c.PayloadSHA256(), again.PayloadSHA256(i))
	}
}

// TestManifestIndexBound: an index of 256 chunks fits a request with the
// default wrapper (SPEC.md §6.7).
func TestManifestIndexBound(t *testing.T) {
	s := mustBuild(t, input(makeCatalog(t, 10, 2, nil)))
	m := s.Manifest
	m.ChunkCount, m.RecordCount, m.Revision = sourcecatalog.MaxChunks, sourcecatalog.MaxRecords, sourcecatalog.MaxRevision
	m.DiscoveredAt = m.DiscoveredAt.Add(123456789) // nanoseconds spelled out
	ds := make([]canonical.Digest, m.ChunkCount)
	x, err := NewManifestIndex(m, ds)
	require.NoError(t, err)
	q, _ := json.Marshal(string(x.Canonical()))
	wrapped := len(`{"entity_key":"`+m.SnapshotID.String()+`","entity_type":"`+sourcecatalog.ManifestIndexEntityType+`","payload":}`) + len(q)
	t.Logf("canonical %d bytes, wrapped %d", len(x.Canonical()), wrapped)
	assert.Less(t, len(x.Canonical()), 17700)
	assert.Less(t, wrapped, 18400)
	assert.Less(t, wrapped, sourcecatalog.MaxRequest)
}

// TestManifestIndexDecodeRefuses: the steps of SPEC.md §6.7.
func TestManifestIndexDecodeRefuses(t *testing.T) {
	s := mustBuild(t, input(makeCatalog(t, 150, 3, nil)))
	x, err := NewManifestIndex(s.Manifest, payloadsOf(s))
	require.NoError(t, err)
	good := string(x.Canonical())
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
	d := `"` + s.Chunks[0].PayloadSHA256().String() + `"`
	for _, tc := range []struct {
		name, text string
		want       where
	}{
		{"not JSON", good[:len(good)-1], at(sourcecatalog.ErrMalformedJSON, -1, -1, "")},
		{"absent", with("payload_sha256s", ""), at(sourcecatalog.ErrMissingField, -1, -1, "payload_sha256s")},
		{"records", with("records", "[]"), at(sourcecatalog.ErrUnknownField, -1, -1, "records")},
		{"not an array", with("payload_sha256s", d), at(sourcecatalog.ErrInvalidValue, -1, -1, "payload_sha256s")},
		{"too few", with("payload_sha256s", "["+d+"]"), at(sourcecatalog.ErrIntegrity, -1, -1, "payload_sha256s")},
		{"too many", with("payload_sha256s", "["+strings.Repeat(d+",", len(s.Chunks))+d+"]"), at(sourcecatalog.ErrIntegrity, -1, -1, "payload_sha256s")},
		{"upper hex", with("payload_sha256s", "["+d+","+strings.ToUpper(d)+"]"), at(sourcecatalog.ErrInvalidValue, 1, -1, "payload_sha256s")},
		{"null", with("payload_sha256s", "["+d+",null]"), at(sourcecatalog.ErrInvalidValue, 1, -1, "payload_sha256s")},
		{"over 256", with("payload_sha256s", "["+strings.Repeat(d+",", 256)+d+"]"), at(sourcecatalog.ErrLimitExceeded, -1, -1, "payload_sha256s")},
		{"protocol after", with("protocol", `"v1"`), at(sourcecatalog.ErrUnsupported, -1, -1, "protocol")},
		{"count first", with("chunk_count", `0`), at(sourcecatalog.ErrInvalidValue, -1, -1, "chunk_count")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeManifestIndex([]byte(tc.text))
			requireOne(t, err, tc.want)
		})
	}
	// Identical chunks have identical digests: a repeated digest is valid.
	same, err := DecodeManifestIndex([]byte(with("payload_sha256s", "["+strings.Repeat(d+",", len(s.Chunks)-1)+d+"]")))
	require.NoError(t, err)
	assert.Equal(t, same.PayloadSHA256(0), same.PayloadSHA256(1))
}

// TestIndexReceipt: missing_chunks is canonical, sorted and unique, and
// only a manifest index's receipt has it.
func TestIndexReceipt(t *testing.T) {
	s := mustBuild(t, input(makeCatalog(t, 10, 2, nil)))
	r := Receipt{EntityType: sourcecatalog.ManifestIndexEntityType, VesselID: s.Manifest.VesselID, SnapshotID: s.Manifest.SnapshotID,
		Revision: s.Manifest.Revision, ChunkIndex: sourcecatalog.NoIndex, Status: Staged}
	r.Missing.Add(7)
	r.Missing.Add(1)
	require.NoError(t, r.Check())
	text := string(r.Canonical())
	assert.Contains(t, text, `"entity_type":"signalk_catalog_manifest_index_v2","missing_chunks":[1,7],"protocol"`)
	back, err := DecodeReceipt(r.Canonical())
	require.NoError(t, err)
	assert.Equal(t, r, back)
	for _, tc := range []struct {
		name, from, to string
		want           where
	}{
		{"unsorted", `[1,7]`, `[7,1]`, at(sourcecatalog.ErrIntegrity, -1, -1, "missing_chunks")},
		{"repeated", `[1,7]`, `[1,1]`, at(sourcecatalog.ErrIntegrity, -1, -1, "missing_chunks")},
		{"out of range", `[1,7]`, `[1,256]`, at(sourcecatalog.ErrInvalidValue, -1, -1, "missing_chunks")},
		{"not an array", `[1,7]`, `1`, at(sourcecatalog.ErrInvalidValue, -1, -1, "missing_chunks")},
		{"absent", `"missing_chunks":[1,7],`, ``, at(sourcecatalog.ErrMissingField, -1, -1, "missing_chunks")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeReceipt([]byte(strings.Replace(text, tc.from, tc.to, 1)))
			requireOne(t, err, tc.want)
		})
	}
	m := r
	m.EntityType = sourcecatalog.ManifestEntityType
	requireOne(t, m.Check(), at(sourcecatalog.ErrUnknownField, -1, -1, "missing_chunks"))
	other := r
	other.Missing = ChunkSet{}
	other.Status = AlreadyReceived
	assert.True(t, r.Matches(other))
}
