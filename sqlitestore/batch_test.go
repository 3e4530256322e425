package sqlitestore_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/ncruces/go-sqlite3"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// batchOf runs calls WithVessel calls at once, in one batch: call 0's
// callback waits until every other call is queued, so they all join the
// transaction after it. do is call k's callback; start, when not nil,
// runs in call 0's callback once the others are queued. It returns each
// call's error and, for a call whose callback panicked, what it panicked
// with.
func batchOf(t *testing.T, s *sqlitestore.Store, vessels []uuid.UUID, start func(), do func(k int, tx finalize.Tx) error) ([]error, []any) {
	t.Helper()
	ctx := context.Background()
	errs := make([]error, len(vessels))
	panics := make([]any, len(vessels))
	running := make(chan struct{})
	var wg sync.WaitGroup
	for k := range vessels {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { panics[k] = recover() }()
			if k > 0 {
				<-running
			}
			errs[k] = s.WithVessel(ctx, vessels[k], func(tx finalize.Tx) error {
				if k == 0 {
					close(running)
					for s.Queued() < len(vessels)-1 {
						runtime.Gosched()
					}
					if start != nil {
						start()
					}
				}
				return do(k, tx)
			})
		}()
	}
	wg.Wait()
	return errs, panics
}

func vesselsN(n int) []uuid.UUID {
	out := make([]uuid.UUID, n)
	for i := range out {
		out[i] = uuid.New()
	}
	return out
}

// pointer is the vessel state call k writes.
func pointer(k int) finalize.VesselState {
	v := finalize.VesselState{ActiveSnapshot: uuid.New(), ActiveRevision: int64(k + 1), ActiveDiscoveredAt: time.Unix(int64(k), 0).UTC()}
	v.ActiveDocument[0] = byte(k + 1)
	return v
}

// pointers is the vessel states calls 0 to n-1 write.
func pointers(n int) []finalize.VesselState {
	out := make([]finalize.VesselState, n)
	for k := range out {
		out[k] = pointer(k)
	}
	return out
}

// readPointer reads a vessel's state in a transaction of its own.
func readPointer(t *testing.T, s *sqlitestore.Store, vessel uuid.UUID) finalize.VesselState {
	t.Helper()
	var v finalize.VesselState
	require.NoError(t, s.WithVessel(context.Background(), vessel, func(tx finalize.Tx) error {
		var err error
		v, err = tx.Vessel(context.Background())
		return err
	}))
	return v
}

// TestBatchIsolatesCallbacks: in one batch, a callback that returns an
// error, one that panics and one that exits its goroutine are rolled back
// alone; the error comes back unchanged, the panic goes on in its
// caller's goroutine with its own value, and the others commit.
func TestBatchIsolatesCallbacks(t *testing.T) {
	s, _ := open(t)
	vessels := vesselsN(8)
	writes := pointers(len(vessels))
	errFail := errors.New("callback 3 fails")
	errs, panics := batchOf(t, s, vessels, nil, func(k int, tx finalize.Tx) error {
		if err := tx.SetVessel(context.Background(), writes[k]); err != nil {
			return err
		}
		switch k {
		case 3:
			return errFail
		case 5:
			panic("callback 5 panics")
		case 6:
			runtime.Goexit()
		}
		return nil
	})
	for k, v := range vessels {
		got := readPointer(t, s, v)
		switch k {
		case 3:
			require.True(t, errs[k] == errFail, "call 3 returns its callback's error unchanged: %v", errs[k])
			require.Zero(t, got, "call 3's write is rolled back")
		case 5:
			require.Equal(t, "callback 5 panics", panics[k], "call 5 panics with its callback's value")
			require.Zero(t, got, "call 5's write is rolled back")
		case 6:
			require.NoError(t, errs[k], "call 6's goroutine exited before WithVessel returned")
			require.Zero(t, got, "call 6's write is rolled back")
		default:
			require.NoError(t, errs[k], "call %d", k)
			require.Nil(t, panics[k])
			require.Equal(t, writes[k], got, "call %d committed", k)
		}
	}
}

// TestBatchCancelledWhileQueued: a call whose context ends while it is
// queued behind a running batch returns its context's error at once and
// its callback never runs; the batch commits.
func TestBatchCancelledWhileQueued(t *testing.T) {
	s, _ := open(t)
	ctx := context.Background()
	v := vesselsN(2)
	release := make(chan struct{})
	firstRuns := make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- s.WithVessel(ctx, v[0], func(tx finalize.Tx) error {
			close(firstRuns)
			<-release
			return tx.SetVessel(ctx, pointer(0))
		})
	}()
	<-firstRuns
	short, cancel := context.WithCancel(ctx)
	ran := false
	second := make(chan error, 1)
	go func() {
		second <- s.WithVessel(short, v[1], func(tx finalize.Tx) error { ran = true; return tx.SetVessel(ctx, pointer(1)) })
	}()
	for s.Queued() < 1 {
		runtime.Gosched()
	}
	cancel()
	select {
	case err := <-second:
		require.ErrorIs(t, err, context.Canceled, "the queued call leaves with its context")
	case <-time.After(time.Minute):
		close(release)
		t.Fatal("the queued call is still waiting for the batch before it, its context ended")
	}
	close(release)
	require.NoError(t, <-first)
	require.False(t, ran, "the cancelled call's callback never ran")
	require.Equal(t, pointer(0).ActiveRevision, readPointer(t, s, v[0]).ActiveRevision)
	require.Zero(t, readPointer(t, s, v[1]))
}

// TestBatchPowerCut cuts the power at every write, truncation and sync of
// one batch's commit — between the batch's writes and its sync among
// them. No caller of the batch gets nil; after the cut the file holds
// either every callback's write or none; and every caller's retry then
// commits.
func TestBatchPowerCut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	vessels := vesselsN(6)
	writes := pointers(len(vessels))
	do := func(k int, tx finalize.Tx) error { return tx.SetVessel(ctx, writes[k]) }
	base := newMemFS()
	require.NoError(t, openFS(t, base).Close())
	base = base.PowerCut()

	dry := base.PowerCut()
	s := openFS(t, dry)
	var before int
	errs, _ := batchOf(t, s, vessels, func() { before, _ = dry.Ops() }, do)
	for _, err := range errs {
		require.NoError(t, err)
	}
	total, kinds := dry.Ops()
	total -= before
	require.NoError(t, s.Close())
	require.Greater(t, kinds["sync"], 0)
	t.Logf("one batch of %d calls: %d cut points", len(vessels), total)

	for n := 1; n <= total; n++ {
		t.Run(fmt.Sprintf("cut-%02d", n), func(t *testing.T) {
			fs := base.PowerCut()
			s := openFS(t, fs)
			errs, _ := batchOf(t, s, vessels, func() { fs.Arm(n) }, do)
			require.True(t, fs.Off(), "the power was cut")
			for k, err := range errs {
				require.ErrorIs(t, err, sqlitestore.ErrPoisoned, "call %d: no answer but failure", k)
			}
			s.Close()
			after := openFS(t, fs.PowerCut())
			defer func() { require.NoError(t, after.Close()) }()
			written := 0
			for k, v := range vessels {
				if got := readPointer(t, after, v); got == writes[k] {
					written++
				} else {
					require.Zero(t, got, "vessel %d: its write or nothing", k)
				}
			}
			require.Contains(t, []int{0, len(vessels)}, written, "the batch is one transaction: all or nothing")
			for k, v := range vessels {
				require.NoError(t, after.WithVessel(ctx, v, func(tx finalize.Tx) error { return do(k, tx) }), "retry of call %d", k)
				require.Equal(t, writes[k], readPointer(t, after, v))
			}
		})
	}
}

// TestBatchIOErrorFailsEveryCaller: an I/O error in one callback of a
// batch poisons the Store and fails every caller of the batch — those
// whose callbacks ran before it and returned nil too — and nothing of the
// batch is in the file.
func TestBatchIOErrorFailsEveryCaller(t *testing.T) {
	ctx := context.Background()
	fs := newMemFS()
	defer fs.unregister()
	s := openFS(t, fs)
	vessels := vesselsN(6)
	const failing = 3
	// A snapshot row of the failing call's vessel, so that its write in
	// the batch changes a page of the file, which SQLite journals at once.
	snap := finalize.Snapshot{ID: uuid.New(), Revision: 1, State: finalize.StateStaging, ChunkCount: 1, RecordCount: 1}
	require.NoError(t, s.WithVessel(ctx, vessels[failing], func(tx finalize.Tx) error { return tx.PutSnapshot(ctx, snap) }))
	errs, _ := batchOf(t, s, vessels, nil, func(k int, tx finalize.Tx) error {
		if k == failing {
			fs.FailNext("write", 1, sqlite3.IOERR_WRITE)
			next := snap
			next.Revision = 2
			return tx.PutSnapshot(ctx, next)
		}
		return tx.SetVessel(ctx, pointer(k))
	})
	require.True(t, fs.Failed(), "the I/O error fired")
	for k, err := range errs {
		require.ErrorIs(t, err, sqlitestore.ErrPoisoned, "call %d", k)
	}
	require.NoError(t, s.Close())
	after := openFS(t, fs.PowerCut())
	defer func() { require.NoError(t, after.Close()) }()
	for k, v := range vessels {
		if k != failing {
			require.Zero(t, readPointer(t, after, v), "vessel %d: nothing of the batch", k)
		}
	}
}

// TestBatchCachesCommittedBasesOnly: the index base a callback writes is
// kept in the Store's cache once its batch committed, and not when the
// callback failed and was rolled back.
func TestBatchCachesCommittedBasesOnly(t *testing.T) {
	s, _ := open(t)
	vessels := vesselsN(4)
	errFail := errors.New("rolled back")
	errs, _ := batchOf(t, s, vessels, nil, func(k int, tx finalize.Tx) error {
		if err := tx.SetIndex(context.Background(), indexOf(50, none, "")); err != nil {
			return err
		}
		if k%2 == 1 {
			return errFail
		}
		return nil
	})
	for k, v := range vessels {
		if k%2 == 1 {
			require.True(t, errs[k] == errFail, "call %d", k)
			require.False(t, s.CachedBase(v[:]), "vessel %d: a rolled-back base is not cached", k)
		} else {
			require.NoError(t, errs[k], "call %d", k)
			require.True(t, s.CachedBase(v[:]), "vessel %d: the committed base is cached", k)
		}
	}
}
