package sqlitestore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/internal/indexblob"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// indexOf returns an index of paths p0..p(n-1), in canonical order, with
// digests that depend on salt for the paths for which changed says so.
func indexOf(n int, changed func(int) bool, salt string) []finalize.IndexEntry {
	out := make([]finalize.IndexEntry, 0, n)
	for i := range n {
		d := "v" + strconv.Itoa(i)
		if changed(i) {
			d += salt
		}
		out = append(out, finalize.IndexEntry{Key: catalog.Key{Kind: catalog.KindPath, Path: fmt.Sprintf("p.%05d", i)}, Digest: canonical.Sum([]byte(d))})
	}
	return out
}

func none(int) bool { return false }

func setIndex(t *testing.T, s *sqlitestore.Store, vessel uuid.UUID, index []finalize.IndexEntry, readFirst bool) {
	t.Helper()
	require.NoError(t, s.WithVessel(context.Background(), vessel, func(tx finalize.Tx) error {
		if readFirst {
			if _, err := tx.Index(context.Background()); err != nil {
				return err
			}
		}
		return tx.SetIndex(context.Background(), index)
	}))
}

func readIndex(t *testing.T, s *sqlitestore.Store, vessel uuid.UUID) []finalize.IndexEntry {
	t.Helper()
	var got []finalize.IndexEntry
	require.NoError(t, s.WithVessel(context.Background(), vessel, func(tx finalize.Tx) (err error) {
		got, err = tx.Index(context.Background())
		return err
	}))
	return got
}

// TestIndexDelta replaces an index by small and large changes, with and
// without reading it first, and reads each back through the writing Store
// (its cached base), through a second Store on the file, and after a
// reopen.
func TestIndexDelta(t *testing.T) {
	ctx := context.Background()
	s, path := open(t)
	other, err := sqlitestore.Open(ctx, path)
	require.NoError(t, err)
	defer other.Close()
	vessel := uuid.New()
	require.Nil(t, readIndex(t, s, vessel))

	tail := indexOf(1200, none, "")[1000:]
	steps := []struct {
		name  string
		index []finalize.IndexEntry
	}{
		{"first", indexOf(1000, none, "")},
		{"one changed", indexOf(1000, func(i int) bool { return i == 10 }, "a")},
		{"one in a hundred changed", indexOf(1000, func(i int) bool { return i%100 == 0 }, "b")},
		{"the same", indexOf(1000, func(i int) bool { return i%100 == 0 }, "b")},
		{"some leave", indexOf(990, func(i int) bool { return i%100 == 0 }, "b")},
		{"some appear", append(indexOf(990, func(i int) bool { return i%100 == 0 }, "b"), tail[:20]...)},
		{"back to the base", indexOf(1000, none, "")},
		{"most change", indexOf(1000, func(i int) bool { return i%2 == 0 }, "c")},
		{"one changed after compaction", indexOf(1000, func(i int) bool { return i%2 == 0 || i == 1 }, "c")},
		{"empty", []finalize.IndexEntry{}},
		{"one entry", indexOf(1, none, "")},
		{"another vessel's worth", indexOf(1000, none, "d")},
	}
	for i, st := range steps {
		for _, w := range []*sqlitestore.Store{s, other} {
			setIndex(t, w, vessel, st.index, i%2 == 0)
			for _, r := range []*sqlitestore.Store{s, other} {
				require.Equal(t, st.index, readIndex(t, r, vessel), st.name)
			}
		}
	}

	// Given out of order, with a key twice: kept in order, the last wins.
	want := indexOf(3, none, "")
	dup := want[1]
	dup.Digest = canonical.Sum([]byte("dup"))
	setIndex(t, s, vessel, []finalize.IndexEntry{want[2], want[1], want[0], dup}, false)
	want[1] = dup
	require.Equal(t, want, readIndex(t, s, vessel))

	// A transaction reads its own SetIndex, and a rolled-back one is gone.
	errRollback := fmt.Errorf("roll back")
	require.ErrorIs(t, s.WithVessel(ctx, vessel, func(tx finalize.Tx) error {
		require.NoError(t, tx.SetIndex(ctx, indexOf(5, none, "")))
		got, err := tx.Index(ctx)
		require.NoError(t, err)
		require.Equal(t, indexOf(5, none, ""), got)
		return errRollback
	}), errRollback)
	require.Equal(t, want, readIndex(t, s, vessel))

	require.NoError(t, s.Close())
	s2, err := sqlitestore.Open(ctx, path)
	require.NoError(t, err)
	defer s2.Close()
	require.Equal(t, want, readIndex(t, s2, vessel))
}

// TestMigrateV1 opens a schema version 1 file: its record index values
// become bases, read back unchanged.
func TestMigrateV1(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v1.db")
	vessel, empty := uuid.New(), uuid.New()
	index := indexOf(300, none, "")
	sqliteFile(t, path, sqlitestore.SchemaV1, "PRAGMA application_id = 1498628913", "PRAGMA user_version = 1",
		fmt.Sprintf("INSERT INTO record_index VALUES (x'%x', x'%x')", vessel[:], indexblob.Encode(index)),
		fmt.Sprintf("INSERT INTO record_index VALUES (x'%x', x'%x')", empty[:], indexblob.Encode(nil)))
	s, err := sqlitestore.Open(ctx, path)
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, index, readIndex(t, s, vessel))
	require.Equal(t, []finalize.IndexEntry{}, readIndex(t, s, empty))
	require.Nil(t, readIndex(t, s, uuid.New()))
	changed := indexOf(300, func(i int) bool { return i == 7 }, "x")
	setIndex(t, s, vessel, changed, false)
	require.Equal(t, changed, readIndex(t, s, vessel))
}
