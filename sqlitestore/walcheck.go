package sqlitestore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/ncruces/go-sqlite3/vfs"
)

// In WAL mode the database is its file overlaid with the frames of its
// WAL up to the last commit frame (see https://sqlite.org/fileformat2.html,
// "The Write-Ahead Log"). While the WAL holds committed frames the file
// alone is not the database: a checkpoint cut short by a crash may have
// copied page 1, with its new page count, and not yet the pages it
// counts, which the WAL still holds. Open checks that overlay instead.

const (
	walHeaderSize      = 32
	walFrameHeaderSize = 24
	walMagicLE         = 0x377f0682 // checksums over little-endian words
	walMagicBE         = 0x377f0683 // checksums over big-endian words
)

// walFrames is what a WAL holds up to its last valid commit frame.
type walFrames struct {
	pageSize int64
	pages    int64           // the database's size in pages at that commit; 0: no committed frame
	inWAL    map[uint32]bool // the pages the committed frames hold
	page1    []byte          // the first bytes of page 1's last committed frame, if any
}

// readWAL reads the WAL w as SQLite's recovery does: the header's
// checksum, then frame after frame while each carries the header's salts
// and its checksum continues the chain; the frames up to the last commit
// frame among them count. A WAL with no valid header or commit frame
// holds nothing (SQLite ignores it and starts it anew).
func readWAL(w vfs.File) (walFrames, error) {
	size, err := w.Size()
	if err != nil || size < walHeaderSize {
		return walFrames{}, err
	}
	hdr := make([]byte, walHeaderSize)
	if _, err := w.ReadAt(hdr, 0); err != nil && !errors.Is(err, io.EOF) {
		return walFrames{}, err
	}
	be := binary.BigEndian
	magic := be.Uint32(hdr)
	if magic != walMagicLE && magic != walMagicBE {
		return walFrames{}, nil
	}
	bigEndian := magic == walMagicBE
	s0, s1 := walChecksum(bigEndian, hdr[:24], 0, 0)
	if s0 != be.Uint32(hdr[24:]) || s1 != be.Uint32(hdr[28:]) {
		return walFrames{}, nil
	}
	pageSize := int64(be.Uint32(hdr[8:]))
	if pageSize == 1 {
		pageSize = 65536
	}
	if pageSize < 512 || pageSize > 65536 || pageSize&(pageSize-1) != 0 {
		return walFrames{}, nil
	}
	salt1, salt2 := be.Uint32(hdr[16:]), be.Uint32(hdr[20:])
	out := walFrames{pageSize: pageSize}
	pending := map[uint32]bool{}
	var pendingPage1 []byte
	frame := make([]byte, walFrameHeaderSize+pageSize)
	for off := int64(walHeaderSize); off+int64(len(frame)) <= size; off += int64(len(frame)) {
		if _, err := w.ReadAt(frame, off); err != nil && !errors.Is(err, io.EOF) {
			return walFrames{}, err
		}
		pgno, commit := be.Uint32(frame), be.Uint32(frame[4:])
		if pgno == 0 || be.Uint32(frame[8:]) != salt1 || be.Uint32(frame[12:]) != salt2 {
			break
		}
		s0, s1 = walChecksum(bigEndian, frame[:8], s0, s1)
		s0, s1 = walChecksum(bigEndian, frame[walFrameHeaderSize:], s0, s1)
		if s0 != be.Uint32(frame[16:]) || s1 != be.Uint32(frame[20:]) {
			break
		}
		pending[pgno] = true
		if pgno == 1 {
			pendingPage1 = append(pendingPage1[:0], frame[walFrameHeaderSize:walFrameHeaderSize+headerSize]...)
		}
		if commit != 0 {
			if out.inWAL == nil {
				out.inWAL = map[uint32]bool{}
			}
			for p := range pending {
				out.inWAL[p] = true
			}
			if pendingPage1 != nil {
				out.page1 = append([]byte(nil), pendingPage1...)
			}
			out.pages = int64(commit)
		}
	}
	return out, nil
}

// walChecksum continues the WAL checksum (s0, s1) over b, a multiple of 8
// bytes, read as 32-bit words in the WAL's byte order.
func walChecksum(bigEndian bool, b []byte, s0, s1 uint32) (uint32, uint32) {
	var order binary.ByteOrder = binary.LittleEndian
	if bigEndian {
		order = binary.BigEndian
	}
	for i := 0; i+8 <= len(b); i += 8 {
		s0 += order.Uint32(b[i:]) + s1
		s1 += order.Uint32(b[i+4:]) + s0
	}
	return s0, s1
}

// walDamage says what is wrong with a database file of size bytes that
// begins with header and whose WAL holds wal, or "" when nothing is.
// Without committed frames in the WAL the file is the database (damage).
// With them, the file must be whole pages, every page up to the count of
// the WAL's last commit must be in the file or the WAL, and the newest
// page 1 must be a valid header counting those pages.
func walDamage(header []byte, size int64, wal walFrames) string {
	if wal.pages == 0 {
		return damage(header, size)
	}
	page := wal.pageSize
	if len(header) >= headerSize {
		// The file's own header: an SQLite database of the WAL's page size.
		if string(header[:len(sqliteMagic)]) != sqliteMagic {
			return "not an SQLite database"
		}
		if own := int64(binary.BigEndian.Uint16(header[16:])); own != page && !(own == 1 && page == 65536) {
			return fmt.Sprintf("its header's page size %d differs from its WAL's %d: the header or the WAL is damaged", own, page)
		}
	}
	if size%page != 0 {
		return fmt.Sprintf("its %d bytes are not a whole number of %d-byte pages: the file is cut or damaged", size, page)
	}
	for p := int64(1); p <= wal.pages; p++ {
		if p > size/page && !wal.inWAL[uint32(p)] {
			return fmt.Sprintf("page %d of the %d its WAL's last commit counts is neither in the file (%d pages) nor in the WAL: the file is cut or damaged", p, wal.pages, size/page)
		}
	}
	page1 := wal.page1
	if page1 == nil {
		page1 = header
	}
	if why := damage(page1, wal.pages*page); why != "" {
		return "with its WAL, " + why
	}
	return ""
}
