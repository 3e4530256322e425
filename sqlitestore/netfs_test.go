package sqlitestore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// TestOpenRefusesNetworkFS: a WAL database on a network file system (as
// statfs says, replaced here) is refused with ErrNetworkFileSystem before
// anything is created, naming the file system; a rollback journal opens
// there as before, and a WAL database on a local file system opens. A
// file system whose type cannot be read fails the Open.
func TestOpenRefusesNetworkFS(t *testing.T) {
	ctx := context.Background()
	var fsType int64
	var statErr error
	var asked string
	defer sqlitestore.SetFSType(func(dir string) (int64, bool, error) {
		asked = dir
		return fsType, true, statErr
	})()
	dir := t.TempDir()
	path := filepath.Join(dir, "catalog.db")

	for name, magic := range map[string]int64{"NFS": 0x6969, "CIFS": 0xff534d42, "SMB2": 0xfe534d42, "FUSE": 0x65735546} {
		fsType = magic
		_, err := sqlitestore.Open(ctx, path, sqlitestore.WithJournal("wal"))
		require.ErrorIs(t, err, sqlitestore.ErrNetworkFileSystem, name)
		require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable, name)
		require.ErrorContains(t, err, name)
		require.Equal(t, dir, asked, "the directory holding the file is asked")
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Empty(t, entries, "%s: Open created nothing", name)
	}

	fsType = 0x6969
	s, err := sqlitestore.Open(ctx, path, sqlitestore.WithJournal("truncate"))
	require.NoError(t, err, "a rollback journal needs no shared memory")
	require.NoError(t, s.Close())

	fsType = 0xef53 // ext4
	s, err = sqlitestore.Open(ctx, path, sqlitestore.WithJournal("wal"))
	require.NoError(t, err, "a local file system")
	require.NoError(t, s.Close())

	statErr = errors.New("statfs failed")
	_, err = sqlitestore.Open(ctx, path, sqlitestore.WithJournal("wal"))
	require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable)
	require.ErrorContains(t, err, "statfs failed")
}
