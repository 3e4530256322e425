package mysqlstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/mysqlstore"
)

func TestSmoke(t *testing.T) {
	db := migrated(t)
	ctx := context.Background()
	vessel := uuid.New()
	var records []*catalog.Record
	for i := range 150 {
		path := fmt.Sprintf("environment.depth.sensor%03d", i)
		p, _ := catalog.NewPath(catalog.Path{Path: path, Unit: catalog.UnitOf("m")})
		o, _ := catalog.NewObservation(catalog.Observation{Path: path, SourceRef: "can0.x", ValueType: catalog.Number})
		records = append(records, p, o)
	}
	src, _ := catalog.NewSource(catalog.Source{SourceRef: "can0.x"})
	records = append(records, src)
	snap, err := envelope.Build(envelope.Input{VesselID: vessel, SnapshotID: uuid.New(), Revision: 1, DiscoveredAt: time.Now(), Records: records})
	require.NoError(t, err)
	r := finalize.NewReceiver(mysqlstore.New(db))
	o := finalize.Origin{VesselID: vessel}
	_, err = r.ReceiveManifest(ctx, o, snap.Manifest.Canonical())
	require.NoError(t, err)
	for _, c := range snap.Chunks {
		_, err := r.ReceiveChunk(ctx, o, c.Canonical())
		require.NoError(t, err)
	}
	out, err := r.Finalize(ctx, vessel, snap.Manifest.SnapshotID)
	require.NoError(t, err)
	require.Equal(t, finalize.Activated, out.Status)
	cat, err := r.Active(ctx, vessel)
	require.NoError(t, err)
	require.Len(t, cat.Items, 301)
}
