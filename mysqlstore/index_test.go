package mysqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/internal/indexblob"
	"github.com/yachtmemory/sourcecatalog/mysqlstore"
)

// sortedIndex returns n index entries of paths prefix.NNNNN in canonical
// order, digests from rev.
func sortedIndex(n int, prefix string, rev int) []finalize.IndexEntry {
	var index []finalize.IndexEntry
	for i := range n {
		path := fmt.Sprintf("%s.%05d", prefix, i)
		index = append(index, finalize.IndexEntry{Key: catalog.Key{Kind: catalog.KindPath, Path: path},
			Digest: canonical.Sum(fmt.Appendf(nil, "%s@%d", path, rev))})
	}
	slices.SortFunc(index, func(a, b finalize.IndexEntry) int { return a.Key.Compare(b.Key) })
	return index
}

// rowsTouched returns the rows the session has written (inserted or
// updated, an upsert counting once) and deleted so far (handler counters,
// one connection).
func rowsTouched(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow(`SELECT SUM(VARIABLE_VALUE) FROM information_schema.SESSION_STATUS
		WHERE VARIABLE_NAME IN ('HANDLER_WRITE', 'HANDLER_DELETE')`).Scan(&n))
	return n
}

// indexRig runs the record index of one vessel through a Store over a
// pool of one connection, so that the session counters are the store's.
type indexRig struct {
	t      *testing.T
	db     *sql.DB
	store  *mysqlstore.Store
	vessel uuid.UUID
}

func newIndexRig(t *testing.T) *indexRig {
	db := migrated(t)
	db.SetMaxOpenConns(1)
	r := &indexRig{t: t, db: db, vessel: uuid.New()}
	r.store = r.fresh()
	return r
}

// fresh returns a new Store, which keeps nothing yet (and asks the server
// nothing of Galera, so that only its transactions' statements count).
func (r *indexRig) fresh() *mysqlstore.Store {
	return mysqlstore.New(r.db, mysqlstore.WithGalera(false))
}

// set writes index, after reading it when read says so, and returns the
// rows the transaction wrote or deleted besides the vessel row's lock.
func (r *indexRig) set(read bool, index []finalize.IndexEntry) int {
	r.t.Helper()
	ctx := context.Background()
	before := rowsTouched(r.t, r.db)
	require.NoError(r.t, r.store.WithVessel(ctx, r.vessel, func(tx finalize.Tx) error {
		if read {
			if _, err := tx.Index(ctx); err != nil {
				return err
			}
		}
		return tx.SetIndex(ctx, index)
	}))
	return rowsTouched(r.t, r.db) - before - 1 // the lock (the stamp is an update, not counted)
}

// get reads the index through store, and returns it with the statements
// the transaction ran besides those of every transaction and the lock.
func (r *indexRig) get(store *mysqlstore.Store) ([]finalize.IndexEntry, int) {
	r.t.Helper()
	ctx := context.Background()
	var got []finalize.IndexEntry
	before := questions(r.t, r.db)
	require.NoError(r.t, store.WithVessel(ctx, r.vessel, func(tx finalize.Tx) (err error) {
		got, err = tx.Index(ctx)
		return err
	}))
	return got, questions(r.t, r.db) - before - 1 - 5 // the SHOW, the transaction's 4 and the lock
}

func (r *indexRig) count(table string) int {
	r.t.Helper()
	var n int
	require.NoError(r.t, r.db.QueryRow("SELECT COUNT(*) FROM "+table+" WHERE vessel_id = ?", r.vessel[:]).Scan(&n))
	return n
}

// questions returns the statements the session has run (one connection).
func questions(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow(`SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS
		WHERE VARIABLE_NAME = 'QUESTIONS'`).Scan(&n))
	return n
}

// TestIndexBaseAndDelta: the record index is a base and a delta; a new
// index that changes one entry in a hundred, drops some keys and adds
// others writes one delta row, and reads back exactly, in canonical
// order; a delta grown past an eighth of the index is folded into a new
// base; SetIndex without Index first works alike.
func TestIndexBaseAndDelta(t *testing.T) {
	r := newIndexRig(t)
	const n = 5000
	first := sortedIndex(n, "environment.sensor", 1)
	r.set(true, first)
	got, _ := r.get(r.fresh())
	require.Equal(t, first, got)
	parts := r.count("signalk_catalog_index_base_v2")
	assert.Equal(t, 1, r.count("signalk_catalog_index_segments_v2"), "the marker")
	assert.Zero(t, r.count("signalk_catalog_index_delta_v2"), "no delta after a new base")

	// One entry in a hundred changes (50), ten consecutive keys leave, ten
	// appear at the end: one delta row.
	next := slices.Clone(first)
	for i := 0; i < n; i += 100 {
		next[i].Digest = canonical.Sum(fmt.Appendf(nil, "changed %d", i))
	}
	next = slices.Delete(next, 2000, 2010)
	next = append(next, sortedIndex(10, "environment.zzz", 1)...)
	touched := r.set(true, next)
	assert.Equal(t, 1, touched, "one delta row written for 50 changes and 20 keys")
	got, _ = r.get(r.fresh())
	require.Equal(t, next, got)
	assert.Equal(t, parts, r.count("signalk_catalog_index_base_v2"), "the base is kept")

	// Back to the base: the delta row goes.
	assert.Equal(t, 1, r.set(false, first), "the delta row deleted")
	got, _ = r.get(r.fresh())
	require.Equal(t, first, got)
	assert.Zero(t, r.count("signalk_catalog_index_delta_v2"))

	// A delta of more than an eighth of the index is a new base.
	most := slices.Clone(first)
	for i := 0; i < n; i += 7 {
		most[i].Digest = canonical.Sum(fmt.Appendf(nil, "most %d", i))
	}
	r.set(true, most)
	got, _ = r.get(r.fresh())
	require.Equal(t, most, got)
	assert.Zero(t, r.count("signalk_catalog_index_delta_v2"), "folded into the base")

	// A smaller base leaves no part behind.
	small := sortedIndex(3, "navigation.x", 2)
	r.set(false, small)
	got, _ = r.get(r.fresh())
	require.Equal(t, small, got)
	assert.Equal(t, 1, r.count("signalk_catalog_index_base_v2"), "three entries are one part")

	// The index with no entries is not the absent one.
	r.set(true, nil)
	got, _ = r.get(r.fresh())
	assert.NotNil(t, got)
	assert.Empty(t, got)

	// An index out of order is kept in canonical order, the last of a
	// key's entries winning.
	shuffled := slices.Clone(small)
	slices.Reverse(shuffled)
	r.set(false, append(shuffled, finalize.IndexEntry{Key: small[0].Key, Digest: canonical.Sum([]byte("last"))}))
	got, _ = r.get(r.fresh())
	want := slices.Clone(small)
	want[0].Digest = canonical.Sum([]byte("last"))
	require.Equal(t, want, got)
}

// TestIndexLargeBaseInParts: the base of the largest index is written in
// parts, each within a statement, and read back whole.
func TestIndexLargeBaseInParts(t *testing.T) {
	r := newIndexRig(t)
	index := sortedIndex(sourcecatalog.MaxRecords, "electrical.batteries.house.cells.voltage.measured", 1)
	r.set(true, index)
	assert.Greater(t, r.count("signalk_catalog_index_base_v2"), 1)
	var largest int
	require.NoError(t, r.db.QueryRow("SELECT MAX(LENGTH(entries)) FROM signalk_catalog_index_base_v2 WHERE vessel_id = ?", r.vessel[:]).Scan(&largest))
	assert.LessOrEqual(t, largest, mysqlstore.PartBytes)
	got, _ := r.get(r.fresh())
	require.Equal(t, index, got)
}

// TestIndexCache: a Store that wrote or read a vessel's index reads none
// of it while the stamp in the vessel row is the one it kept; an index
// another Store wrote since, a transaction rolled back, and a stamp
// changed behind its back are read again.
func TestIndexCache(t *testing.T) {
	r := newIndexRig(t)
	ctx := context.Background()
	first := sortedIndex(300, "environment.sensor", 1)
	r.set(true, first)
	got, reads := r.get(r.store)
	require.Equal(t, first, got)
	assert.Zero(t, reads, "the Store that wrote the index reads none of it")

	other := r.fresh()
	got, reads = r.get(other)
	require.Equal(t, first, got)
	assert.Equal(t, 1, reads, "another Store reads it, in one statement")
	_, reads = r.get(other)
	assert.Zero(t, reads, "and then keeps it")

	// Written through the other Store: the first reads it again.
	second := sortedIndex(300, "environment.sensor", 2)
	require.NoError(t, other.WithVessel(ctx, r.vessel, func(tx finalize.Tx) error { return tx.SetIndex(ctx, second) }))
	got, reads = r.get(r.store)
	require.Equal(t, second, got)
	assert.Equal(t, 1, reads)

	// A SetIndex rolled back is not kept.
	rolled := errors.New("rolled back")
	require.ErrorIs(t, r.store.WithVessel(ctx, r.vessel, func(tx finalize.Tx) error {
		if err := tx.SetIndex(ctx, first); err != nil {
			return err
		}
		return rolled
	}), rolled)
	got, _ = r.get(r.store)
	require.Equal(t, second, got, "the rolled-back index is not read")

	// The index rows changed with another stamp, as another process
	// would: the Store reads them again.
	require.NoError(t, other.WithVessel(ctx, r.vessel, func(tx finalize.Tx) error { return tx.SetIndex(ctx, first) }))
	_, err := r.db.Exec("UPDATE signalk_catalog_vessels_v2 SET index_stamp = index_stamp + 1 WHERE vessel_id = ?", r.vessel[:])
	require.NoError(t, err)
	got, reads = r.get(other)
	require.Equal(t, first, got)
	assert.Equal(t, 1, reads, "a stamp other than the kept one is read")

	// A vessel row without a stamp is never served from the cache.
	_, err = r.db.Exec("UPDATE signalk_catalog_vessels_v2 SET index_stamp = NULL WHERE vessel_id = ?", r.vessel[:])
	require.NoError(t, err)
	_, reads = r.get(other)
	assert.Equal(t, 1, reads)
	_, reads = r.get(other)
	assert.Equal(t, 1, reads, "nothing was kept without a stamp")
}

// TestIndexEarlierShapes: an index kept in segments (shape 1 of the
// tables) or as one value (before segments) is read as it is, and the
// next SetIndex moves it to a base and delta, leaving the marker, which no
// code of those shapes can read (indexblob.Decode refuses it).
func TestIndexEarlierShapes(t *testing.T) {
	for _, shape := range []string{"segments", "value"} {
		t.Run(shape, func(t *testing.T) {
			r := newIndexRig(t)
			legacy := sortedIndex(100, "electrical.x", 3)
			switch shape {
			case "segments":
				for i := 0; i < len(legacy); i += 30 {
					part := legacy[i:min(i+30, len(legacy))]
					id := canonical.Sum([]byte(part[0].Key.Path))
					_, err := r.db.Exec("INSERT INTO signalk_catalog_index_segments_v2 (vessel_id, segment_id, entries) VALUES (?, ?, ?)",
						r.vessel[:], id[:], indexblob.Encode(part))
					require.NoError(t, err)
				}
			case "value":
				_, err := r.db.Exec("INSERT INTO signalk_catalog_index_v2 (vessel_id, entries) VALUES (?, ?)", r.vessel[:], indexblob.Encode(legacy))
				require.NoError(t, err)
			}
			got, _ := r.get(r.store)
			require.Equal(t, legacy, got)
			_, reads := r.get(r.store)
			assert.Equal(t, 1, reads, "an index without a stamp is read every time")

			next := slices.Clone(legacy)
			next[5].Digest = canonical.Sum([]byte("changed"))
			r.set(true, next)
			got, _ = r.get(r.fresh())
			require.Equal(t, next, got)
			assert.Zero(t, r.count("signalk_catalog_index_v2"), "the value is moved")
			var blobs [][]byte
			rows, err := r.db.Query("SELECT entries FROM signalk_catalog_index_segments_v2 WHERE vessel_id = ?", r.vessel[:])
			require.NoError(t, err)
			for rows.Next() {
				var b []byte
				require.NoError(t, rows.Scan(&b))
				blobs = append(blobs, b)
			}
			require.NoError(t, rows.Err())
			require.Len(t, blobs, 1, "the segments are moved, the marker left")
			_, err = indexblob.Decode(blobs[0])
			assert.ErrorIs(t, err, indexblob.ErrCorrupt, "code of shape 1 cannot read the marker")
		})
	}
}
