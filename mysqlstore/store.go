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
	"sync"
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
	onRetry   func(number uint16)
	causal    causalMode
	galera    struct {
		mu      sync.Mutex
		decided bool
		on      bool
	}
}

type causalMode uint8

const (
	causalAuto causalMode = iota
	causalOn
	causalOff
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

// WithCausalReads forces causal reads on Galera (wsrep_sync_wait) on or off.
// By default the Store asks the server once whether wsrep is on and uses
// causal reads exactly then.
func WithCausalReads(on bool) Option {
	return func(s *Store) {
		s.causal = causalOff
		if on {
			s.causal = causalOn
		}
	}
}

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
	errDeadlock        = 1213 // also a Galera certification failure at COMMIT
	errWsrepNotReady   = 1047 // a Galera node that is not synced
)

// IsRetryable reports whether err, or an error it wraps, asks for the
// transaction to be run again: a deadlock (1213, which Galera also reports
// when a transaction loses certification at COMMIT), a lock wait timeout
// (1205), or a Galera node not yet ready for application use (1047). It
// recognises any driver error type with an unsigned integer field named
// Number, as github.com/go-sql-driver/mysql's *MySQLError has, without
// importing the driver.
func IsRetryable(err error) bool {
	n, ok := ErrorNumber(err)
	return ok && (n == errDeadlock || n == errLockWaitTimeout || n == errWsrepNotReady)
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
		return s.transact(ctx, func(sqlTx *sql.Tx) error {
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
			return ctx.Err()
		case <-time.After(backoff):
		}
	}
}

// transact runs body in one InnoDB transaction at READ COMMITTED and
// commits it when body returns nil. Otherwise, or when body panics, it
// rolls back and returns body's error unchanged. On Galera the transaction
// reads causally (wsrep_sync_wait = 1): its first read waits until this
// node has applied every transaction the cluster committed before it, so a
// chunk staged through one node is seen by a finalize through another.
// Writes need no such wait: certification orders them, and a write based
// on a stale read fails at COMMIT with 1213, which re-runs the callback.
func (s *Store) transact(ctx context.Context, body func(*sql.Tx) error) error {
	// Decide before taking a connection: the first decision queries the
	// server on a connection of its own.
	causal := s.causalReads(ctx)
	sqlTx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return fmt.Errorf("mysqlstore: begin: %w", err)
	}
	if causal {
		if _, err := sqlTx.ExecContext(ctx, "SET SESSION wsrep_sync_wait = 1"); err != nil {
			sqlTx.Rollback()
			return fmt.Errorf("mysqlstore: causal reads: %w", err)
		}
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

// causalReads reports whether transactions must set wsrep_sync_wait: as
// configured, or, by default, whether the server runs wsrep.
func (s *Store) causalReads(ctx context.Context) bool {
	switch s.causal {
	case causalOn:
		return true
	case causalOff:
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
