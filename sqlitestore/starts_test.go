package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/outbox"
	"github.com/yachtmemory/sourcecatalog/outbox/outboxtest"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

func TestStartMemoryConformance(t *testing.T) {
	t.Parallel()
	outboxtest.RunStartMemory(t, func(t *testing.T) outbox.StartMemory { s, _ := open(t); return s.Outbox() })
}

// A start remembered by one process is remembered by the next, on the
// same file; a row damaged at rest is an error, never a start taken as
// settled.
func TestStartMemoryPersists(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "boat.db")
	t0 := time.Date(2026, 7, 1, 6, 0, 0, 0, time.UTC)
	s, err := sqlitestore.Open(ctx, path)
	require.NoError(t, err)
	_, err = s.Outbox().RememberStart(ctx, outbox.ServerStart{ID: "a", FirstSeen: t0, Settled: t0.Add(5 * time.Second)})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	s, err = sqlitestore.Open(ctx, path)
	require.NoError(t, err)
	defer s.Close()
	got, err := s.Outbox().RememberStart(ctx, outbox.ServerStart{ID: "a", FirstSeen: t0.Add(time.Hour)})
	require.NoError(t, err)
	assert.Equal(t, outbox.ServerStart{ID: "a", FirstSeen: t0, Settled: t0.Add(5 * time.Second)}, got)

	require.NoError(t, s.Exec(ctx, `UPDATE server_starts SET settled_ms = settled_ms + 1`))
	_, err = s.Outbox().RememberStart(ctx, outbox.ServerStart{ID: "a", FirstSeen: t0.Add(time.Hour)})
	require.ErrorIs(t, err, sqlitestore.ErrDamaged)
	require.Equal(t, sourcecatalog.ErrStoreUnavailable, sourcecatalog.Class(err))
}
