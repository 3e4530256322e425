package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// Outbox is the outbox.Store of a Store: the on-board side's revision
// counter and entries, in the same file and under the same rules
// (transactions, locks, poisoning) as the receiver's tables.
type Outbox struct {
	s *Store
}

var _ outbox.Store = (*Outbox)(nil)

// Outbox returns the outbox.Store over s's file. Closing s closes it.
func (s *Store) Outbox() *Outbox { return &Outbox{s: s} }

// WithVessel implements outbox.Store, with the errors of Store.WithVessel.
func (o *Outbox) WithVessel(ctx context.Context, vesselID uuid.UUID, fn func(outbox.Tx) error) error {
	return o.s.transact(ctx, func(q *sql.Conn) error {
		t := &outboxTx{base: base{s: o.s, q: q}, id: vesselID, vessel: vesselID[:]}
		defer func() { t.done = true }()
		if _, err := t.queryRow(ctx, "read outbox vessel", `SELECT last_revision FROM outbox_vessels WHERE vessel_id = ?`,
			[]any{t.vessel}, &t.last); err != nil {
			return err
		}
		if err := fn(t); err != nil {
			return err
		}
		return t.err
	})
}

// outboxTx is the outbox.Tx of one transaction.
type outboxTx struct {
	base
	id     uuid.UUID
	vessel []byte
	last   int64 // the last revision allocated, as of this transaction
}

func (t *outboxTx) NextRevision(ctx context.Context, floor int64) (int64, error) {
	rev := max(t.last+1, floor)
	_, err := t.exec(ctx, "allocate revision", `INSERT INTO outbox_vessels (vessel_id, last_revision) VALUES (?, ?)
		ON CONFLICT (vessel_id) DO UPDATE SET last_revision = excluded.last_revision`, t.vessel, rev)
	if err != nil {
		return 0, err
	}
	t.last = rev
	return rev, nil
}

const entryColumns = `snapshot_id, chunk_index, revision, entity_type, entity_key, payload, digest, state`

// entryRow is an outbox row as stored, in the order of entryColumns.
type entryRow struct {
	snapshot              []byte
	chunkIndex, revision  int64
	entityType, entityKey string
	payload, digest       []byte
	state                 string
}

func (r *entryRow) dest() []any {
	return []any{&r.snapshot, &r.chunkIndex, &r.revision, &r.entityType, &r.entityKey, &r.payload, &r.digest, &r.state}
}

func rowOfEntry(e outbox.Entry) entryRow {
	return entryRow{snapshot: e.SnapshotID[:], chunkIndex: int64(e.ChunkIndex), revision: e.Revision,
		entityType: e.EntityType, entityKey: e.EntityKey, payload: e.Payload, digest: e.Digest[:], state: string(e.State)}
}

// entries reads the entries that the query's part after "FROM outbox"
// selects, checking each row against its checksum and its state against
// the three an entry can be in (SetState changes the state alone, so the
// checksum leaves it out).
func (t *outboxTx) entries(ctx context.Context, op, where string, args ...any) ([]outbox.Entry, error) {
	var out []outbox.Entry
	err := t.query(ctx, op, `SELECT `+entryColumns+`, checksum FROM outbox `+where, args, func(r *sql.Rows) error {
		var row entryRow
		var stored sql.NullInt64
		if err := r.Scan(append(row.dest(), &stored)...); err != nil {
			return err
		}
		snap, err := uuid.FromBytes(row.snapshot)
		state := outbox.State(row.state)
		switch {
		case err != nil || len(row.digest) != len(outbox.Entry{}.Digest) || !entrySum(t.vessel, &row).matches(stored) ||
			(state != outbox.Pending && state != outbox.Delivered && state != outbox.Stopped):
			entity := fmt.Sprintf("chunk %d", row.chunkIndex)
			if row.chunkIndex < 0 {
				entity = "manifest"
			}
			return damagedRow("outbox entry of vessel %s snapshot %x (%s)", t.id, row.snapshot, entity)
		}
		e := outbox.Entry{VesselID: t.id, SnapshotID: snap, ChunkIndex: int(row.chunkIndex), Revision: row.revision,
			EntityType: row.entityType, EntityKey: row.entityKey, Payload: row.payload, State: state}
		copy(e.Digest[:], row.digest)
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (t *outboxTx) Entries(ctx context.Context, snapshot uuid.UUID) ([]outbox.Entry, error) {
	out, err := t.entries(ctx, "read outbox entries", `WHERE vessel_id = ? AND snapshot_id = ? ORDER BY chunk_index`, t.vessel, snapshot[:])
	if err == nil && len(out) == 0 {
		return nil, sourcecatalog.ErrNotFound
	}
	return out, err
}

func (t *outboxTx) Pending(ctx context.Context, limit int) ([]outbox.Entry, error) {
	if err := t.ready(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, ctx.Err()
	}
	return t.entries(ctx, "read pending outbox entries",
		`WHERE vessel_id = ? AND state = ? ORDER BY revision, chunk_index LIMIT ?`, t.vessel, string(outbox.Pending), limit)
}

// CountPending implements outbox.PendingCounter.
func (t *outboxTx) CountPending(ctx context.Context) (int, error) {
	if err := t.ready(); err != nil {
		return 0, err
	}
	var n int
	_, err := t.queryRow(ctx, "count pending outbox entries", `SELECT COUNT(*) FROM outbox WHERE vessel_id = ? AND state = ?`,
		[]any{t.vessel, string(outbox.Pending)}, &n)
	return n, err
}

// entryBatch is how many entries one INSERT writes (10 columns each).
const entryBatch = 256

func (t *outboxTx) PutEntries(ctx context.Context, entries []outbox.Entry) error {
	if err := t.ready(); err != nil {
		return err
	}
	for _, e := range entries {
		if e.VesselID != t.id {
			return t.fail(ctx, "write outbox entries", fmt.Errorf("an entry of vessel %s in a transaction of %s", e.VesselID, t.id))
		}
	}
	const row = `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	for start := 0; start < len(entries); start += entryBatch {
		batch := entries[start:min(start+entryBatch, len(entries))]
		args := make([]any, 0, 10*len(batch))
		for _, e := range batch {
			r := rowOfEntry(e)
			args = append(args, t.vessel, r.snapshot, r.chunkIndex, r.revision, r.entityType, r.entityKey,
				r.payload, r.digest, r.state, entrySum(t.vessel, &r).sum())
		}
		q := `INSERT INTO outbox (vessel_id, ` + entryColumns + `, checksum) VALUES ` + strings.Repeat(row+", ", len(batch)-1) + row
		if _, err := t.execRows(ctx, "write outbox entries", q, args...); err != nil {
			return err
		}
	}
	return nil
}

func (t *outboxTx) SetState(ctx context.Context, snapshot uuid.UUID, chunkIndex int, state outbox.State) error {
	res, err := t.exec(ctx, "set outbox state", `UPDATE outbox SET state = ?
		WHERE vessel_id = ? AND snapshot_id = ? AND chunk_index = ?`, string(state), t.vessel, snapshot[:], chunkIndex)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return t.fail(ctx, "set outbox state", err)
	}
	if n == 0 {
		return sourcecatalog.ErrNotFound
	}
	return nil
}
