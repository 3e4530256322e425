package storeheal_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/outbox"
	outboxmem "github.com/yachtmemory/sourcecatalog/outbox/memstore"
	"github.com/yachtmemory/sourcecatalog/storeheal"
)

// readOnly is a finalize.Store whose writes fail, as a full disk's do.
type readOnly struct{ finalize.Store }

type readOnlyTx struct{ finalize.Tx }

var errFull = errors.New("disk full")

func (s readOnly) WithVessel(ctx context.Context, id uuid.UUID, fn func(finalize.Tx) error) error {
	return s.Store.WithVessel(ctx, id, func(tx finalize.Tx) error { return fn(readOnlyTx{tx}) })
}

func (readOnlyTx) SetVessel(context.Context, finalize.VesselState) error { return errFull }

// committing is a finalize.Store that commits whatever its callback says.
type committing struct{ finalize.Store }

func (s committing) WithVessel(ctx context.Context, id uuid.UUID, fn func(finalize.Tx) error) error {
	s.Store.WithVessel(ctx, id, fn)
	return nil
}

// The probes write and roll back: a store that can write passes and keeps
// nothing, one that cannot fails with its error.
func TestProbes(t *testing.T) {
	ctx := context.Background()
	rs := memstore.New()
	require.NoError(t, storeheal.ProbeReceiver(ctx, rs))
	ids, err := rs.Vessels(ctx, false)
	require.NoError(t, err)
	assert.Empty(t, ids, "the probe keeps nothing")
	require.NoError(t, rs.WithVessel(ctx, uuid.Nil, func(tx finalize.Tx) error {
		v, err := tx.Vessel(ctx)
		assert.Equal(t, finalize.VesselState{}, v, "the probe's write is rolled back")
		return err
	}))

	assert.Equal(t, errFull, storeheal.ProbeReceiver(ctx, readOnly{memstore.New()}))
	err = storeheal.ProbeReceiver(ctx, committing{memstore.New()})
	assert.Equal(t, []error{sourcecatalog.ErrStoreUnavailable}, classes(err), "a store that commits a failed callback: %v", err)

	ob := outboxmem.New()
	require.NoError(t, storeheal.ProbeOutbox(ctx, ob))
	require.NoError(t, ob.WithVessel(ctx, uuid.Nil, func(tx outbox.Tx) error {
		rev, err := tx.NextRevision(ctx, 0)
		assert.Equal(t, int64(1), rev, "the probe's revision is rolled back")
		return err
	}))
}
