package sqlitestore

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/ncruces/go-sqlite3"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/storeheal"
)

// Errors of the package. Each wraps sourcecatalog.ErrStoreUnavailable, the
// class of a store that cannot serve: the call changed nothing, and what
// to do next depends on which of them it is.
var (
	// ErrLocked: another process holds the database: its lifetime lock
	// (WithExclusiveLock) at Open, or SQLite's write lock for longer than
	// the busy timeout. Retry later.
	ErrLocked error = sourcecatalog.Errorf(sourcecatalog.ErrStoreUnavailable, "sqlitestore: the database is locked by another user")
	// ErrPoisoned: a commit or rollback failed, or the file failed with
	// an I/O error, on this handle or earlier. Close the Store and open the
	// file again; every call until then fails.
	ErrPoisoned error = sourcecatalog.Errorf(sourcecatalog.ErrStoreUnavailable, "sqlitestore: the handle is poisoned by a storage failure; close and reopen it")
	// ErrInvalidFile: Open's path is not a regular file (a symlink, a
	// directory, a device), or the file is not a database of this package's
	// schema (not SQLite, another application's database, or a newer schema
	// version), or it is cut short or its header is damaged; with
	// WithReadOnly, also a missing or empty file or an older schema
	// version; or the file is missing but a non-empty WAL or rollback
	// journal of it is there (SQLite would delete it). Nothing was
	// written to it.
	ErrInvalidFile error = sourcecatalog.Errorf(sourcecatalog.ErrStoreUnavailable, "sqlitestore: not a source catalog database")
	// ErrNetworkFileSystem: Open's path is on a network file system (NFS,
	// SMB/CIFS, FUSE and others), where the WAL journal's shared memory
	// does not work across hosts. Nothing was opened; move the database
	// to a local disk.
	ErrNetworkFileSystem error = sourcecatalog.Errorf(sourcecatalog.ErrStoreUnavailable, "sqlitestore: the database is on a network file system")
	// ErrClosed: the Store was closed.
	ErrClosed error = sourcecatalog.Errorf(sourcecatalog.ErrStoreUnavailable, "sqlitestore: the store is closed")
	// ErrDiskFull: the file system holding the database (or its journal)
	// has no space left: SQLite's SQLITE_FULL, or ENOSPC or EDQUOT from
	// the file system. A transaction that meets it also wraps ErrPoisoned:
	// free space, then close the Store and open the file again.
	ErrDiskFull error = sourcecatalog.Errorf(sourcecatalog.ErrStoreUnavailable, "sqlitestore: disk full")
	// ErrFileChanged: the database file was removed, replaced by another
	// file (another store, or a copy of this one) or moved away while the
	// Store had it open: its path no longer names the file Open opened.
	// The Store finds it when a write begins, after each commit and at
	// each Ping, and is then poisoned (the calls' errors wrap ErrPoisoned
	// too): a call whose commit found it is not acknowledged, although it
	// may have committed into the file the Store had open. It wraps
	// storeheal.ErrReplaced. A Source reopens only the file it opened
	// first, and Open with WithExistingFile creates none: restore the
	// file, or restart the service to accept the file now at the path.
	ErrFileChanged error = sourcecatalog.Errorf(sourcecatalog.ErrStoreUnavailable, "sqlitestore: the database file was removed or replaced under the store")
	// ErrDamaged: a row read back does not match the checksum written with
	// it, so the file was damaged at rest; the error names the row. The
	// transaction that read it fails and commits nothing; the handle stays
	// usable, so other rows are served, and a damaged staged snapshot can
	// be discarded (deleting reads no chunk). A chunk looked up by its
	// payload digest for a reference or an index (ChunkByPayload) is not
	// ErrDamaged: a damaged row is skipped, and when every row with the
	// digest is damaged the lookup fails with hash_mismatch, so that the
	// sender sends the chunk whole (SPEC.md §6.6).
	ErrDamaged error = sourcecatalog.Errorf(sourcecatalog.ErrStoreUnavailable, "sqlitestore: a stored row is damaged (it does not match the checksum written with it)")
)

// errReadOnly is a write attempted on a Store opened WithReadOnly. It
// changes nothing and does not poison the handle.
var errReadOnly error = sourcecatalog.Errorf(sourcecatalog.ErrStoreUnavailable, "sqlitestore: the store is open read-only")

// fatalCodes are SQLite's primary result codes after which the file's
// state is in doubt: an I/O error of any kind, a full disk, a corrupt,
// vanished or read-only file, no memory.
var fatalCodes = []sqlite3.ErrorCode{sqlite3.IOERR, sqlite3.FULL, sqlite3.CORRUPT, sqlite3.NOTADB, sqlite3.CANTOPEN,
	sqlite3.NOMEM, sqlite3.PROTOCOL, sqlite3.READONLY, sqlite3.NOLFS, sqlite3.PERM, sqlite3.INTERNAL}

// fatal reports whether err from SQLite means the handle must be poisoned.
func fatal(err error) bool { return isCode(err, fatalCodes...) }

// full reports whether err says the disk is full: SQLite's SQLITE_FULL,
// or the file system's ENOSPC or EDQUOT (as Open's own file operations
// meet them).
func full(err error) bool { return isCode(err, sqlite3.FULL) || outOfSpace(err) }

// outOfSpace reports whether err is the file system's ENOSPC or EDQUOT.
func outOfSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// storageFailure is err, marked ErrDiskFull when the disk is full, and
// ErrFileChanged when SQLite refused a write because the file moved
// (SQLITE_READONLY_DBMOVED).
func storageFailure(err error) error {
	switch {
	case full(err) && !errors.Is(err, ErrDiskFull):
		return fmt.Errorf("%w: %w", ErrDiskFull, err)
	case errors.Is(err, sqlite3.READONLY_DBMOVED) && !errors.Is(err, ErrFileChanged):
		return fmt.Errorf("%w: %w: %w", ErrFileChanged, storeheal.ErrReplaced, err)
	}
	return err
}

// busy reports whether err is SQLite's lock contention.
func busy(err error) bool { return isCode(err, sqlite3.BUSY, sqlite3.LOCKED) }

// isCode reports whether err carries one of SQLite's primary codes, as an
// *sqlite3.Error or a bare (extended) code.
func isCode(err error, codes ...sqlite3.ErrorCode) bool {
	for _, c := range codes {
		if errors.Is(err, c) {
			return true
		}
	}
	return false
}

// classify turns an error of a statement run for op into the error a
// caller sees: a fatal one poisons the Store (through poison) and wraps
// ErrPoisoned, lock contention wraps ErrLocked, a done context is kept as
// it is (ctx.Err() wrapped), and any other error (a constraint, a bug) is
// wrapped with op only.
func classify(ctx context.Context, op string, err error, poison func(error)) error {
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil && !fatal(err):
		return fmt.Errorf("sqlitestore: %s: %w", op, ctx.Err())
	case fatal(err):
		err = storageFailure(err)
		poison(err)
		return fmt.Errorf("sqlitestore: %s: %w: %w", op, ErrPoisoned, err)
	case busy(err):
		return fmt.Errorf("sqlitestore: %s: %w: %w", op, ErrLocked, err)
	}
	return fmt.Errorf("sqlitestore: %s: %w", op, err)
}
