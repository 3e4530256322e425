package sqlitestore

import (
	"context"
	"database/sql"
	"strconv"
	"strings"

	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

// itemColumns are the columns of an items row.
const itemColumns = `vessel_id, first_seen_revision, first_seen_at_sec, first_seen_at_nsec, last_seen_revision,
	last_seen_at_sec, last_seen_at_nsec, currently_observed, kind, path, source_ref, record`

const itemColumnCount = 12

// itemBatch is how many rows one INSERT writes: 12 columns each, well
// under SQLite's 32766 bound parameters.
const itemBatch = 256

// itemUpsert keeps first_seen of an existing item: it is never in the
// update list.
const itemUpsert = ` ON CONFLICT (vessel_id, kind, path, source_ref) DO UPDATE SET record = excluded.record,
	last_seen_revision = excluded.last_seen_revision, last_seen_at_sec = excluded.last_seen_at_sec,
	last_seen_at_nsec = excluded.last_seen_at_nsec, currently_observed = excluded.currently_observed`

// itemRow appends the values of the row of it to args.
func itemRow(args []any, vessel []byte, it finalize.Item) []any {
	return append(itemShared(args, vessel, it), int64(it.Key.Kind), it.Key.Path, it.Key.SourceRef, it.Record)
}

// itemShared appends the values of the row of it that an activation's items
// share — the vessel, first and last seen, currently observed — as the
// numbered parameters ?1 to ?8 of sharedTuple take them.
func itemShared(args []any, vessel []byte, it finalize.Item) []any {
	firstSec, firstNsec := unixTime(it.FirstSeen.At)
	lastSec, lastNsec := unixTime(it.LastSeen.At)
	current := 0
	if it.CurrentlyObserved {
		current = 1
	}
	return append(args, vessel, it.FirstSeen.Revision, firstSec, firstNsec, it.LastSeen.Revision, lastSec, lastNsec, current)
}

// sharedColumns is how many values itemShared appends.
const sharedColumns = 8

// sameShared reports whether every item of items has the values
// itemShared takes of the first: an activation's do, since it sees every
// item it writes at once (finalize.activate).
func sameShared(items []finalize.Item) bool {
	first := items[0]
	for _, it := range items[1:] {
		if it.FirstSeen.Revision != first.FirstSeen.Revision || !it.FirstSeen.At.Equal(first.FirstSeen.At) ||
			it.LastSeen.Revision != first.LastSeen.Revision || !it.LastSeen.At.Equal(first.LastSeen.At) ||
			it.CurrentlyObserved != first.CurrentlyObserved {
			return false
		}
	}
	return true
}

// appendSharedTuple appends the VALUES tuple of row i of an INSERT whose
// rows share the values of itemShared, bound once as ?1 to ?8, each row
// binding its kind, path, source_ref and record after them: a row binds 4
// values, not 12, and the vessel's bytes are copied into SQLite once a
// statement, not once a row.
func appendSharedTuple(dst []byte, i int) []byte {
	dst = append(dst, "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8"...)
	for n := sharedColumns + 4*i + 1; n <= sharedColumns+4*i+4; n++ {
		dst = strconv.AppendInt(append(dst, ", ?"...), int64(n), 10)
	}
	return append(dst, ')')
}

// itemTuple is the VALUES tuple of a row binding every value.
var itemTuple = "(" + strings.TrimSuffix(strings.Repeat("?, ", itemColumnCount), ", ") + ")"

// insertItems writes items into table in multi-row INSERTs ending with
// suffix (an upsert clause, or ""). A batch whose items share the values
// of itemShared binds them once (appendSharedTuple); another binds every
// value of every row. Both write the same rows.
func (b *base) insertItems(ctx context.Context, table, suffix string, vessel []byte, items []finalize.Item) error {
	for start := 0; start < len(items); start += itemBatch {
		batch := items[start:min(start+itemBatch, len(items))]
		shared := sameShared(batch)
		var args []any
		if shared {
			args = itemShared(make([]any, 0, sharedColumns+4*len(batch)), vessel, batch[0])
		} else {
			args = make([]any, 0, itemColumnCount*len(batch))
		}
		q := append([]byte(nil), "INSERT INTO "+table+" ("+itemColumns+") VALUES "...)
		for i, it := range batch {
			if i > 0 {
				q = append(q, ", "...)
			}
			if shared {
				q = appendSharedTuple(q, i)
				args = append(args, int64(it.Key.Kind), it.Key.Path, it.Key.SourceRef, it.Record)
			} else {
				q = append(q, itemTuple...)
				args = itemRow(args, vessel, it)
			}
		}
		if _, err := b.execRows(ctx, "write items", string(append(q, suffix...)), args...); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) PutItems(ctx context.Context, items []finalize.Item) error {
	if err := t.ready(); err != nil {
		return err
	}
	return t.insertItems(ctx, "items", itemUpsert, t.vessel, items)
}

func (t *tx) RetireItems(ctx context.Context, keys []catalog.Key, last finalize.Seen) error {
	if err := t.ready(); err != nil {
		return err
	}
	sec, nsec := unixTime(last.At)
	for _, k := range keys {
		_, err := t.exec(ctx, "retire items", `UPDATE items SET currently_observed = 0, last_seen_revision = ?,
			last_seen_at_sec = ?, last_seen_at_nsec = ? WHERE vessel_id = ? AND kind = ? AND path = ? AND source_ref = ?`,
			last.Revision, sec, nsec, t.vessel, int64(k.Kind), k.Path, k.SourceRef)
		if err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) Items(ctx context.Context) ([]finalize.Item, error) {
	var out []finalize.Item
	err := t.query(ctx, "read items", `SELECT kind, path, source_ref, record, first_seen_revision, first_seen_at_sec,
		first_seen_at_nsec, last_seen_revision, last_seen_at_sec, last_seen_at_nsec, currently_observed
		FROM items WHERE vessel_id = ?`, []any{t.vessel}, func(r *sql.Rows) error {
		var it finalize.Item
		var kind uint8
		var firstSec, firstNsec, lastSec, lastNsec int64
		err := r.Scan(&kind, &it.Key.Path, &it.Key.SourceRef, &it.Record, &it.FirstSeen.Revision, &firstSec, &firstNsec,
			&it.LastSeen.Revision, &lastSec, &lastNsec, &it.CurrentlyObserved)
		it.Key.Kind = catalog.Kind(kind)
		it.FirstSeen.At, it.LastSeen.At = fromUnix(firstSec, firstNsec), fromUnix(lastSec, lastNsec)
		out = append(out, it)
		return err
	})
	return out, err
}
