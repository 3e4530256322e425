package sqlitestore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
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

// entryRow is an outbox row as stored, in the order of entryColumns, with
// payload whole (as the checksum covers it).
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

// entrySelect reads an entry row with its body, if it has one: the
// columns of entryColumns (payload without its body), the row's checksum,
// body_id, body_at and compact, and the body row's vessel_id, digest,
// first_revision, body and checksum (all NULL when there is none).
const entrySelect = `SELECT o.snapshot_id, o.chunk_index, o.revision, o.entity_type, o.entity_key, o.payload, o.digest, o.state,
	o.checksum, o.body_id, o.body_at, o.compact, b.vessel_id, b.digest, b.first_revision, b.body, b.checksum
	FROM outbox AS o LEFT JOIN outbox_bodies AS b ON b.id = o.body_id `

// A row stored compact (compact 1, schema version 8) keeps empty what
// its other columns rebuild byte for byte, as the Writer builds an entry:
// its entity_type and entity_key (compactKey), and, when it names a body,
// its payload's bytes around the body, body_at included (compactPart).
// PutEntries stores a row so only when the rebuild gives the entry's own
// bytes; the row's checksum covers the entry whole, and so checks the
// rebuild too. The rebuild is the layout of schema version 8, written
// out here rather than taken from the protocol's constants, so that a
// row written compact reads back the same whatever a later version of
// the protocol names: an entry of another protocol is not rebuilt, and
// is stored whole.
const (
	compactProtocol     = "yachtmemory.source-catalog.v2" // sourcecatalog.Protocol
	compactManifestType = "signalk_catalog_manifest_v2"   // sourcecatalog.ManifestEntityType
	compactChunkType    = "signalk_catalog_chunk_v2"      // sourcecatalog.ChunkEntityType
)

// compactKey returns the entity type and key of a manifest or chunk entry
// of snapshot at chunk index, as envelope.ManifestKey and
// envelope.ChunkKey name them in schema version 8.
func compactKey(snapshot uuid.UUID, index int64) (entityType, entityKey string) {
	if index < 0 {
		return compactManifestType, snapshot.String()
	}
	return compactChunkType, snapshot.String() + "/" + strconv.FormatInt(index, 10)
}

// compactPart returns a chunk entry's payload without its records
// array's content, and where the content goes, as the Writer builds a
// chunk (SPEC.md §6.3). ok is false for a manifest, or a row whose
// vessel, snapshot or digest is not of its size.
func compactPart(vessel []byte, r *entryRow) (part []byte, at int, ok bool) {
	snap, err := uuid.FromBytes(r.snapshot)
	id, verr := uuid.FromBytes(vessel)
	if err != nil || verr != nil || r.chunkIndex < 0 || len(r.digest) != sha256.Size {
		return nil, 0, false
	}
	part = fmt.Appendf(nil, `{"chunk_index":%d,"payload_sha256":"%x","protocol":"%s","records":[`, r.chunkIndex, r.digest, compactProtocol)
	at = len(part)
	part = fmt.Appendf(part, `],"revision":%d,"snapshot_id":"%s","vessel_id":"%s"}`, r.revision, snap, id)
	return part, at, true
}

// rebuild puts back the columns a compact row keeps empty, into row and
// body. ok is false when a column it keeps empty is not, or its part
// cannot be rebuilt: the row is damaged.
func rebuild(vessel []byte, row *entryRow, body *storedBody) (ok bool) {
	snap, err := uuid.FromBytes(row.snapshot)
	if err != nil || row.entityType != "" || row.entityKey != "" {
		return false
	}
	row.entityType, row.entityKey = compactKey(snap, row.chunkIndex)
	if !body.id.Valid {
		return true
	}
	if len(row.payload) != 0 || body.at.Valid {
		return false
	}
	var at int
	row.payload, at, ok = compactPart(vessel, row)
	body.at = sql.NullInt64{Int64: int64(at), Valid: true}
	return ok
}

// storedBody is the part of an entry row that names its body, and the
// body row read with it.
type storedBody struct {
	id, at, first, checksum sql.NullInt64
	vessel, digest, body    []byte
}

// payload returns the entry's payload whole: part, the row's payload
// column, with the body put back at body_at. ok is false when the row
// names a body that is not there, not the vessel's, does not match its
// checksum, or does not fit.
func (b *storedBody) payload(vessel, part []byte) (whole []byte, ok bool, bodyDamaged bool) {
	switch {
	case !b.id.Valid && !b.at.Valid:
		return part, true, false
	case !b.id.Valid || !b.at.Valid || b.at.Int64 < 0 || b.at.Int64 > int64(len(part)) || b.body == nil ||
		!bytes.Equal(b.vessel, vessel):
		return nil, false, false
	case !bodySum(b.vessel, b.digest, b.first.Int64, b.body).matches(b.checksum):
		return nil, false, true
	}
	at := int(b.at.Int64)
	whole = make([]byte, 0, len(part)+len(b.body))
	whole = append(append(append(whole, part[:at]...), b.body...), part[at:]...)
	return whole, true, false
}

// entries reads the entries that the query's part after the FROM clause
// (outbox AS o, its body as b) selects, checking each row against its
// checksum and its state against the three an entry can be in (SetState
// changes the state alone, so the checksum leaves it out). The checksum
// covers the payload whole, its body put back; a body is checked against
// its own checksum too, so that damage to records the entries share names
// the body.
func (t *outboxTx) entries(ctx context.Context, op, where string, args ...any) ([]outbox.Entry, error) {
	var out []outbox.Entry
	err := t.query(ctx, op, entrySelect+where, args, func(r *sql.Rows) error {
		var row entryRow
		var stored sql.NullInt64
		var compact bool
		var body storedBody
		if err := r.Scan(append(row.dest(), &stored, &body.id, &body.at, &compact, &body.vessel, &body.digest, &body.first, &body.body, &body.checksum)...); err != nil {
			return err
		}
		rebuilt := !compact || rebuild(t.vessel, &row, &body)
		whole, ok, bodyDamaged := body.payload(t.vessel, row.payload)
		if bodyDamaged {
			return damagedRow("outbox body %d of vessel %s, shared by snapshot %x", body.id.Int64, t.id, row.snapshot)
		}
		row.payload = whole
		snap, err := uuid.FromBytes(row.snapshot)
		state := outbox.State(row.state)
		switch {
		case !ok || !rebuilt || err != nil || len(row.digest) != len(outbox.Entry{}.Digest) || !entrySum(t.vessel, &row).matches(stored) ||
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
	out, err := t.entries(ctx, "read outbox entries", `WHERE o.vessel_id = ? AND o.snapshot_id = ? ORDER BY o.chunk_index`, t.vessel, snapshot[:])
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
	return t.entries(ctx, "read pending outbox entries", pendingWhere, t.vessel, limit)
}

// pendingWhere and countPendingQuery find a vessel's pending entries
// through outbox_pending, which holds those alone (schema version 8): the
// state is a literal, so that SQLite sees the query within the index.
const (
	pendingWhere      = `WHERE o.vessel_id = ? AND o.state = 'pending' ORDER BY o.revision, o.chunk_index LIMIT ?`
	countPendingQuery = `SELECT COUNT(*) FROM outbox WHERE vessel_id = ? AND state = 'pending'`
)

// CountPending implements outbox.PendingCounter.
func (t *outboxTx) CountPending(ctx context.Context) (int, error) {
	if err := t.ready(); err != nil {
		return 0, err
	}
	var n int
	_, err := t.queryRow(ctx, "count pending outbox entries", countPendingQuery, []any{t.vessel}, &n)
	return n, err
}

// entryBatch is how many entries one INSERT writes (13 columns each).
const entryBatch = 256

// minSharedBody is the shortest records array a chunk entry shares
// through outbox_bodies rather than keeps in its row: below it, the body
// row and its key would cost about what they save.
const minSharedBody = 512

// bodyOf returns where, in a chunk entry's payload, the content of its
// records array lies: between the first `"records":[` and the last
// `],"revision":`, as in every chunk's canonical bytes (SPEC.md §6.3),
// and only when {"records":[...]} of that content has the entry's digest,
// its payload_sha256, which keys the shared body. ok is false for a
// manifest, for bytes not of that form or not of that digest, and for a
// body shorter than minSharedBody: the entry is stored whole. The two
// parts are put back together byte for byte, so any split stores the
// payload faithfully; this one makes the shared part what repeats.
func bodyOf(e outbox.Entry) (at, end int, ok bool) {
	if e.EntityType != sourcecatalog.ChunkEntityType {
		return 0, 0, false
	}
	const open, close = `"records":[`, `],"revision":`
	at = bytes.Index(e.Payload, []byte(open)) + len(open)
	end = bytes.LastIndex(e.Payload, []byte(close))
	if at < len(open) || end-at < minSharedBody {
		return 0, 0, false
	}
	h := sha256.New()
	h.Write([]byte(`{"records":[`))
	h.Write(e.Payload[at:end])
	h.Write([]byte(`]}`))
	return at, end, bytes.Equal(h.Sum(nil), e.Digest[:])
}

// pendingRow is an entry on its way into the outbox table.
type pendingRow struct {
	row     entryRow
	sum     int64
	part    []byte        // the payload column: the payload without its body
	at      sql.NullInt64 // body_at
	shared  bool
	body    []byte
	compact bool // the row is stored compact (rebuild)
}

func (t *outboxTx) PutEntries(ctx context.Context, entries []outbox.Entry) error {
	if err := t.ready(); err != nil {
		return err
	}
	for _, e := range entries {
		if e.VesselID != t.id {
			return t.fail(ctx, "write outbox entries", fmt.Errorf("an entry of vessel %s in a transaction of %s", e.VesselID, t.id))
		}
	}
	const row = `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	for start := 0; start < len(entries); start += entryBatch {
		batch := entries[start:min(start+entryBatch, len(entries))]
		rows := make([]pendingRow, len(batch))
		for i, e := range batch {
			p := &rows[i]
			p.row = rowOfEntry(e)
			p.sum = entrySum(t.vessel, &p.row).sum()
			p.part = e.Payload
			if at, end, ok := bodyOf(e); ok {
				p.shared, p.body, p.at = true, e.Payload[at:end], sql.NullInt64{Int64: int64(at), Valid: true}
				p.part = append(append(make([]byte, 0, len(e.Payload)-len(p.body)), e.Payload[:at]...), e.Payload[end:]...)
			}
			p.compact = compactable(t.vessel, e, p)
		}
		ids, err := t.bodies(ctx, rows)
		if err != nil {
			return err
		}
		args := make([]any, 0, 13*len(batch))
		for _, p := range rows {
			var id sql.NullInt64
			if p.shared {
				id = sql.NullInt64{Int64: ids[digestKey(p.row.digest)], Valid: true}
			}
			r := p.row
			at := p.at
			if p.compact {
				r.entityType, r.entityKey = "", ""
				if p.shared {
					p.part, at = []byte{}, sql.NullInt64{}
				}
			}
			args = append(args, t.vessel, r.snapshot, r.chunkIndex, r.revision, r.entityType, r.entityKey,
				p.part, r.digest, r.state, p.sum, id, at, p.compact)
		}
		q := `INSERT INTO outbox (vessel_id, ` + entryColumns + `, checksum, body_id, body_at, compact) VALUES ` +
			strings.Repeat(row+", ", len(batch)-1) + row
		if _, err := t.execRows(ctx, "write outbox entries", q, args...); err != nil {
			return err
		}
	}
	return nil
}

// compactable reports whether rebuild gives back the columns of p, the
// row of e, that a compact row keeps empty.
func compactable(vessel []byte, e outbox.Entry, p *pendingRow) bool {
	if typ, key := compactKey(e.SnapshotID, p.row.chunkIndex); typ != e.EntityType || key != e.EntityKey {
		return false
	}
	if !p.shared {
		return true
	}
	part, at, ok := compactPart(vessel, &p.row)
	return ok && p.at.Int64 == int64(at) && bytes.Equal(part, p.part)
}

func digestKey(d []byte) [sha256.Size]byte { return [sha256.Size]byte(d) }

// A bodyRow is an outbox_bodies row as written.
type bodyRow struct {
	digest [sha256.Size]byte
	first  int64 // first_revision
	body   []byte
}

func (b *bodyRow) sum(vessel []byte) int64 {
	return bodySum(vessel, b.digest[:], b.first, b.body).sum()
}

// bodies returns the ids of the outbox_bodies rows holding the shared
// bodies of rows, by digest: the vessel's rows that hold them already,
// and new rows for the others. A row found is written again, whole, when
// its body does not match its checksum — it is damaged, and mended by the
// body of rows, which has the digest it is found by — or when rows are of
// a revision below its first_revision (which the Writer never does).
func (t *outboxTx) bodies(ctx context.Context, rows []pendingRow) (map[[sha256.Size]byte]int64, error) {
	want := map[[sha256.Size]byte]*bodyRow{}
	var order []*bodyRow
	args := []any{t.vessel}
	for _, p := range rows {
		if !p.shared {
			continue
		}
		key := digestKey(p.row.digest)
		if b := want[key]; b != nil {
			b.first = min(b.first, p.row.revision)
			continue
		}
		b := &bodyRow{digest: key, first: p.row.revision, body: p.body}
		want[key], order = b, append(order, b)
		args = append(args, key[:])
	}
	ids := make(map[[sha256.Size]byte]int64, len(want))
	if len(want) == 0 {
		return ids, nil
	}
	var rewrite []int64
	err := t.queryRows(ctx, "read outbox bodies", `SELECT id, digest, first_revision, body, checksum FROM outbox_bodies
		WHERE vessel_id = ? AND digest IN (?`+strings.Repeat(", ?", len(want)-1)+`)`, args, func(r *sql.Rows) error {
		var id, first int64
		var digest, body []byte
		var stored sql.NullInt64
		if err := r.Scan(&id, &digest, &first, &body, &stored); err != nil {
			return err
		}
		b := want[[sha256.Size]byte(digest)] // the IN list matched it: 32 bytes, one of want's
		ids[b.digest] = id
		if !bodySum(t.vessel, digest, first, body).matches(stored) || b.first < first {
			rewrite = append(rewrite, id)
		}
		b.first = min(b.first, first)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, b := range order {
		id, found := ids[b.digest]
		switch {
		case found && slices.Contains(rewrite, id):
			if _, err := t.exec(ctx, "mend outbox body", `UPDATE outbox_bodies SET first_revision = ?, body = ?, checksum = ? WHERE id = ?`,
				b.first, b.body, b.sum(t.vessel), id); err != nil {
				return nil, err
			}
		case !found:
			res, err := t.exec(ctx, "write outbox body", `INSERT INTO outbox_bodies (vessel_id, digest, first_revision, body, checksum)
				VALUES (?, ?, ?, ?, ?)`, t.vessel, b.digest[:], b.first, b.body, b.sum(t.vessel))
			if err != nil {
				return nil, err
			}
			if ids[b.digest], err = res.LastInsertId(); err != nil {
				return nil, t.fail(ctx, "write outbox body", err)
			}
		}
	}
	return ids, nil
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
