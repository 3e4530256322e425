package sqlitestore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/outbox"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
	"github.com/yachtmemory/sourcecatalog/storeheal"
)

// Source names the file, opens it, and takes ErrPoisoned alone for a
// store to reopen.
func TestSource(t *testing.T) {
	path := filepath.Join(t.TempDir(), "receiver.db")
	src := sqlitestore.Source(path)
	assert.Equal(t, "sqlite "+path, src.Name)
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("commit: %w", sqlitestore.ErrPoisoned), true},
		{sqlitestore.ErrLocked, false},
		{sqlitestore.ErrClosed, false},
		{context.DeadlineExceeded, false},
	} {
		assert.Equal(t, tc.want, src.Poisoned(tc.err), "%v", tc.err)
	}
	h, err := storeheal.OpenReceiver(context.Background(), src)
	require.NoError(t, err)
	require.NoError(t, h.Close())
}

// OutboxSource names the file, opens its outbox under a healing Handle that
// commits there, and takes ErrPoisoned alone for a store to reopen.
func TestOutboxSource(t *testing.T) {
	path := filepath.Join(t.TempDir(), "boat.db")
	src := sqlitestore.OutboxSource(path)
	assert.Equal(t, "sqlite "+path, src.Name)
	assert.True(t, src.Poisoned(fmt.Errorf("commit: %w", sqlitestore.ErrPoisoned)))
	assert.False(t, src.Poisoned(sqlitestore.ErrLocked))
	h, err := storeheal.OpenOutbox(context.Background(), src)
	require.NoError(t, err)
	store := storeheal.Outbox(h, func(s outbox.Store) outbox.Store { return s })
	commit, err := outbox.NewWriter(store).Commit(context.Background(), outbox.NewCycle(examples.VesselID, examples.DiscoveredAt, examples.Boat()))
	require.NoError(t, err)
	require.NoError(t, h.Close())

	s, err := sqlitestore.Open(context.Background(), path, sqlitestore.WithReadOnly())
	require.NoError(t, err)
	defer s.Close()
	var pending int
	require.NoError(t, s.Outbox().WithVessel(context.Background(), examples.VesselID, func(tx outbox.Tx) error {
		pending, err = outbox.CountPending(context.Background(), tx)
		return err
	}))
	assert.Equal(t, len(commit.Entries), pending, "the outbox the Handle served is the file's")
}
