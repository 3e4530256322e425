package storeheal_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// commits is a finalize.Store that counts the transactions it committed.
type commits struct {
	finalize.Store
	n *int
}

func (s commits) WithVessel(ctx context.Context, id uuid.UUID, fn func(finalize.Tx) error) error {
	err := s.Store.WithVessel(ctx, id, fn)
	if err == nil {
		*s.n++
	}
	return err
}

// The probes commit a write (a rolled-back one proves nothing: SQLite in
// WAL mode writes nothing for it): a store that can write passes and
// lists nothing of it, one that cannot fails with its error.
func TestProbes(t *testing.T) {
	ctx := context.Background()
	rs := memstore.New()
	var n int
	require.NoError(t, storeheal.ProbeReceiver(ctx, commits{rs, &n}))
	require.NoError(t, storeheal.ProbeReceiver(ctx, commits{rs, &n}))
	assert.Equal(t, 2, n, "each probe committed its write")
	ids, err := rs.Vessels(ctx, false)
	require.NoError(t, err)
	assert.Empty(t, ids, "the probe lists nothing")
	require.NoError(t, rs.WithVessel(ctx, uuid.Nil, func(tx finalize.Tx) error {
		v, err := tx.Vessel(ctx)
		assert.Equal(t, finalize.VesselState{ActiveRevision: 2}, v, "each probe changed what it wrote")
		return err
	}))

	assert.Equal(t, errFull, storeheal.ProbeReceiver(ctx, readOnly{memstore.New()}))

	ob := outboxmem.New()
	require.NoError(t, storeheal.ProbeOutbox(ctx, ob))
	require.NoError(t, ob.WithVessel(ctx, uuid.Nil, func(tx outbox.Tx) error {
		rev, err := tx.NextRevision(ctx, 0)
		assert.Equal(t, int64(2), rev, "the probe's revision was committed")
		return err
	}))
}
