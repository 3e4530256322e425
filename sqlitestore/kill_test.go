package sqlitestore_test

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// kills is how many times TestKill kills its child: 200 under CI=true,
// 10 with -short, 40 otherwise; SQLITESTORE_KILLS overrides.
func kills(t *testing.T) int {
	if s := os.Getenv("SQLITESTORE_KILLS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, "SQLITESTORE_KILLS")
		return n
	}
	switch {
	case os.Getenv("CI") == "true":
		return 200
	case testing.Short():
		return 10
	}
	return 40
}

// killSeed returns the seed of TestKill, from SQLITESTORE_KILL_SEED when
// set, and logs it.
func killSeed(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SQLITESTORE_KILL_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "SQLITESTORE_KILL_SEED")
		seed = n
	}
	t.Logf("seed %d (set SQLITESTORE_KILL_SEED to repeat)", seed)
	return seed
}

// TestKill runs cycles of both sides in a child process on one file and
// SIGKILLs it at a random moment, again and again; after each kill the
// file must hold everything the child acknowledged (verify).
func TestKill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, path := open(t)
	require.NoError(t, s.Close())
	rng := rand.New(rand.NewPCG(killSeed(t), 0))
	var acked []string
	for i := range kills(t) {
		// The child needs some 50 ms to start; most kills land in a cycle.
		delay := time.Duration(20+rng.IntN(300)) * time.Millisecond
		cmd, _, out := spawn(t, "cycles", path, "SQLITESTORE_START="+strconv.Itoa(10*i))
		time.Sleep(delay)
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		var fresh []string
		for out.Scan() { // complete lines only: a cut one has no newline
			if l := out.Text(); l != "" && !strings.HasPrefix(l, "error") {
				fresh = append(fresh, l)
			}
		}
		cmd.Wait()
		// This kill's acknowledgements; the earlier ones were checked after
		// their kill and are checked all together at the end.
		after, err := sqlitestore.Open(ctx, path)
		require.NoError(t, err, "kill %d after %v", i, delay)
		verify(t, ctx, after, fresh)
		require.NoError(t, after.Close())
		acked = append(acked, fresh...)
	}
	t.Logf("%d kills, %d acknowledgements", kills(t), len(acked))
	require.NotEmpty(t, acked, "the children acknowledged something")
	s, err := sqlitestore.Open(ctx, path)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	verify(t, ctx, s, acked)
}
