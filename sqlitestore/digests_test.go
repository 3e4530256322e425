package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// ChunkDigests (finalize.DigestTx) is Chunks without the bytes: the same
// chunks of the same snapshot and vessel, in index order, including those
// staged earlier in the transaction, none of another vessel.
func TestChunkDigests(t *testing.T) {
	ctx := context.Background()
	s, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "shore.db"))
	require.NoError(t, err)
	defer s.Close()
	vessel, snap, other := uuid.New(), uuid.New(), uuid.New()
	put := func(tx finalize.Tx, id uuid.UUID, i int) {
		var d canonical.Digest
		d[0], d[31] = byte(i), byte(len(id.String()))
		require.NoError(t, tx.PutChunk(ctx, finalize.StagedChunk{Snapshot: id, Index: i, Canonical: []byte{'c', byte(i)}, Payload: d}))
	}
	check := func(tx finalize.Tx) {
		whole, err := tx.Chunks(ctx, snap)
		require.NoError(t, err)
		got, err := tx.(finalize.DigestTx).ChunkDigests(ctx, snap)
		require.NoError(t, err)
		for i := range whole {
			whole[i].Canonical = nil
		}
		require.Len(t, got, 3)
		require.Equal(t, whole, got)
	}
	require.NoError(t, s.WithVessel(ctx, vessel, func(tx finalize.Tx) error {
		for _, i := range []int{2, 0} {
			put(tx, snap, i)
		}
		put(tx, other, 1)
		return nil
	}))
	require.NoError(t, s.WithVessel(ctx, vessel, func(tx finalize.Tx) error {
		put(tx, snap, 1) // seen in its own transaction
		check(tx)
		return nil
	}))
	require.NoError(t, s.WithVessel(ctx, uuid.New(), func(tx finalize.Tx) error {
		got, err := tx.(finalize.DigestTx).ChunkDigests(ctx, snap)
		require.NoError(t, err)
		require.Empty(t, got, "another vessel's")
		return nil
	}))
}
