package envelope

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
)

// DecodeStaged keeps entries instead of records and reads canonical input in
// place; otherwise it must decide exactly as DecodeSnapshot does.
func TestDecodeStagedAgreesWithDecodeSnapshot(t *testing.T) {
	sorted := makeCatalog(t, 150, 1, nil) // 301 records
	sets := map[string][]*Chunk{}
	manifests := map[string]Manifest{}
	add := func(name string, m Manifest, chunks []*Chunk) { sets[name], manifests[name] = chunks, m }
	hand := func(name string, recs []*catalog.Record, sizes ...int) {
		m, chunks := handSnapshot(t, recs, sizes...)
		add(name, m, chunks)
	}

	s := fiveChunks(t, input(makeCatalog(t, 200, 3, nil)))
	add("valid", s.Manifest, s.Chunks)
	add("valid, any order", s.Manifest, []*Chunk{s.Chunks[3], s.Chunks[0], s.Chunks[4], s.Chunks[2], s.Chunks[1]})
	add("valid, chunk 0 first", s.Manifest, []*Chunk{s.Chunks[0], s.Chunks[2], s.Chunks[1], s.Chunks[4], s.Chunks[3]})
	add("missing chunk", s.Manifest, s.Chunks[1:])
	swapped := slices.Clone(sorted)
	swapped[199], swapped[200] = swapped[200], swapped[199]
	hand("out of order across a boundary", swapped, 100, 100, 100, 1)
	dup := slices.Insert(slices.Clone(sorted), 100, sorted[99])
	hand("duplicate across chunks", dup, 100, 100, 100, 2)
	unknown := slices.Clone(sorted)
	unknown[250] = mkObs(t, unknown[250].PathName(), "can0.zzz")
	hand("observation of an unknown source", unknown, 100, 100, 100, 1)

	hand("more than 100 records in a chunk", sorted, 101, 100, 100)

	for name, chunks := range sets {
		t.Run(name, func(t *testing.T) {
			man := manifests[name]
			m := man.Canonical()
			raw := make([][]byte, len(chunks))
			for i, c := range chunks {
				raw[i] = c.Canonical()
			}
			want, werr := DecodeSnapshot(m, raw)
			got, gerr := DecodeStaged(m, raw)
			require.Equal(t, werr, gerr)
			require.Equal(t, strings.HasPrefix(name, "valid"), werr == nil, "%v", werr)
			if werr != nil {
				return
			}
			require.Equal(t, want.Manifest, got.Manifest)
			require.Len(t, got.Chunks, len(want.Chunks))
			for i, c := range got.Chunks {
				assert.Equal(t, want.Chunks[i].Canonical(), c.Canonical())
				pos := slices.IndexFunc(chunks, func(x *Chunk) bool { return x.Index() == i })
				assert.Same(t, &raw[pos][0], &c.Canonical()[0], "canonical input is read in place")
				require.Equal(t, len(want.Chunks[i].Records()), c.Len())
				for k, r := range want.Chunks[i].Records() {
					e := c.Entry(k)
					assert.Equal(t, r.Key(), e.Key)
					assert.Equal(t, r.Canonical(), e.Canonical)
				}
				assert.Equal(t, want.Chunks[i].Records(), c.Records(), "records materialise on demand")
			}
		})
	}

	t.Run("indented input is copied", func(t *testing.T) {
		raw := make([][]byte, len(s.Chunks))
		for i, c := range s.Chunks {
			raw[i] = append([]byte(" "), c.Canonical()...)
		}
		got, err := DecodeStaged(s.Manifest.Canonical(), raw)
		require.NoError(t, err)
		for i, c := range got.Chunks {
			assert.Equal(t, s.Chunks[i].Canonical(), c.Canonical())
			assert.Equal(t, canonical.Sum(s.Chunks[i].Canonical()), canonical.Sum(raw[i][1:]))
			assert.NotSame(t, &raw[i][1], &c.Canonical()[0])
		}
	})
}
