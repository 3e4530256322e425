package sqlitestore

import (
	"context"
	"database/sql"
	"time"

	"github.com/yachtmemory/sourcecatalog/outbox"
)

var _ outbox.StartMemory = (*Outbox)(nil)

// RememberStart implements outbox.StartMemory in the server_starts table
// (schema_v6.sql), with the errors of WithVessel; a row that does not
// match its checksum is ErrDamaged.
func (o *Outbox) RememberStart(ctx context.Context, st outbox.ServerStart) (outbox.ServerStart, error) {
	if err := outbox.CheckServerStart(st); err != nil {
		return outbox.ServerStart{}, err
	}
	var out outbox.ServerStart
	err := o.s.transact(ctx, func(q *sql.Conn) error {
		b := &base{s: o.s, q: q}
		var first int64
		var settled, sum sql.NullInt64
		found, err := b.queryRow(ctx, "read server start", `SELECT first_seen_ms, settled_ms, checksum FROM server_starts WHERE start_id = ?`,
			[]any{st.ID}, &first, &settled, &sum)
		if err != nil {
			return err
		}
		if found && !startSum(st.ID, first, settled).matches(sum) {
			return damagedRow("server start %q", st.ID)
		}
		if !found {
			var n int64
			if _, err := b.queryRow(ctx, "count server starts", `SELECT count(*) FROM server_starts`, nil, &n); err != nil {
				return err
			}
			if n >= outbox.MaxServerStarts {
				if _, err := b.exec(ctx, "drop the oldest server start", `DELETE FROM server_starts WHERE start_id =
					(SELECT start_id FROM server_starts ORDER BY first_seen_ms, start_id LIMIT 1)`); err != nil {
					return err
				}
			}
			first = st.FirstSeen.UnixMilli()
		}
		if !settled.Valid && !st.Settled.IsZero() {
			settled = sql.NullInt64{Int64: st.Settled.UnixMilli(), Valid: true}
		}
		if _, err := b.exec(ctx, "remember server start", `INSERT INTO server_starts (start_id, first_seen_ms, settled_ms, checksum)
			VALUES (?, ?, ?, ?) ON CONFLICT (start_id) DO UPDATE SET settled_ms = excluded.settled_ms, checksum = excluded.checksum`,
			st.ID, first, settled, startSum(st.ID, first, settled).sum()); err != nil {
			return err
		}
		var n int64
		if _, err := b.queryRow(ctx, "count server starts", `SELECT count(*) FROM server_starts`, nil, &n); err != nil {
			return err
		}
		out = outbox.ServerStart{ID: st.ID, FirstSeen: time.UnixMilli(first).UTC(), Others: int(n) - 1}
		if settled.Valid {
			out.Settled = time.UnixMilli(settled.Int64).UTC()
		}
		return b.err
	})
	if err != nil {
		return outbox.ServerStart{}, err
	}
	return out, nil
}

// startSum is the checksum of a server_starts row.
func startSum(id string, first int64, settled sql.NullInt64) *rowSum {
	h := newRowSum("server_starts").str(id).int(first)
	if settled.Valid {
		return h.int(settled.Int64)
	}
	return h.null()
}
