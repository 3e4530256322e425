package mysqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// TestIndexSegments: the record index is stored in segments; a new index
// that changes one entry in a hundred, drops some keys and adds others
// rewrites a small part of them, and reads back exactly, in canonical
// order; SetIndex without Index first replaces every segment; an index
// written before segments is read and then moved.
func TestIndexSegments(t *testing.T) {
	db := migrated(t)
	db.SetMaxOpenConns(1) // the session counters are the store's
	ctx := context.Background()
	store := mysqlstore.New(db)
	vessel := uuid.New()
	set := func(read bool, index []finalize.IndexEntry) {
		t.Helper()
		require.NoError(t, store.WithVessel(ctx, vessel, func(tx finalize.Tx) error {
			if read {
				if _, err := tx.Index(ctx); err != nil {
					return err
				}
			}
			return tx.SetIndex(ctx, index)
		}))
	}
	get := func() []finalize.IndexEntry {
		t.Helper()
		var got []finalize.IndexEntry
		require.NoError(t, store.WithVessel(ctx, vessel, func(tx finalize.Tx) (err error) {
			got, err = tx.Index(ctx)
			return err
		}))
		return got
	}

	const n = 5000
	first := sortedIndex(n, "environment.sensor", 1)
	set(true, first)
	require.Equal(t, first, get())
	var segments int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM signalk_catalog_index_segments_v2 WHERE vessel_id = ?", vessel[:]).Scan(&segments))

	// One entry in a hundred changes (50), ten consecutive keys leave, ten
	// appear at the end: each change rewrites the one segment holding it,
	// the keys that leave and appear touch two or three segments each.
	next := slices.Clone(first)
	for i := 0; i < n; i += 100 {
		next[i].Digest = canonical.Sum(fmt.Appendf(nil, "changed %d", i))
	}
	next = slices.Delete(next, 2000, 2010)
	next = append(next, sortedIndex(10, "environment.zzz", 1)...)
	before := rowsTouched(t, db)
	set(true, next)
	touched := rowsTouched(t, db) - before - 1 // the vessel row's lock
	require.Equal(t, next, get())
	t.Logf("%d segments, %d written or deleted for 50 changes and 20 keys", segments, touched)
	assert.LessOrEqual(t, touched, 50+6, "only the segments holding a change are written")
	assert.Less(t, touched, segments/2)

	// Without Index first, every segment is replaced: none is left over.
	small := sortedIndex(3, "navigation.x", 2)
	set(false, small)
	require.Equal(t, small, get())
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM signalk_catalog_index_segments_v2 WHERE vessel_id = ?", vessel[:]).Scan(&segments))
	assert.Equal(t, 1, segments, "three entries are one segment")

	// The index with no entries is not the absent one.
	set(true, nil)
	got := get()
	assert.NotNil(t, got)
	assert.Empty(t, got)

	// An index written before segments, as one value.
	old := uuid.New()
	legacy := sortedIndex(40, "electrical.x", 3)
	_, err := db.Exec("INSERT INTO signalk_catalog_index_v2 (vessel_id, entries) VALUES (?, ?)", old[:], indexblob.Encode(legacy))
	require.NoError(t, err)
	vessel = old
	require.Equal(t, legacy, get())
	set(true, small)
	require.Equal(t, small, get())
	var left int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM signalk_catalog_index_v2 WHERE vessel_id = ?", old[:]).Scan(&left))
	assert.Zero(t, left, "writing the index moves it out of the single value")
}
