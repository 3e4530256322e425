package sqlitestore

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"

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

// Bounds of a Store's cache of decoded bases: vessels, and entries in all.
const (
	cachedVessels = 4
	cachedEntries = 1 << 18
)

// newBaseCache returns the cache of decoded bases of a Store.
func newBaseCache() *indexblob.Cache[[]finalize.IndexEntry] {
	return indexblob.NewCache[[]finalize.IndexEntry](cachedVessels, cachedEntries)
}

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

func (t *tx) Index(ctx context.Context) ([]finalize.IndexEntry, error) {
	if err := t.loadIndex(ctx); err != nil {
		return nil, err
	}
	st := &t.index
	if !st.exists {
		return nil, nil
	}
	index, err := indexblob.Apply(st.base, st.putEntries, st.delEntries)
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
	if st.base, _ = t.s.bases.Get(t.vessel, st.stamp); st.base == nil {
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
		if !indexblob.InOrder(st.putEntries) || !indexblob.InOrder(st.delEntries) {
			return t.fail(ctx, "read index", indexblob.ErrDelta)
		}
	}
	t.index = st
	return nil
}

func (t *tx) SetIndex(ctx context.Context, index []finalize.IndexEntry) error {
	if err := t.loadIndex(ctx); err != nil {
		return err
	}
	index = indexblob.Canonical(index)
	st := t.index
	if st.exists {
		puts, dels := indexblob.Delta(st.base, index)
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
