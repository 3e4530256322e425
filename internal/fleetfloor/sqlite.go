package fleetfloor

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"

	"github.com/google/uuid"
	"github.com/ncruces/go-sqlite3/driver"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// sqliteBatch is the rows of one INSERT, as sqlitestore writes them.
const sqliteBatch = 256

// sqliteColumns are the columns of sqlitestore's items table.
const sqliteColumns = `vessel_id, kind, path, source_ref, record, first_seen_revision, first_seen_at_sec,
	first_seen_at_nsec, last_seen_revision, last_seen_at_sec, last_seen_at_nsec, currently_observed`

// SQLiteInventory is the Inventory of the SQLite floor: plain multi-row
// INSERTs into the empty items table of a file that sqlitestore created,
// over one connection in sqlitestore's journal mode (WAL,
// synchronous=FULL).
type SQLiteInventory struct {
	db   *sql.DB
	rows []row
}

var _ Inventory = (*SQLiteInventory)(nil)

// CreateSQLiteInventory creates the database at path with sqlitestore's
// schema (sqlitestore.Open, then Close) and opens it for the rows of
// records.
func CreateSQLiteInventory(ctx context.Context, path string, records []*catalog.Record) (*SQLiteInventory, error) {
	s, err := sqlitestore.Open(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("fleetfloor: %w", err)
	}
	if err := s.Close(); err != nil {
		return nil, fmt.Errorf("fleetfloor: %w", err)
	}
	db, err := driver.Open("file:" + (&url.URL{Path: path}).EscapedPath())
	if err != nil {
		return nil, fmt.Errorf("fleetfloor: %w", err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	for _, p := range []string{"PRAGMA busy_timeout = 5000", "PRAGMA journal_mode = WAL", "PRAGMA synchronous = FULL"} {
		if _, err := db.ExecContext(ctx, p); err != nil {
			db.Close()
			return nil, fmt.Errorf("fleetfloor: %s: %w", p, err)
		}
	}
	return &SQLiteInventory{db: db, rows: rowsOf(records)}, nil
}

// Snapshot implements Inventory.
func (s *SQLiteInventory) Snapshot(ctx context.Context, vessel uuid.UUID) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("fleetfloor: %w", err)
	}
	defer tx.Rollback()
	sec, nsec := seenAt.Unix(), seenAt.Nanosecond()
	for start := 0; start < len(s.rows); start += sqliteBatch {
		batch := s.rows[start:min(start+sqliteBatch, len(s.rows))]
		args := make([]any, 0, 12*len(batch))
		for _, r := range batch {
			args = append(args, vessel[:], int64(r.kind), r.path, r.sourceRef, r.record,
				seenRevision, sec, nsec, seenRevision, sec, nsec, 1)
		}
		q := "INSERT INTO items (" + sqliteColumns + ") VALUES " + placeholders(12, len(batch))
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("fleetfloor: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("fleetfloor: %w", err)
	}
	return nil
}

// Close closes the database.
func (s *SQLiteInventory) Close() error { return s.db.Close() }
