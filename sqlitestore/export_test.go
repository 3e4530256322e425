package sqlitestore

import (
	"context"
	"database/sql"
	"maps"
	"strings"

	"github.com/yachtmemory/sourcecatalog/finalize"
)

// SchemaVersion is the schema version this build writes; SchemaV1 is the
// script of version 1.
const SchemaVersion = schemaVersion

var SchemaV1 = schemaV1

// WithVFS opens the database through the registered SQLite VFS name
// instead of the operating system's files, with no lifetime lock.
func WithVFS(name string) Option { return func(c *config) { c.vfs = name } }

// IntegrityCheck runs PRAGMA integrity_check and returns its first line.
func (s *Store) IntegrityCheck(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var got string
	err := s.conn.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&got)
	return got, err
}

// Exec runs a statement outside any transaction of the Store.
func (s *Store) Exec(ctx context.Context, query string, args ...any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.conn.ExecContext(ctx, query, args...)
	return err
}

// QueryRow runs a query outside any transaction of the Store and scans
// its one row into dest.
func (s *Store) QueryRow(ctx context.Context, query string, dest ...any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn.QueryRowContext(ctx, query).Scan(dest...)
}

// FloorTable makes items_floor, an empty table of the shape of items.
func (s *Store) FloorTable(ctx context.Context) error {
	var ddl string
	for _, stmt := range statements(schemaV1) {
		if strings.HasPrefix(stmt, "CREATE TABLE items (") {
			ddl = strings.Replace(stmt, "CREATE TABLE items (", "CREATE TABLE items_floor (", 1)
		}
	}
	for _, q := range []string{"DROP TABLE IF EXISTS items_floor", ddl} {
		if err := s.Exec(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// FloorInsert writes items with plain multi-row INSERTs into items_floor,
// in one transaction: the floor of the activation benchmark.
func (s *Store) FloorInsert(ctx context.Context, vessel []byte, items []finalize.Item) error {
	return s.transact(ctx, func(q *sql.Conn) error {
		b := &base{s: s, q: q}
		return b.insertItems(ctx, "items_floor", "", vessel, items)
	})
}

// SchemaV2 is the script of version 2.
var SchemaV2 = schemaV2

// Damage is what Open finds wrong with a file of size bytes beginning
// with header, or "".
func Damage(header []byte, size int64) string { return damage(header, size) }

// Queued is how many calls wait in the Store's queue for a batch.
func (s *Store) Queued() int {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	return len(s.queue)
}

// WithJournal opens the file in the journal mode named: "wal" (the
// default), "truncate" (WithRollbackJournal), or "wal-exclusive" (WAL
// with SQLite's exclusive locking mode, to measure it).
func WithJournal(mode string) Option { return func(c *config) { c.journal = mode } }

// CachedBase reports whether the Store keeps a decoded index base of the
// vessel, of any stamp.
func (s *Store) CachedBase(vessel []byte) bool { return s.bases.Has(vessel) }

// Moved is the identity check the Store makes after each commit.
func (s *Store) Moved() error { return s.moved() }

// Stmts returns copies of the fixed and the sized statements the Store
// keeps prepared, by text.
func (s *Store) Stmts() (fixed, sized map[string]*sql.Stmt) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.stmts.fixed), maps.Clone(s.stmts.sized)
}

// MaxSizedStmts bounds the sized statements kept.
const MaxSizedStmts = maxSizedStmts

// SetFSType makes Open see the file system type that f returns instead of
// statfs's, until the returned function restores it.
func SetFSType(f func(dir string) (int64, bool, error)) (restore func()) {
	old := fsType
	fsType = f
	return func() { fsType = old }
}

// QueryInt runs a query of one integer outside any transaction of the
// Store and returns its answer.
func (s *Store) QueryInt(ctx context.Context, query string, args ...any) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	err := s.conn.QueryRowContext(ctx, query, args...).Scan(&n)
	return n, err
}

// PendingQueries are the queries of Tx.Pending and CountPending, with
// their parameters: vessel and limit, vessel.
var PendingQueries = map[string]int{entrySelect + pendingWhere: 2, countPendingQuery: 1}
