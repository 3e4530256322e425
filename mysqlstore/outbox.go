package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// Outbox is an outbox.Store on a MySQL/MariaDB database whose current
// schema holds the _v2 tables (see Migrate): the on-board side's revision
// counter in signalk_catalog_outbox_vessels_v2 and its entries in
// signalk_catalog_outbox_v2. It is safe for concurrent use.
//
// Transactions follow the rules of Store (see the package documentation):
// READ COMMITTED, the vessel's row in signalk_catalog_outbox_vessels_v2
// locked first, deadlocks and lock wait timeouts retried by re-running the
// callback. The revision counter is that row's last_revision, written in the
// transaction that allocates it. Entries keep their canonical bytes in a
// BLOB column; the manifest's chunk_index is -1 (sourcecatalog.NoIndex).
type Outbox struct {
	s *Store
}

var _ outbox.Store = (*Outbox)(nil)

// NewOutbox returns an outbox.Store over db. WithRetries and WithRetryable
// apply as for New; WithBatchSize bounds the rows of one INSERT.
func NewOutbox(db *sql.DB, opts ...Option) *Outbox {
	return &Outbox{s: New(db, opts...)}
}

// WithVessel implements outbox.Store.
func (o *Outbox) WithVessel(ctx context.Context, vesselID uuid.UUID, fn func(outbox.Tx) error) error {
	return o.s.retry(ctx, func() error {
		t := &outboxTx{s: o.s, id: vesselID, vessel: vesselID[:]}
		// The lock reads the vessel's last revision.
		return o.s.transact(ctx, outboxVesselsTable, vesselID[:], "last_revision", []any{&t.last}, func(c *txConn) error {
			t.tx = c
			defer func() { t.done = true }()
			return fn(t)
		})
	})
}

// outboxVesselsTable holds the rows that the outbox's transactions lock.
const outboxVesselsTable = "signalk_catalog_outbox_vessels_v2"

// outboxStatementBytes bounds the payload bytes of one multi-row INSERT,
// well under any server's max_allowed_packet (4 MiB on MySQL 5.7).
const outboxStatementBytes = 1 << 20

// outboxTx is the outbox.Tx of one InnoDB transaction holding the vessel's
// outbox row lock.
type outboxTx struct {
	s      *Store
	tx     querier
	id     uuid.UUID
	vessel []byte
	last   int64 // the last revision allocated, as of this transaction
	done   bool
}

func (t *outboxTx) check() {
	if t.done {
		panic("mysqlstore: outbox Tx used after its callback returned")
	}
}

func (t *outboxTx) NextRevision(ctx context.Context, floor int64) (int64, error) {
	t.check()
	rev := max(t.last+1, floor)
	_, err := t.tx.ExecContext(ctx, `UPDATE signalk_catalog_outbox_vessels_v2 SET last_revision = ? WHERE vessel_id = ?`, rev, t.vessel)
	if err != nil {
		return 0, wrap("allocate revision", err)
	}
	t.last = rev
	return rev, nil
}

const entryColumns = `snapshot_id, chunk_index, revision, entity_type, entity_key, payload, digest, state`

// entries reads the entries a query selects, given as the part after
// "FROM table".
func (t *outboxTx) entries(ctx context.Context, op, where string, args ...any) ([]outbox.Entry, error) {
	rows, err := t.tx.QueryContext(ctx, `SELECT `+entryColumns+` FROM signalk_catalog_outbox_v2 `+where, args...)
	if err != nil {
		return nil, wrap(op, err)
	}
	defer rows.Close()
	var out []outbox.Entry
	for rows.Next() {
		e := outbox.Entry{VesselID: t.id}
		var snap, digest []byte
		var state string
		if err := rows.Scan(&snap, &e.ChunkIndex, &e.Revision, &e.EntityType, &e.EntityKey, &e.Payload, &digest, &state); err != nil {
			return nil, wrap(op, err)
		}
		if e.SnapshotID, err = uuid.FromBytes(snap); err != nil {
			return nil, wrap(op, err)
		}
		if len(digest) != len(e.Digest) {
			return nil, wrap(op, errors.New("digest of the wrong length"))
		}
		copy(e.Digest[:], digest)
		e.State = outbox.State(state)
		out = append(out, e)
	}
	return out, wrap(op, rows.Err())
}

func (t *outboxTx) Entries(ctx context.Context, snapshot uuid.UUID) ([]outbox.Entry, error) {
	t.check()
	out, err := t.entries(ctx, "read outbox entries", `WHERE vessel_id = ? AND snapshot_id = ? ORDER BY chunk_index`, t.vessel, snapshot[:])
	if err == nil && len(out) == 0 {
		return nil, sourcecatalog.ErrNotFound
	}
	return out, err
}

func (t *outboxTx) Pending(ctx context.Context, limit int) ([]outbox.Entry, error) {
	t.check()
	if limit <= 0 {
		return nil, ctx.Err()
	}
	return t.entries(ctx, "read pending outbox entries",
		`WHERE vessel_id = ? AND state = ? ORDER BY revision, chunk_index LIMIT ?`, t.vessel, string(outbox.Pending), limit)
}

// CountPending implements outbox.PendingCounter.
func (t *outboxTx) CountPending(ctx context.Context) (int, error) {
	t.check()
	var n int
	err := t.tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM signalk_catalog_outbox_v2 WHERE vessel_id = ? AND state = ?`,
		t.vessel, string(outbox.Pending)).Scan(&n)
	if err != nil {
		return 0, wrap("count pending outbox entries", err)
	}
	return n, nil
}

func (t *outboxTx) PutEntries(ctx context.Context, entries []outbox.Entry) error {
	t.check()
	for _, e := range entries {
		if e.VesselID != t.id {
			return sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "mysqlstore: put outbox entries: an entry of another vessel than the transaction's")
		}
	}
	const row = `(?, ?, ?, ?, ?, ?, ?, ?, ?)`
	for start := 0; start < len(entries); {
		end, size := start, 0
		for end < len(entries) && end-start < t.s.batch && (end == start || size+len(entries[end].Payload) <= outboxStatementBytes) {
			size += len(entries[end].Payload)
			end++
		}
		batch := entries[start:end]
		args := make([]any, 0, 9*len(batch))
		for _, e := range batch {
			args = append(args, t.vessel, e.SnapshotID[:], e.ChunkIndex, e.Revision, e.EntityType, e.EntityKey,
				e.Payload, e.Digest[:], string(e.State))
		}
		q := `INSERT INTO signalk_catalog_outbox_v2 (vessel_id, ` + entryColumns + `) VALUES ` +
			strings.Repeat(row+", ", len(batch)-1) + row
		if _, err := t.tx.ExecContext(ctx, q, args...); err != nil {
			return wrap("write outbox entries", err)
		}
		start = end
	}
	return nil
}

func (t *outboxTx) SetState(ctx context.Context, snapshot uuid.UUID, chunkIndex int, state outbox.State) error {
	t.check()
	res, err := t.tx.ExecContext(ctx, `UPDATE signalk_catalog_outbox_v2 SET state = ?
		WHERE vessel_id = ? AND snapshot_id = ? AND chunk_index = ?`, string(state), t.vessel, snapshot[:], chunkIndex)
	if err != nil {
		return wrap("set outbox state", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return wrap("set outbox state", err)
	}
	if n > 0 {
		return nil
	}
	// Without CLIENT_FOUND_ROWS an UPDATE that changes nothing affects no
	// row: tell an entry already in the state from a missing one.
	var found int
	err = t.tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM signalk_catalog_outbox_v2
		WHERE vessel_id = ? AND snapshot_id = ? AND chunk_index = ?`, t.vessel, snapshot[:], chunkIndex).Scan(&found)
	if err != nil {
		return wrap("set outbox state", err)
	}
	if found == 0 {
		return sourcecatalog.ErrNotFound
	}
	return nil
}
