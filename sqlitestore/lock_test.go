package sqlitestore_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// TestBusyAcrossProcesses: while another process holds the write lock, a
// transaction waits the busy timeout and fails with ErrLocked, changing
// nothing; once the lock is released it succeeds.
func TestBusyAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	s, path := open(t, sqlitestore.WithBusyTimeout(300*time.Millisecond))
	cmd, stdin, out := spawn(t, "hold", path)
	require.Equal(t, "holding", line(t, out))

	start := time.Now()
	ran := false
	err := s.WithVessel(ctx, faultVessel, func(finalize.Tx) error { ran = true; return nil })
	waited := time.Since(start)
	require.ErrorIs(t, err, sqlitestore.ErrLocked)
	require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable)
	require.False(t, ran, "the callback never ran")
	require.GreaterOrEqual(t, waited, 300*time.Millisecond, "waits the busy timeout")
	require.Less(t, waited, 5*time.Second, "and not much longer")

	require.NoError(t, stdin.Close()) // the child commits and exits
	require.NoError(t, cmd.Wait())
	err = s.WithVessel(ctx, faultVessel, func(tx finalize.Tx) error {
		v, err := tx.Vessel(ctx)
		require.Equal(t, int64(1), v.ActiveRevision, "the child's commit")
		return err
	})
	require.NoError(t, err, "not poisoned by contention")
}

// TestExclusiveAcrossProcesses: a Store opened WithExclusiveLock makes
// every other Open fail at once with ErrLocked, and an exclusive Open
// fails while any other Store has the file open; shared Opens coexist.
func TestExclusiveAcrossProcesses(t *testing.T) {
	cases := []struct {
		name            string
		parent, child   bool // exclusive
		wantChildLocked bool
	}{
		{"exclusive then shared", true, false, true},
		{"exclusive then exclusive", true, true, true},
		{"shared then exclusive", false, true, true},
		{"shared then shared", false, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var opts []sqlitestore.Option
			if c.parent {
				opts = append(opts, sqlitestore.WithExclusiveLock())
			}
			s, path := open(t, opts...)
			var env []string
			if c.child {
				env = append(env, "SQLITESTORE_EXCLUSIVE=1")
			}
			cmd, _, out := spawn(t, "open", path, env...)
			got := line(t, out)
			require.NoError(t, cmd.Wait())
			if !c.wantChildLocked {
				require.Equal(t, "ok", got)
				return
			}
			f := strings.Fields(got)
			require.Equal(t, "locked", f[0], got)
			ms, err := strconv.Atoi(f[1])
			require.NoError(t, err)
			require.Less(t, ms, 1000, "fails at once, without the busy wait")

			// Once the holder closes, the same Open succeeds.
			require.NoError(t, s.Close())
			cmd, _, out = spawn(t, "open", path, env...)
			require.Equal(t, "ok", line(t, out))
			require.NoError(t, cmd.Wait())
		})
	}
}
