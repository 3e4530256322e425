package inventory

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

// A page stops where its records would pass MaxPageBytes, after at least
// one item, whatever the limit.
func TestPageBytes(t *testing.T) {
	big := func(n int) []byte { return append(append([]byte(`"`), bytes.Repeat([]byte("x"), n-2)...), '"') }
	c := finalize.Catalog{VesselID: uuid.New(), SnapshotID: uuid.New()}
	for i, size := range []int{MaxPageBytes / 3, MaxPageBytes / 3, MaxPageBytes / 3, MaxPageBytes + 10, 10} {
		c.Items = append(c.Items, finalize.Item{Key: catalog.Key{Kind: catalog.KindPath, Path: fmt.Sprintf("p%d", i)}, Record: big(size)})
	}
	var sizes []int
	var after *cursor
	for {
		p := pageOf(c, after, MaxPageItems)
		sizes = append(sizes, len(p.Items))
		require.Less(t, len(sizes), 10, "the pages end: %v", sizes)
		if p.NextCursor == "" {
			break
		}
		var err error
		after, err = decodeCursor([]string{p.NextCursor})
		require.NoError(t, err)
	}
	require.Equal(t, []int{3, 1, 1}, sizes, "three thirds; one item over the bound alone; the rest")
}
