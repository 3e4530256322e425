package sqlitestore

import (
	"context"
	"database/sql"
	"strings"

	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

// itemColumns are the columns of an items row, in the order of itemRow.
const itemColumns = `vessel_id, kind, path, source_ref, record, first_seen_revision, first_seen_at_sec,
	first_seen_at_nsec, last_seen_revision, last_seen_at_sec, last_seen_at_nsec, currently_observed`

const itemColumnCount = 12

// itemBatch is how many rows one INSERT writes: 12 columns each, well
// under SQLite's 32766 bound parameters.
const itemBatch = 256

// itemUpsert keeps first_seen of an existing item: it is never in the
// update list.
const itemUpsert = ` ON CONFLICT (vessel_id, kind, path, source_ref) DO UPDATE SET record = excluded.record,
	last_seen_revision = excluded.last_seen_revision, last_seen_at_sec = excluded.last_seen_at_sec,
	last_seen_at_nsec = excluded.last_seen_at_nsec, currently_observed = excluded.currently_observed`

// itemRow appends the values of it's row to args.
func itemRow(args []any, vessel []byte, it finalize.Item) []any {
	firstSec, firstNsec := unixTime(it.FirstSeen.At)
	lastSec, lastNsec := unixTime(it.LastSeen.At)
	current := 0
	if it.CurrentlyObserved {
		current = 1
	}
	return append(args, vessel, int64(it.Key.Kind), it.Key.Path, it.Key.SourceRef, it.Record,
		it.FirstSeen.Revision, firstSec, firstNsec, it.LastSeen.Revision, lastSec, lastNsec, current)
}

// insertItems writes items into table in multi-row INSERTs ending with
// suffix (an upsert clause, or "").
func (b *base) insertItems(ctx context.Context, table, suffix string, vessel []byte, items []finalize.Item) error {
	for start := 0; start < len(items); start += itemBatch {
		batch := items[start:min(start+itemBatch, len(items))]
		args := make([]any, 0, len(batch)*itemColumnCount)
		for _, it := range batch {
			args = itemRow(args, vessel, it)
		}
		tuple := "(" + strings.TrimSuffix(strings.Repeat("?, ", itemColumnCount), ", ") + ")"
		q := "INSERT INTO " + table + " (" + itemColumns + ") VALUES " +
			strings.TrimSuffix(strings.Repeat(tuple+", ", len(batch)), ", ") + suffix
		if _, err := b.execRows(ctx, "write items", q, args...); err != nil {
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
