package mysqlstore

import (
	"context"
	"database/sql"
	"sync/atomic"

	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

// FloorInsert writes items with plain multi-row INSERTs (no upsert, no
// reads) into the inventory tables named with suffix appended: the floor
// the activation benchmarks compare against.
func FloorInsert(ctx context.Context, tx *sql.Tx, suffix string, items []finalize.Item, vessel []byte, batch int) error {
	for kind := catalog.KindPath; kind <= catalog.KindObservation; kind++ {
		rows, err := itemRows(vessel, kind, items)
		if err != nil {
			return err
		}
		table, cols := kindTables[kind].table+suffix, itemColumns(kind)
		for start := 0; start < len(rows); start += batch {
			q, args := insertStatement(table, cols, rows[start:min(start+batch, len(rows))])
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

// PartBytes bounds a part of an index base.
const PartBytes = partBytes

// Statements splits DDL into statements, as Migrate does.
var Statements = statements

// Wrap is wrap: an error of the named operation, classed.
var Wrap = wrap

// Inline is inline: a statement with its arguments written as literals.
var Inline = inline

// Querier is the connection of a transaction, as hooks see it.
type Querier = querier

// OnLock makes f run in every transaction of s right after the vessel
// lock, on the transaction's connection.
func OnLock(s *Store, f func(ctx context.Context, q Querier)) {
	s.hook = func(ctx context.Context, at hookPoint, q querier) {
		if at == hookLocked {
			f(ctx, q)
		}
	}
}
