package memstore

import (
	"context"
	"slices"
	"strings"

	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

// The inventory is kept as entries sorted by key, one per key: the
// Receiver writes an activation's items in canonical order, so a
// transaction's writes merge into the committed inventory in one pass,
// and a first activation's batch becomes the inventory as it is, without
// hashing a key.

// entry is an inventory item with its key.
type entry struct {
	key catalog.Key
	item
}

// item is an inventory item without its key. The rest of the item is
// shared: the items an activation writes all point to one sighting (see
// tx.intern).
type item struct {
	record []byte
	*sighting
}

// A sighting is what an item holds besides its key and record. It is
// never modified once an item points to it.
type sighting struct {
	firstSeen, lastSeen finalize.Seen
	current             bool
}

func (e *entry) finalizeItem() finalize.Item {
	return finalize.Item{Key: e.key, Record: e.record, FirstSeen: e.firstSeen, CurrentlyObserved: e.current, LastSeen: e.lastSeen}
}

func compareEntries(a, b entry) int { return a.key.Compare(b.key) }

// seek returns the position in s of the first entry at or after k,
// searching from s[from], which must not be after that position: galloping
// ahead, then halving, so that a sorted run of lookups costs at most one
// pass over s however many lookups there are.
func seek(s []entry, from int, k *catalog.Key) int {
	lo, step := from, 1
	for lo+step <= len(s) && before(&s[lo+step-1].key, k) {
		lo += step
		step *= 2
	}
	hi := min(lo+step, len(s))
	for lo < hi { // the first entry at or after k is in s[lo:hi], or at hi
		mid := int(uint(lo+hi) >> 1)
		if before(&s[mid].key, k) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// lookup finds the entries of sorted keys in the transaction's view of
// the inventory (its writes over the committed entries) and calls found
// with each key's position in keys and its current entry.
func (t *tx) lookup(keys func(int) *catalog.Key, n int, found func(i int, e *entry)) {
	if len(t.items) == 0 && len(t.v.items) == 0 {
		return // a first activation
	}
	w, c := 0, 0 // cursors into t.items and t.v.items
	for i := range n {
		k := keys(i)
		if w = seek(t.items, w, k); w < len(t.items) && t.items[w].key == *k {
			found(i, &t.items[w])
			continue
		}
		if c = seek(t.v.items, c, k); c < len(t.v.items) && t.v.items[c].key == *k {
			found(i, &t.v.items[c])
		}
	}
}

// write merges batch, sorted with one entry per key, into the
// transaction's writes; batch's entries override those written before.
func (t *tx) write(batch []entry) {
	if len(t.items) == 0 {
		t.items = batch
		return
	}
	t.items = mergeEntries(t.items, batch, true) // the transaction's own array
}

// mergeEntries returns the sorted union of a and b, b's entry winning for a
// key in both. With reuse, it may write b's entries into a's array, when
// every key of b is in a; otherwise neither is modified.
func mergeEntries(a, b []entry, reuse bool) []entry {
	switch {
	case len(a) == 0:
		return b
	case len(b) == 0:
		return a
	}
	if reuse {
		pos := make([]int, len(b))
		i := 0
		for j := range b {
			if i = seek(a, i, &b[j].key); i == len(a) || a[i].key != b[j].key {
				pos = nil
				break
			}
			pos[j] = i
		}
		if pos != nil {
			for j, i := range pos {
				a[i] = b[j]
			}
			return a
		}
	}
	out := make([]entry, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch d := a[i].key.Compare(b[j].key); {
		case d < 0:
			out = append(out, a[i])
			i++
		case d > 0:
			out = append(out, b[j])
			j++
		default:
			out = append(out, b[j])
			i++
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// intern returns a sighting equal to s: the last call's when s equals
// that, so that the items of one activation share theirs.
func (t *tx) intern(s sighting) *sighting {
	if t.sighting == nil || *t.sighting != s {
		t.sighting = new(sighting)
		*t.sighting = s
	}
	return t.sighting
}

// sortedItems returns items in key order, each key once: a key given more
// than once keeps the FirstSeen of its first item and the rest of its
// last, as putting them one after the other would. Items already in
// strictly increasing key order, as the Receiver writes them, are returned
// as they are; others are sorted in a copy.
func sortedItems(items []finalize.Item) []finalize.Item {
	if increasing(items, func(it *finalize.Item) *catalog.Key { return &it.Key }) {
		return items
	}
	s := slices.Clone(items)
	slices.SortStableFunc(s, func(a, b finalize.Item) int { return a.Key.Compare(b.Key) })
	out := s[:0]
	for _, it := range s {
		if n := len(out); n > 0 && out[n-1].Key == it.Key {
			it.FirstSeen = out[n-1].FirstSeen
			out[n-1] = it
			continue
		}
		out = append(out, it)
	}
	return out
}

// sortedKeys returns keys in increasing order, each once, sorting a copy
// unless they are in that order already.
func sortedKeys(keys []catalog.Key) []catalog.Key {
	if increasing(keys, func(k *catalog.Key) *catalog.Key { return k }) {
		return keys
	}
	s := slices.Clone(keys)
	slices.SortFunc(s, catalog.Key.Compare)
	return slices.Compact(s)
}

// increasing reports whether the keys of s, key(&s[i]), are in strictly
// increasing order.
func increasing[E any](s []E, key func(*E) *catalog.Key) bool {
	for i := 1; i < len(s); i++ {
		if !before(key(&s[i-1]), key(&s[i])) {
			return false
		}
	}
	return true
}

// before reports whether a comes before b in canonical order
// (catalog.Key.Compare), without copying either.
func before(a, b *catalog.Key) bool {
	if a.Kind != b.Kind {
		return a.Kind < b.Kind
	}
	if c := strings.Compare(a.Path, b.Path); c != 0 {
		return c < 0
	}
	return a.SourceRef < b.SourceRef
}

func (t *tx) PutItems(ctx context.Context, items []finalize.Item) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	items = sortedItems(items)
	batch := make([]entry, len(items))
	// An item that exists keeps its FirstSeen: note its sighting first.
	t.lookup(func(i int) *catalog.Key { return &items[i].Key }, len(items), func(i int, e *entry) {
		batch[i].sighting = e.sighting
	})
	for i, it := range items {
		s := sighting{firstSeen: it.FirstSeen, lastSeen: it.LastSeen, current: it.CurrentlyObserved}
		if old := batch[i].sighting; old != nil {
			s.firstSeen = old.firstSeen
		}
		batch[i] = entry{key: it.Key, item: item{record: it.Record, sighting: t.intern(s)}}
	}
	t.write(batch)
	return nil
}

func (t *tx) RetireItems(ctx context.Context, keys []catalog.Key, last finalize.Seen) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	keys = sortedKeys(keys)
	var batch []entry
	t.lookup(func(i int) *catalog.Key { return &keys[i] }, len(keys), func(_ int, e *entry) {
		batch = append(batch, entry{key: e.key, item: item{record: e.record, sighting: t.intern(sighting{firstSeen: e.firstSeen, lastSeen: last})}})
	})
	t.write(batch)
	return nil
}

func (t *tx) Items(ctx context.Context) ([]finalize.Item, error) {
	if err := t.check(ctx); err != nil {
		return nil, err
	}
	all := mergeEntries(t.v.items, t.items, false)
	out := make([]finalize.Item, len(all))
	for i := range all {
		out[i] = all[i].finalizeItem()
	}
	return out, nil
}
