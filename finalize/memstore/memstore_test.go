package memstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/finalizetest"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
)

func TestConformance(t *testing.T) {
	finalizetest.Run(t, func(t *testing.T) finalize.Store { return memstore.New() })
}

var (
	vesselA = uuid.MustParse("0d1f3c5e-2a4b-4c6d-8e0f-1a2b3c4d5e6f")
	vesselB = uuid.MustParse("7a0b1c2d-3e4f-4a5b-8c6d-7e8f9a0b1c2d")
)

func TestTxAfterCallbackPanics(t *testing.T) {
	ctx := context.Background()
	var kept finalize.Tx
	require.NoError(t, memstore.New().WithVessel(ctx, vesselA, func(tx finalize.Tx) error {
		kept = tx
		return nil
	}))
	require.Panics(t, func() { _, _ = kept.Vessel(ctx) })
}

// While one vessel's transaction is open, another vessel's runs.
func TestVesselsDoNotBlock(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	inside, release := make(chan struct{}), make(chan struct{})
	errA := make(chan error, 1)
	go func() {
		errA <- s.WithVessel(ctx, vesselA, func(finalize.Tx) error {
			close(inside)
			<-release
			return nil
		})
	}()
	<-inside
	done := make(chan error, 1)
	go func() {
		done <- s.WithVessel(ctx, vesselB, func(tx finalize.Tx) error {
			return tx.SetVessel(ctx, finalize.VesselState{ActiveRevision: 1})
		})
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("vessel B waited for vessel A's transaction")
	}
	close(release)
	require.NoError(t, <-errA)
}

// The FaultStore's three faults, over memstore: a failed operation and a
// failed commit write nothing; a lost acknowledgement writes everything.
func TestFaultStoreFaults(t *testing.T) {
	ctx := context.Background()
	write := func(fs *finalizetest.FaultStore) error {
		return fs.WithVessel(ctx, vesselA, func(tx finalize.Tx) error {
			v, err := tx.Vessel(ctx) // operation 1
			if err != nil {
				return err
			}
			v.ActiveRevision++
			return tx.SetVessel(ctx, v) // operation 2
		})
	}
	revision := func(s finalize.Store) int64 {
		var v finalize.VesselState
		require.NoError(t, s.WithVessel(ctx, vesselA, func(tx finalize.Tx) error {
			var err error
			v, err = tx.Vessel(ctx)
			return err
		}))
		return v.ActiveRevision
	}
	for _, tc := range []struct {
		fault finalizetest.Fault
		n     int
		want  int64
	}{
		{finalizetest.FailOp, 1, 0},
		{finalizetest.FailOp, 2, 0},
		{finalizetest.FailCommit, 1, 0},
		{finalizetest.LoseAck, 1, 1},
	} {
		s := memstore.New()
		fs := finalizetest.NewFaultStore(s)
		fs.Inject(tc.fault, tc.n)
		err := write(fs)
		require.ErrorIs(t, err, finalizetest.ErrInjected, "%s at %d", tc.fault, tc.n)
		require.True(t, fs.Fired())
		require.Equal(t, tc.want, revision(s), "%s at %d", tc.fault, tc.n)
		require.NoError(t, write(fs), "a fault fires once")
		require.Equal(t, tc.want+1, revision(s))
		ops, commits := fs.Counts()
		wantOps, wantCommits := 4, 2 // two operations per write
		if tc.fault == finalizetest.FailOp {
			wantOps, wantCommits = tc.n+2, 1 // the failed write stopped at operation n
		}
		require.Equal(t, wantOps, ops)
		require.Equal(t, wantCommits, commits)
	}

	// Rerun: the first run is rolled back, the second commits.
	s := memstore.New()
	fs := finalizetest.NewFaultStore(s)
	fs.Rerun(true)
	require.NoError(t, write(fs))
	require.Equal(t, int64(1), revision(s))
	ops, _ := fs.Counts()
	require.Equal(t, 4, ops, "each callback ran twice")

	boom := errors.New("boom")
	require.ErrorIs(t, fs.WithVessel(ctx, vesselA, func(finalize.Tx) error { return boom }), boom)
}
