package canonical_test

import (
	"testing"
	"time"
	"unsafe"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
)

// TestIsCanonicalEncoderOutput checks that the fast check accepts what
// this module's own encoders write: records, chunks and manifests of the
// example boat and of a scaled catalog; and that DecodeChunk, which decodes
// the one canonical copy it makes, keeps each record as a part of it.
func TestIsCanonicalEncoderOutput(t *testing.T) {
	boat, err := examples.BoatSnapshot()
	require.NoError(t, err)
	scaled, err := envelope.Build(envelope.Input{
		VesselID:     uuid.MustParse("0d1f3c5e-2a4b-4c6d-8e0f-1a2b3c4d5e6f"),
		SnapshotID:   uuid.MustParse("6f1c2d3e-4a5b-4c6d-9e8f-0a1b2c3d4e5f"),
		Revision:     42,
		DiscoveredAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC),
		Records:      examples.Scaled(3000),
	})
	require.NoError(t, err)
	for _, s := range []*envelope.Snapshot{boat, scaled} {
		require.True(t, canonical.IsCanonical(s.Manifest.Canonical()), "manifest")
		for _, c := range s.Chunks {
			require.True(t, canonical.IsCanonical(c.Canonical()), "chunk %d", c.Index())
			for _, r := range c.Records() {
				require.True(t, canonical.IsCanonical(r.Canonical()), "record %s", r.Canonical())
			}
			d, err := envelope.DecodeChunk(c.Canonical())
			require.NoError(t, err)
			require.Equal(t, c.Canonical(), d.Canonical())
			for _, r := range d.Records() {
				require.True(t, within(r.Canonical(), d.Canonical()), "chunk %d: a record outside the chunk's bytes", c.Index())
			}
			records, err := catalog.DecodeList(body(c))
			require.NoError(t, err)
			require.Len(t, records, len(c.Records()))
		}
	}
}

// body returns the chunk's records array.
func body(c *envelope.Chunk) []byte {
	b := []byte{'['}
	for i, r := range c.Records() {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, r.Canonical()...)
	}
	return append(b, ']')
}

func within(part, whole []byte) bool {
	p, w := uintptr(unsafe.Pointer(unsafe.SliceData(part))), uintptr(unsafe.Pointer(unsafe.SliceData(whole)))
	return p >= w && p+uintptr(len(part)) <= w+uintptr(len(whole))
}
