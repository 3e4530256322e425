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
// at READ COMMITTED that first locks the vessel's row (SELECT … FOR
// UPDATE), creating it when needed: that lock serialises every receiver (or
// every outbox writer and publisher), in every process, working on the
// vessel. A callback error rolls the transaction back; so does a crash
// or a killed session, which the server rolls back. Deadlocks (1213) and
// lock wait timeouts (1205) are retried by re-running the whole callback, a
// bounded number of times; after that WithVessel returns an error wrapping
// sourcecatalog.ErrStoreUnavailable.
//
// Activation writes the inventory with batched multi-row statements.
package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

// Store is a finalize.Store on a MySQL/MariaDB database whose current
// schema holds the _v2 tables (see Migrate). It is safe for concurrent use.
type Store struct {
	db        *sql.DB
	retries   int
	batch     int
	retryable func(error) bool
}

var _ finalize.Store = (*Store)(nil)

// An Option configures a Store.
type Option func(*Store)

// WithRetries sets how many times a transaction that hit a deadlock or a
// lock wait timeout is re-run (default 8).
func WithRetries(n int) Option { return func(s *Store) { s.retries = n } }

// WithBatchSize sets how many rows one multi-row statement writes (default
// 500).
func WithBatchSize(n int) Option { return func(s *Store) { s.batch = max(1, n) } }

// WithRetryable replaces the classifier of transient errors; the default is
// IsRetryable.
func WithRetryable(f func(error) bool) Option { return func(s *Store) { s.retryable = f } }

// New returns a Store over db.
func New(db *sql.DB, opts ...Option) *Store {
	s := &Store{db: db, retries: 8, batch: 500, retryable: IsRetryable}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Error numbers of MySQL/MariaDB that ask the client to run the
// transaction again.
const (
	errLockWaitTimeout = 1205
	errDeadlock        = 1213
)

// IsRetryable reports whether err, or an error it wraps, is a MySQL/MariaDB
// deadlock (1213) or lock wait timeout (1205). It recognises any driver
// error type with an unsigned integer field named Number, as
// github.com/go-sql-driver/mysql's *MySQLError has, without importing the
// driver.
func IsRetryable(err error) bool {
	n, ok := ErrorNumber(err)
	return ok && (n == errDeadlock || n == errLockWaitTimeout)
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
	return s.retry(ctx, func() error {
		return transact(ctx, s.db, func(sqlTx *sql.Tx) error {
			t := &tx{s: s, tx: sqlTx, vessel: vesselID[:]}
			defer func() { t.done = true }()
			if err := t.lockVessel(ctx); err != nil {
				return err
			}
			return fn(t)
		})
	})
}

// retry runs attempt, one whole transaction, until it succeeds or fails
// with an error s.retryable does not accept; a deadlock or lock wait
// timeout runs it again after a short random backoff, at most s.retries
// more times, and then gives up with an error wrapping
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
		backoff := time.Duration(1+rand.IntN(1<<min(n, 6))) * time.Millisecond
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
	}
}

// transact runs body in one InnoDB transaction at READ COMMITTED and
// commits it when body returns nil. Otherwise, or when body panics, it
// rolls back and returns body's error unchanged.
func transact(ctx context.Context, db *sql.DB, body func(*sql.Tx) error) error {
	sqlTx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return fmt.Errorf("mysqlstore: begin: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			sqlTx.Rollback()
		}
	}()
	if err := body(sqlTx); err != nil {
		return err
	}
	if err := sqlTx.Commit(); err != nil {
		return fmt.Errorf("mysqlstore: commit: %w", err)
	}
	committed = true
	return nil
}
