package mysqlstore

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/internal/indexblob"
)

// The record index of a vessel (finalize.Tx.Index) is a base and a delta,
// each encoded with indexblob: the base in parts, rows of
// signalk_catalog_index_base_v2 of at most partBytes each, and the delta —
// the entries new or changed since the base, and the keys that left it —
// in one row of signalk_catalog_index_delta_v2 (none while it is empty).
// SetIndex compares the new index with the base and writes the difference
// as the new delta: an activation that changes one record in a hundred
// writes about a hundredth of the index. When the delta outgrows an eighth
// of the index, or deltaBytes, SetIndex writes the index as the new base
// instead, so that the delta, and what each activation writes, stays
// small.
//
// Every SetIndex draws a random stamp and writes it into the vessel row
// (index_stamp) in the same transaction, which the next transaction's lock
// reads. The Store keeps the
// decoded index of a few vessels under their stamps: a transaction that
// finds the stamp it kept uses it without reading the index at all. A
// stamp is drawn for every index written, by any process or node, so an
// equal stamp means the same index; a vessel row without a stamp is never
// served from the cache.
//
// Two earlier shapes are read as they are and replaced by the next
// SetIndex: the index in segments (signalk_catalog_index_segments_v2,
// runs of consecutive entries, shape 1 of the tables) and the index as one
// value (signalk_catalog_index_v2, before segments). Moving a vessel to the
// base and delta leaves one segment row, the marker, whose entries no
// indexblob decodes: code of shape 1 that still runs during an upgrade
// fails to read that vessel's index (store unavailable, retried) instead
// of reading the index as it was before the base and delta, and
// activating against it.

const (
	indexBaseTable     = "signalk_catalog_index_base_v2"
	indexDeltaTable    = "signalk_catalog_index_delta_v2"
	indexSegmentsTable = "signalk_catalog_index_segments_v2" // shape 1
	indexTable         = "signalk_catalog_index_v2"          // before segments
)

const (
	// compactDivisor: SetIndex writes a new base when the delta has
	// more than len(index)/compactDivisor entries.
	compactDivisor = 8
	// deltaBytes bounds the encoded delta, and partBytes a part of the
	// base, so that each is written as a literal within statementBytes.
	deltaBytes = 256 << 10
	partBytes  = 256 << 10
	// Bounds of a Store's cache of decoded indexes: vessels, and entries
	// in all (about 100 bytes each).
	cachedVessels = 16
	cachedEntries = 1 << 18
)

// markerID is the segment_id of the marker segment, and markerBlob its
// entries, which indexblob.Decode refuses.
var (
	markerID   = make([]byte, 32)
	markerBlob = []byte{}
)

// indexShape is how a vessel's index is stored.
type indexShape uint8

const (
	shapeNone     indexShape = iota // no index: before the first SetIndex
	shapeSegments                   // shape 1: segments
	shapeValue                      // one value in signalk_catalog_index_v2
	shapeDelta                      // a base and a delta
)

// storedIndex is a vessel's index as a transaction read or wrote it, and as
// the Store's cache keeps it. Its slices are shared and never modified.
type storedIndex struct {
	shape      indexShape
	base       []finalize.IndexEntry // the whole index but in shapeDelta
	puts, dels []finalize.IndexEntry // the delta (shapeDelta)
	putBlob    []byte                // the stored delta row's puts; nil when there is none
	delBlob    []byte                // and its dels
	parts      int                   // base parts stored (shapeDelta)
}

// entries returns the index, in a new slice.
func (st *storedIndex) entries() ([]finalize.IndexEntry, error) {
	switch st.shape {
	case shapeNone:
		return nil, nil
	case shapeDelta:
		return indexblob.Apply(st.base, st.puts, st.dels)
	}
	return slices.Clone(st.base), nil
}

// size is the number of entries st holds, for the cache's bounds.
func (st *storedIndex) size() int { return len(st.base) + len(st.puts) + len(st.dels) }

func newIndexCache() *indexblob.Cache[*storedIndex] {
	return indexblob.NewCache[*storedIndex](cachedVessels, cachedEntries)
}

func (t *tx) Index(ctx context.Context) ([]finalize.IndexEntry, error) {
	t.check()
	if err := t.loadIndex(ctx); err != nil {
		return nil, err
	}
	index, err := t.index.entries()
	return index, wrap("read index", err)
}

// loadIndex makes t.index the stored index: the cached one of the stamp
// the lock read, or else the one read from the tables.
func (t *tx) loadIndex(ctx context.Context) error {
	if t.index != nil {
		return ctx.Err()
	}
	if t.row.stamp.Valid {
		if st, ok := t.s.indexes.Get(t.vessel, t.row.stamp.Int64); ok {
			t.index = st
			return ctx.Err()
		}
	}
	st, err := t.readIndex(ctx)
	if err != nil {
		return wrap("read index", err)
	}
	t.index = st
	if t.row.stamp.Valid && st.shape == shapeDelta {
		t.cache = st // read under the stamp: kept once the transaction commits
	}
	return nil
}

// readIndex reads the stored index, of whichever shape, in one statement.
func (t *tx) readIndex(ctx context.Context) (*storedIndex, error) {
	rows, err := t.query(ctx, `SELECT 0, segment_id, 0, entries, NULL FROM `+indexSegmentsTable+` WHERE vessel_id = ?
		UNION ALL SELECT 1, NULL, 0, entries, NULL FROM `+indexTable+` WHERE vessel_id = ?
		UNION ALL SELECT 2, NULL, part, entries, NULL FROM `+indexBaseTable+` WHERE vessel_id = ?
		UNION ALL SELECT 3, NULL, 0, puts, dels FROM `+indexDeltaTable+` WHERE vessel_id = ?`,
		t.vessel, t.vessel, t.vessel, t.vessel)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var (
		segments, parts [][]finalize.IndexEntry
		partNumbers     []int
		value           []finalize.IndexEntry
		marker, isValue bool
		st              = &storedIndex{}
	)
	for rows.Next() {
		var kind, part int
		var id, a, b []byte
		if err := rows.Scan(&kind, &id, &part, &a, &b); err != nil {
			return nil, err
		}
		if kind == 0 && bytes.Equal(id, markerID) {
			marker = true
			continue
		}
		if kind == 3 {
			if st.puts, err = indexblob.Decode(a); err == nil {
				st.dels, err = indexblob.Decode(b)
			}
			if err == nil && (!indexblob.InOrder(st.puts) || !indexblob.InOrder(st.dels)) {
				err = indexblob.ErrDelta
			}
			st.putBlob, st.delBlob = a, b
			if err != nil {
				return nil, err
			}
			continue
		}
		entries, err := indexblob.Decode(a)
		if err != nil {
			return nil, err
		}
		switch kind {
		case 0:
			// Only the index with no entries is stored as an empty
			// segment, which adds no part.
			segments = append(segments, entries)
			if len(entries) == 0 {
				segments = segments[:len(segments)-1]
			}
			st.shape = shapeSegments
		case 1:
			value, isValue = entries, true
		case 2:
			parts, partNumbers = append(parts, entries), append(partNumbers, part)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	switch {
	case marker:
		st.shape, st.parts = shapeDelta, len(parts)
		st.base, err = joinParts(parts, partNumbers)
		return st, err
	case st.shape == shapeSegments:
		st.base, err = joinSegments(segments)
		return st, err
	case isValue:
		st.shape, st.base = shapeValue, value
	}
	return st, nil
}

// joinParts joins the base's parts, numbered 0 to len(parts)-1, in order.
func joinParts(parts [][]finalize.IndexEntry, numbers []int) ([]finalize.IndexEntry, error) {
	ordered := make([][]finalize.IndexEntry, len(parts))
	for i, n := range numbers {
		if n >= len(parts) || ordered[n] != nil {
			return nil, indexblob.ErrCorrupt // a part missing or twice
		}
		ordered[n] = parts[i]
	}
	base := slices.Concat(ordered...)
	if base == nil {
		base = []finalize.IndexEntry{}
	}
	if !indexblob.InOrder(base) {
		return nil, indexblob.ErrCorrupt
	}
	return base, nil
}

// joinSegments puts the segments of shape 1 in the order of their first
// keys and joins them.
func joinSegments(segments [][]finalize.IndexEntry) ([]finalize.IndexEntry, error) {
	slices.SortFunc(segments, func(a, b []finalize.IndexEntry) int { return a[0].Key.Compare(b[0].Key) })
	index := make([]finalize.IndexEntry, 0, len(segments)*32)
	for _, s := range segments {
		if len(index) > 0 && index[len(index)-1].Key.Compare(s[0].Key) >= 0 {
			return nil, indexblob.ErrCorrupt // segments overlap
		}
		index = append(index, s...)
	}
	return index, nil
}

// SetIndex writes index as the delta from the stored base when that is
// small, and otherwise as a new base; either way with a new stamp in the
// vessel row. A vessel of an earlier shape is moved to the base and delta.
func (t *tx) SetIndex(ctx context.Context, index []finalize.IndexEntry) error {
	t.check()
	if err := t.loadIndex(ctx); err != nil {
		return err
	}
	index = indexblob.Canonical(index)
	old := t.index
	t.index, t.cache = nil, nil // unknown until every write succeeds
	var next *storedIndex
	var err error
	if old.shape == shapeDelta {
		puts, dels := indexblob.Delta(old.base, index)
		putBlob, delBlob := indexblob.Encode(puts), indexblob.Encode(dels)
		if (len(puts)+len(dels))*compactDivisor <= len(index) && len(putBlob)+len(delBlob) <= deltaBytes {
			next = &storedIndex{shape: shapeDelta, base: old.base, puts: puts, dels: dels, parts: old.parts}
			err = t.writeDelta(ctx, old, next, putBlob, delBlob)
		}
	}
	if next == nil {
		next = &storedIndex{shape: shapeDelta, base: slices.Clone(index), puts: nil, dels: nil}
		if next.base == nil {
			next.base = []finalize.IndexEntry{}
		}
		err = t.writeBase(ctx, old, next)
	}
	if err != nil {
		return wrap("write index", err)
	}
	// The stamp goes into the vessel row with the active pointer
	// (SetVessel), which the Receiver writes next, or on its own before
	// COMMIT (writeStamp).
	t.row.stamp.Int64, t.row.stamp.Valid = rand.Int64(), true
	t.stampPending = true
	t.index, t.cache = next, next
	return nil
}

// writeStamp writes the stamp SetIndex drew into the vessel row, unless
// SetVessel did: transact's body calls it after the callback, before
// COMMIT, so that no index commits without its stamp.
func (t *tx) writeStamp(ctx context.Context) error {
	if !t.stampPending {
		return nil
	}
	if _, err := t.exec(ctx, `UPDATE `+vesselsTable+` SET index_stamp = ? WHERE vessel_id = ?`, t.row.stamp.Int64, t.vessel); err != nil {
		return wrap("write index", err)
	}
	t.stampPending = false
	return nil
}

// writeDelta replaces the stored delta of old with next's, whose encoded
// puts and dels are given; an empty delta is no row.
func (t *tx) writeDelta(ctx context.Context, old, next *storedIndex, putBlob, delBlob []byte) error {
	if len(next.puts)+len(next.dels) == 0 {
		if old.putBlob != nil {
			_, err := t.exec(ctx, `DELETE FROM `+indexDeltaTable+` WHERE vessel_id = ?`, t.vessel)
			return err
		}
		return nil
	}
	next.putBlob, next.delBlob = putBlob, delBlob
	if old.putBlob != nil && bytes.Equal(putBlob, old.putBlob) && bytes.Equal(delBlob, old.delBlob) {
		return nil // the stored delta already says so
	}
	_, err := t.exec(ctx, `INSERT INTO `+indexDeltaTable+` (vessel_id, puts, dels) VALUES (?, ?, ?)
		ON DUPLICATE KEY UPDATE puts = VALUES(puts), dels = VALUES(dels)`, t.vessel, putBlob, delBlob)
	return err
}

// writeBase writes next.base as the base, in parts, with no delta, and
// removes the index of an earlier shape, leaving the marker.
func (t *tx) writeBase(ctx context.Context, old, next *storedIndex) error {
	parts := splitParts(next.base)
	next.parts = len(parts)
	switch old.shape {
	case shapeSegments:
		if _, err := t.exec(ctx, `DELETE FROM `+indexSegmentsTable+` WHERE vessel_id = ?`, t.vessel); err != nil {
			return err
		}
	case shapeValue:
		if _, err := t.exec(ctx, `DELETE FROM `+indexTable+` WHERE vessel_id = ?`, t.vessel); err != nil {
			return err
		}
	}
	if old.shape != shapeDelta {
		if _, err := t.exec(ctx, `INSERT INTO `+indexSegmentsTable+` (vessel_id, segment_id, entries) VALUES (?, ?, ?)`,
			t.vessel, markerID, markerBlob); err != nil {
			return err
		}
	}
	if old.putBlob != nil {
		if _, err := t.exec(ctx, `DELETE FROM `+indexDeltaTable+` WHERE vessel_id = ?`, t.vessel); err != nil {
			return err
		}
	}
	if old.parts > len(parts) {
		if _, err := t.exec(ctx, `DELETE FROM `+indexBaseTable+` WHERE vessel_id = ? AND part >= ?`, t.vessel, len(parts)); err != nil {
			return err
		}
	}
	const head = `INSERT INTO ` + indexBaseTable + ` (vessel_id, part, entries) VALUES `
	const upsert = ` ON DUPLICATE KEY UPDATE entries = VALUES(entries)`
	numbers := make([]int, len(parts))
	for i := range numbers {
		numbers[i] = i
	}
	return writeBatches(numbers, t.s.batch, len(head)+len(upsert), func(b *strings.Builder, i int) {
		writeTuple(b, []any{t.vessel, i, parts[i]})
	}, func(values string) error {
		_, err := t.tx.ExecContext(ctx, head+values+upsert)
		return err
	})
}

// splitParts encodes index in parts of at most partBytes each (an entry
// takes at most 45 bytes besides its key), at least one.
func splitParts(index []finalize.IndexEntry) [][]byte {
	var parts [][]byte
	start, size := 0, 0
	for i, e := range index {
		n := 45 + len(e.Key.Path) + len(e.Key.SourceRef)
		if i > start && size+n > partBytes {
			parts = append(parts, indexblob.Encode(index[start:i]))
			start, size = i, 0
		}
		size += n
	}
	return append(parts, indexblob.Encode(index[start:]))
}
