package sqlitestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/driver"
	"github.com/yachtmemory/sourcecatalog"
)

// Open opens the database file at path, creating it (and its schema) when
// absent, and migrating an older schema version; WithReadOnly opens an
// existing file without either. The path must name a regular file or
// nothing; see the package documentation for what it refuses with
// ErrInvalidFile, among which a file cut short or otherwise damaged in its
// structure. Every check is made before anything is written to the file.
// Open fails with ErrLocked when the lifetime lock is held against it
// (WithExclusiveLock), or when another process holds the write lock for
// the busy timeout while Open checks the file, and with an error wrapping
// ErrDiskFull when creating or migrating the schema finds the disk full.
// Every other failure wraps sourcecatalog.ErrStoreUnavailable.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	cfg := config{busy: 5 * time.Second}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.busy < 0 || cfg.busy > maxBusyTimeout {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, fmt.Sprintf("sqlitestore: busy timeout %v outside 0 to %v", cfg.busy, maxBusyTimeout))
	}
	if path == "" {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "sqlitestore: empty database path")
	}
	s := &Store{path: path, cfg: cfg, bases: newBaseCache()}
	created := false
	if cfg.vfs == "" {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, unavailable("open", path, err)
		}
		s.path = abs
		if created, err = checkPath(abs); err != nil {
			return nil, err
		}
		if created && cfg.first != nil {
			return nil, fileChanged(abs, "removed or moved away")
		}
		if created {
			if err := checkNoLog(abs); err != nil {
				return nil, err
			}
		}
		switch {
		case created && cfg.readOnly:
			return nil, invalid(abs, "no such file (a read-only open creates nothing)")
		case created && cfg.existing:
			return nil, invalid(abs, "no such file (WithExistingFile creates nothing)")
		}
		if cfg.wal() {
			if err := checkLocalFS(abs); err != nil {
				return nil, err
			}
		}
		if s.lock, err = lifetimeLock(abs+".lock", cfg.exclusive); err != nil {
			return nil, err
		}
	}
	if err := s.connect(ctx); err != nil {
		s.release()
		return nil, err
	}
	if err := s.sameFile(cfg.first); err != nil {
		s.release()
		return nil, err
	}
	if err := s.setJournal(ctx); err != nil {
		s.release()
		return nil, err
	}
	if err := s.migrate(ctx); err != nil {
		s.release()
		return nil, err
	}
	if created {
		// The new file's directory entry must be durable before any commit
		// in it is acknowledged.
		if err := syncDir(filepath.Dir(s.path)); err != nil {
			s.release()
			return nil, unavailable("sync the directory of", s.path, err)
		}
	}
	return s, nil
}

// unavailable wraps a failure of Open or Close; one for want of space
// wraps ErrDiskFull.
func unavailable(op, path string, err error) error {
	if full(err) {
		return fmt.Errorf("sqlitestore: %s %s: %w: %w", op, path, ErrDiskFull, err)
	}
	return sourcecatalog.Wrap(sourcecatalog.ErrStoreUnavailable, fmt.Errorf("sqlitestore: %s %s: %w", op, path, err))
}

// invalid reports a path that is not a database of this schema.
func invalid(path, why string) error {
	return fmt.Errorf("sqlitestore: %s: %s: %w", path, why, ErrInvalidFile)
}

// checkPath reports whether path is absent (so Open creates it), or fails
// with ErrInvalidFile when it is not a regular file. SQLite opens the file
// without following symlinks too, so one swapped in later is refused.
func checkPath(path string) (absent bool, err error) {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true, nil
	case err != nil:
		return false, unavailable("stat", path, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return false, invalid(path, "a symlink")
	case fi.IsDir():
		return false, invalid(path, "a directory")
	case !fi.Mode().IsRegular():
		return false, invalid(path, "not a regular file")
	}
	return false, nil
}

// checkNoLog fails with ErrInvalidFile when a non-empty WAL or rollback
// journal lies beside the missing database file at path: it holds
// commits of a database that was removed or moved away without it, and
// SQLite would delete it on opening a new, empty database there. The
// operator restores the database, or removes the log knowingly.
func checkNoLog(path string) error {
	for _, suffix := range []string{"-wal", "-journal"} {
		fi, err := os.Lstat(path + suffix)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return unavailable("stat", path+suffix, err)
		case !fi.Mode().IsRegular() || fi.Size() > 0:
			return invalid(path, fmt.Sprintf("no such file, but its log %s is there (%d bytes): restore the database beside it, or remove the log", filepath.Base(path+suffix), fi.Size()))
		}
	}
	return nil
}

// syncDir makes the entries of directory dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// connect opens the one connection, sets the busy timeout, checks the
// file (checkFile) and sets the durability settings, checking that SQLite
// took them.
func (s *Store) connect(ctx context.Context) error {
	q := url.Values{}
	q.Set("vfs", wrappedVFS(s.cfg.vfs))
	switch {
	case s.cfg.readOnly:
		q.Set("mode", "ro")
	case s.cfg.existing || s.cfg.first != nil:
		q.Set("mode", "rw") // SQLite creates no file
	}
	dsn := "file:" + (&url.URL{Path: s.path}).EscapedPath() + "?" + q.Encode()
	db, err := driver.Open(dsn)
	if err != nil {
		return unavailable("open", s.path, err)
	}
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return unavailable("open", s.path, err)
	}
	s.db, s.conn = db, conn
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", s.cfg.busy.Milliseconds())); err != nil {
		return unavailable("configure", s.path, err)
	}
	// Before any statement that reads the file, the file is checked.
	if err := s.checkFile(ctx); err != nil {
		return err
	}
	if err := s.identify(); err != nil {
		return unavailable("identify", s.path, err)
	}
	if s.cfg.readOnly {
		// Nothing is written, so the journal settings do not matter; the
		// connection refuses writes besides the file being opened
		// read-only.
		if _, err := conn.ExecContext(ctx, "PRAGMA query_only = 1"); err != nil {
			return unavailable("configure", s.path, err)
		}
		return nil
	}
	return s.apply(ctx, s.durability())
}

// apply makes each setting, checking that SQLite took it.
func (s *Store) apply(ctx context.Context, settings []setting) error {
	for _, p := range settings {
		var got string
		if _, err := s.conn.ExecContext(ctx, p.set); err != nil {
			return s.openError(ctx, "configure", err)
		}
		if err := s.conn.QueryRowContext(ctx, p.get).Scan(&got); err != nil {
			return s.openError(ctx, "configure", err)
		}
		if got != p.want {
			return unavailable("configure", s.path, fmt.Errorf("%s is %q, not %q", p.get, got, p.want))
		}
	}
	return nil
}

// setJournal sets the journal mode of a read-write Store, once the file
// is known to be a database of this package (or empty): switching to WAL
// writes the file's header, which must not happen to a file Open
// refuses. The schema check is made again by migrate, in its
// transaction.
func (s *Store) setJournal(ctx context.Context) error {
	if s.cfg.readOnly {
		return nil
	}
	st, err := readState(ctx, s.conn)
	if err != nil {
		return s.openError(ctx, "read the schema of", err)
	}
	if _, err := s.check(st); err != nil {
		return err
	}
	return s.apply(ctx, s.journal())
}

// A setting is a statement connect runs, the statement that reads the
// setting back, and the value it must read.
type setting struct{ set, get, want string }

// durability is the settings connect makes: synchronous=FULL (see the
// package documentation), and SQLite's exclusive locking mode for
// "wal-exclusive". None writes the file.
func (s *Store) durability() []setting {
	settings := []setting{{"PRAGMA synchronous = FULL", "PRAGMA synchronous", "2"}}
	if s.cfg.journal == "wal-exclusive" {
		settings = append(settings, setting{"PRAGMA locking_mode = EXCLUSIVE", "PRAGMA locking_mode", "exclusive"})
	}
	return settings
}

// journal is the journal mode setJournal sets: WAL, or TRUNCATE under
// WithRollbackJournal (see the package documentation; both are measured
// by BenchmarkJournalModes and proven at every cut point).
func (s *Store) journal() []setting {
	if s.cfg.wal() {
		return []setting{{"PRAGMA journal_mode = WAL", "PRAGMA journal_mode", "wal"}}
	}
	return []setting{{"PRAGMA journal_mode = TRUNCATE", "PRAGMA journal_mode", "truncate"}}
}

// openError classes a failure of Open's statements: a file that is not a
// database is invalid, contention is ErrLocked, anything else unavailable.
func (s *Store) openError(ctx context.Context, op string, err error) error {
	switch {
	case isNotADB(err):
		return invalid(s.path, "not an SQLite database")
	case errors.Is(err, sqlite3.READONLY_ROLLBACK):
		return unavailable(op, s.path, fmt.Errorf("a transaction cut short (a hot journal) must be rolled back first, which a read-only open cannot do: open it read-write once: %w", err))
	case busy(err):
		return fmt.Errorf("sqlitestore: %s %s: %w: %w", op, s.path, ErrLocked, err)
	case ctx.Err() != nil:
		return fmt.Errorf("sqlitestore: %s %s: %w", op, s.path, ctx.Err())
	}
	return unavailable(op, s.path, err)
}

// release undoes a failed Open. In WAL mode SQLite's last connection to
// close would checkpoint the WAL into the file and delete it: the
// connection is told not to, so that a refused file is left as it was.
func (s *Store) release() {
	if s.conn != nil {
		s.conn.Raw(func(c any) error {
			_, err := c.(driver.Conn).Raw().Config(sqlite3.DBCONFIG_NO_CKPT_ON_CLOSE, true)
			return err
		})
		s.conn.Close()
	}
	if s.db != nil {
		s.db.Close()
	}
	if s.lock != nil {
		releaseLock(s.lock)
	}
}
