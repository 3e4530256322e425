package sqlitestore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/driver"
	"github.com/ncruces/go-sqlite3/vfs"
)

// The structure of an SQLite file that Open checks (see
// https://sqlite.org/fileformat2.html, "The Database Header"). SQLite
// itself reads a file cut inside its last page as if the missing bytes
// were zeros — the rows there change silently and integrity_check still
// passes — and writes its next transaction on top; a file cut at a page
// boundary is refused only when a statement reaches the missing pages.
const (
	headerSize  = 100
	sqliteMagic = "SQLite format 3\x00"
)

// checkFile refuses, with ErrInvalidFile and before anything is written,
// a file whose size disagrees with its own header. It reads the header
// and the size under SQLite's shared lock, which no writer holds while it
// changes the file, after SQLite has rolled back a transaction that a
// crash cut short (a hot journal: that is recovery, not damage). A
// read-only Open also refuses an empty file.
func (s *Store) checkFile(ctx context.Context) error {
	if _, err := s.conn.ExecContext(ctx, "BEGIN"); err != nil {
		return s.openError(ctx, "read", err)
	}
	defer s.conn.ExecContext(context.Background(), "ROLLBACK") // ends the read; changes nothing
	// Reading the schema cookie takes the shared lock without parsing the
	// schema.
	var cookie int64
	qerr := s.conn.QueryRowContext(ctx, "PRAGMA schema_version").Scan(&cookie)
	if qerr != nil && (busy(qerr) || errors.Is(qerr, sqlite3.READONLY_ROLLBACK) || ctx.Err() != nil) {
		// The file may be in the middle of a transaction: its size says
		// nothing yet.
		return s.openError(ctx, "read", qerr)
	}
	// Without the lock (qerr: SQLite refused the file, say a page count
	// beyond its end) nothing writes the file either: no transaction
	// commits to a file SQLite refuses.
	size, header, wal, err := s.readHeader()
	if err != nil {
		return s.openError(ctx, "read the header of", err)
	}
	if why := walDamage(header, size, wal); why != "" {
		return invalid(s.path, why)
	}
	if qerr != nil {
		return s.openError(ctx, "read", qerr)
	}
	switch {
	case size == 0 && s.cfg.readOnly:
		return invalid(s.path, "an empty file, with no schema (a read-only open creates none)")
	case size == 0 && s.cfg.first != nil:
		return fileChanged(s.path, "emptied")
	case size == 0 && s.cfg.existing:
		return invalid(s.path, "an empty file, with no schema (WithExistingFile creates none)")
	}
	return nil
}

// readHeader returns the size of the main database file and its first
// bytes (up to headerSize), read through SQLite's own handle of it, and,
// when the header says the file is in WAL mode, what its WAL holds
// (readWAL).
func (s *Store) readHeader() (size int64, header []byte, wal walFrames, err error) {
	err = s.conn.Raw(func(c any) error {
		conn := c.(driver.Conn).Raw()
		p, err := conn.FileControl("main", sqlite3.FCNTL_FILE_POINTER)
		if err != nil {
			return err
		}
		f, ok := p.(vfs.File)
		if !ok {
			return fmt.Errorf("the database file's handle is a %T", p)
		}
		if size, err = f.Size(); err != nil {
			return err
		}
		buf := make([]byte, headerSize)
		n, err := f.ReadAt(buf, 0)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		header = buf[:n]
		if len(header) < headerSize || header[18] != 2 {
			return nil // not in WAL mode: no WAL
		}
		p, err = conn.FileControl("main", sqlite3.FCNTL_JOURNAL_POINTER)
		if err != nil {
			return err
		}
		if w, ok := p.(vfs.File); ok {
			wal, err = readWAL(w)
		}
		return err
	})
	return size, header, wal, err
}

// damage says what is wrong with the structure of a database file of
// size bytes that begins with header, or "" when nothing is. An empty
// file is a new database. A cut file is either not a whole number of
// pages, or fewer pages than the header counts; the header's count is
// valid when its version-valid-for number equals its change counter,
// which every SQLite since 3.7.0 keeps so, and this package writes no
// file with another.
func damage(header []byte, size int64) string {
	if size == 0 {
		return ""
	}
	if int64(len(header)) < min(size, headerSize) {
		return fmt.Sprintf("its first %d bytes read short", min(size, headerSize))
	}
	if size < headerSize {
		if !strings.HasPrefix(sqliteMagic, string(header)) && !strings.HasPrefix(string(header), sqliteMagic) {
			return "not an SQLite database"
		}
		return fmt.Sprintf("%d bytes, shorter than an SQLite header: the file is cut", size)
	}
	if string(header[:len(sqliteMagic)]) != sqliteMagic {
		return "not an SQLite database"
	}
	u32 := func(off int) int64 { return int64(binary.BigEndian.Uint32(header[off:])) }
	page := int64(binary.BigEndian.Uint16(header[16:]))
	if page == 1 {
		page = 65536
	}
	if page < 512 || page > 65536 || page&(page-1) != 0 {
		return fmt.Sprintf("its header's page size %d is not a power of two from 512 to 65536: the header is damaged", page)
	}
	if size%page != 0 {
		return fmt.Sprintf("its %d bytes are not a whole number of %d-byte pages: the file is cut or damaged", size, page)
	}
	pages := size / page
	if counter, validFor := u32(24), u32(92); counter != validFor {
		return fmt.Sprintf("its header's change counter %d disagrees with its version-valid-for number %d: the header is damaged", counter, validFor)
	}
	if counted := u32(28); counted != pages {
		return fmt.Sprintf("its header counts %d pages of %d bytes but the file holds %d (%d bytes): the file is cut or damaged", counted, page, pages, size)
	}
	if trunk, free := u32(32), u32(36); trunk > pages || free >= pages || (trunk == 0) != (free == 0) {
		return fmt.Sprintf("its header's free list (first trunk page %d, %d pages) does not fit its %d pages: the header is damaged", trunk, free, pages)
	}
	return ""
}
