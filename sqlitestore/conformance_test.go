package sqlitestore_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/finalizetest"
	"github.com/yachtmemory/sourcecatalog/outbox"
	"github.com/yachtmemory/sourcecatalog/outbox/outboxtest"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// open opens a new database file in a test directory, closed at cleanup.
func open(t testing.TB, opts ...sqlitestore.Option) (*sqlitestore.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "catalog.db")
	s, err := sqlitestore.Open(context.Background(), path, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s, path
}

// TestConformance runs both kits on one file per store.
func TestConformance(t *testing.T) {
	t.Parallel()
	t.Run("finalize", func(t *testing.T) {
		finalizetest.Run(t, func(t *testing.T) finalize.Store { s, _ := open(t); return s })
	})
	t.Run("outbox", func(t *testing.T) {
		outboxtest.Run(t, func(t *testing.T) outbox.Store { s, _ := open(t); return s.Outbox() })
	})
}

// openReopening opens a store on a memFS and returns it with the reopen
// function the kits' RunReopen calls between transactions: it closes the
// database, cuts the power (memFS.PowerCut: only what was synced
// survives) and opens the file again, so every transaction of a kit reads
// only what earlier ones made durable. A memFS runs the same SQLite
// without the disk's fsync latency, which the kits would pay thousands of
// times.
func openReopening(t *testing.T) (*sqlitestore.Store, func() (*sqlitestore.Store, error)) {
	fs := newMemFS()
	cur := openFS(t, fs)
	t.Cleanup(func() {
		require.NoError(t, cur.Close())
		fs.unregister()
	})
	return cur, func() (*sqlitestore.Store, error) {
		if err := cur.Close(); err != nil {
			return nil, err
		}
		next := fs.PowerCut()
		fs.unregister()
		fs = next
		s, err := sqlitestore.Open(context.Background(), dbPath, sqlitestore.WithVFS(fs.name))
		if err != nil {
			return nil, err
		}
		cur = s
		return s, nil
	}
}

// TestConformanceReopen runs both kits with a power cut and a reopen of
// the file after every transaction.
func TestConformanceReopen(t *testing.T) {
	t.Parallel()
	t.Run("finalize", func(t *testing.T) {
		finalizetest.RunReopen(t, func(t *testing.T) (finalize.Store, func() (finalize.Store, error)) {
			s, reopen := openReopening(t)
			return s, func() (finalize.Store, error) { return reopen() }
		})
	})
	t.Run("outbox", func(t *testing.T) {
		outboxtest.RunReopen(t, func(t *testing.T) (outbox.Store, func() (outbox.Store, error)) {
			s, reopen := openReopening(t)
			return s.Outbox(), func() (outbox.Store, error) {
				s, err := reopen()
				if err != nil {
					return nil, err
				}
				return s.Outbox(), nil
			}
		})
	})
}
