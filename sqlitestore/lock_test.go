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

// TestLockWaitsAreNotQueued: while another process holds the write lock,
// calls queued behind a transaction waiting for it do not wait after it.
// A call whose context ends returns then, while the calls before it still
// wait; and with callers queued three deep, each fails with ErrLocked one
// busy timeout after it was made, not one after another.
func TestLockWaitsAreNotQueued(t *testing.T) {
	ctx := context.Background()
	t.Run("a context that ends", func(t *testing.T) {
		s, path := open(t, sqlitestore.WithBusyTimeout(time.Minute))
		cmd, stdin, out := spawn(t, "hold", path)
		require.Equal(t, "holding", line(t, out))
		first, second := make(chan error, 1), make(chan error, 1)
		go func() { first <- s.WithVessel(ctx, faultVessel, func(finalize.Tx) error { return nil }) }()
		time.Sleep(100 * time.Millisecond) // the first takes the Store's turn and waits for the lock
		go func() { _, err := s.Vessels(ctx, true); second <- err }()

		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- s.WithVessel(short, faultVessel, func(finalize.Tx) error { return nil }) }()
		select {
		case err := <-done:
			require.ErrorIs(t, err, context.DeadlineExceeded)
		case <-time.After(10 * time.Second): // a hang guard, far below the busy timeout
			t.Fatal("the call waited behind the others past its context")
		}
		select {
		case err := <-first:
			t.Fatalf("the first call ended while the lock was held: %v", err)
		case err := <-second:
			t.Fatalf("the second call ended while the lock was held: %v", err)
		default: // both still wait
		}
		require.NoError(t, stdin.Close()) // the child commits and exits
		require.NoError(t, cmd.Wait())
		require.NoError(t, <-first)
		require.NoError(t, <-second)
	})
	t.Run("queued three deep", func(t *testing.T) {
		const busy = time.Second
		s, path := open(t, sqlitestore.WithBusyTimeout(busy))
		cmd, stdin, out := spawn(t, "hold", path)
		require.Equal(t, "holding", line(t, out))
		waits := make(chan time.Duration, 3)
		errs := make(chan error, 3)
		for range 3 {
			go func() {
				start := time.Now()
				err := s.WithVessel(ctx, faultVessel, func(finalize.Tx) error { return nil })
				waits <- time.Since(start)
				errs <- err
			}()
		}
		for range 3 {
			require.ErrorIs(t, <-errs, sqlitestore.ErrLocked)
			// Queued one after another, the third would wait three busy
			// timeouts.
			require.Less(t, <-waits, 2*busy, "waits one busy timeout from the call")
		}
		require.NoError(t, stdin.Close())
		require.NoError(t, cmd.Wait())
		require.NoError(t, s.WithVessel(ctx, faultVessel, func(finalize.Tx) error { return nil }), "not poisoned")
	})
}
