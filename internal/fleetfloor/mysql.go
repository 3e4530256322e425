package fleetfloor

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/mysqlstore"
)

// mysqlBatch is the rows of one INSERT, as mysqlstore writes them.
const mysqlBatch = 500

// mysqlTables are mysqlstore's inventory tables and the columns each kind
// writes, in the order of row.mysql then the common ones.
var mysqlTables = [...]struct{ table, columns string }{
	catalog.KindPath:        {"signalk_catalog_paths_v2", "path, unit_present, unit"},
	catalog.KindSource:      {"signalk_catalog_sources_v2", "source_ref, label, source_type"},
	catalog.KindObservation: {"signalk_catalog_observations_v2", "observation_key, path, source_ref, value_type"},
}

const mysqlCommon = "record, first_seen_revision, first_seen_at_sec, first_seen_at_nsec, last_seen_revision, last_seen_at_sec, last_seen_at_nsec, currently_observed"

// MySQL is the Sink, and the Inventory, of the MariaDB floor. A message
// is one INSERT into a table of its own, committed; a snapshot's rows are
// plain multi-row INSERTs into mysqlstore's empty inventory tables, in one
// transaction. Statements with arguments bind them, as mysqlstore's
// writes of chunks and inventory rows do (a server-side prepare, no
// literal to escape and parse).
type MySQL struct {
	db   *sql.DB
	rows [3][]row // by kind - 1
}

var _ Sink = (*MySQL)(nil)
var _ Inventory = (*MySQL)(nil)

// OpenMySQL connects to the database cfg names, creates the messages
// table and, with records, mysqlstore's schema (mysqlstore.Migrate) for
// their rows. The database should be empty.
func OpenMySQL(ctx context.Context, cfg *mysql.Config, records []*catalog.Record) (*MySQL, error) {
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("fleetfloor: %w", err)
	}
	m := &MySQL{db: sql.OpenDB(conn)}
	fail := func(err error) (*MySQL, error) {
		m.db.Close()
		return nil, fmt.Errorf("fleetfloor: %w", err)
	}
	if _, err := m.db.ExecContext(ctx, "CREATE TABLE fleet_floor_messages (id BIGINT AUTO_INCREMENT PRIMARY KEY, "+
		"vessel_id BINARY(16) NOT NULL, body MEDIUMBLOB NOT NULL) ENGINE=InnoDB"); err != nil {
		return fail(err)
	}
	if records != nil {
		if err := mysqlstore.Migrate(ctx, m.db); err != nil {
			return fail(err)
		}
		for _, r := range rowsOf(records) {
			m.rows[r.kind-1] = append(m.rows[r.kind-1], r)
		}
	}
	return m, nil
}

// Message implements Sink.
func (m *MySQL) Message(ctx context.Context, vessel uuid.UUID, body []byte) error {
	tx, err := m.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("fleetfloor: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "INSERT INTO fleet_floor_messages (vessel_id, body) VALUES (?, ?)", vessel[:], body); err != nil {
		return fmt.Errorf("fleetfloor: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("fleetfloor: %w", err)
	}
	return nil
}

// Snapshot implements Inventory.
func (m *MySQL) Snapshot(ctx context.Context, vessel uuid.UUID) error {
	tx, err := m.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("fleetfloor: %w", err)
	}
	defer tx.Rollback()
	sec, nsec := seenAt.Unix(), seenAt.Nanosecond()
	for k, rows := range m.rows {
		t := mysqlTables[k+1]
		n := strings.Count(t.columns, ",") + 1 + 1 + 8 // vessel_id, descriptive, common
		for start := 0; start < len(rows); start += mysqlBatch {
			batch := rows[start:min(start+mysqlBatch, len(rows))]
			args := make([]any, 0, n*len(batch))
			for _, r := range batch {
				args = append(append(append(args, vessel[:]), r.mysql...), r.record, seenRevision, sec, nsec, seenRevision, sec, nsec, true)
			}
			q := "INSERT INTO " + t.table + " (vessel_id, " + t.columns + ", " + mysqlCommon + ") VALUES " +
				placeholders(n, len(batch))
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				return fmt.Errorf("fleetfloor: %w", err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("fleetfloor: %w", err)
	}
	return nil
}

// Close closes the pool.
func (m *MySQL) Close() error { return m.db.Close() }
