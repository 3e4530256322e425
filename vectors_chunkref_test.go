package sourcecatalog_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/envelope"
)

// runChunkRef runs a chunkref vector (SPEC.md §6.6): the reference decodes
// to its canonical bytes, and again to itself.
func runChunkRef(t *testing.T, g *golden) {
	r, err := envelope.DecodeChunkRef(g.payload)
	if !g.ok {
		checkError(t, g, err)
		checkTransformAgrees(t, g)
		return
	}
	require.NoError(t, err)
	checkCanonical(t, g, r.Canonical())
	assert.Equal(t, g.fields["chunk-index"], strconv.Itoa(r.Index()), "chunk-index")
	assert.Equal(t, g.fields["payload-sha256"], r.PayloadSHA256().String(), "payload-sha256")
	again := checkReencodes(t, g, "reference", r.Canonical(), envelope.DecodeChunkRef)
	assert.Equal(t, r, again)
}

// runResolve runs a resolve vector (SPEC.md §6.6): the payload is
// {"reference":REF,"stored":CHUNK}, the stored chunk in canonical bytes
// as a receiver holds it; the staged chunk is the whole chunk, which
// decodes as one.
func runResolve(t *testing.T, g *golden) {
	v, err := canonical.Parse(g.payload)
	require.NoError(t, err, "a resolve payload is strict JSON")
	mems := v.Members()
	require.Len(t, mems, 2, `a resolve payload is {"reference":{...},"stored":{...}}`)
	require.Equal(t, "reference", mems[0].Name)
	require.Equal(t, "stored", mems[1].Name)
	r, err := envelope.DecodeChunkRef(mems[0].Value.AppendCanonical(nil))
	require.NoError(t, err, "the reference of a resolve vector decodes")
	c, err := r.Resolve(mems[1].Value.AppendCanonical(nil))
	if !g.ok {
		assert.Nil(t, c)
		checkError(t, g, err)
		return
	}
	require.NoError(t, err)
	checkCanonical(t, g, c.Canonical())
	assert.Equal(t, g.fields["record-count"], strconv.Itoa(len(c.Records())), "record-count")
	assert.Equal(t, g.fields["payload-sha256"], c.PayloadSHA256().String(), "payload-sha256")
	whole, err := envelope.DecodeChunk(c.Canonical())
	require.NoError(t, err, "the staged chunk decodes as a chunk")
	assert.Equal(t, r.PayloadSHA256(), whole.PayloadSHA256())
	assert.Equal(t, r.Index(), whole.Index())
	assert.Equal(t, r.SnapshotID(), whole.SnapshotID())
	assert.Equal(t, r.Revision(), whole.Revision())
	assert.Equal(t, r.VesselID(), whole.VesselID())
}

// runIndex runs an index vector (SPEC.md §6.7): the index decodes to its
// canonical bytes and again to itself, and carries the manifest it
// stages, whose canonical bytes are the index's but payload_sha256s.
func runIndex(t *testing.T, g *golden) {
	x, err := envelope.DecodeManifestIndex(g.payload)
	if !g.ok {
		checkError(t, g, err)
		checkTransformAgrees(t, g)
		return
	}
	require.NoError(t, err)
	checkCanonical(t, g, x.Canonical())
	m := x.Manifest()
	assert.Equal(t, g.fields["chunk-count"], strconv.Itoa(m.ChunkCount), "chunk-count")
	assert.Equal(t, g.fields["record-count"], strconv.Itoa(m.RecordCount), "record-count")
	assert.Equal(t, g.fields["document-sha256"], m.DocumentSHA256.String(), "document-sha256")
	var ds []string
	for i := range m.ChunkCount {
		ds = append(ds, x.PayloadSHA256(i).String())
	}
	assert.Equal(t, g.fields["payload-sha256"], strings.Join(ds, ","), "payload-sha256")
	assert.Equal(t, g.fields["manifest-sha256"], canonical.Sum(m.Canonical()).String(), "manifest-sha256")
	again := checkReencodes(t, g, "index", x.Canonical(), envelope.DecodeManifestIndex)
	assert.Equal(t, x, again)
	same, err := envelope.NewManifestIndex(m, func() []canonical.Digest {
		out := make([]canonical.Digest, m.ChunkCount)
		for i := range out {
			out[i] = x.PayloadSHA256(i)
		}
		return out
	}())
	require.NoError(t, err)
	assert.Equal(t, string(x.Canonical()), string(same.Canonical()), "NewManifestIndex builds the same bytes")
}
