package mysqlstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/internal/indexblob"
)

// tx is the finalize.Tx of one InnoDB transaction holding the vessel lock.
//
// Holding the lock, the transaction is the only writer of the vessel's
// rows, so what it read or wrote of its vessel row and of its snapshot
// rows stays true until it ends: it reads each once, when first asked, and
// keeps it up to date as it writes. A tx lives for one attempt of one
// transaction; a re-run starts with a new one.
type tx struct {
	s         *Store
	tx        querier
	vessel    []byte
	state     finalize.VesselState
	stateRead bool                // state holds the vessel row
	snapshots []finalize.Snapshot // the vessel's snapshot rows, in no order
	snapsRead bool                // snapshots holds them all
	done      bool
}

func (t *tx) check() {
	if t.done {
		panic("mysqlstore: Tx used after its callback returned")
	}
}

// wrap names the operation that failed with err and, unless err already
// wraps a class, classes it as sourcecatalog.ErrStoreUnavailable: a
// database that fails a statement cannot serve the request. The driver's
// error stays the cause, for errors.As, ErrorNumber and IsRetryable.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	err = fmt.Errorf("mysqlstore: %s: %w", op, err)
	if sourcecatalog.Class(err) != nil {
		return err
	}
	return sourcecatalog.Wrap(sourcecatalog.ErrStoreUnavailable, err)
}

// vesselsTable holds the vessels' rows that the receiver's transactions
// lock.
const vesselsTable = "signalk_catalog_vessels_v2"

// readVessel reads the active pointer of the vessel locked by transact,
// once.
func (t *tx) readVessel(ctx context.Context) error {
	if t.stateRead {
		return nil
	}
	var snap, doc []byte
	var sec sql.NullInt64
	var nsec sql.NullInt32
	err := t.queryRow(ctx, `SELECT active_snapshot_id, active_revision,
		active_discovered_at_sec, active_discovered_at_nsec, active_document_sha256
		FROM `+vesselsTable+` WHERE vessel_id = ?`, t.vessel).Scan(&snap, &t.state.ActiveRevision, &sec, &nsec, &doc)
	if err != nil {
		return wrap("read vessel", err)
	}
	if snap != nil {
		if t.state.ActiveSnapshot, err = uuid.FromBytes(snap); err != nil {
			return wrap("read vessel", err)
		}
	}
	if sec.Valid && nsec.Valid {
		t.state.ActiveDiscoveredAt = fromUnix(sec.Int64, nsec.Int32)
	}
	copy(t.state.ActiveDocument[:], doc)
	t.stateRead = true
	return nil
}

// unixTime splits t into the two columns that store a time: Unix seconds
// and the nanoseconds within that second (0 to 999999999). Every time.Time
// has such a pair, so fromUnix returns the same instant, in UTC. (Unix
// nanoseconds in one int64 would hold only the years 1678 to 2262.)
func unixTime(t time.Time) (sec int64, nsec int32) { return t.Unix(), int32(t.Nanosecond()) }

func fromUnix(sec int64, nsec int32) time.Time { return time.Unix(sec, int64(nsec)).UTC() }

func (t *tx) Vessel(ctx context.Context) (finalize.VesselState, error) {
	t.check()
	if err := t.readVessel(ctx); err != nil {
		return finalize.VesselState{}, err
	}
	return t.state, ctx.Err()
}

func (t *tx) SetVessel(ctx context.Context, v finalize.VesselState) error {
	t.check()
	var snap, doc, sec, nsec any
	if v.ActiveSnapshot != uuid.Nil {
		snap, doc = v.ActiveSnapshot[:], v.ActiveDocument[:]
		sec, nsec = unixTime(v.ActiveDiscoveredAt)
	}
	_, err := t.exec(ctx, `UPDATE signalk_catalog_vessels_v2
		SET active_snapshot_id = ?, active_revision = ?, active_discovered_at_sec = ?, active_discovered_at_nsec = ?,
		active_document_sha256 = ? WHERE vessel_id = ?`, snap, v.ActiveRevision, sec, nsec, doc, t.vessel)
	if err != nil {
		return wrap("set vessel", err)
	}
	t.state, t.stateRead = v, true
	return nil
}

const snapshotColumns = `snapshot_id, revision, state, final_status, manifest, manifest_sha256,
	chunk_count, record_count, chunks_staged, staged_bytes, reason`

func scanSnapshot(sc interface{ Scan(...any) error }) (finalize.Snapshot, error) {
	var s finalize.Snapshot
	var id, digest []byte
	var state, final string
	err := sc.Scan(&id, &s.Revision, &state, &final, &s.Manifest, &digest,
		&s.ChunkCount, &s.RecordCount, &s.ChunksStaged, &s.StagedBytes, &s.Reason)
	if err != nil {
		return s, err
	}
	if s.ID, err = uuid.FromBytes(id); err != nil {
		return s, err
	}
	s.State, s.Final = finalize.SnapshotState(state), finalize.OutcomeStatus(final)
	copy(s.ManifestDigest[:], digest)
	return s, nil
}

// Snapshot reads every snapshot row of the vessel, the first time it or
// Snapshots is called, in one statement: a Receiver that asks for one
// snapshot goes on to sum them all (its staging bounds).
func (t *tx) Snapshot(ctx context.Context, id uuid.UUID) (finalize.Snapshot, error) {
	t.check()
	if err := t.readSnapshots(ctx); err != nil {
		return finalize.Snapshot{}, err
	}
	if i := t.snapshotAt(id); i >= 0 {
		return t.snapshots[i], nil
	}
	return finalize.Snapshot{}, sourcecatalog.ErrNotFound
}

func (t *tx) Snapshots(ctx context.Context) ([]finalize.Snapshot, error) {
	t.check()
	if err := t.readSnapshots(ctx); err != nil {
		return nil, err
	}
	return slices.Clone(t.snapshots), nil
}

// snapshotAt returns the position of snapshot id in t.snapshots, or -1.
func (t *tx) snapshotAt(id uuid.UUID) int {
	return slices.IndexFunc(t.snapshots, func(s finalize.Snapshot) bool { return s.ID == id })
}

// readSnapshots reads the vessel's snapshot rows into t.snapshots, once.
func (t *tx) readSnapshots(ctx context.Context) error {
	if t.snapsRead {
		return ctx.Err()
	}
	rows, err := t.query(ctx, `SELECT `+snapshotColumns+` FROM signalk_catalog_snapshots_v2
		WHERE vessel_id = ?`, t.vessel)
	if err != nil {
		return wrap("read snapshots", err)
	}
	defer rows.Close()
	var all []finalize.Snapshot
	for rows.Next() {
		s, err := scanSnapshot(rows)
		if err != nil {
			return wrap("read snapshots", err)
		}
		all = append(all, s)
	}
	if err := rows.Err(); err != nil {
		return wrap("read snapshots", err)
	}
	t.snapshots, t.snapsRead = all, true
	return nil
}

func (t *tx) PutSnapshot(ctx context.Context, s finalize.Snapshot) error {
	t.check()
	var manifest, digest any
	if s.Manifest != nil {
		manifest, digest = s.Manifest, s.ManifestDigest[:]
	}
	_, err := t.exec(ctx, `INSERT INTO signalk_catalog_snapshots_v2
		(vessel_id, `+snapshotColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON DUPLICATE KEY UPDATE revision = VALUES(revision), state = VALUES(state),
		final_status = VALUES(final_status), manifest = VALUES(manifest),
		manifest_sha256 = VALUES(manifest_sha256), chunk_count = VALUES(chunk_count),
		record_count = VALUES(record_count), chunks_staged = VALUES(chunks_staged),
		staged_bytes = VALUES(staged_bytes), reason = VALUES(reason)`,
		t.vessel, s.ID[:], s.Revision, string(s.State), string(s.Final), manifest, digest,
		s.ChunkCount, s.RecordCount, s.ChunksStaged, s.StagedBytes, boundReason(s.Reason))
	if err != nil {
		return wrap("write snapshot", err)
	}
	if t.snapsRead {
		// What a read would return: the reason as its column holds it,
		// and no digest without a manifest.
		s.Reason = boundReason(s.Reason)
		if s.Manifest == nil {
			s.ManifestDigest = canonical.Digest{}
		}
		if i := t.snapshotAt(s.ID); i >= 0 {
			t.snapshots[i] = s
		} else {
			t.snapshots = append(t.snapshots, s)
		}
	}
	return nil
}

// boundReason fits a rejection reason into its column.
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
	t.check()
	if _, err := t.exec(ctx, `DELETE FROM signalk_catalog_chunks_v2 WHERE vessel_id = ? AND snapshot_id = ?`, t.vessel, id[:]); err != nil {
		return wrap("delete chunks", err)
	}
	if _, err := t.exec(ctx, `DELETE FROM signalk_catalog_snapshots_v2 WHERE vessel_id = ? AND snapshot_id = ?`, t.vessel, id[:]); err != nil {
		return wrap("delete snapshot", err)
	}
	if i := t.snapshotAt(id); i >= 0 {
		t.snapshots = slices.Delete(t.snapshots, i, i+1)
	}
	return nil
}

func (t *tx) Chunk(ctx context.Context, snapshot uuid.UUID, index int) (finalize.StagedChunk, error) {
	t.check()
	c := finalize.StagedChunk{Snapshot: snapshot, Index: index}
	var digest []byte
	err := t.queryRow(ctx, `SELECT payload_sha256, chunk_canonical FROM signalk_catalog_chunks_v2
		WHERE vessel_id = ? AND snapshot_id = ? AND chunk_index = ?`, t.vessel, snapshot[:], index).Scan(&digest, &c.Canonical)
	if errors.Is(err, sql.ErrNoRows) {
		return c, sourcecatalog.ErrNotFound
	}
	copy(c.Payload[:], digest)
	return c, wrap("read chunk", err)
}

func (t *tx) Chunks(ctx context.Context, snapshot uuid.UUID) ([]finalize.StagedChunk, error) {
	t.check()
	rows, err := t.query(ctx, `SELECT chunk_index, payload_sha256, chunk_canonical FROM signalk_catalog_chunks_v2
		WHERE vessel_id = ? AND snapshot_id = ? ORDER BY chunk_index`, t.vessel, snapshot[:])
	if err != nil {
		return nil, wrap("read chunks", err)
	}
	defer rows.Close()
	var out []finalize.StagedChunk
	for rows.Next() {
		c := finalize.StagedChunk{Snapshot: snapshot}
		var digest []byte
		if err := rows.Scan(&c.Index, &digest, &c.Canonical); err != nil {
			return nil, wrap("read chunks", err)
		}
		copy(c.Payload[:], digest)
		out = append(out, c)
	}
	return out, wrap("read chunks", rows.Err())
}

func (t *tx) PutChunk(ctx context.Context, c finalize.StagedChunk) error {
	t.check()
	_, err := t.tx.ExecContext(ctx, `INSERT INTO signalk_catalog_chunks_v2
		(vessel_id, snapshot_id, chunk_index, payload_sha256, chunk_canonical) VALUES (?, ?, ?, ?, ?)`,
		t.vessel, c.Snapshot[:], c.Index, c.Payload[:], c.Canonical)
	return wrap("write chunk", err)
}

func (t *tx) Index(ctx context.Context) ([]finalize.IndexEntry, error) {
	t.check()
	var blob []byte
	err := t.queryRow(ctx, `SELECT entries FROM signalk_catalog_index_v2 WHERE vessel_id = ?`, t.vessel).Scan(&blob)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, wrap("read index", err)
	}
	index, err := indexblob.Decode(blob)
	if err != nil {
		return nil, wrap("read index", err)
	}
	return index, nil
}

func (t *tx) SetIndex(ctx context.Context, index []finalize.IndexEntry) error {
	t.check()
	_, err := t.tx.ExecContext(ctx, `INSERT INTO signalk_catalog_index_v2 (vessel_id, entries) VALUES (?, ?)
		ON DUPLICATE KEY UPDATE entries = VALUES(entries)`, t.vessel, indexblob.Encode(index))
	return wrap("write index", err)
}

// observationKey is the primary key of an observation row.
func observationKey(path, sourceRef string) []byte {
	h := sha256.New()
	h.Write([]byte(path))
	h.Write([]byte{0})
	h.Write([]byte(sourceRef))
	return h.Sum(nil)
}

// Inventory tables and the columns each kind writes besides the common
// ones (vessel_id, record, first/last seen, currently_observed).
var kindTables = [...]struct {
	table   string
	keys    []string // identity columns after vessel_id
	columns []string // descriptive columns parsed from the record
}{
	catalog.KindPath:        {"signalk_catalog_paths_v2", []string{"path"}, []string{"unit_present", "unit"}},
	catalog.KindSource:      {"signalk_catalog_sources_v2", []string{"source_ref"}, []string{"label", "source_type"}},
	catalog.KindObservation: {"signalk_catalog_observations_v2", []string{"observation_key", "path", "source_ref"}, []string{"value_type"}},
}

// itemValues returns the identity and descriptive column values of an item,
// parsed from its canonical record.
func itemValues(it finalize.Item) ([]any, error) {
	r, err := catalog.Decode(it.Record)
	if err != nil {
		return nil, err
	}
	switch it.Key.Kind {
	case catalog.KindPath:
		p, _ := r.AsPath()
		var unit any
		if !p.Unit.IsUnknown() && !p.Unit.IsNone() {
			unit = p.Unit.Symbol()
		}
		return []any{it.Key.Path, !p.Unit.IsUnknown(), unit}, nil
	case catalog.KindSource:
		s, _ := r.AsSource()
		return []any{it.Key.SourceRef, optional(s.Label), optional(s.Type)}, nil
	case catalog.KindObservation:
		o, _ := r.AsObservation()
		return []any{observationKey(it.Key.Path, it.Key.SourceRef), it.Key.Path, it.Key.SourceRef, o.ValueType.String()}, nil
	}
	return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, fmt.Sprintf("mysqlstore: item of kind %v", it.Key.Kind))
}

func optional(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

func (t *tx) PutItems(ctx context.Context, items []finalize.Item) error {
	t.check()
	for kind := catalog.KindPath; kind <= catalog.KindObservation; kind++ {
		rows, err := itemRows(t.vessel, kind, items)
		if err != nil {
			return wrap("write items", err)
		}
		if err := t.insertRows(ctx, kind, rows); err != nil {
			return err
		}
	}
	return nil
}

// itemColumns returns the columns of kind's inventory table, in the order
// of the values of itemRows.
func itemColumns(kind catalog.Kind) []string {
	k := kindTables[kind]
	return slices.Concat([]string{"vessel_id"}, k.keys, k.columns,
		[]string{"record", "first_seen_revision", "first_seen_at_sec", "first_seen_at_nsec",
			"last_seen_revision", "last_seen_at_sec", "last_seen_at_nsec", "currently_observed"})
}

// itemRows returns the inventory rows of the vessel's items of kind.
func itemRows(vessel []byte, kind catalog.Kind, items []finalize.Item) ([][]any, error) {
	var rows [][]any
	for _, it := range items {
		if it.Key.Kind != kind {
			continue
		}
		vals, err := itemValues(it)
		if err != nil {
			return nil, err
		}
		firstSec, firstNsec := unixTime(it.FirstSeen.At)
		lastSec, lastNsec := unixTime(it.LastSeen.At)
		row := append([]any{vessel}, vals...)
		rows = append(rows, append(row, it.Record, it.FirstSeen.Revision, firstSec, firstNsec,
			it.LastSeen.Revision, lastSec, lastNsec, it.CurrentlyObserved))
	}
	return rows, nil
}

// insertStatement returns a multi-row INSERT of rows into table's columns
// and its arguments.
func insertStatement(table string, columns []string, rows [][]any) (string, []any) {
	tuple := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(columns)), ", ") + ")"
	args := make([]any, 0, len(rows)*len(columns))
	for _, r := range rows {
		args = append(args, r...)
	}
	return "INSERT INTO " + table + " (" + strings.Join(columns, ", ") + ") VALUES " +
		strings.TrimSuffix(strings.Repeat(tuple+", ", len(rows)), ", "), args
}

// insertRows upserts rows of one kind in batches. FirstSeen is never in the
// update list, so an existing item keeps it.
func (t *tx) insertRows(ctx context.Context, kind catalog.Kind, rows [][]any) error {
	k := kindTables[kind]
	var update []string
	for _, c := range append(slices.Clone(k.columns), "record", "last_seen_revision", "last_seen_at_sec", "last_seen_at_nsec", "currently_observed") {
		update = append(update, c+" = VALUES("+c+")")
	}
	upsert := " ON DUPLICATE KEY UPDATE " + strings.Join(update, ", ")
	cols := itemColumns(kind)
	for start := 0; start < len(rows); start += t.s.batch {
		q, args := insertStatement(k.table, cols, rows[start:min(start+t.s.batch, len(rows))])
		if _, err := t.tx.ExecContext(ctx, q+upsert, args...); err != nil {
			return wrap("write items", err)
		}
	}
	return nil
}

func (t *tx) RetireItems(ctx context.Context, keys []catalog.Key, last finalize.Seen) error {
	t.check()
	lastSec, lastNsec := unixTime(last.At)
	for kind := catalog.KindPath; kind <= catalog.KindObservation; kind++ {
		var ids []any
		for _, k := range keys {
			switch {
			case k.Kind != kind:
			case kind == catalog.KindPath:
				ids = append(ids, k.Path)
			case kind == catalog.KindSource:
				ids = append(ids, k.SourceRef)
			default:
				ids = append(ids, observationKey(k.Path, k.SourceRef))
			}
		}
		tbl := kindTables[kind]
		for start := 0; start < len(ids); start += t.s.batch {
			batch := ids[start:min(start+t.s.batch, len(ids))]
			q := "UPDATE " + tbl.table + " SET currently_observed = 0, last_seen_revision = ?, last_seen_at_sec = ?, last_seen_at_nsec = ?" +
				" WHERE vessel_id = ? AND " + tbl.keys[0] + " IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(batch)), ", ") + ")"
			args := append([]any{last.Revision, lastSec, lastNsec, t.vessel}, batch...)
			if _, err := t.tx.ExecContext(ctx, q, args...); err != nil {
				return wrap("retire items", err)
			}
		}
	}
	return nil
}

func (t *tx) Items(ctx context.Context) ([]finalize.Item, error) {
	t.check()
	var out []finalize.Item
	for kind := catalog.KindPath; kind <= catalog.KindObservation; kind++ {
		tbl := kindTables[kind]
		idCols := "path, ''"
		switch kind {
		case catalog.KindSource:
			idCols = "'', source_ref"
		case catalog.KindObservation:
			idCols = "path, source_ref"
		}
		rows, err := t.query(ctx, "SELECT "+idCols+`, record, first_seen_revision, first_seen_at_sec, first_seen_at_nsec,
			last_seen_revision, last_seen_at_sec, last_seen_at_nsec, currently_observed FROM `+tbl.table+` WHERE vessel_id = ?`, t.vessel)
		if err != nil {
			return nil, wrap("read items", err)
		}
		for rows.Next() {
			it := finalize.Item{Key: catalog.Key{Kind: kind}}
			var firstSec, lastSec int64
			var firstNsec, lastNsec int32
			if err := rows.Scan(&it.Key.Path, &it.Key.SourceRef, &it.Record, &it.FirstSeen.Revision, &firstSec, &firstNsec,
				&it.LastSeen.Revision, &lastSec, &lastNsec, &it.CurrentlyObserved); err != nil {
				rows.Close()
				return nil, wrap("read items", err)
			}
			it.FirstSeen.At, it.LastSeen.At = fromUnix(firstSec, firstNsec), fromUnix(lastSec, lastNsec)
			out = append(out, it)
		}
		if err := rows.Close(); err != nil {
			return nil, wrap("read items", err)
		}
		if err := rows.Err(); err != nil {
			return nil, wrap("read items", err)
		}
	}
	return out, nil
}

// exec, query and queryRow run a statement of the transaction with its
// arguments written in as literals (see inline).
func (t *tx) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return t.tx.ExecContext(ctx, inline(query, args...))
}

func (t *tx) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return t.tx.QueryContext(ctx, inline(query, args...))
}

func (t *tx) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	return t.tx.QueryRowContext(ctx, inline(query, args...))
}
