package indexblob

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

func entries(salt string, paths ...string) []finalize.IndexEntry {
	var out []finalize.IndexEntry
	for _, p := range paths {
		out = append(out, finalize.IndexEntry{Key: catalog.Key{Kind: catalog.KindPath, Path: p}, Digest: [32]byte{byte(len(salt))}})
	}
	return out
}

// Apply inverts Delta: base with the delta applied is the index again,
// whatever appears, changes or leaves; a deletion of a key the base lacks
// is refused.
func TestDeltaApply(t *testing.T) {
	base := entries("", "a", "b", "c", "d")
	for _, index := range [][]finalize.IndexEntry{
		base,
		nil,
		entries("", "0", "a", "b", "c", "d", "e"),
		append(entries("", "a"), append(entries("x", "b"), entries("", "d", "z")...)...),
	} {
		puts, dels := Delta(base, index)
		got, err := Apply(base, puts, dels)
		require.NoError(t, err)
		assert.Equal(t, len(index), len(got))
		if len(index) > 0 {
			assert.Equal(t, index, got)
		}
	}
	puts, dels := Delta(base, append(entries("", "a", "b"), entries("x", "c")...))
	assert.Equal(t, entries("x", "c"), puts, "only the changed entry is put")
	assert.Equal(t, []finalize.IndexEntry{{Key: catalog.Key{Kind: catalog.KindPath, Path: "d"}}}, dels)
	_, err := Apply(base, nil, []finalize.IndexEntry{{Key: catalog.Key{Kind: catalog.KindPath, Path: "zz"}}})
	assert.ErrorIs(t, err, ErrDelta)
}

func TestCanonical(t *testing.T) {
	in := entries("", "b", "a", "c")
	in = append(in, entries("last", "a")...)
	got := Canonical(in)
	assert.True(t, InOrder(got))
	assert.Equal(t, append(entries("last", "a"), entries("", "b", "c")...), got, "the last entry of a key wins")
	sorted := entries("", "a", "b")
	assert.Same(t, &sorted[0], &Canonical(sorted)[0], "an index in order is returned as given")
}

// A Cache returns a vessel's value only under the stamp it was put with,
// keeps one value per vessel, and keeps within its bounds, dropping the
// least recently used first.
func TestCache(t *testing.T) {
	c := NewCache[string](2, 10)
	v := func(i int) []byte { return fmt.Appendf(nil, "vessel %d", i) }
	c.Put(v(1), 7, 4, "one")
	got, ok := c.Get(v(1), 7)
	assert.True(t, ok)
	assert.Equal(t, "one", got)
	_, ok = c.Get(v(1), 8)
	assert.False(t, ok, "another stamp")
	c.Put(v(1), 8, 4, "one again")
	_, ok = c.Get(v(1), 7)
	assert.False(t, ok, "one value per vessel")
	c.Put(v(2), 1, 4, "two")
	c.Get(v(1), 8) // 1 is now the most recently used
	c.Put(v(3), 1, 4, "three")
	assert.False(t, c.Has(v(2)), "beyond two vessels the least recently used goes")
	assert.True(t, c.Has(v(1)) && c.Has(v(3)))
	c.Put(v(4), 1, 8, "four")
	assert.Equal(t, []bool{false, false, true}, []bool{c.Has(v(1)), c.Has(v(3)), c.Has(v(4))}, "within the entries bound")
	c.Put(v(5), 1, 11, "five")
	assert.False(t, c.Has(v(5)), "a value beyond the bound is not kept")
	assert.True(t, c.Has(v(4)))
}
