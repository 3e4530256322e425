package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/google/uuid"
)

// Every row that holds bytes the stores hand out — a staged chunk, a
// snapshot with its manifest, an outbox entry, the records outbox entries
// share — carries a checksum
// column, written with the row and checked whenever the row is read, so
// that a row damaged at rest (a flipped bit, a page of a cut file) is an
// error naming it (ErrDamaged) rather than bytes passed on. The digests
// the protocol stores beside the bytes cannot serve: the Receiver must be
// handed a staged set exactly as it was put, even one whose digests
// disagree with its bytes, so that it rejects the set (finalizetest's
// RejectTampered), and an outbox.Store keeps bytes it does not read. The
// checksum is CRC-32C, which the processors this runs on compute at many
// gigabytes a second: it detects damage, not forgery.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// A rowSum accumulates the checksum of one row: a table name, then each
// field tagged with its kind, so that no two rows of different fields
// make the same input.
type rowSum struct{ crc uint32 }

func newRowSum(table string) *rowSum {
	h := &rowSum{}
	return h.bytes([]byte(table))
}

func (h *rowSum) write(b []byte) { h.crc = crc32.Update(h.crc, castagnoli, b) }

// bytes adds b (nil and empty alike).
func (h *rowSum) bytes(b []byte) *rowSum {
	var n [1 + binary.MaxVarintLen64]byte
	n[0] = 'b'
	h.write(n[:1+binary.PutUvarint(n[1:], uint64(len(b)))])
	h.write(b)
	return h
}

func (h *rowSum) str(s string) *rowSum { return h.bytes([]byte(s)) }

func (h *rowSum) int(i int64) *rowSum {
	var n [9]byte
	n[0] = 'i'
	binary.BigEndian.PutUint64(n[1:], uint64(i))
	h.write(n[:])
	return h
}

// null adds an absent value, distinct from every other.
func (h *rowSum) null() *rowSum {
	h.write([]byte{'n'})
	return h
}

// sum is the value of the checksum column.
func (h *rowSum) sum() int64 { return int64(h.crc) }

// matches reports whether a checksum column read back holds h's sum.
func (h *rowSum) matches(stored sql.NullInt64) bool { return stored.Valid && stored.Int64 == h.sum() }

func chunkSum(vessel, snapshot []byte, index int, payload, canonical []byte) *rowSum {
	return newRowSum("chunks").bytes(vessel).bytes(snapshot).int(int64(index)).bytes(payload).bytes(canonical)
}

func snapshotSum(vessel []byte, r *snapshotRow) *rowSum {
	h := newRowSum("snapshots").bytes(vessel).bytes(r.id).int(r.revision).str(r.state).str(r.final)
	if r.digest != nil {
		h.bytes(r.manifest).bytes(r.digest)
	} else {
		h.null()
	}
	return h.int(r.chunkCount).int(r.recordCount).int(r.chunksStaged).int(r.staged).str(r.reason)
}

func entrySum(vessel []byte, e *entryRow) *rowSum {
	return newRowSum("outbox").bytes(vessel).bytes(e.snapshot).int(e.chunkIndex).int(e.revision).
		str(e.entityType).str(e.entityKey).bytes(e.payload).bytes(e.digest)
}

// bodySum is the checksum of an outbox_bodies row: the records a chunk
// entry's payload holds, shared by the entries with the same.
func bodySum(vessel, digest []byte, firstRevision int64, body []byte) *rowSum {
	return newRowSum("outbox_bodies").bytes(vessel).bytes(digest).int(firstRevision).bytes(body)
}

// chunkBodySum is the checksum of a chunk_bodies row: the records staged
// chunks of a vessel share.
func chunkBodySum(vessel, digest, body []byte) *rowSum {
	return newRowSum("chunk_bodies").bytes(vessel).bytes(digest).bytes(body)
}

// damagedRow is the error of a row that does not match its checksum.
func damagedRow(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, ErrDamaged)...)
}

// vesselText names a stored vessel id.
func vesselText(id []byte) string {
	u, err := uuid.FromBytes(id)
	if err != nil {
		return fmt.Sprintf("%x", id)
	}
	return u.String()
}

// backfillChecksums writes the checksum of every row of a file migrated
// from version 2, in the migration's transaction.
func backfillChecksums(ctx context.Context, q *sql.Conn) error {
	type update struct{ rowid, sum int64 }
	fill := func(table, query string, sum func(*sql.Rows) (int64, *rowSum, error)) error {
		rows, err := q.QueryContext(ctx, query)
		if err != nil {
			return err
		}
		var todo []update
		for rows.Next() {
			rowid, h, err := sum(rows)
			if err != nil {
				rows.Close()
				return err
			}
			todo = append(todo, update{rowid, h.sum()})
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if err := rows.Err(); err != nil {
			return err
		}
		for _, u := range todo {
			if _, err := q.ExecContext(ctx, "UPDATE "+table+" SET checksum = ? WHERE rowid = ?", u.sum, u.rowid); err != nil {
				return err
			}
		}
		return nil
	}
	err := fill("chunks", `SELECT rowid, vessel_id, snapshot_id, chunk_index, payload_sha256, chunk_canonical FROM chunks`,
		func(r *sql.Rows) (int64, *rowSum, error) {
			var rowid int64
			var vessel, snap, payload, canonical []byte
			var index int
			err := r.Scan(&rowid, &vessel, &snap, &index, &payload, &canonical)
			return rowid, chunkSum(vessel, snap, index, payload, canonical), err
		})
	if err != nil {
		return err
	}
	err = fill("snapshots", `SELECT rowid, vessel_id, `+snapshotColumns+` FROM snapshots`,
		func(r *sql.Rows) (int64, *rowSum, error) {
			var rowid int64
			var vessel []byte
			var row snapshotRow
			err := r.Scan(append([]any{&rowid, &vessel}, row.dest()...)...)
			return rowid, snapshotSum(vessel, &row), err
		})
	if err != nil {
		return err
	}
	return fill("outbox", `SELECT rowid, vessel_id, `+entryColumns+` FROM outbox`,
		func(r *sql.Rows) (int64, *rowSum, error) {
			var rowid int64
			var vessel []byte
			var row entryRow
			err := r.Scan(append([]any{&rowid, &vessel}, row.dest()...)...)
			return rowid, entrySum(vessel, &row), err
		})
}
