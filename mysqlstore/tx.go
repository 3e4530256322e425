package mysqlstore

import (
	"bytes"
	"cmp"
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
	conn      *txConn // the same connection, for token-conditioned writes
	vessel    []byte
	row       vesselRow            // the vessel row as the lock read it
	state     finalize.VesselState // the vessel row, up to date
	snapshots []finalize.Snapshot  // the vessel's snapshot rows, in no order
	snapsRead bool                 // snapshots holds them all
	// staged holds, when stagedOf is not nil, the payload digest of every
	// staged chunk of snapshot *stagedOf by index: read with the snapshot
	// rows, kept up to date by PutChunk and DeleteSnapshot.
	stagedOf *uuid.UUID
	staged   map[int]canonical.Digest
	index    *storedIndex // the stored index as read or written, when not nil
	cache    *storedIndex // the index to cache under row.stamp once the transaction commits, when not nil
	// stampPending: SetIndex drew row.stamp, which the vessel row does
	// not hold yet (see writeStamp).
	stampPending bool
	done         bool
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

// vesselColumns are the columns of the vessel row that the lock reads
// (see transact), into a vesselRow.
const vesselColumns = `active_snapshot_id, active_revision,
	active_discovered_at_sec, active_discovered_at_nsec, active_document_sha256, index_stamp`

// vesselRow holds the vesselColumns as read.
type vesselRow struct {
	snap, doc []byte
	revision  int64
	sec       sql.NullInt64
	nsec      sql.NullInt32
	stamp     sql.NullInt64 // the record index's (see index.go), NULL before the first SetIndex of this shape
}

func (r *vesselRow) dest() []any {
	return []any{&r.snap, &r.revision, &r.sec, &r.nsec, &r.doc, &r.stamp}
}

// lockedRow takes the active pointer from the vessel row that the lock
// read.
func (t *tx) lockedRow() error {
	r := &t.row
	t.state = finalize.VesselState{ActiveRevision: r.revision}
	if r.snap != nil {
		id, err := uuid.FromBytes(r.snap)
		if err != nil {
			return wrap("read vessel", err)
		}
		t.state.ActiveSnapshot = id
	}
	if r.sec.Valid && r.nsec.Valid {
		t.state.ActiveDiscoveredAt = fromUnix(r.sec.Int64, r.nsec.Int32)
	}
	copy(t.state.ActiveDocument[:], r.doc)
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
	return t.state, ctx.Err()
}

// SetVessel writes the active pointer, and the index's stamp when SetIndex
// drew one (see writeStamp), in one statement.
func (t *tx) SetVessel(ctx context.Context, v finalize.VesselState) error {
	t.check()
	var snap, doc, sec, nsec any
	if v.ActiveSnapshot != uuid.Nil {
		snap, doc = v.ActiveSnapshot[:], v.ActiveDocument[:]
		sec, nsec = unixTime(v.ActiveDiscoveredAt)
	}
	q := `UPDATE signalk_catalog_vessels_v2
		SET active_snapshot_id = ?, active_revision = ?, active_discovered_at_sec = ?, active_discovered_at_nsec = ?,
		active_document_sha256 = ?`
	args := []any{snap, v.ActiveRevision, sec, nsec, doc}
	if t.stampPending {
		q += `, index_stamp = ?`
		args = append(args, t.row.stamp.Int64)
	}
	if _, err := t.exec(ctx, q+` WHERE vessel_id = ?`, append(args, t.vessel)...); err != nil {
		return wrap("set vessel", err)
	}
	t.state = v
	t.stampPending = false
	return nil
}

const snapshotColumns = `snapshot_id, revision, state, final_status, manifest, manifest_sha256,
	chunk_count, record_count, chunks_staged, staged_bytes, reason`

// scanSnapshot scans a row of a kind column (into kind) and the
// snapshotColumns.
func scanSnapshot(sc interface{ Scan(...any) error }, kind *int) (finalize.Snapshot, error) {
	var s finalize.Snapshot
	var id, digest []byte
	var state, final string
	err := sc.Scan(kind, &id, &s.Revision, &state, &final, &s.Manifest, &digest,
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
// snapshot goes on to sum them all (its staging bounds). The same
// statement reads the index and payload digest of each staged chunk of
// snapshot id, which a receive looks up next (Chunk).
func (t *tx) Snapshot(ctx context.Context, id uuid.UUID) (finalize.Snapshot, error) {
	t.check()
	if err := t.readSnapshots(ctx, &id); err != nil {
		return finalize.Snapshot{}, err
	}
	if i := t.snapshotAt(id); i >= 0 {
		return t.snapshots[i], nil
	}
	return finalize.Snapshot{}, sourcecatalog.ErrNotFound
}

func (t *tx) Snapshots(ctx context.Context) ([]finalize.Snapshot, error) {
	t.check()
	if err := t.readSnapshots(ctx, nil); err != nil {
		return nil, err
	}
	return slices.Clone(t.snapshots), nil
}

// snapshotAt returns the position of snapshot id in t.snapshots, or -1.
func (t *tx) snapshotAt(id uuid.UUID) int {
	return slices.IndexFunc(t.snapshots, func(s finalize.Snapshot) bool { return s.ID == id })
}

// readSnapshots reads the vessel's snapshot rows into t.snapshots, once,
// and with them, when chunksOf is not nil, the digests of chunksOf's
// staged chunks into t.staged. The chunk rows come in the same result as
// the snapshot rows (UNION ALL), in the snapshot columns: kind 1, the
// chunk index as the revision and its payload digest as the manifest's.
func (t *tx) readSnapshots(ctx context.Context, chunksOf *uuid.UUID) error {
	if t.snapsRead {
		return ctx.Err()
	}
	q, args := `SELECT 0, `+snapshotColumns+` FROM signalk_catalog_snapshots_v2 WHERE vessel_id = ?`, []any{t.vessel}
	if chunksOf != nil {
		q += ` UNION ALL SELECT 1, snapshot_id, chunk_index, '', '', NULL, payload_sha256, 0, 0, 0, 0, ''
		FROM signalk_catalog_chunks_v2 WHERE vessel_id = ? AND snapshot_id = ?`
		args = append(args, t.vessel, chunksOf[:])
	}
	rows, err := t.query(ctx, q, args...)
	if err != nil {
		return wrap("read snapshots", err)
	}
	defer rows.Close()
	var all []finalize.Snapshot
	staged := map[int]canonical.Digest{}
	for rows.Next() {
		var kind int
		s, err := scanSnapshot(rows, &kind)
		if err != nil {
			return wrap("read snapshots", err)
		}
		if kind == 1 {
			staged[int(s.Revision)] = s.ManifestDigest
			continue
		}
		all = append(all, s)
	}
	if err := rows.Err(); err != nil {
		return wrap("read snapshots", err)
	}
	t.snapshots, t.snapsRead = all, true
	if chunksOf != nil {
		id := *chunksOf
		t.stagedOf, t.staged = &id, staged
	}
	return nil
}

// PutSnapshot writes the snapshot row in one statement conditioned on the
// vessel row holding the transaction's token (see txConn): a receive's
// last statement, which then needs no token check after it. A snapshot
// whose row this transaction read with the same manifest is updated
// without its manifest.
func (t *tx) PutSnapshot(ctx context.Context, s finalize.Snapshot) error {
	t.check()
	var manifest, digest any
	if s.Manifest != nil {
		manifest, digest = s.Manifest, s.ManifestDigest[:]
	}
	reason := boundReason(s.Reason)
	var q string
	if i := t.snapshotAt(s.ID); t.snapsRead && i >= 0 && sameManifest(t.snapshots[i], s) {
		q = inline(`UPDATE signalk_catalog_snapshots_v2 AS s JOIN `+vesselsTable+` AS v
			ON v.vessel_id = s.vessel_id AND v.lock_token = ?
			SET s.revision = ?, s.state = ?, s.final_status = ?, s.chunk_count = ?, s.record_count = ?,
			s.chunks_staged = ?, s.staged_bytes = ?, s.reason = ?
			WHERE s.vessel_id = ? AND s.snapshot_id = ?`, t.conn.token,
			s.Revision, string(s.State), string(s.Final), s.ChunkCount, s.RecordCount, s.ChunksStaged, s.StagedBytes, reason,
			t.vessel, s.ID[:])
	} else {
		q = inline(`INSERT INTO signalk_catalog_snapshots_v2
		(vessel_id, `+snapshotColumns+`) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
		FROM `+vesselsTable+` WHERE vessel_id = ? AND lock_token = ?
		ON DUPLICATE KEY UPDATE revision = VALUES(revision), state = VALUES(state),
		final_status = VALUES(final_status), manifest = VALUES(manifest),
		manifest_sha256 = VALUES(manifest_sha256), chunk_count = VALUES(chunk_count),
		record_count = VALUES(record_count), chunks_staged = VALUES(chunks_staged),
		staged_bytes = VALUES(staged_bytes), reason = VALUES(reason)`,
			t.vessel, s.ID[:], s.Revision, string(s.State), string(s.Final), manifest, digest,
			s.ChunkCount, s.RecordCount, s.ChunksStaged, s.StagedBytes, reason, t.vessel, t.conn.token)
	}
	res, err := t.tx.ExecContext(ctx, q)
	if err != nil {
		return wrap("write snapshot", err)
	}
	if n, err := res.RowsAffected(); err == nil && n > 0 {
		t.conn.confirm()
	}
	if t.snapsRead {
		// What a read would return: the reason as its column holds it,
		// and no digest without a manifest.
		s.Reason = reason
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

// sameManifest reports whether s has the manifest that the stored row old
// has, as a read returns it.
func sameManifest(old, s finalize.Snapshot) bool {
	if s.Manifest == nil {
		return old.Manifest == nil
	}
	return old.Manifest != nil && old.ManifestDigest == s.ManifestDigest && bytes.Equal(old.Manifest, s.Manifest)
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
	if t.knowsStaged(id) {
		clear(t.staged)
	}
	return nil
}

// knowsStaged reports whether t.staged holds the staged chunks of
// snapshot.
func (t *tx) knowsStaged(snapshot uuid.UUID) bool {
	return t.stagedOf != nil && *t.stagedOf == snapshot
}

// Chunk looks a chunk of the snapshot that Snapshot read up in the digests
// read with it, without a statement when none is staged at index.
func (t *tx) Chunk(ctx context.Context, snapshot uuid.UUID, index int) (finalize.StagedChunk, error) {
	t.check()
	c := finalize.StagedChunk{Snapshot: snapshot, Index: index}
	if t.knowsStaged(snapshot) {
		if _, ok := t.staged[index]; !ok {
			return c, cmp.Or(ctx.Err(), sourcecatalog.ErrNotFound)
		}
	}
	err := scanChunk(t.queryRow(ctx, `SELECT payload_sha256, chunk_canonical FROM signalk_catalog_chunks_v2
		WHERE vessel_id = ? AND snapshot_id = ? AND chunk_index = ?`, t.vessel, snapshot[:], index), &c)
	if errors.Is(err, sql.ErrNoRows) {
		return c, sourcecatalog.ErrNotFound
	}
	return c, wrap("read chunk", err)
}

// scanChunk scans the columns of head, then payload_sha256 and
// chunk_canonical, into c.
func scanChunk(sc interface{ Scan(...any) error }, c *finalize.StagedChunk, head ...any) error {
	var digest []byte
	err := sc.Scan(append(head, &digest, &c.Canonical)...)
	copy(c.Payload[:], digest)
	return err
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
		if err := scanChunk(rows, &c, &c.Index); err != nil {
			return nil, wrap("read chunks", err)
		}
		out = append(out, c)
	}
	return out, wrap("read chunks", rows.Err())
}

var _ finalize.DigestTx = (*tx)(nil)

// ChunkDigests implements finalize.DigestTx: Chunks' statement without
// chunk_canonical, so that verifying a set by identity (SPEC.md §8.4)
// does not fetch the active snapshot's bytes from the server.
func (t *tx) ChunkDigests(ctx context.Context, snapshot uuid.UUID) ([]finalize.StagedChunk, error) {
	t.check()
	rows, err := t.query(ctx, `SELECT chunk_index, payload_sha256 FROM signalk_catalog_chunks_v2
		WHERE vessel_id = ? AND snapshot_id = ? ORDER BY chunk_index`, t.vessel, snapshot[:])
	if err != nil {
		return nil, wrap("read chunk digests", err)
	}
	defer rows.Close()
	var out []finalize.StagedChunk
	for rows.Next() {
		c := finalize.StagedChunk{Snapshot: snapshot}
		var digest []byte
		if err := rows.Scan(&c.Index, &digest); err != nil {
			return nil, wrap("read chunk digests", err)
		}
		copy(c.Payload[:], digest)
		out = append(out, c)
	}
	return out, wrap("read chunk digests", rows.Err())
}

// PutChunk writes the chunk in one statement, its bytes as a literal
// when the statement stays within statementBytes.
func (t *tx) PutChunk(ctx context.Context, c finalize.StagedChunk) error {
	t.check()
	const q = `INSERT INTO signalk_catalog_chunks_v2
		(vessel_id, snapshot_id, chunk_index, payload_sha256, chunk_canonical) VALUES (?, ?, ?, ?, ?)`
	args := []any{t.vessel, c.Snapshot[:], c.Index, c.Payload[:], c.Canonical}
	var err error
	if len(q)+2*len(c.Canonical)+256 <= statementBytes {
		_, err = t.exec(ctx, q, args...)
	} else {
		_, err = t.tx.ExecContext(ctx, q, args...)
	}
	if err != nil {
		return wrap("write chunk", err)
	}
	if t.knowsStaged(c.Snapshot) {
		t.staged[c.Index] = c.Payload
	}
	return nil
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

// insertRows upserts rows of one kind in multi-row statements of at most
// t.s.batch rows, their values written in as literals, each statement
// within statementBytes (a row that alone is larger goes in a statement of
// its own). FirstSeen is never in the update list, so an existing item
// keeps it.
func (t *tx) insertRows(ctx context.Context, kind catalog.Kind, rows [][]any) error {
	k := kindTables[kind]
	var update []string
	for _, c := range append(slices.Clone(k.columns), "record", "last_seen_revision", "last_seen_at_sec", "last_seen_at_nsec", "currently_observed") {
		update = append(update, c+" = VALUES("+c+")")
	}
	head := "INSERT INTO " + k.table + " (" + strings.Join(itemColumns(kind), ", ") + ") VALUES "
	upsert := " ON DUPLICATE KEY UPDATE " + strings.Join(update, ", ")
	return writeBatches(rows, t.s.batch, len(head)+len(upsert), writeTuple,
		func(values string) error {
			_, err := t.tx.ExecContext(ctx, head+values+upsert)
			return wrap("write items", err)
		})
}

// writeBatches writes the literals of rows (by write, comma-separated) in
// pieces of at most batch rows whose text, with fixed more bytes of the
// statement around it, stays within statementBytes (a row that alone is
// larger is a piece of its own), and runs each piece.
func writeBatches[T any](rows []T, batch, fixed int, write func(*strings.Builder, T), run func(values string) error) error {
	var b, one strings.Builder
	n := 0
	flush := func() error {
		if n == 0 {
			return nil
		}
		err := run(b.String())
		b.Reset()
		n = 0
		return err
	}
	for _, r := range rows {
		one.Reset()
		write(&one, r)
		if n > 0 && (n == batch || fixed+b.Len()+2+one.Len() > statementBytes) {
			if err := flush(); err != nil {
				return err
			}
		}
		if n > 0 {
			b.WriteString(", ")
		}
		b.WriteString(one.String())
		n++
	}
	return flush()
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
		head := inline("UPDATE "+tbl.table+" SET currently_observed = 0, last_seen_revision = ?, last_seen_at_sec = ?, last_seen_at_nsec = ?"+
			" WHERE vessel_id = ? AND "+tbl.keys[0]+" IN (", last.Revision, lastSec, lastNsec, t.vessel)
		err := writeBatches(ids, t.s.batch, len(head)+1, writeLiteral, func(values string) error {
			_, err := t.tx.ExecContext(ctx, head+values+")")
			return wrap("retire items", err)
		})
		if err != nil {
			return err
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
