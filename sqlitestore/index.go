package sqlitestore

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/internal/indexblob"
)

// The record index of a vessel is a base value (index_base: the whole
// index, front-coded by internal/indexblob, with a random stamp) and a
// delta (index_delta: the entries that are new or changed since the base,
// and the keys that left it). Index returns the base with the delta
// applied. SetIndex compares the new index with the base and writes the
// difference as the new delta: an activation that changes one record in a
// hundred writes about a hundredth of the index, where rewriting the whole
// value would write (and journal) all of it. When the delta outgrows an
// eighth of the index, SetIndex writes the index as the new base instead,
// so that the delta, and what every activation writes, stays small.
//
// The decoded base of a few vessels is kept in the Store, under its
// stamp: a transaction that finds the same stamp in the file uses it
// without reading the base value. A stamp is drawn at random for every
// base written, by any process, so an equal stamp means the same base.

// compactDivisor: SetIndex writes a new base when the delta has more than
// len(index)/compactDivisor entries.
const compactDivisor = 8

// storedIndex is the vessel's record index as its transaction last read or
// wrote it. The transaction holds SQLite's write lock, so nothing else
// changes it before the transaction ends.
type storedIndex struct {
	known      bool
	exists     bool // false before the first SetIndex
	stamp      int64
	base       []finalize.IndexEntry // decoded base value; shared, never modified
	puts, dels []byte                // the delta as stored; nil when there is none
	// The delta decoded; Index applies it to base in a new slice, so no
	// slice a caller holds is kept.
	putEntries, delEntries []finalize.IndexEntry
}

var errIndexDelta = errors.New("record index delta does not apply to its base")

func (t *tx) Index(ctx context.Context) ([]finalize.IndexEntry, error) {
	if err := t.loadIndex(ctx); err != nil {
		return nil, err
	}
	st := &t.index
	if !st.exists {
		return nil, nil
	}
	index, err := applyDelta(st.base, st.putEntries, st.delEntries)
	return index, t.fail(ctx, "read index", err)
}

// loadIndex reads the stored index into t.index, unless it is known.
func (t *tx) loadIndex(ctx context.Context) error {
	if err := t.ready(); err != nil {
		return err
	}
	if t.index.known {
		return ctx.Err()
	}
	st := storedIndex{known: true}
	found, err := t.queryRow(ctx, "read index", `SELECT stamp FROM index_base WHERE vessel_id = ?`, []any{t.vessel}, &st.stamp)
	if err != nil {
		return err
	}
	if !found {
		t.index = st
		return nil
	}
	st.exists = true
	if st.base = t.s.bases.get(t.vessel, st.stamp); st.base == nil {
		var blob []byte
		if _, err := t.queryRow(ctx, "read index", `SELECT entries FROM index_base WHERE vessel_id = ?`, []any{t.vessel}, &blob); err != nil {
			return err
		}
		if st.base, err = indexblob.Decode(blob); err != nil {
			return t.fail(ctx, "read index", err)
		}
		t.newBase = st.base
	}
	if _, err := t.queryRow(ctx, "read index", `SELECT puts, dels FROM index_delta WHERE vessel_id = ?`, []any{t.vessel}, &st.puts, &st.dels); err != nil {
		return err
	}
	if st.puts != nil {
		if st.putEntries, err = indexblob.Decode(st.puts); err != nil {
			return t.fail(ctx, "read index", err)
		}
		if st.delEntries, err = indexblob.Decode(st.dels); err != nil {
			return t.fail(ctx, "read index", err)
		}
		if !isCanonical(st.putEntries) || !isCanonical(st.delEntries) {
			return t.fail(ctx, "read index", errIndexDelta)
		}
	}
	t.index = st
	return nil
}

func (t *tx) SetIndex(ctx context.Context, index []finalize.IndexEntry) error {
	if err := t.loadIndex(ctx); err != nil {
		return err
	}
	index = canonicalIndex(index)
	st := t.index
	if st.exists {
		puts, dels := delta(st.base, index)
		if (len(puts)+len(dels))*compactDivisor <= len(index) {
			return t.writeDelta(ctx, puts, dels)
		}
	}
	// No base yet, or the delta outgrew it: the index is the new base.
	entries := slices.Clone(index)
	if entries == nil {
		entries = []finalize.IndexEntry{}
	}
	stamp := rand.Int64()
	if _, err := t.exec(ctx, "write index", `INSERT INTO index_base (vessel_id, stamp, entries) VALUES (?, ?, ?)
		ON CONFLICT (vessel_id) DO UPDATE SET stamp = excluded.stamp, entries = excluded.entries`,
		t.vessel, stamp, indexblob.Encode(entries)); err != nil {
		return err
	}
	if st.puts != nil {
		if _, err := t.exec(ctx, "write index", `DELETE FROM index_delta WHERE vessel_id = ?`, t.vessel); err != nil {
			return err
		}
	}
	t.index = storedIndex{known: true, exists: true, stamp: stamp, base: entries}
	t.newBase = entries
	return nil
}

// writeDelta stores puts and dels as the delta of the index from the base.
func (t *tx) writeDelta(ctx context.Context, puts, dels []finalize.IndexEntry) error {
	st := t.index
	var putBlob, delBlob []byte
	if len(puts)+len(dels) > 0 {
		putBlob, delBlob = indexblob.Encode(puts), indexblob.Encode(dels)
	}
	switch {
	case bytes.Equal(putBlob, st.puts) && bytes.Equal(delBlob, st.dels) && (putBlob == nil) == (st.puts == nil):
		// The stored delta already says so.
	case putBlob == nil:
		if _, err := t.exec(ctx, "write index", `DELETE FROM index_delta WHERE vessel_id = ?`, t.vessel); err != nil {
			return err
		}
	default:
		if _, err := t.exec(ctx, "write index", `INSERT INTO index_delta (vessel_id, puts, dels) VALUES (?, ?, ?)
			ON CONFLICT (vessel_id) DO UPDATE SET puts = excluded.puts, dels = excluded.dels`,
			t.vessel, putBlob, delBlob); err != nil {
			return err
		}
	}
	st.puts, st.dels, st.putEntries, st.delEntries = putBlob, delBlob, puts, dels
	t.index = st
	return nil
}

// delta returns the difference of index from base, both in strictly
// increasing canonical order: the entries of index that base lacks or has
// with another digest, and the entries of base whose keys index lacks
// (with zero digests).
func delta(base, index []finalize.IndexEntry) (puts, dels []finalize.IndexEntry) {
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

// applyDelta returns, in a new slice, base with puts put and the keys of
// dels deleted: the inverse of delta. puts and dels are in strictly
// increasing canonical order; it refuses a deletion of a key base lacks.
func applyDelta(base, puts, dels []finalize.IndexEntry) ([]finalize.IndexEntry, error) {
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
		return nil, errIndexDelta
	}
	return out, nil
}

func isCanonical(index []finalize.IndexEntry) bool {
	for i := 1; i < len(index); i++ {
		if index[i-1].Key.Compare(index[i].Key) >= 0 {
			return false
		}
	}
	return true
}

// canonicalIndex returns index in strictly increasing canonical order: as
// given when it already is (the Receiver's case), otherwise a sorted copy
// in which the last of the entries with the same key wins.
func canonicalIndex(index []finalize.IndexEntry) []finalize.IndexEntry {
	if isCanonical(index) {
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

// baseCache keeps the decoded base values of the vessels most recently
// used, within bounds, keyed by vessel and stamp. Its values are shared
// and never modified.
type baseCache struct {
	mu      sync.Mutex
	entries []cachedBase // most recently used last
}

type cachedBase struct {
	vessel string
	stamp  int64
	base   []finalize.IndexEntry
}

// Bounds of a Store's baseCache: vessels, and entries in all (an entry
// decoded takes about 100 bytes).
const (
	cachedVessels = 4
	cachedEntries = 1 << 18
)

// get returns the decoded base of the vessel with the given stamp, or nil.
func (c *baseCache) get(vessel []byte, stamp int64) []finalize.IndexEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, e := range c.entries {
		if e.vessel == string(vessel) {
			if e.stamp != stamp {
				return nil
			}
			c.entries = append(append(c.entries[:i:i], c.entries[i+1:]...), e)
			return e.base
		}
	}
	return nil
}

// put keeps base as the vessel's decoded base of the given stamp: a base
// that was committed, or read in a transaction.
func (c *baseCache) put(vessel []byte, stamp int64, base []finalize.IndexEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries = slices.DeleteFunc(c.entries, func(e cachedBase) bool { return e.vessel == string(vessel) })
	if len(base) > cachedEntries {
		return
	}
	c.entries = append(c.entries, cachedBase{vessel: string(vessel), stamp: stamp, base: base})
	total := 0
	for _, e := range c.entries {
		total += len(e.base)
	}
	for len(c.entries) > cachedVessels || total > cachedEntries {
		total -= len(c.entries[0].base)
		c.entries = slices.Delete(c.entries, 0, 1)
	}
}
