package indexblob

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

func TestIndexRoundTrip(t *testing.T) {
	index := []finalize.IndexEntry{
		{Key: catalog.Key{Kind: catalog.KindPath, Path: "electrical.batteries.house.voltage"}, Digest: [32]byte{1}},
		{Key: catalog.Key{Kind: catalog.KindPath, Path: "electrical.batteries.house.current"}, Digest: [32]byte{2}},
		{Key: catalog.Key{Kind: catalog.KindPath, Path: "electrical.batteries.house"}, Digest: [32]byte{3}},
		{Key: catalog.Key{Kind: catalog.KindSource, SourceRef: "can0.c0788c00e7e04312"}, Digest: [32]byte{4}},
		{Key: catalog.Key{Kind: catalog.KindObservation, Path: "électrique.😀", SourceRef: "can0.c0788c00e7e04312"}, Digest: [32]byte{5}},
	}
	blob := Encode(index)
	got, err := Decode(blob)
	require.NoError(t, err)
	assert.Equal(t, index, got)

	empty, err := Decode(Encode(nil))
	require.NoError(t, err)
	assert.Empty(t, empty)

	for cut := range len(blob) {
		_, err := Decode(blob[:cut])
		assert.ErrorIs(t, err, ErrCorrupt, "truncated at %d", cut)
	}
	_, err = Decode(append(blob, 0))
	assert.ErrorIs(t, err, ErrCorrupt, "trailing byte")
}
