package sqlitestore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/driver"
	"github.com/ncruces/go-sqlite3/vfs"
	"github.com/yachtmemory/sourcecatalog/storeheal"
)

// The identity of the database file. A file removed, replaced or moved
// away while the Store has it open keeps serving the Store — its open
// handle still reaches the old inode — while the path names another file
// or none: what the Store acknowledged would be in a file nobody opens
// again, and a Store opened again at the path would serve another
// store's contents, or a new empty one. So the Store keeps the identity
// (device and inode) of the file SQLite opened, from SQLite's own handle,
// and compares it with what the path names:
//
//   - after every COMMIT, before any caller of the batch is answered, so
//     that no acknowledgement is given for a commit into a file the path
//     no longer names (SQLite itself refuses the first write of a
//     transaction into a moved file, SQLITE_READONLY_DBMOVED, but not a
//     move during the transaction, nor a transaction that only reads);
//   - at every Ping, so that a health check of an idle Store sees it;
//   - when a Source reopens the file: only the file it opened first.
//
// A check is one lstat of the path, about a microsecond
// (BenchmarkFileIdentityCheck), beside a commit's syncs.

// identify records the identity of the database file SQLite opened, read
// through SQLite's handle of it. A test VFS's files have none: the Store
// then makes no identity checks.
func (s *Store) identify() error {
	return s.conn.Raw(func(c any) error {
		p, err := c.(driver.Conn).Raw().FileControl("main", sqlite3.FCNTL_FILE_POINTER)
		if err != nil {
			return err
		}
		f, _ := p.(vfs.File)
		for f != nil {
			if st, ok := f.(interface{ Stat() (os.FileInfo, error) }); ok {
				s.file, err = st.Stat()
				return err
			}
			u, ok := f.(vfs.FileUnwrap)
			if !ok {
				return nil
			}
			f = u.Unwrap()
		}
		return nil
	})
}

// moved returns an error wrapping ErrFileChanged when the Store's path no
// longer names the file it opened — removed, renamed away, or another
// file (or a symlink) in its place — the failure to read the path when
// that fails otherwise, and nil when it names the same file or the Store
// has no identity to compare.
func (s *Store) moved() error {
	if s.file == nil {
		return nil
	}
	fi, err := os.Lstat(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fileChanged(s.path, "removed or moved away")
	case err != nil:
		return fmt.Errorf("sqlitestore: checking the identity of %s: %w", s.path, err)
	case !os.SameFile(s.file, fi):
		return fileChanged(s.path, "replaced by another file")
	}
	return nil
}

// fileChanged is the error of a path that no longer names the file the
// Store opened.
func fileChanged(path, why string) error {
	return fmt.Errorf("sqlitestore: %s was %s while the store had it open: %w: %w", path, why, ErrFileChanged, storeheal.ErrReplaced)
}

// checkMoved poisons the Store when its file moved, and returns the
// error the calls get then, wrapping ErrPoisoned. s.mu is held.
func (s *Store) checkMoved(op string) error {
	if err := s.moved(); err != nil {
		s.poison(err)
		return fmt.Errorf("sqlitestore: %s: %w: %w", op, ErrPoisoned, err)
	}
	return nil
}

// sameFile refuses, with ErrFileChanged, a Store opened again (a Source's
// reopen) on another file than first, the file opened first.
func (s *Store) sameFile(first os.FileInfo) error {
	if first != nil && (s.file == nil || !os.SameFile(first, s.file)) {
		return fmt.Errorf("sqlitestore: %s is no longer the file first opened, which was replaced or moved away: only that file is opened again (restart to accept the file now at the path): %w: %w",
			s.path, ErrFileChanged, storeheal.ErrReplaced)
	}
	return nil
}
