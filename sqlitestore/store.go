package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/driver"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/internal/indexblob"
)

// Store is a finalize.Store over one SQLite database file; Outbox returns
// the outbox.Store over the same file. It is safe for concurrent use: its
// transactions, of any vessel and of both sides, run on one connection,
// the calls made while a transaction runs batched into the next one and
// committed together (see transact).
type Store struct {
	path string
	cfg  config

	qmu   sync.Mutex
	queue []*call // calls waiting for a batch, oldest first

	// The fields below are the connection's: used by the coordinator of a
	// batch, by the callback it lets run, and by Ping and Close, which hold
	// the turn.
	mu         turn // held for a whole batch, and by Ping and Close
	db         *sql.DB
	conn       *sql.Conn   // the only connection
	stmts      stmtCache   // prepared statements of conn
	batchBytes int         // bytes of statement arguments written in the running batch
	lock       *os.File    // the lifetime lock; nil for a test VFS
	file       os.FileInfo // the identity of the database file opened; nil for a test VFS
	poisoned   error       // the failure that poisoned the handle
	closed     bool

	bases *indexblob.Cache[[]finalize.IndexEntry] // decoded record index bases, by stamp
}

var _ finalize.Store = (*Store)(nil)

type config struct {
	busy      time.Duration
	exclusive bool
	readOnly  bool
	vfs       string // a registered test VFS; "" for the operating system's files
	journal   string // "" for WAL (the default), "truncate" for the rollback journal, "wal-exclusive" in the tests
	existing  bool   // refuse a missing or empty file instead of creating one
	// first, when not nil, is the file a Source opened first: Open
	// refuses another (a reopen), and creates none.
	first os.FileInfo
}

// wal reports whether the journal is a WAL.
func (c config) wal() bool { return c.journal == "" || strings.HasPrefix(c.journal, "wal") }

// An Option configures Open.
type Option func(*config)

// maxBusyTimeout bounds WithBusyTimeout.
const maxBusyTimeout = 10 * time.Minute

// WithBusyTimeout sets how long a transaction waits for another process's
// write lock before it fails with ErrLocked (default 5 s), counted from
// the call: time spent behind this Store's own transactions counts, so
// calls queued behind one that waits for the lock fail with it, not one
// after another. Zero fails at once; Open refuses a negative duration or
// one over ten minutes.
func WithBusyTimeout(d time.Duration) Option { return func(c *config) { c.busy = d } }

// WithExclusiveLock makes the Store the file's sole owner for its lifetime:
// Open fails with ErrLocked if any other Store has the file open, and any
// other Open, from any process, fails at once with ErrLocked until Close.
func WithExclusiveLock() Option { return func(c *config) { c.exclusive = true } }

// WithExistingFile opens only a database that exists: Open refuses with
// ErrInvalidFile a path that names no file, or an empty one, instead of
// creating the database there (the file's directory entry is not
// recreated even if it vanishes while Open runs). A service that must not
// start over on an empty store when its file is missing — a volume not
// mounted, a file removed — opens it so, and creates it once, at its
// first start, without.
func WithExistingFile() Option { return func(c *config) { c.existing = true } }

// WithReadOnly opens the file for reading only, as an operator's status
// does: Open creates nothing and migrates nothing — a path that does not
// exist, an empty file or an older schema version is refused with
// ErrInvalidFile — and SQLite opens the file read-only, so nothing is
// written to it. Its transactions take no write lock; one that writes
// fails with an error of class ErrStoreUnavailable that does not poison
// the handle. A transaction that a crash cut short (a hot journal) cannot
// be rolled back read-only: Open fails until a read-write Open has done
// so.
func WithReadOnly() Option { return func(c *config) { c.readOnly = true } }

// WithRollbackJournal keeps the database in a rollback journal
// (journal_mode=TRUNCATE) instead of the default WAL: for a file that
// processes on more than one host open, or on a file system that cannot
// share the WAL index (Open refuses WAL there with ErrNetworkFileSystem).
// It costs about five syncs a commit where WAL costs two (see the package
// documentation).
func WithRollbackJournal() Option { return func(c *config) { c.journal = "truncate" } }

// Close releases the database and the lifetime lock. A transaction still
// running finishes first. Close is idempotent; every call after it fails
// with ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var err error
	if s.cfg.wal() && !s.cfg.readOnly && s.poisoned == nil {
		err = s.checkpointAll()
	}
	err = errors.Join(err, s.stmts.close(), s.conn.Close(), s.db.Close())
	if s.lock != nil {
		err = errors.Join(err, releaseLock(s.lock))
	}
	if err != nil {
		return sourcecatalog.Wrap(sourcecatalog.ErrStoreUnavailable, fmt.Errorf("sqlitestore: close %s: %w", s.path, err))
	}
	return nil
}

// checkpointAll copies the whole WAL into the database file and truncates
// the WAL to zero bytes (a TRUNCATE checkpoint), so that the file closed
// is the whole database, even while another process has it open (when
// none has, SQLite's close would also do it, and delete the WAL). Another
// process reading or writing the file at that moment makes the
// checkpoint give up at once, not an error: the WAL stays, whole, and
// the last connection to close copies it. s.mu is held.
func (s *Store) checkpointAll() error {
	err := s.conn.Raw(func(c any) error {
		raw := c.(driver.Conn).Raw()
		if err := raw.BusyTimeout(0); err != nil {
			return err
		}
		_, _, err := raw.WALCheckpoint("main", sqlite3.CHECKPOINT_TRUNCATE)
		return err
	})
	if err == nil || busy(err) {
		return nil
	}
	return err
}

// usable returns why the Store cannot run a transaction, or nil. s.mu is
// held.
func (s *Store) usable() error {
	switch {
	case s.closed:
		return ErrClosed
	case s.poisoned != nil:
		return fmt.Errorf("%w (by: %w)", ErrPoisoned, s.poisoned)
	}
	return nil
}

// poison records the first failure that leaves the file's state in doubt.
// s.mu is held.
func (s *Store) poison(err error) {
	if s.poisoned == nil {
		s.poisoned = err
	}
}

// classify classes the error of a statement of the running transaction.
// On a read-only Store, a write is refused without poisoning the handle.
func (s *Store) classify(ctx context.Context, op string, err error) error {
	if s.cfg.readOnly && isCode(err, sqlite3.READONLY) && !errors.Is(err, sqlite3.READONLY_ROLLBACK) {
		return fmt.Errorf("sqlitestore: %s: %w: %w", op, errReadOnly, err)
	}
	return classify(ctx, op, err, s.poison)
}

// begin runs BEGIN IMMEDIATE, waiting for another process's write lock
// for the busy timeout less waited, the time the call spent behind the
// Store's own transactions (at least one try), and returns its classified
// error. So a transaction queued behind one that waits for the lock waits
// beside it, not after it: while another process holds the file, every
// call fails with ErrLocked one busy timeout after it was made, however
// many were queued. The transaction's statements, COMMIT included, have
// the whole busy timeout again; if it cannot be restored the Store is
// poisoned.
func (s *Store) begin(ctx context.Context, waited time.Duration) error {
	if waited >= time.Millisecond {
		if err := s.setBusyTimeout(max(0, s.cfg.busy-waited)); err != nil {
			return s.classify(ctx, "begin", err)
		}
		defer func() {
			if err := s.setBusyTimeout(s.cfg.busy); err != nil {
				s.poison(err)
			}
		}()
	}
	begin := "BEGIN IMMEDIATE"
	if s.cfg.readOnly {
		begin = "BEGIN" // takes the shared lock at its first read
	}
	_, err := s.conn.ExecContext(ctx, begin)
	return s.classify(ctx, "begin", err)
}

// setBusyTimeout sets how long the connection's statements wait for
// another process's lock.
func (s *Store) setBusyTimeout(d time.Duration) error {
	return s.conn.Raw(func(c any) error { return c.(driver.Conn).Raw().BusyTimeout(d) })
}

// rollback ends the open transaction, if SQLite has not already ended it
// (as it does after some errors); a failed ROLLBACK poisons the Store.
func (s *Store) rollback() {
	if !s.inTransaction() {
		return
	}
	if _, err := s.conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		s.poison(storageFailure(err))
	}
}

// WithVessel implements finalize.Store. It returns fn's error unchanged;
// ErrLocked when the write lock stays taken for the busy timeout;
// ErrPoisoned, ErrClosed, or an error wrapping ErrPoisoned when the commit
// fails.
func (s *Store) WithVessel(ctx context.Context, vesselID uuid.UUID, fn func(finalize.Tx) error) error {
	var t *tx
	err := s.transact(ctx, func(q *sql.Conn) error {
		t = &tx{base: base{s: s, q: q}, vessel: vesselID[:]}
		defer func() { t.done = true }()
		if err := t.readVessel(ctx); err != nil {
			return err
		}
		if err := fn(t); err != nil {
			return err
		}
		return t.err // a failed statement whose error fn dropped
	})
	if err == nil && t.newBase != nil {
		s.bases.Put(t.vessel, t.index.stamp, len(t.newBase), t.newBase)
	}
	return err
}
