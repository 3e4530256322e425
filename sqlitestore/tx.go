package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

// base is what the transactions of both sides share: the Store, the
// connection, and the first error a statement returned. After an error
// the transaction refuses every further call with that error, and the
// Store does not commit it even if the callback returns nil.
type base struct {
	s    *Store
	q    *sql.Conn
	done bool
	err  error
}

// ready panics on a transaction used after its callback returned, and
// returns the error that ended it, if any.
func (b *base) ready() error {
	if b.done {
		panic("sqlitestore: Tx used after its callback returned")
	}
	return b.err
}

// fail records and returns the classified error of a statement run for op.
func (b *base) fail(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	b.err = b.s.classify(ctx, op, err)
	return b.err
}

// exec runs a statement that writes. It runs whatever ctx says once
// started, after checking ctx: SQLite rolls back the whole transaction,
// which the batch's other callbacks share, when a write is interrupted.
// Its arguments' bytes count towards the batch's bound.
func (b *base) exec(ctx context.Context, op, query string, args ...any) (sql.Result, error) {
	return b.execPrepared(ctx, op, b.s.stmts.prepared, query, args)
}

// execRows is exec for a statement whose text is built for a number of
// rows (a multi-row INSERT), kept among the sized statements.
func (b *base) execRows(ctx context.Context, op, query string, args ...any) (sql.Result, error) {
	return b.execPrepared(ctx, op, b.s.stmts.preparedSized, query, args)
}

// execPrepared runs query, prepared by prepared, with args, as exec says.
func (b *base) execPrepared(ctx context.Context, op string, prepared func(context.Context, *sql.Conn, string) (*sql.Stmt, error),
	query string, args []any) (sql.Result, error) {
	if err := b.ready(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, b.fail(ctx, op, err)
	}
	st, err := prepared(ctx, b.q, query)
	if err != nil {
		return nil, b.fail(ctx, op, err)
	}
	for _, a := range args {
		switch v := a.(type) {
		case []byte:
			b.s.batchBytes += len(v)
		case string:
			b.s.batchBytes += len(v)
		default:
			b.s.batchBytes += 8
		}
	}
	res, err := st.ExecContext(context.WithoutCancel(ctx), args...)
	return res, b.fail(ctx, op, err)
}

// queryRow scans the one row query returns into dest, and reports whether
// there was one.
func (b *base) queryRow(ctx context.Context, op, query string, args []any, dest ...any) (bool, error) {
	if err := b.ready(); err != nil {
		return false, err
	}
	st, err := b.s.stmts.prepared(ctx, b.q, query)
	if err != nil {
		return false, b.fail(ctx, op, err)
	}
	err = st.QueryRowContext(ctx, args...).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, b.fail(ctx, op, err)
}

// query calls scan for each row query returns.
func (b *base) query(ctx context.Context, op, query string, args []any, scan func(*sql.Rows) error) error {
	return b.queryPrepared(ctx, op, b.s.stmts.prepared, query, args, scan)
}

// queryRows is query for a statement whose text is built for a number of
// values (an IN list), kept among the sized statements.
func (b *base) queryRows(ctx context.Context, op, query string, args []any, scan func(*sql.Rows) error) error {
	return b.queryPrepared(ctx, op, b.s.stmts.preparedSized, query, args, scan)
}

// queryPrepared runs query, prepared by prepared, as query says.
func (b *base) queryPrepared(ctx context.Context, op string, prepared func(context.Context, *sql.Conn, string) (*sql.Stmt, error),
	query string, args []any, scan func(*sql.Rows) error) error {
	if err := b.ready(); err != nil {
		return err
	}
	st, err := prepared(ctx, b.q, query)
	if err != nil {
		return b.fail(ctx, op, err)
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return b.fail(ctx, op, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return b.fail(ctx, op, err)
		}
	}
	return b.fail(ctx, op, errors.Join(rows.Err(), rows.Close()))
}

// tx is the finalize.Tx of one transaction on a vessel.
type tx struct {
	base
	vessel []byte
	state  finalize.VesselState
	index  storedIndex

	// newBase is a decoded base value this transaction read or wrote, for
	// the Store's cache once the transaction has committed.
	newBase []finalize.IndexEntry

	// bodies are the chunk bodies this transaction read undamaged or
	// wrote, by payload_sha256 (chunkbody.go).
	bodies map[canonical.Digest]heldBody
}

// unixTime splits t into the two columns that store a time; fromUnix
// returns the same instant, in UTC.
func unixTime(t time.Time) (sec int64, nsec int64) { return t.Unix(), int64(t.Nanosecond()) }

func fromUnix(sec, nsec int64) time.Time { return time.Unix(sec, nsec).UTC() }

// readVessel reads the vessel's active pointer, zero when it has no row.
func (t *tx) readVessel(ctx context.Context) error {
	var snap, doc []byte
	var sec, nsec sql.NullInt64
	_, err := t.queryRow(ctx, "read vessel", `SELECT active_snapshot_id, active_revision,
		active_discovered_at_sec, active_discovered_at_nsec, active_document_sha256
		FROM vessels WHERE vessel_id = ?`, []any{t.vessel}, &snap, &t.state.ActiveRevision, &sec, &nsec, &doc)
	if err != nil {
		return err
	}
	if snap != nil {
		if t.state.ActiveSnapshot, err = uuid.FromBytes(snap); err != nil {
			return t.fail(ctx, "read vessel", err)
		}
	}
	if sec.Valid && nsec.Valid {
		t.state.ActiveDiscoveredAt = fromUnix(sec.Int64, nsec.Int64)
	}
	copy(t.state.ActiveDocument[:], doc)
	return nil
}

func (t *tx) Vessel(ctx context.Context) (finalize.VesselState, error) {
	if err := t.ready(); err != nil {
		return finalize.VesselState{}, err
	}
	return t.state, ctx.Err()
}

func (t *tx) SetVessel(ctx context.Context, v finalize.VesselState) error {
	var snap, doc, sec, nsec any
	if v.ActiveSnapshot != uuid.Nil {
		snap, doc = v.ActiveSnapshot[:], v.ActiveDocument[:]
		sec, nsec = unixTime(v.ActiveDiscoveredAt)
	}
	_, err := t.exec(ctx, "set vessel", `INSERT INTO vessels (vessel_id, active_snapshot_id, active_revision,
		active_discovered_at_sec, active_discovered_at_nsec, active_document_sha256) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (vessel_id) DO UPDATE SET active_snapshot_id = excluded.active_snapshot_id,
		active_revision = excluded.active_revision, active_discovered_at_sec = excluded.active_discovered_at_sec,
		active_discovered_at_nsec = excluded.active_discovered_at_nsec,
		active_document_sha256 = excluded.active_document_sha256`, t.vessel, snap, v.ActiveRevision, sec, nsec, doc)
	if err == nil {
		t.state = v
	}
	return err
}

const snapshotColumns = `snapshot_id, revision, state, final_status, manifest, manifest_sha256,
	chunk_count, record_count, chunks_staged, staged_bytes, reason`

// snapshotRow is a snapshots row as stored, in the order of
// snapshotColumns.
type snapshotRow struct {
	id                                            []byte
	revision                                      int64
	state, final                                  string
	manifest, digest                              []byte // digest is nil when the manifest has not arrived
	chunkCount, recordCount, chunksStaged, staged int64
	reason                                        string
}

func (r *snapshotRow) dest() []any {
	return []any{&r.id, &r.revision, &r.state, &r.final, &r.manifest, &r.digest,
		&r.chunkCount, &r.recordCount, &r.chunksStaged, &r.staged, &r.reason}
}

func rowOfSnapshot(s finalize.Snapshot) snapshotRow {
	r := snapshotRow{id: s.ID[:], revision: s.Revision, state: string(s.State), final: string(s.Final),
		chunkCount: int64(s.ChunkCount), recordCount: int64(s.RecordCount), chunksStaged: int64(s.ChunksStaged),
		staged: s.StagedBytes, reason: boundReason(s.Reason)}
	if s.Manifest != nil {
		r.manifest, r.digest = s.Manifest, s.ManifestDigest[:]
	}
	return r
}

// scanSnapshot reads a row of snapshotColumns and checksum into s,
// checking the checksum.
func (t *tx) scanSnapshot(sc interface{ Scan(...any) error }, s *finalize.Snapshot) error {
	var r snapshotRow
	var stored sql.NullInt64
	if err := sc.Scan(append(r.dest(), &stored)...); err != nil {
		return err
	}
	id, err := uuid.FromBytes(r.id)
	if err != nil || !snapshotSum(t.vessel, &r).matches(stored) {
		return damagedRow("vessel %s snapshot %x", vesselText(t.vessel), r.id)
	}
	*s = finalize.Snapshot{ID: id, Revision: r.revision, State: finalize.SnapshotState(r.state),
		Final: finalize.OutcomeStatus(r.final), Manifest: r.manifest, ChunkCount: int(r.chunkCount),
		RecordCount: int(r.recordCount), ChunksStaged: int(r.chunksStaged), StagedBytes: r.staged, Reason: r.reason}
	copy(s.ManifestDigest[:], r.digest)
	return nil
}

func (t *tx) Snapshot(ctx context.Context, id uuid.UUID) (finalize.Snapshot, error) {
	var s finalize.Snapshot
	found := false
	err := t.query(ctx, "read snapshot", `SELECT `+snapshotColumns+`, checksum FROM snapshots WHERE vessel_id = ? AND snapshot_id = ?`,
		[]any{t.vessel, id[:]}, func(r *sql.Rows) error { found = true; return t.scanSnapshot(r, &s) })
	if err == nil && !found {
		err = sourcecatalog.ErrNotFound
	}
	return s, err
}

func (t *tx) Snapshots(ctx context.Context) ([]finalize.Snapshot, error) {
	var out []finalize.Snapshot
	err := t.query(ctx, "read snapshots", `SELECT `+snapshotColumns+`, checksum FROM snapshots WHERE vessel_id = ?`,
		[]any{t.vessel}, func(r *sql.Rows) error {
			var s finalize.Snapshot
			err := t.scanSnapshot(r, &s)
			out = append(out, s)
			return err
		})
	return out, err
}

func (t *tx) PutSnapshot(ctx context.Context, s finalize.Snapshot) error {
	r := rowOfSnapshot(s)
	var manifest, digest any
	if r.digest != nil {
		manifest, digest = r.manifest, r.digest
	}
	_, err := t.exec(ctx, "write snapshot", `INSERT INTO snapshots (vessel_id, `+snapshotColumns+`, checksum)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (vessel_id, snapshot_id) DO UPDATE SET revision = excluded.revision, state = excluded.state,
		final_status = excluded.final_status, manifest = excluded.manifest,
		manifest_sha256 = excluded.manifest_sha256, chunk_count = excluded.chunk_count,
		record_count = excluded.record_count, chunks_staged = excluded.chunks_staged,
		staged_bytes = excluded.staged_bytes, reason = excluded.reason, checksum = excluded.checksum`,
		t.vessel, r.id, r.revision, r.state, r.final, manifest, digest,
		r.chunkCount, r.recordCount, r.chunksStaged, r.staged, r.reason, snapshotSum(t.vessel, &r).sum())
	return err
}

// boundReason bounds a rejection reason, cut at a character boundary.
func boundReason(s string) string {
	const limit = 1000
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

func (t *tx) DeleteSnapshot(ctx context.Context, id uuid.UUID) error {
	var bodies []int64
	err := t.query(ctx, "read chunk bodies", `SELECT DISTINCT body_id FROM chunks
		WHERE vessel_id = ? AND snapshot_id = ? AND body_id IS NOT NULL`, []any{t.vessel, id[:]}, func(r *sql.Rows) error {
		var b int64
		err := r.Scan(&b)
		bodies = append(bodies, b)
		return err
	})
	if err != nil {
		return err
	}
	if _, err := t.exec(ctx, "delete chunks", `DELETE FROM chunks WHERE vessel_id = ? AND snapshot_id = ?`, t.vessel, id[:]); err != nil {
		return err
	}
	if err := t.deleteBodies(ctx, bodies); err != nil {
		return err
	}
	_, err = t.exec(ctx, "delete snapshot", `DELETE FROM snapshots WHERE vessel_id = ? AND snapshot_id = ?`, t.vessel, id[:])
	return err
}

func (t *tx) Chunk(ctx context.Context, snapshot uuid.UUID, index int) (finalize.StagedChunk, error) {
	var r chunkRow
	found, err := t.queryRow(ctx, "read chunk", chunkSelect+`WHERE c.vessel_id = ? AND c.snapshot_id = ? AND c.chunk_index = ?`,
		[]any{t.vessel, snapshot[:], index}, r.dest()...)
	switch {
	case err != nil:
		return finalize.StagedChunk{}, err
	case !found:
		return finalize.StagedChunk{}, sourcecatalog.ErrNotFound
	}
	c, _, err := t.staged(&r)
	if err != nil {
		return finalize.StagedChunk{}, t.fail(ctx, "read chunk", err)
	}
	return c, nil
}

// checkChunk checks a chunks row read back against its checksum.
func (t *tx) checkChunk(snapshot uuid.UUID, index int, digest, canonical []byte, stored sql.NullInt64) error {
	if !chunkSum(t.vessel, snapshot[:], index, digest, canonical).matches(stored) {
		return damagedRow("vessel %s snapshot %s chunk %d", vesselText(t.vessel), snapshot, index)
	}
	return nil
}

func (t *tx) Chunks(ctx context.Context, snapshot uuid.UUID) ([]finalize.StagedChunk, error) {
	return t.chunks(ctx, snapshot, true)
}

var _ finalize.DigestTx = (*tx)(nil)

// ChunkDigests implements finalize.DigestTx: the chunks' index and
// payload_sha256 columns alone, without the bytes Chunks reads and
// checks against the row's checksum (the schema holds each digest to 32
// bytes). A damaged digest is not caught here: finalize compares it with a
// digest it computes, so it only makes a set be decoded in full, where
// Chunks finds the damage.
func (t *tx) ChunkDigests(ctx context.Context, snapshot uuid.UUID) ([]finalize.StagedChunk, error) {
	return t.chunks(ctx, snapshot, false)
}

// chunks reads snapshot's chunks in index order: whole, their bytes
// checked against the rows' checksums, or only their index and digest.
func (t *tx) chunks(ctx context.Context, snapshot uuid.UUID, whole bool) ([]finalize.StagedChunk, error) {
	var out []finalize.StagedChunk
	if whole {
		err := t.query(ctx, "read chunks", chunkSelect+`WHERE c.vessel_id = ? AND c.snapshot_id = ? ORDER BY c.chunk_index`,
			[]any{t.vessel, snapshot[:]}, func(r *sql.Rows) error {
				var row chunkRow
				if err := r.Scan(row.dest()...); err != nil {
					return err
				}
				c, _, err := t.staged(&row)
				out = append(out, c)
				return err
			})
		if err != nil {
			return nil, err
		}
		return out, nil
	}
	err := t.query(ctx, "read chunk digests", `SELECT chunk_index, payload_sha256 FROM chunks
		WHERE vessel_id = ? AND snapshot_id = ? ORDER BY chunk_index`, []any{t.vessel, snapshot[:]}, func(r *sql.Rows) error {
		c := finalize.StagedChunk{Snapshot: snapshot}
		var digest []byte
		if err := r.Scan(&c.Index, &digest); err != nil {
			return err
		}
		copy(c.Payload[:], digest)
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// PutChunk stores c, sharing its records with the vessel's chunks of the
// same payload_sha256 when their bytes are the same (chunkbody.go). The
// row's checksum covers c's canonical bytes whole.
func (t *tx) PutChunk(ctx context.Context, c finalize.StagedChunk) error {
	if err := t.ready(); err != nil {
		return err
	}
	part, bodyID, bodyAt, err := t.split(ctx, c)
	if err != nil {
		return err
	}
	_, err = t.exec(ctx, "write chunk", `INSERT INTO chunks (vessel_id, snapshot_id, chunk_index, payload_sha256, chunk_canonical, checksum, body_id, body_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, t.vessel, c.Snapshot[:], c.Index, c.Payload[:], part,
		chunkSum(t.vessel, c.Snapshot[:], c.Index, c.Payload[:], c.Canonical).sum(), bodyID, bodyAt)
	return err
}
