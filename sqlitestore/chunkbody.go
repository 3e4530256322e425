package sqlitestore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

// Staged chunks share their records (schema version 7). A chunk's
// canonical bytes (SPEC.md §6.3) are the records array between members
// that name the chunk — its index and payload_sha256 before, its
// revision, snapshot and vessel after — so the same records staged for
// two snapshots differ in a few dozen bytes. The chunks row keeps those
// bytes, and chunk_bodies the array's content once per vessel and digest.
// What is stored is faithful whatever the Receiver puts: a chunk shares a
// body only when its bytes there are the body's byte for byte, and a body
// row is written only with records whose SHA-256 is its digest, so that
// the row is found by what it holds.

// recordsSpan returns where the content of the records array lies in a
// chunk's canonical bytes: between the first `"records":[` and the last
// `],"revision":`. ok is false for bytes without both, in that order.
func recordsSpan(chunk []byte) (at, end int, ok bool) {
	const open, close = `"records":[`, `],"revision":`
	at = bytes.Index(chunk, []byte(open)) + len(open)
	end = bytes.LastIndex(chunk, []byte(close))
	return at, end, at >= len(open) && end >= at
}

// recordsDigest returns the payload_sha256 of records, the content of a
// chunk's records array: the SHA-256 of {"records":[records]} (SPEC.md
// §6.4).
func recordsDigest(records []byte) canonical.Digest {
	h := sha256.New()
	h.Write([]byte(`{"records":[`))
	h.Write(records)
	h.Write([]byte(`]}`))
	return canonical.Digest(h.Sum(nil))
}

// A heldBody is a chunk_bodies row this transaction read and found
// undamaged, or wrote.
type heldBody struct {
	id   int64
	body []byte
}

// chunkSelect reads a chunk row with its body, if it has one: rowid,
// snapshot_id, chunk_index, payload_sha256, chunk_canonical (the chunk
// without its body), checksum, body_id and body_at, and the body row's
// vessel_id, payload_sha256, body and checksum (all NULL when there is
// none).
const chunkSelect = `SELECT c.rowid, c.snapshot_id, c.chunk_index, c.payload_sha256, c.chunk_canonical, c.checksum,
	c.body_id, c.body_at, b.vessel_id, b.payload_sha256, b.body, b.checksum
	FROM chunks AS c LEFT JOIN chunk_bodies AS b ON b.id = c.body_id `

// A chunkRow is a chunk row as chunkSelect reads it.
type chunkRow struct {
	rowid              int64
	snapshot           []byte
	index              int
	digest, part       []byte
	stored             sql.NullInt64
	bodyID, bodyAt     sql.NullInt64
	bodyVessel, bodyOf []byte // the body's vessel_id and payload_sha256
	body               []byte
	bodyStored         sql.NullInt64
}

func (r *chunkRow) dest() []any {
	return []any{&r.rowid, &r.snapshot, &r.index, &r.digest, &r.part, &r.stored,
		&r.bodyID, &r.bodyAt, &r.bodyVessel, &r.bodyOf, &r.body, &r.bodyStored}
}

// staged checks r against its checksums and returns the chunk it holds,
// its body put back. A row that names a body that is not there, not the
// vessel's or that does not fit, or whose bytes whole do not match the
// row's checksum, is damaged; a body that does not match its own checksum
// is damaged too, and damagedBody then names it for the caller to skip,
// since every chunk sharing it is. An undamaged body is remembered for
// PutChunk, which shares it without reading it again.
func (t *tx) staged(r *chunkRow) (c finalize.StagedChunk, damagedBody int64, err error) {
	snapshot, err := uuid.FromBytes(r.snapshot)
	if err != nil {
		return c, 0, damagedRow("vessel %s chunk row %d: snapshot id %x", vesselText(t.vessel), r.rowid, r.snapshot)
	}
	c = finalize.StagedChunk{Snapshot: snapshot, Index: r.index, Canonical: r.part}
	switch {
	case !r.bodyID.Valid && !r.bodyAt.Valid:
	case !r.bodyID.Valid || !r.bodyAt.Valid || r.bodyAt.Int64 < 0 || r.bodyAt.Int64 > int64(len(r.part)) ||
		r.body == nil || !bytes.Equal(r.bodyVessel, t.vessel):
		return c, 0, damagedRow("vessel %s snapshot %s chunk %d: its body %d is missing or not the vessel's",
			vesselText(t.vessel), snapshot, r.index, r.bodyID.Int64)
	case !chunkBodySum(t.vessel, r.bodyOf, r.body).matches(r.bodyStored):
		return c, r.bodyID.Int64, damagedRow("vessel %s snapshot %s chunk %d: the records it shares (chunk body %d)",
			vesselText(t.vessel), snapshot, r.index, r.bodyID.Int64)
	default:
		at := int(r.bodyAt.Int64)
		whole := make([]byte, 0, len(r.part)+len(r.body))
		c.Canonical = append(append(append(whole, r.part[:at]...), r.body...), r.part[at:]...)
		t.remember(r.bodyOf, heldBody{id: r.bodyID.Int64, body: r.body})
	}
	if err := t.checkChunk(snapshot, r.index, r.digest, c.Canonical, r.stored); err != nil {
		return finalize.StagedChunk{}, 0, err
	}
	copy(c.Payload[:], r.digest)
	return c, 0, nil
}

// remember keeps b, the body of digest, for the rest of the transaction.
func (t *tx) remember(digest []byte, b heldBody) {
	if len(digest) != len(canonical.Digest{}) {
		return
	}
	if t.bodies == nil {
		t.bodies = map[canonical.Digest]heldBody{}
	}
	t.bodies[canonical.Digest(digest)] = b
}

// minSharedRecords is the shortest records array a staged chunk shares
// through chunk_bodies rather than keeps in its row: below it, the body
// row and its key would cost about what they save.
const minSharedRecords = 512

// split returns how PutChunk stores c: part, the chunks row's bytes, and
// the body it shares with its position, or c's bytes whole with no body.
func (t *tx) split(ctx context.Context, c finalize.StagedChunk) (part []byte, bodyID, bodyAt sql.NullInt64, err error) {
	at, end, ok := recordsSpan(c.Canonical)
	if !ok || end-at < minSharedRecords {
		return c.Canonical, bodyID, bodyAt, nil
	}
	id, shared, err := t.bodyFor(ctx, c.Payload, c.Canonical[at:end])
	if err != nil || !shared {
		return c.Canonical, bodyID, bodyAt, err
	}
	part = make([]byte, 0, len(c.Canonical)-(end-at))
	part = append(append(part, c.Canonical[:at]...), c.Canonical[end:]...)
	return part, sql.NullInt64{Int64: id, Valid: true}, sql.NullInt64{Int64: int64(at), Valid: true}, nil
}

// bodyFor returns the id of the vessel's body of digest when it holds
// records, writing it when there is none, and mending it when it is
// damaged. shared is false, and records are stored with their chunk,
// when the body holds other records, or when records do not have the
// digest and so may not key a body.
func (t *tx) bodyFor(ctx context.Context, digest canonical.Digest, records []byte) (id int64, shared bool, err error) {
	if b, ok := t.bodies[digest]; ok {
		return b.id, bytes.Equal(b.body, records), nil
	}
	var body []byte
	var stored sql.NullInt64
	found, err := t.queryRow(ctx, "read chunk body", `SELECT id, body, checksum FROM chunk_bodies WHERE vessel_id = ? AND payload_sha256 = ?`,
		[]any{t.vessel, digest[:]}, &id, &body, &stored)
	switch {
	case err != nil:
		return 0, false, err
	case found && chunkBodySum(t.vessel, digest[:], body).matches(stored):
		t.remember(digest[:], heldBody{id: id, body: body})
		return id, bytes.Equal(body, records), nil
	case recordsDigest(records) != digest:
		return 0, false, nil
	case found: // damaged: records, of its digest, are what it held
		if _, err := t.exec(ctx, "mend chunk body", `UPDATE chunk_bodies SET body = ?, checksum = ? WHERE id = ?`,
			records, chunkBodySum(t.vessel, digest[:], records).sum(), id); err != nil {
			return 0, false, err
		}
	default:
		res, err := t.exec(ctx, "write chunk body", `INSERT INTO chunk_bodies (vessel_id, payload_sha256, body, checksum) VALUES (?, ?, ?, ?)`,
			t.vessel, digest[:], records, chunkBodySum(t.vessel, digest[:], records).sum())
		if err != nil {
			return 0, false, err
		}
		if id, err = res.LastInsertId(); err != nil {
			return 0, false, t.fail(ctx, "write chunk body", err)
		}
	}
	t.remember(digest[:], heldBody{id: id, body: records})
	return id, true, nil
}

// deleteBodies deletes the vessel's bodies of ids that no chunk names
// any more.
func (t *tx) deleteBodies(ctx context.Context, ids []int64) error {
	for _, id := range ids {
		if _, err := t.exec(ctx, "delete chunk body", `DELETE FROM chunk_bodies
			WHERE id = ? AND vessel_id = ? AND NOT EXISTS (SELECT 1 FROM chunks WHERE body_id = ?)`, id, t.vessel, id); err != nil {
			return err
		}
	}
	for d, b := range t.bodies {
		for _, id := range ids {
			if b.id == id {
				delete(t.bodies, d)
			}
		}
	}
	return nil
}
