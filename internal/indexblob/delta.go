package indexblob

import (
	"errors"
	"slices"
	"sync"

	"github.com/yachtmemory/sourcecatalog/finalize"
)

// A store may keep the index as a base value and a delta: the entries that
// are new or changed since the base, and the keys that left it. Delta makes
// the delta, Apply applies it, and a Cache keeps decoded values under a
// random stamp that the store writes with them, so that a transaction
// finding the same stamp uses them without reading the value again.

// ErrDelta is returned by Apply for a delta that does not apply to its
// base: a deletion of a key the base lacks.
var ErrDelta = errors.New("record index delta does not apply to its base")

// Delta returns the difference of index from base, both in strictly
// increasing canonical order: the entries of index that base lacks or has
// with another digest, and the entries of base whose keys index lacks
// (with zero digests).
func Delta(base, index []finalize.IndexEntry) (puts, dels []finalize.IndexEntry) {
	i, k := 0, 0
	for i < len(base) || k < len(index) {
		d := 0
		switch {
		case i >= len(base):
			d = 1
		case k >= len(index):
			d = -1
		default:
			d = base[i].Key.Compare(index[k].Key)
		}
		switch {
		case d < 0:
			dels = append(dels, finalize.IndexEntry{Key: base[i].Key})
			i++
		case d > 0:
			puts = append(puts, index[k])
			k++
		default:
			if base[i].Digest != index[k].Digest {
				puts = append(puts, index[k])
			}
			i++
			k++
		}
	}
	return puts, dels
}

// Apply returns, in a new slice, base with puts put and the keys of dels
// deleted: the inverse of Delta. puts and dels are in strictly increasing
// canonical order; it refuses a deletion of a key base lacks (ErrDelta).
func Apply(base, puts, dels []finalize.IndexEntry) ([]finalize.IndexEntry, error) {
	out := make([]finalize.IndexEntry, 0, len(base)+len(puts))
	p, x := 0, 0
	for _, e := range base {
		for p < len(puts) && puts[p].Key.Compare(e.Key) < 0 {
			out = append(out, puts[p])
			p++
		}
		if x < len(dels) && dels[x].Key == e.Key {
			x++
			continue
		}
		if p < len(puts) && puts[p].Key == e.Key {
			out = append(out, puts[p])
			p++
			continue
		}
		out = append(out, e)
	}
	out = append(out, puts[p:]...)
	if x != len(dels) {
		return nil, ErrDelta
	}
	return out, nil
}

// InOrder reports whether index is in strictly increasing canonical order.
func InOrder(index []finalize.IndexEntry) bool {
	for i := 1; i < len(index); i++ {
		if index[i-1].Key.Compare(index[i].Key) >= 0 {
			return false
		}
	}
	return true
}

// Canonical returns index in strictly increasing canonical order: as
// given when it already is (the Receiver's case), otherwise a sorted copy
// in which the last of the entries with the same key wins.
func Canonical(index []finalize.IndexEntry) []finalize.IndexEntry {
	if InOrder(index) {
		return index
	}
	out := slices.Clone(index)
	slices.SortStableFunc(out, func(a, b finalize.IndexEntry) int { return a.Key.Compare(b.Key) })
	n := 0
	for i := range out {
		if n > 0 && out[n-1].Key == out[i].Key {
			n--
		}
		out[n] = out[i]
		n++
	}
	return out[:n]
}

// A Cache keeps decoded values of the vessels most recently used, within
// bounds, keyed by vessel and stamp: one value of type V per vessel. Its
// values are shared and never modified. The zero Cache keeps nothing; use
// NewCache. It is safe for concurrent use.
type Cache[V any] struct {
	vessels, entries int
	mu               sync.Mutex
	cached           []cached[V] // most recently used last
}

type cached[V any] struct {
	vessel  string
	stamp   int64
	entries int
	value   V
}

// NewCache returns a Cache of at most vessels values and entries index
// entries in all (an entry decoded takes about 100 bytes).
func NewCache[V any](vessels, entries int) *Cache[V] {
	return &Cache[V]{vessels: vessels, entries: entries}
}

// Get returns the vessel's value of the given stamp, if kept.
func (c *Cache[V]) Get(vessel []byte, stamp int64) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	for i, e := range c.cached {
		if e.vessel == string(vessel) {
			if e.stamp != stamp {
				return zero, false
			}
			c.cached = append(append(c.cached[:i:i], c.cached[i+1:]...), e)
			return e.value, true
		}
	}
	return zero, false
}

// Has reports whether a value of the vessel is kept, of any stamp.
func (c *Cache[V]) Has(vessel []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.ContainsFunc(c.cached, func(e cached[V]) bool { return e.vessel == string(vessel) })
}

// Put keeps value, of the given number of index entries, as the vessel's
// value of stamp, in place of any other of the vessel: a value that was
// committed under stamp, or read in a transaction that found stamp. A value
// of more entries than the Cache holds is not kept.
func (c *Cache[V]) Put(vessel []byte, stamp int64, entries int, value V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cached = slices.DeleteFunc(c.cached, func(e cached[V]) bool { return e.vessel == string(vessel) })
	if entries > c.entries {
		return
	}
	c.cached = append(c.cached, cached[V]{vessel: string(vessel), stamp: stamp, entries: entries, value: value})
	total := 0
	for _, e := range c.cached {
		total += e.entries
	}
	for len(c.cached) > c.vessels || total > c.entries {
		total -= c.cached[0].entries
		c.cached = slices.Delete(c.cached, 0, 1)
	}
}
