package sqlitestore_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// TestDiskFullOnTmpfs fills a small tmpfs for real: the operating
// system's ENOSPC reads as a full disk at Open (no room for the schema)
// and in a transaction. It needs root to mount the tmpfs.
func TestDiskFullOnTmpfs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=384k"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { require.NoError(t, syscall.Unmount(dir, 0)) })
	ctx := context.Background()

	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	require.NoError(t, err)
	for err == nil {
		_, err = f.Write(make([]byte, 4096))
	}
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.NoError(t, f.Close())
	_, err = sqlitestore.Open(ctx, filepath.Join(dir, "new.db"))
	require.ErrorIs(t, err, sqlitestore.ErrDiskFull)
	require.ErrorContains(t, err, "disk full")
	require.NoError(t, os.Remove(filler))

	s, err := sqlitestore.Open(ctx, filepath.Join(dir, "catalog.db"))
	require.NoError(t, err)
	defer s.Close()
	var l ledger
	for n := 1; n < 100 && err == nil; n++ {
		err = runCycle(ctx, s, n, l.ack)
	}
	require.ErrorIs(t, err, sqlitestore.ErrDiskFull)
	require.ErrorIs(t, err, sqlitestore.ErrPoisoned)
	require.ErrorContains(t, err, "disk full")
}
