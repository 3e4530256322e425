package outbox_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/outbox"
	outboxmem "github.com/yachtmemory/sourcecatalog/outbox/memstore"
)

// TestLostStore runs the vessel's cycles end to end, on board and ashore,
// with the board's outbox lost between two cycles and then restored from
// an old copy: with the revision floor (SPEC.md §2.4) every next cycle
// activates; counting from 1 instead, the receiver supersedes the cycle
// after the loss and counts it (§8.4).
func TestLostStore(t *testing.T) {
	ctx := context.Background()
	vessel := uuid.New()
	records := func(n int) []*catalog.Record {
		name := "environment.depth.sensor" + strconv.Itoa(n) // each cycle another document
		path, err := catalog.NewPath(catalog.Path{Path: name, Unit: catalog.UnitOf("m")})
		require.NoError(t, err)
		src, err := catalog.NewSource(catalog.Source{SourceRef: "can0.sounder"})
		require.NoError(t, err)
		obs, err := catalog.NewObservation(catalog.Observation{Path: name, SourceRef: "can0.sounder", ValueType: catalog.Number})
		require.NoError(t, err)
		return []*catalog.Record{path, src, obs}
	}
	for _, floor := range []bool{true, false} {
		t.Run(map[bool]string{true: "floored", false: "counted"}[floor], func(t *testing.T) {
			receiver := finalize.NewReceiver(memstore.New())
			link := &shoreLink{receiver: receiver, origin: finalize.Origin{VesselID: vessel}}
			at := time.Now().UTC().Add(-time.Hour)
			// cycle commits and publishes the n-th cycle from board and
			// returns the receiver's view after it.
			cycle := func(board outbox.Store, n int) (outbox.Commit, finalize.VesselStatus) {
				t.Helper()
				c := outbox.Cycle{VesselID: vessel, SnapshotID: uuid.New(), DiscoveredAt: at.Add(time.Duration(n) * 15 * time.Minute), Records: records(n)}
				com, err := outbox.NewWriter(board, outbox.WithRevisionFloor(floor)).Commit(ctx, c)
				require.NoError(t, err)
				pass, err := outbox.NewPublisher(board, vessel, link, outbox.WithReceiverV2(true)).Publish(ctx)
				require.NoError(t, err)
				require.Zero(t, pass.Remaining)
				st, err := receiver.Status(ctx, vessel)
				require.NoError(t, err)
				return com, st
			}
			board, old := outboxmem.New(), outboxmem.New()
			first, st := cycle(board, 1)
			require.Equal(t, first.Revision, st.Active.ActiveRevision)
			again, _ := cycle(old, 1) // the copy, taken after the first cycle
			require.Equal(t, first.Revision, again.Revision)
			second, st := cycle(board, 2)
			require.Equal(t, second.Revision, st.Active.ActiveRevision)

			third, st := cycle(outboxmem.New(), 3) // the store is lost
			if !floor {
				require.Equal(t, int64(1), third.Revision)
				require.Equal(t, second.Revision, st.Active.ActiveRevision, "counting from 1: the cycle is superseded")
				require.Equal(t, 1, st.SupersededByActive, "and the receiver counts it")
				return
			}
			require.Equal(t, third.Revision, st.Active.ActiveRevision, "the cycle after the loss activates")
			require.Zero(t, st.SupersededByActive)

			fourth, st := cycle(old, 4) // the old copy is restored
			require.Greater(t, fourth.Revision, third.Revision)
			require.Equal(t, fourth.Revision, st.Active.ActiveRevision, "the cycle after the restore activates")
			require.Zero(t, st.SupersededByActive)
		})
	}
}
