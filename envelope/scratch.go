package envelope

import (
	"sync"

	"github.com/yachtmemory/sourcecatalog/catalog"
)

// A buildScratch holds the arrays a Build needs only while it runs, one
// element per record. Builds reuse them through scratchPool: the maximal
// snapshot's take 2.4 MB, over half as much as its chunks, and allocating
// them anew each time would add as much to the garbage every Build leaves
// and so to the work of the collector, which marks the whole live heap
// each cycle.
type buildScratch struct {
	sorted  []catalog.Key // in canonical order, for the integrity check
	entries []sortEntry
	tmp     []sortEntry
	canon   [][]byte
}

var scratchPool = sync.Pool{New: func() any { return new(buildScratch) }}

// getScratch returns scratch arrays of n elements each, their content
// unspecified: every user writes each element before reading it.
func getScratch(n int) *buildScratch {
	sc := scratchPool.Get().(*buildScratch)
	sc.sorted = resize(sc.sorted, n)
	sc.entries = resize(sc.entries, n)
	sc.tmp = resize(sc.tmp, n)
	sc.canon = resize(sc.canon, n)
	return sc
}

// put returns sc to the pool. It first clears the arrays that refer to
// records, so that the pool keeps none of a finished Build's records alive.
func (sc *buildScratch) put() {
	clear(sc.sorted)
	clear(sc.canon)
	scratchPool.Put(sc)
}

// resize returns s with length n, reallocated only when its capacity is
// short.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
