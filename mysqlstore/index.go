package mysqlstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/internal/indexblob"
)

// The record index (finalize.Tx.Index) is kept in segments, rows of
// signalk_catalog_index_segments_v2: runs of consecutive entries, each
// encoded with indexblob. A segment ends after an entry whose key hashes to
// 0 modulo segmentEvery, or after segmentMax entries: the boundaries
// depend on the keys alone, so a new document whose records changed but
// whose keys stayed rewrites only the segments holding the changed
// records, and a key that appears or leaves only the segments near it.
// A segment's row key is the SHA-256 of its first entry's key, and
// reading puts the segments in the order of their first keys.
//
// A vessel whose index was last written before segments (one value in
// signalk_catalog_index_v2) is read from there; the next SetIndex moves it
// into segments.

const (
	segmentEvery = 32  // entries of a segment on average
	segmentMax   = 256 // entries of a segment at most
)

// indexSegmentsTable and indexTable hold the index as segments and, as
// written before segments, as one value.
const (
	indexSegmentsTable = "signalk_catalog_index_segments_v2"
	indexTable         = "signalk_catalog_index_v2"
)

// A segment is a run of index entries as stored: its row key and its
// encoded entries.
type segment struct {
	id, blob []byte
}

// keyBytes writes k unambiguously: its kind, then path and source ref,
// each followed by a NUL (which neither may contain).
func keyBytes(b []byte, k catalog.Key) []byte {
	b = append(b, byte(k.Kind))
	b = append(append(b, k.Path...), 0)
	return append(append(b, k.SourceRef...), 0)
}

// segments splits index into its segments.
func segments(index []finalize.IndexEntry) []segment {
	var out []segment
	var key []byte
	start := 0
	for i, e := range index {
		key = keyBytes(key[:0], e.Key)
		h := fnv.New64a()
		h.Write(key)
		if h.Sum64()%segmentEvery == 0 || i+1-start == segmentMax || i+1 == len(index) {
			id := sha256.Sum256(keyBytes(nil, index[start].Key))
			out = append(out, segment{id: id[:], blob: indexblob.Encode(index[start : i+1])})
			start = i + 1
		}
	}
	return out
}

// indexState is what a transaction knows of the stored index: its
// segments by row key, and whether the value written before segments is
// there.
type indexState struct {
	segments map[string][]byte // row key → encoded entries
	legacy   bool              // signalk_catalog_index_v2 holds a row
}

func (t *tx) Index(ctx context.Context) ([]finalize.IndexEntry, error) {
	t.check()
	rows, err := t.query(ctx, `SELECT segment_id, entries FROM `+indexSegmentsTable+` WHERE vessel_id = ?
		UNION ALL SELECT NULL, entries FROM `+indexTable+` WHERE vessel_id = ?`, t.vessel, t.vessel)
	if err != nil {
		return nil, wrap("read index", err)
	}
	defer rows.Close()
	st := indexState{segments: map[string][]byte{}}
	var parts [][]finalize.IndexEntry
	var legacy []finalize.IndexEntry
	for rows.Next() {
		var id, blob []byte
		if err := rows.Scan(&id, &blob); err != nil {
			return nil, wrap("read index", err)
		}
		entries, err := indexblob.Decode(blob)
		if err != nil {
			return nil, wrap("read index", err)
		}
		if id == nil {
			st.legacy, legacy = true, entries
			continue
		}
		st.segments[string(id)] = blob
		// Only the index with no entries is stored as an empty segment,
		// which adds no part.
		if len(entries) > 0 {
			parts = append(parts, entries)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("read index", err)
	}
	t.index = &st
	if len(st.segments) == 0 {
		return legacy, nil // nil before the first SetIndex
	}
	slices.SortFunc(parts, func(a, b []finalize.IndexEntry) int { return a[0].Key.Compare(b[0].Key) })
	index := make([]finalize.IndexEntry, 0, len(parts)*segmentEvery)
	for _, p := range parts {
		if len(index) > 0 && index[len(index)-1].Key.Compare(p[0].Key) >= 0 {
			return nil, wrap("read index", indexblob.ErrCorrupt) // segments overlap
		}
		index = append(index, p...)
	}
	return index, nil
}

// SetIndex writes the segments of index that the stored index lacks and
// deletes those it no longer has: after Index in the same transaction
// (as the Receiver calls them), only those; otherwise it replaces every
// segment. An index with no entries is stored as one empty segment, so
// that Index tells it from none.
func (t *tx) SetIndex(ctx context.Context, index []finalize.IndexEntry) error {
	t.check()
	segs := segments(index)
	if len(segs) == 0 {
		id := sha256.Sum256(nil)
		segs = []segment{{id: id[:], blob: indexblob.Encode(nil)}}
	}
	old := t.index
	if old == nil {
		if _, err := t.exec(ctx, `DELETE FROM `+indexSegmentsTable+` WHERE vessel_id = ?`, t.vessel); err != nil {
			return wrap("write index", err)
		}
		old = &indexState{segments: map[string][]byte{}, legacy: true}
	}
	if old.legacy {
		if _, err := t.exec(ctx, `DELETE FROM `+indexTable+` WHERE vessel_id = ?`, t.vessel); err != nil {
			return wrap("write index", err)
		}
	}
	next := indexState{segments: make(map[string][]byte, len(segs))}
	var put []segment
	for _, s := range segs {
		next.segments[string(s.id)] = s.blob
		if b, ok := old.segments[string(s.id)]; !ok || !bytes.Equal(b, s.blob) {
			put = append(put, s)
		}
	}
	var gone [][]byte
	for id := range old.segments {
		if _, ok := next.segments[id]; !ok {
			gone = append(gone, []byte(id))
		}
	}
	t.index = nil // unknown until both writes succeed
	head := inline(`DELETE FROM `+indexSegmentsTable+` WHERE vessel_id = ? AND segment_id IN (`, t.vessel)
	err := writeBatches(gone, t.s.batch, len(head)+1, func(b *strings.Builder, id []byte) { writeLiteral(b, id) },
		func(values string) error {
			_, err := t.tx.ExecContext(ctx, head+values+")")
			return wrap("write index", err)
		})
	if err != nil {
		return err
	}
	head = `INSERT INTO ` + indexSegmentsTable + ` (vessel_id, segment_id, entries) VALUES `
	const upsert = ` ON DUPLICATE KEY UPDATE entries = VALUES(entries)`
	err = writeBatches(put, t.s.batch, len(head)+len(upsert), func(b *strings.Builder, s segment) {
		writeTuple(b, []any{t.vessel, s.id, s.blob})
	}, func(values string) error {
		_, err := t.tx.ExecContext(ctx, head+values+upsert)
		return wrap("write index", err)
	})
	if err != nil {
		return err
	}
	t.index = &next
	return nil
}
