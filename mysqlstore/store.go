// Package mysqlstore implements finalize.Store (Store, the receiver) and
// outbox.Store (Outbox, the on-board side) on MySQL/MariaDB (InnoDB), with
// the _v2 schema in schema_v2.sql.
//
// It uses database/sql only; the integrator opens the *sql.DB with the
// driver of their choice (github.com/go-sql-driver/mysql in this module's
// tests and command). No DSN parameter is required.
//
// # Transactions
//
// Each WithVessel call, of Store as of Outbox, is one InnoDB transaction
// at READ COMMITTED, with autocommit off, that first writes the vessel's row
// (a random lock token), creating it when needed: that row lock serialises
// every receiver (or every outbox writer and publisher), in every process,
// working on the vessel. A callback error rolls the transaction back; so
// does a crash or a killed session, which the server rolls back. Before
// COMMIT the transaction reads its token back (or its last statement was a
// write conditioned on the token, which found it), so a transaction the
// server ended without telling the client commits nothing
// (ErrTransactionLost). A receive costs 7 statements: autocommit off with
// the transaction's isolation, the lock (which reads the vessel row back),
// one read of the snapshots and of the staged chunks' digests, the chunk
// and snapshot writes, COMMIT, autocommit on.
// Deadlocks (1213), lock wait timeouts (1205), Galera's node-not-ready
// (1047) and lost transactions are retried by re-running the whole
// callback, a bounded number of times; after that WithVessel returns an
// error wrapping sourcecatalog.ErrStoreUnavailable.
//
// # Errors
//
// WithVessel returns its callback's error unchanged. Every other error of
// the package wraps exactly one class of package sourcecatalog: a failed
// statement or connection, a lost transaction, corrupt stored bytes or a
// context done while retrying wrap ErrStoreUnavailable, with the driver's
// error (such as *mysql.MySQLError) as the cause; a connection without a
// schema, the production schema without the opt-in and tables of another
// shape (ErrNoSchema, ErrProductionSchema, *SchemaError) wrap
// ErrInvalidValue, since retrying cannot fix a configuration.
//
// # Galera
//
// On a MariaDB Galera cluster (detected from @@wsrep_on) every transaction
// starts with a causality wait, so it sees everything the cluster committed
// before it, through any node. Two transactions of one vessel on different
// nodes both write the vessel row, so the later one fails certification or
// is aborted by the applier, and is re-run. MariaDB 10.6 or later is needed
// (the schema's collation, SET STATEMENT, INSERT … RETURNING).
//
// Activation writes the inventory with batched multi-row statements, their
// values written in as literals (each statement within 1 MiB, far below
// any server's max_allowed_packet), and the record index as a base and a
// delta, so that a new document writes only the index entries it changes;
// the Store keeps the decoded index of a few vessels, so that an
// activation reads none of it (index.go).
package mysqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/internal/indexblob"
)

// Store is a finalize.Store on a MySQL/MariaDB database whose current
// schema holds the _v2 tables (see Migrate). It is safe for concurrent use.
type Store struct {
	db        *sql.DB
	retries   int
	batch     int
	retryable func(error) bool
	onRetry   func(number uint16)
	mode      galeraMode
	indexes   *indexblob.Cache[*storedIndex]                        // decoded record indexes, by stamp (index.go)
	hook      func(ctx context.Context, point hookPoint, q querier) // tests only
	galera    struct {
		mu      sync.Mutex
		decided bool
		on      bool
	}
}

type galeraMode uint8

const (
	galeraAuto galeraMode = iota
	galeraOn
	galeraOff
)

// hookPoint names where transact calls a test hook.
type hookPoint uint8

const (
	hookLocked  hookPoint = iota // the vessel lock is taken
	hookChecked                  // the transaction is checked, COMMIT is next
)

var _ finalize.Store = (*Store)(nil)

// An Option configures a Store.
type Option func(*Store)

// WithRetries sets how many times a transaction that hit a retryable error
// (see IsRetryable) is re-run (default 8, about a quarter of a second of
// backoff in all; a Galera node that is rejoining may need 30 or more).
func WithRetries(n int) Option { return func(s *Store) { s.retries = n } }

// WithBatchSize sets how many rows one multi-row statement writes (default
// 500).
func WithBatchSize(n int) Option { return func(s *Store) { s.batch = max(1, n) } }

// WithRetryable replaces the classifier of transient errors; the default is
// IsRetryable.
func WithRetryable(f func(error) bool) Option { return func(s *Store) { s.retryable = f } }

// WithRetryObserver calls f with the server error number (0 when none)
// before each re-run of a transaction, for metrics.
func WithRetryObserver(f func(number uint16)) Option { return func(s *Store) { s.onRetry = f } }

// WithGalera forces the Store's Galera measures on or off: a causality
// wait as each transaction starts (wsrep_sync_wait), and the check after
// COMMIT that the transaction's write set was replicated (see transact). By
// default the Store asks the server once whether wsrep is on and uses them
// exactly then.
func WithGalera(on bool) Option {
	return func(s *Store) {
		s.mode = galeraOff
		if on {
			s.mode = galeraOn
		}
	}
}

// New returns a Store over db.
func New(db *sql.DB, opts ...Option) *Store {
	s := &Store{db: db, retries: 8, batch: 500, retryable: IsRetryable, indexes: newIndexCache()}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Error numbers of MySQL/MariaDB that ask the client to run the
// transaction again.
const (
	errLockWaitTimeout = 1205
	errDeadlock        = 1213 // also a Galera certification failure at COMMIT
	errWsrepNotReady   = 1047 // a Galera node that is not synced
)

// IsRetryable reports whether err, or an error it wraps, asks for the
// transaction to be run again: a deadlock (1213, which Galera also reports
// when a transaction loses certification at COMMIT), a lock wait timeout
// (1205), a Galera node not yet ready for application use (1047), or
// ErrTransactionLost. It recognises any driver error type with an unsigned
// integer field named Number, as github.com/go-sql-driver/mysql's
// *MySQLError has, without importing the driver.
func IsRetryable(err error) bool {
	n, ok := ErrorNumber(err)
	return ok && (n == errDeadlock || n == errLockWaitTimeout || n == errWsrepNotReady) ||
		errors.Is(err, ErrTransactionLost)
}

// ErrorNumber returns the server error number carried by err or an error it
// wraps, found as an unsigned integer field named Number.
func ErrorNumber(err error) (uint16, bool) {
	for err != nil {
		v := reflect.ValueOf(err)
		for v.Kind() == reflect.Pointer && !v.IsNil() {
			v = v.Elem()
		}
		if v.Kind() == reflect.Struct {
			if f := v.FieldByName("Number"); f.IsValid() && f.CanUint() {
				return uint16(f.Uint()), true
			}
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, inner := range j.Unwrap() {
				if n, ok := ErrorNumber(inner); ok {
					return n, true
				}
			}
			return 0, false
		}
		err = errors.Unwrap(err)
	}
	return 0, false
}

// WithVessel implements finalize.Store.
func (s *Store) WithVessel(ctx context.Context, vesselID uuid.UUID, fn func(finalize.Tx) error) error {
	var t *tx
	err := s.retry(ctx, func() error {
		t = &tx{s: s, vessel: vesselID[:]}
		return s.transact(ctx, vesselsTable, vesselID[:], vesselColumns, t.row.dest(), func(c *txConn) error {
			t.tx, t.conn = c, c
			defer func() { t.done = true }()
			if err := t.lockedRow(); err != nil {
				return err
			}
			if err := fn(t); err != nil {
				return err
			}
			return t.writeStamp(ctx)
		})
	})
	if err == nil && t.cache != nil {
		s.indexes.Put(t.vessel, t.row.stamp.Int64, t.cache.size(), t.cache)
	}
	return err
}

// retry runs attempt, one whole transaction, until it succeeds or fails
// with an error s.retryable does not accept; a retryable error runs it again
// after a random backoff that doubles up to half a second, at most
// s.retries more times, and then gives up with an error wrapping
// sourcecatalog.ErrStoreUnavailable. Every store of the package runs its
// transactions through it.
func (s *Store) retry(ctx context.Context, attempt func() error) error {
	for n := 0; ; n++ {
		err := attempt()
		if err == nil || !s.retryable(err) {
			return err
		}
		if n >= s.retries {
			return sourcecatalog.Wrap(sourcecatalog.ErrStoreUnavailable, fmt.Errorf("mysqlstore: gave up after %d attempts: %w", n+1, err))
		}
		if s.onRetry != nil {
			number, _ := ErrorNumber(err)
			s.onRetry(number)
		}
		backoff := time.Duration(1+rand.IntN(1<<min(n, 9))) * time.Millisecond // up to 0.5 s
		select {
		case <-ctx.Done():
			return sourcecatalog.Wrap(sourcecatalog.ErrStoreUnavailable, ctx.Err())
		case <-time.After(backoff):
		}
	}
}

// querier runs the statements of one transaction (a *sql.Conn inside
// transact).
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// ErrTransactionLost reports that the server ended a transaction before
// its COMMIT without telling the client, so that the statements after that
// point ran outside it. A Galera node does this to a local transaction that
// a replicated one aborts while the transaction's statement is finishing.
// transact finds out, commits nothing of it, and the transaction is
// retried like a deadlock (IsRetryable reports true). It wraps
// sourcecatalog.ErrStoreUnavailable.
var ErrTransactionLost error = sourcecatalog.Errorf(sourcecatalog.ErrStoreUnavailable,
	"mysqlstore: the server ended the transaction before COMMIT")

// transact runs body in one InnoDB transaction at READ COMMITTED that holds
// the write lock on the vessel's row of table (creating the row when
// needed), and commits it when body returns nil. Otherwise, or when body
// panics, nothing body wrote is committed, and body's error is returned
// unchanged unless the transaction was lost (below), when it is reported
// under ErrTransactionLost. The statement that takes the lock also reads
// the row's columns named by returning (a comma-separated list, or "")
// into dest, before body runs.
//
// The transaction runs with autocommit off and takes the lock by writing a
// random token into the vessel row; before COMMIT it reads the token back.
// A server that silently ended the transaction has rolled the token back,
// so the check fails, the statements that ran after the loss (held in a new
// implicit transaction, since autocommit is off) are rolled back too, and
// transact returns ErrTransactionLost. Were autocommit on, each of those
// statements would have committed on its own, outside the vessel lock.
//
// When the body's last statement was itself conditioned on the token and
// found it (a txConn confirmed it), that statement did the check, and no
// other is needed.
//
// Around body the transaction costs three statements: one SET that turns
// autocommit off and sets the isolation of the next transaction only (the
// session's own level is left as it is), COMMIT or ROLLBACK, and the SET
// that turns autocommit back on. The lock statement opens the transaction
// (autocommit is off), so no START TRANSACTION is needed but on Galera.
//
// On Galera two more measures apply. The transaction starts with a
// causality wait (wsrep_sync_wait = 1 for START TRANSACTION; a wait set
// inside a transaction is ignored): the node first applies everything the
// cluster committed before, so a chunk staged through one node is seen by
// a finalize through another. And a loss during the token check itself
// would leave COMMIT committing an empty implicit transaction, so after
// COMMIT the session's last written GTID must have moved on; if it has not,
// nothing was committed and transact returns ErrTransactionLost. Writes
// need no causality wait: of two transactions of a vessel on different
// nodes, both write the vessel row, and the later one fails certification
// or is aborted by the applier.
//
// The connection goes back to the pool in autocommit mode with no
// transaction open, or is discarded.
func (s *Store) transact(ctx context.Context, table string, vessel []byte, returning string, dest []any, body func(*txConn) error) error {
	// Decide before taking a connection: the first decision queries the
	// server on a connection of its own.
	galera := s.isGalera(ctx)
	begin := []string{beginStatement}
	check := "SELECT lock_token, '' FROM " + table + " WHERE vessel_id = ?"
	if galera {
		begin = append(begin, "SET STATEMENT wsrep_sync_wait = 1 FOR START TRANSACTION")
		check = "SELECT lock_token, WSREP_LAST_WRITTEN_GTID() FROM " + table + " WHERE vessel_id = ?"
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return wrap("connect", err)
	}
	reusable := false
	defer func() {
		if !reusable {
			// The server rolls back whatever is open when it closes.
			conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		conn.Close()
	}()
	// end finishes the transaction with stmt (COMMIT or ROLLBACK) and
	// restores autocommit; the connection is reusable only when both
	// succeed. After a failed stmt the connection is discarded as it is:
	// restoring autocommit would commit a transaction left open. COMMIT
	// waits as long as ctx allows (on Galera it may wait for the applier);
	// a ROLLBACK, which closing the connection can replace, runs even when
	// ctx is done. end returns the error of stmt.
	end := func(stmt string) error {
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		run := cleanup
		if stmt == "COMMIT" {
			run = ctx
		}
		if _, err := conn.ExecContext(run, stmt); err != nil {
			return err
		}
		_, err := conn.ExecContext(cleanup, endStatement)
		reusable = err == nil
		return nil
	}
	for _, stmt := range begin {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			end("ROLLBACK")
			return wrap("begin", err)
		}
	}
	token, err := lockRow(ctx, conn, table, vessel, returning, dest)
	if err != nil {
		end("ROLLBACK")
		return wrap("lock vessel", err)
	}
	s.runHook(ctx, hookLocked, conn)
	// held reports whether the transaction is still the one that took the
	// lock, and the GTID of the session's last write set before it.
	var gtid string
	held := func() error {
		var got int64
		err := conn.QueryRowContext(ctx, inline(check, vessel)).Scan(&got, &gtid)
		if err == nil && got != token || errors.Is(err, sql.ErrNoRows) {
			err = ErrTransactionLost // the token, or the row this transaction made, is gone
		}
		return wrap("check transaction", err)
	}
	c := &txConn{Conn: conn, token: token, confirmed: -1}
	if err := body(c); err != nil {
		// An error read from a lost transaction's leftovers means nothing:
		// report the loss, which is retried.
		if !s.retryable(err) && errors.Is(held(), ErrTransactionLost) {
			err = fmt.Errorf("%w (the callback then failed: %v)", ErrTransactionLost, err)
		}
		end("ROLLBACK")
		return err
	}
	// A last statement that found the token did the check (off Galera,
	// which needs the GTID that the check reads).
	if galera || c.confirmed != c.statements {
		if err := held(); err != nil {
			end("ROLLBACK")
			return err
		}
	}
	s.runHook(ctx, hookChecked, conn)
	if err := end("COMMIT"); err != nil {
		return wrap("commit", err)
	}
	if galera {
		var after string
		if err := conn.QueryRowContext(ctx, "SELECT WSREP_LAST_WRITTEN_GTID()").Scan(&after); err != nil {
			reusable = false
			return wrap("check commit", err)
		}
		if after == gtid {
			return wrap("check commit", ErrTransactionLost)
		}
	}
	return nil
}

// A txConn is the connection of a transaction as its body sees it. It
// counts the statements run through it, and a statement that is
// conditioned on the vessel row holding the transaction's token, and found
// it, marks itself confirmed: when it is the last statement before COMMIT,
// it has done the token check (see transact), and transact skips it.
type txConn struct {
	*sql.Conn
	token      int64 // the transaction's token in the vessel row
	statements int   // statements run
	confirmed  int   // the number of the last statement that found the token, or -1
}

func (c *txConn) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	c.statements++
	return c.Conn.ExecContext(ctx, query, args...)
}

func (c *txConn) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	c.statements++
	return c.Conn.QueryContext(ctx, query, args...)
}

func (c *txConn) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	c.statements++
	return c.Conn.QueryRowContext(ctx, query, args...)
}

// confirm records that the statement just run found the token.
func (c *txConn) confirm() { c.confirmed = c.statements }

// beginStatement turns autocommit off and sets the isolation level of the
// next transaction (@@tx_isolation without a scope, as SET TRANSACTION
// does), in one statement; endStatement turns autocommit on again.
const (
	beginStatement = "SET @@autocommit = 0, @@tx_isolation = 'READ-COMMITTED'"
	endStatement   = "SET @@autocommit = 1"
)

func (s *Store) runHook(ctx context.Context, point hookPoint, q querier) {
	if s.hook != nil {
		s.hook(ctx, point, q)
	}
}

// lockRow write-locks the vessel's row in table, inserting it first when
// it does not exist, writes a random token into it and returns the token;
// the same statement reads the row's columns named by returning (after the
// write) into dest. The lock is a write, not SELECT … FOR UPDATE: on Galera
// a row lock is local to its node, but a written row is in the
// transaction's write set, so two transactions of one vessel on different
// nodes always conflict. The token always changes the row: a drawn token
// equal to the row's (a 2⁻⁶³ chance) is written negated.
func lockRow(ctx context.Context, q querier, table string, vessel []byte, returning string, dest []any) (int64, error) {
	token := rand.Int64() | 1 // never the column's default, 0
	cols := "lock_token"
	if returning != "" {
		cols += ", " + returning
	}
	var got int64
	err := q.QueryRowContext(ctx, inline("INSERT INTO "+table+" (vessel_id, lock_token) VALUES (?, ?)"+
		" ON DUPLICATE KEY UPDATE lock_token = IF(lock_token = ?, -?, ?) RETURNING "+cols,
		vessel, token, token, token, token)).Scan(append([]any{&got}, dest...)...)
	return got, err
}

// isGalera reports whether transactions take the Galera measures: as
// configured, or, by default, whether the server runs wsrep.
func (s *Store) isGalera(ctx context.Context) bool {
	switch s.mode {
	case galeraOn:
		return true
	case galeraOff:
		return false
	}
	s.galera.mu.Lock()
	defer s.galera.mu.Unlock()
	if !s.galera.decided {
		var on sql.NullInt64
		err := s.db.QueryRowContext(ctx, "SELECT @@global.wsrep_on").Scan(&on)
		n, isServerError := ErrorNumber(err)
		switch {
		case err == nil:
			s.galera.on, s.galera.decided = on.Valid && on.Int64 == 1, true
		case isServerError && n != errWsrepNotReady:
			// Servers without wsrep support refuse the variable: not Galera.
			s.galera.decided = true
		}
		// Otherwise (no connection, a node not ready) decide next time; a
		// transaction now would fail anyway.
	}
	return s.galera.on
}
