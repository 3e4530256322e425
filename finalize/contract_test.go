package finalize_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
)

// classes are the module's error classes.
var classes = sourcecatalog.Classes()

// requireClass requires err to wrap class and no other class.
func requireClass(t *testing.T, err, class error, msg string) {
	t.Helper()
	require.ErrorIs(t, err, class, msg)
	for _, c := range classes {
		if c != class {
			require.NotErrorIs(t, err, c, "%s: exactly one class", msg)
		}
	}
}

var (
	vessel  = uuid.MustParse("0d1f3c5e-2a4b-4c6d-8e0f-1a2b3c4d5e6f")
	active  = uuid.MustParse("6f1c2d3e-4a5b-4c6d-9e8f-0a1b2c3d4e5f")
	staging = uuid.MustParse("1b2c3d4e-5f60-4718-8a9b-0c1d2e3f4a5b")
	// stranger is a vessel with nothing staged or active.
	stranger = uuid.MustParse("7a0b1c2d-3e4f-4a5b-8c6d-7e8f9a0b1c2d")
)

func snapshotOf(t *testing.T, id uuid.UUID, rev int64) *envelope.Snapshot {
	t.Helper()
	p, err := catalog.NewPath(catalog.Path{Path: "navigation.speedOverGround", Unit: catalog.UnitOf("m/s")})
	require.NoError(t, err)
	o, err := catalog.NewObservation(catalog.Observation{Path: "navigation.speedOverGround", SourceRef: "gps", ValueType: catalog.Number})
	require.NoError(t, err)
	src, err := catalog.NewSource(catalog.Source{SourceRef: "gps"})
	require.NoError(t, err)
	snap, err := envelope.Build(envelope.Input{
		VesselID: vessel, SnapshotID: id, Revision: rev,
		DiscoveredAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), Records: []*catalog.Record{p, o, src},
	})
	require.NoError(t, err)
	return snap
}

// state is what a test can observe of a vessel.
type state struct {
	catalog  finalize.Catalog
	usage    finalize.Usage
	outcomes []finalize.Outcome
}

// setup returns a receiver over a store where a snapshot is active and
// another staging, and a function observing the vessel's state.
func setup(t *testing.T, opts ...finalize.Option) (*finalize.Receiver, *envelope.Snapshot, func() state) {
	t.Helper()
	ctx := context.Background()
	store := memstore.New()
	r := finalize.NewReceiver(store)
	a, s := snapshotOf(t, active, 1), snapshotOf(t, staging, 2)
	origin := finalize.Origin{VesselID: vessel}
	for _, c := range a.Chunks {
		_, err := r.ReceiveChunk(ctx, origin, c.Canonical())
		require.NoError(t, err)
	}
	_, err := r.ReceiveManifest(ctx, origin, a.Manifest.Canonical())
	require.NoError(t, err)
	out, err := r.Finalize(ctx, vessel, active)
	require.NoError(t, err)
	require.Equal(t, finalize.Activated, out.Status)
	_, err = r.ReceiveManifest(ctx, origin, s.Manifest.Canonical())
	require.NoError(t, err)
	observe := func() state {
		t.Helper()
		c, err := r.Active(ctx, vessel)
		require.NoError(t, err)
		u, err := r.Usage(ctx, vessel)
		require.NoError(t, err)
		var outs []finalize.Outcome
		for _, id := range []uuid.UUID{active, staging} {
			out, err := r.Finalize(ctx, vessel, id)
			require.NoError(t, err)
			outs = append(outs, out)
		}
		return state{c, u, outs}
	}
	return finalize.NewReceiver(store, opts...), s, observe
}

// call is one exported Receiver method, called with the vessel and
// snapshot ids given.
type call struct {
	name string
	fn   func(ctx context.Context, r *finalize.Receiver, vessel, snapshot uuid.UUID) error
}

func calls(s *envelope.Snapshot) []call {
	origin := finalize.Origin{VesselID: vessel}
	return []call{
		{"ReceiveManifest", func(ctx context.Context, r *finalize.Receiver, _, _ uuid.UUID) error {
			_, err := r.ReceiveManifest(ctx, origin, s.Manifest.Canonical())
			return err
		}},
		{"ReceiveChunk", func(ctx context.Context, r *finalize.Receiver, _, _ uuid.UUID) error {
			_, err := r.ReceiveChunk(ctx, origin, s.Chunks[0].Canonical())
			return err
		}},
		{"Finalize", func(ctx context.Context, r *finalize.Receiver, v, id uuid.UUID) error {
			_, err := r.Finalize(ctx, v, id)
			return err
		}},
		{"Reconcile", func(ctx context.Context, r *finalize.Receiver, v, _ uuid.UUID) error {
			_, err := r.Reconcile(ctx, v)
			return err
		}},
		{"Discard", func(ctx context.Context, r *finalize.Receiver, v, id uuid.UUID) error {
			return r.Discard(ctx, v, id)
		}},
		{"Prune", func(ctx context.Context, r *finalize.Receiver, v, _ uuid.UUID) error {
			return r.Prune(ctx, v, 0)
		}},
		{"Active", func(ctx context.Context, r *finalize.Receiver, v, _ uuid.UUID) error {
			_, err := r.Active(ctx, v)
			return err
		}},
		{"Usage", func(ctx context.Context, r *finalize.Receiver, v, _ uuid.UUID) error {
			_, err := r.Usage(ctx, v)
			return err
		}},
	}
}

// A cancelled context, a failing store and a nil vessel id get an error of
// one class from every method, the cause kept, and change nothing.
func TestEveryMethodClassesItsErrors(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	receives := map[string]bool{"ReceiveManifest": true, "ReceiveChunk": true}
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		store   bool // over a store that fails
		vessel  uuid.UUID
		class   error
		cause   error
		receive bool // applies to the receive methods, which take the vessel from the message
	}{
		{"cancelled context", cancelled, false, vessel, sourcecatalog.ErrStoreUnavailable, context.Canceled, true},
		{"failing store", context.Background(), true, vessel, sourcecatalog.ErrStoreUnavailable, errDisk, true},
		{"nil vessel id", context.Background(), false, uuid.Nil, sourcecatalog.ErrInvalidValue, nil, false},
	} {
		r, s, observe := setup(t)
		if tc.store {
			r = finalize.NewReceiver(failingStore{})
		}
		before := observe()
		for _, c := range calls(s) {
			if receives[c.name] && !tc.receive {
				continue
			}
			err := c.fn(tc.ctx, r, tc.vessel, staging)
			requireClass(t, err, tc.class, tc.name+": "+c.name)
			if tc.cause != nil {
				require.ErrorIs(t, err, tc.cause, "%s: %s keeps the cause", tc.name, c.name)
			}
		}
		require.Equal(t, before, observe(), "%s: nothing changed", tc.name)
	}
}

var errDisk = errors.New("disk on fire")

// failingStore fails every transaction with an unclassed error.
type failingStore struct{}

func (failingStore) WithVessel(context.Context, uuid.UUID, func(finalize.Tx) error) error {
	return errDisk
}

// registry answers every vessel with err.
type registry struct{ err error }

func (r registry) IsRegistered(context.Context, uuid.UUID) (bool, error) { return r.err == nil, r.err }

// Bad arguments and failing dependencies of each method: an error of one
// class, nothing changed; harmless ones: no error, nothing changed.
func TestEdgeArguments(t *testing.T) {
	down := errors.New("registry down")
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		opts  []finalize.Option
		do    func(r *finalize.Receiver, s *envelope.Snapshot) error
		class error // nil: no error
		cause error
	}{
		{"Prune with keep -1", nil, func(r *finalize.Receiver, _ *envelope.Snapshot) error {
			return r.Prune(ctx, vessel, -1)
		}, sourcecatalog.ErrInvalidValue, nil},
		{"Prune with keep MinInt", nil, func(r *finalize.Receiver, _ *envelope.Snapshot) error {
			return r.Prune(ctx, vessel, math.MinInt)
		}, sourcecatalog.ErrInvalidValue, nil},
		{"Prune with keep MaxInt", nil, func(r *finalize.Receiver, _ *envelope.Snapshot) error {
			return r.Prune(ctx, vessel, math.MaxInt)
		}, nil, nil},
		{"Discard uuid.Nil", nil, func(r *finalize.Receiver, _ *envelope.Snapshot) error {
			return r.Discard(ctx, vessel, uuid.Nil)
		}, nil, nil},
		{"Discard uuid.Nil with nothing active", nil, func(r *finalize.Receiver, _ *envelope.Snapshot) error {
			return r.Discard(ctx, stranger, uuid.Nil)
		}, nil, nil},
		{"Prune with nothing active", nil, func(r *finalize.Receiver, _ *envelope.Snapshot) error {
			return r.Prune(ctx, stranger, 0)
		}, nil, nil},
		{"Discard the active snapshot", nil, func(r *finalize.Receiver, _ *envelope.Snapshot) error {
			err := r.Discard(ctx, vessel, active)
			require.ErrorIs(t, err, finalize.ErrActiveSnapshot)
			return err
		}, sourcecatalog.ErrConflict, nil},
		{"Finalize uuid.Nil", nil, func(r *finalize.Receiver, _ *envelope.Snapshot) error {
			out, err := r.Finalize(ctx, vessel, uuid.Nil)
			require.Equal(t, finalize.Staging, out.Status)
			require.True(t, out.MissingManifest, "nothing staged")
			return err
		}, nil, nil},
		{"a zero Origin", nil, func(r *finalize.Receiver, s *envelope.Snapshot) error {
			_, err := r.ReceiveChunk(ctx, finalize.Origin{}, s.Chunks[0].Canonical())
			return err
		}, sourcecatalog.ErrForeignVessel, nil},
		{"a nil manifest", nil, func(r *finalize.Receiver, _ *envelope.Snapshot) error {
			_, err := r.ReceiveManifest(ctx, finalize.Origin{VesselID: vessel}, nil)
			return err
		}, sourcecatalog.ErrMalformedJSON, nil},
		{"a nil chunk", nil, func(r *finalize.Receiver, _ *envelope.Snapshot) error {
			_, err := r.ReceiveChunk(ctx, finalize.Origin{VesselID: vessel}, nil)
			return err
		}, sourcecatalog.ErrMalformedJSON, nil},
		{"a failing registry", []finalize.Option{finalize.WithRegistry(registry{down})}, func(r *finalize.Receiver, s *envelope.Snapshot) error {
			_, err := r.ReceiveChunk(ctx, finalize.Origin{VesselID: vessel}, s.Chunks[0].Canonical())
			return err
		}, sourcecatalog.ErrStoreUnavailable, down},
		{"a registry answering with a class", []finalize.Option{finalize.WithRegistry(registry{sourcecatalog.ErrStoreUnavailable})}, func(r *finalize.Receiver, s *envelope.Snapshot) error {
			_, err := r.ReceiveManifest(ctx, finalize.Origin{VesselID: vessel}, s.Manifest.Canonical())
			return err
		}, sourcecatalog.ErrStoreUnavailable, nil},
	} {
		r, s, observe := setup(t, tc.opts...)
		before := observe()
		err := tc.do(r, s)
		if tc.class == nil {
			require.NoError(t, err, tc.name)
		} else {
			requireClass(t, err, tc.class, tc.name)
		}
		if tc.cause != nil {
			require.ErrorIs(t, err, tc.cause, "%s keeps the cause", tc.name)
		}
		require.Equal(t, before, observe(), "%s: nothing changed", tc.name)
	}
}

func TestNewReceiverNilStore(t *testing.T) {
	require.PanicsWithValue(t, "finalize: NewReceiver with a nil Store", func() { finalize.NewReceiver(nil) })
}

func TestGaugeFraction(t *testing.T) {
	for _, tc := range []struct {
		g    finalize.Gauge
		want float64
	}{
		{finalize.Gauge{Used: 0, Limit: 32}, 0},
		{finalize.Gauge{Used: 8, Limit: 32}, 0.25},
		{finalize.Gauge{Used: 32, Limit: 32}, 1},
		{finalize.Gauge{Used: 40, Limit: 32}, 1.25},      // limits lowered below the staged
		{finalize.Gauge{Used: 0, Limit: 0}, 1},           // admits nothing
		{finalize.Gauge{Used: 0, Limit: -5}, 1},          // admits nothing
		{finalize.Gauge{Used: 1, Limit: 0}, math.Inf(1)}, // admits nothing, holds something
		{finalize.Gauge{Used: math.MaxInt64, Limit: math.MaxInt64}, 1},
	} {
		require.Equal(t, tc.want, tc.g.Fraction(), "%+v", tc.g)
	}
	u := finalize.Usage{
		IncompleteSnapshots: finalize.Gauge{Used: 1, Limit: 8},
		IncompleteBytes:     finalize.Gauge{Used: 3, Limit: 4},
		RetainedSnapshots:   finalize.Gauge{Used: 16, Limit: 32},
		RetainedBytes:       finalize.Gauge{Used: 1, Limit: 100},
	}
	require.Equal(t, 0.75, u.Highest())
	u.RetainedSnapshots.Used = 31
	require.Equal(t, 31.0/32, u.Highest())
	require.Equal(t, 1.0, finalize.Usage{}.Highest(), "zero limits admit nothing")
}

// Huge limits admit and count as usual.
func TestHugeLimits(t *testing.T) {
	huge := finalize.Limits{IncompleteSnapshots: math.MaxInt, IncompleteBytes: math.MaxInt64, RetainedSnapshots: math.MaxInt, RetainedBytes: math.MaxInt64}
	r, s, _ := setup(t, finalize.WithLimits(huge))
	ctx := context.Background()
	_, err := r.ReceiveChunk(ctx, finalize.Origin{VesselID: vessel}, s.Chunks[0].Canonical())
	require.NoError(t, err)
	out, err := r.Finalize(ctx, vessel, staging)
	require.NoError(t, err)
	require.Equal(t, finalize.Activated, out.Status)
	require.Equal(t, finalize.Gauge{Used: 2, Limit: math.MaxInt64}, out.Usage.RetainedSnapshots)
	require.Less(t, out.Usage.Highest(), 1e-9)
}
