//go:build unix

package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// TestCloseReleasesLockHeldByFork: Close releases the lifetime lock even
// while a copy of its file descriptor is open elsewhere, as in a process
// that another goroutine forked and that has not exec'd yet: an
// exclusive Open right after Close succeeds (a Handle reopens so).
func TestCloseReleasesLockHeldByFork(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "catalog.db")
	s, err := sqlitestore.Open(ctx, path, sqlitestore.WithExclusiveLock())
	require.NoError(t, err)
	forked, err := s.DupLock()
	require.NoError(t, err)
	defer forked.Close()
	require.NoError(t, s.Close())
	again, err := sqlitestore.Open(ctx, path, sqlitestore.WithExclusiveLock())
	require.NoError(t, err, "the lock outlived Close")
	require.NoError(t, again.Close())
}
