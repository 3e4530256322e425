package mysqlstore

import (
	"context"
	"database/sql"
	"strings"
	"sync/atomic"

	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

// FloorInsert writes items with plain multi-row INSERTs (no upsert, no
// reads) into the inventory tables named with suffix appended: the floor
// the activation benchmarks compare against.
func FloorInsert(ctx context.Context, tx *sql.Tx, suffix string, items []finalize.Item, vessel []byte, batch int) error {
	for kind := catalog.KindPath; kind <= catalog.KindObservation; kind++ {
		k := kindTables[kind]
		cols := append(append(append([]string{"vessel_id"}, k.keys...), k.columns...),
			"record", "first_seen_revision", "first_seen_at_ns", "last_seen_revision", "last_seen_at_ns", "currently_observed")
		tuple := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + ")"
		var rows [][]any
		for _, it := range items {
			if it.Key.Kind != kind {
				continue
			}
			vals, err := itemValues(it)
			if err != nil {
				return err
			}
			row := append([]any{vessel}, vals...)
			rows = append(rows, append(row, it.Record, it.FirstSeen.Revision, nanos(it.FirstSeen.At),
				it.LastSeen.Revision, nanos(it.LastSeen.At), it.Current))
		}
		for start := 0; start < len(rows); start += batch {
			part := rows[start:min(start+batch, len(rows))]
			var args []any
			for _, r := range part {
				args = append(args, r...)
			}
			q := "INSERT INTO " + k.table + suffix + " (" + strings.Join(cols, ", ") + ") VALUES " +
				strings.TrimSuffix(strings.Repeat(tuple+", ", len(part)), ", ")
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				return err
			}
		}
	}
	return nil
}

// InventoryTables lists the inventory tables.
func InventoryTables() []string {
	return []string{kindTables[catalog.KindPath].table, kindTables[catalog.KindSource].table, kindTables[catalog.KindObservation].table}
}

// Points of a transaction where EndTransactions ends it.
const (
	AfterLock  = hookLocked  // right after the vessel lock
	AfterCheck = hookChecked // after the pre-COMMIT check, before COMMIT
)

// EndTransactions makes the next n transactions of s end on the server at
// point without the callback knowing: what a Galera node does to a local
// transaction that a replicated one aborts while its statement is
// finishing.
func EndTransactions(s *Store, point hookPoint, n int) {
	var left atomic.Int64
	left.Store(int64(n))
	s.hook = func(ctx context.Context, at hookPoint, q querier) {
		if at == point && left.Add(-1) >= 0 {
			if _, err := q.ExecContext(ctx, "ROLLBACK"); err != nil {
				panic(err)
			}
		}
	}
}

// EndOutboxTransactions is EndTransactions for an Outbox.
func EndOutboxTransactions(o *Outbox, point hookPoint, n int) { EndTransactions(o.s, point, n) }
