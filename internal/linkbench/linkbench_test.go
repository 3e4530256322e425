package linkbench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/internal/linksim"
)

// boats are the two boats of the benchmark: the typical one, 15 chunks,
// and the example boat.
var boats = []struct {
	name string
	recs func() []*catalog.Record
}{{"typical", func() []*catalog.Record { return examples.Scaled(1500) }}, {"example", examples.Boat}}

// The benchmark's cycles over a short link: each activates its snapshot
// on the receiver (Cycles checks), with the requests the protocol needs.
func TestCycles(t *testing.T) {
	ctx := context.Background()
	r, err := Start(ctx, t.TempDir(), linksim.Profile{Delay: 5 * time.Millisecond, Up: 4 << 20, Down: 4 << 20})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	for _, boat := range boats {
		for _, cold := range []bool{true, false} {
			name := boat.name + "/warm"
			if cold {
				name = boat.name + "/cold"
			}
			t.Run(name, func(t *testing.T) {
				cycles, err := r.Cycles(ctx, boat.recs(), cold)
				require.NoError(t, err)
				require.Len(t, cycles, 3)
				gets := 0
				if cold {
					gets = 1 // a new process reads the declaration (SPEC.md §11.7)
				}
				for _, c := range cycles {
					require.Equal(t, gets, c.GETs, "%s: declaration reads", c.Name)
					require.Equal(t, c.Report.Sent+c.GETs, c.Requests, "%s: every request counted, and only the publish's", c.Name)
					require.Positive(t, c.Up, c.Name)
					require.Positive(t, c.Down, c.Name)
					require.Positive(t, c.Floor, c.Name)
				}
				first, identical, changed := cycles[0], cycles[1], cycles[2]
				require.Equal(t, []string{First, Identical, Changed}, []string{first.Name, identical.Name, changed.Name})
				// The first: an index, then every chunk.
				require.Equal(t, first.Report.Delivered, first.Report.Sent, "first: nothing was staged before")
				require.Zero(t, first.Report.Indexed)
				// Identical: the index alone, and the declaration when cold.
				require.LessOrEqual(t, identical.Requests, 2, "identical: requests")
				require.Equal(t, 1, identical.Report.Sent, "identical: the index alone")
				// 1 % changed: the index, then the chunks it names missing.
				require.Greater(t, changed.Report.Sent, 1, "changed: a chunk at least")
				require.Less(t, changed.Report.Sent, first.Report.Sent, "changed: fewer than all")
				require.Positive(t, changed.Report.Indexed, "changed: chunks staged by the index")
			})
		}
	}
}
