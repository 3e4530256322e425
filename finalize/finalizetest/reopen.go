package finalizetest

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/internal/suite"
)

// OpenStore returns a fresh, empty store and reopen, a function that
// closes the store it last returned (s, at first) and opens the same data
// again, as a restarted process would, returning the new store. RunReopen
// calls OpenStore where Run calls NewStore, and reopen only while no
// transaction of the store is open, from any goroutine of the test. The
// store may use t for cleanup, such as closing the last store reopen
// returned.
type OpenStore = func(t *testing.T) (s finalize.Store, reopen func() (finalize.Store, error))

// RunReopen runs the named groups of the suite (all of them when none is
// named) as RunGroups does, over stores that are closed and reopened after
// every WithVessel call that ends while no other is in flight: every
// committed write must survive the reopen, and no rolled-back one appear
// after it. A reopen that fails fails the test.
func RunReopen(t *testing.T, open OpenStore, names ...string) {
	RunGroups(t, func(t *testing.T) finalize.Store {
		s, reopen := open(t)
		require.NotNil(t, s, "OpenStore returned no store")
		require.NotNil(t, reopen, "OpenStore returned no reopen function")
		return reopener{suite.NewReopener(t, "finalizetest", s, reopen)}
	}, names...)
}

// A reopener is the Store RunReopen hands the suite.
type reopener struct {
	*suite.Reopener[finalize.Store]
}

func (r reopener) WithVessel(ctx context.Context, vesselID uuid.UUID, fn func(finalize.Tx) error) error {
	store, err := r.Begin()
	defer r.End()
	if err != nil {
		return err
	}
	return store.WithVessel(ctx, vesselID, fn)
}

// Vessels lists the vessels of the store in use when it is a
// finalize.VesselLister, and otherwise refuses with ErrUnsupported as a
// Receiver does.
func (r reopener) Vessels(ctx context.Context, staging bool) ([]uuid.UUID, error) {
	store, err := r.Begin()
	defer r.End()
	if err != nil {
		return nil, err
	}
	l, ok := store.(finalize.VesselLister)
	if !ok {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrUnsupported, "the store cannot list its vessels")
	}
	return l.Vessels(ctx, staging)
}
