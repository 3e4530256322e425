package sqlitestore_test

import (
	"context"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// TestPing: Ping answers nil for a serving store, even while another
// process holds the write lock (contention is no ill health); a file
// that fails to read poisons the handle and Ping says so, as it says a
// closed Store is closed — for the Store and its Outbox alike.
func TestPing(t *testing.T) {
	ctx := context.Background()
	s, path := open(t, sqlitestore.WithBusyTimeout(200*time.Millisecond))
	require.NoError(t, s.Ping(ctx))
	require.NoError(t, s.Outbox().Ping(ctx))

	cmd, stdin, out := spawn(t, "hold", path)
	require.Equal(t, "holding", line(t, out))
	require.NoError(t, s.Ping(ctx), "another process's write lock")
	require.NoError(t, stdin.Close())
	require.NoError(t, cmd.Wait())

	fs := newMemFS()
	m := openJournal(t, fs, "truncate") // a WAL read locks shared memory, which memFS cannot fail
	require.NoError(t, m.Ping(ctx))
	fs.FailNext("lock", 1, sqlite3.IOERR_LOCK)
	err := m.Ping(ctx)
	require.True(t, fs.Failed(), "the read took a lock, which failed")
	require.ErrorIs(t, err, sqlitestore.ErrPoisoned)
	require.ErrorIs(t, m.Ping(ctx), sqlitestore.ErrPoisoned, "the handle stays poisoned")
	require.ErrorIs(t, finalize.NewReceiver(m).Ping(ctx), sourcecatalog.ErrStoreUnavailable)
	require.NoError(t, m.Close())
	require.ErrorIs(t, m.Ping(ctx), sqlitestore.ErrClosed)
	require.ErrorIs(t, m.Outbox().Ping(ctx), sqlitestore.ErrClosed)
}
