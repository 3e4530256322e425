package finalize_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
)

// A snapshot built on board arrives shuffled, with a duplicate, and is
// finalized on shore.
func Example() {
	ctx := context.Background()
	vessel := uuid.MustParse("0d1f3c5e-2a4b-4c6d-8e0f-1a2b3c4d5e6f")
	var records []*catalog.Record
	for i := range 150 {
		path := fmt.Sprintf("environment.depth.sensor%03d", i)
		p, _ := catalog.NewPath(catalog.Path{Path: path, Unit: catalog.UnitOf("m")})
		o, _ := catalog.NewObservation(catalog.Observation{Path: path, SourceRef: "can0.0123456789abcdef", ValueType: catalog.Number})
		records = append(records, p, o)
	}
	src, _ := catalog.NewSource(catalog.Source{SourceRef: "can0.0123456789abcdef"})
	records = append(records, src)
	snap, err := envelope.Build(envelope.Input{
		VesselID:     vessel,
		SnapshotID:   uuid.MustParse("6f1c2d3e-4a5b-4c6d-9e8f-0a1b2c3d4e5f"),
		Revision:     1,
		DiscoveredAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC),
		Records:      records,
	})
	if err != nil {
		panic(err)
	}

	messages := [][]byte{snap.Manifest.Canonical()}
	for _, c := range snap.Chunks {
		messages = append(messages, c.Canonical())
	}
	messages = append(messages, messages[1]) // a retried chunk
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(messages), func(i, j int) {
		messages[i], messages[j] = messages[j], messages[i]
	})

	r := finalize.NewReceiver(memstore.New())
	origin := finalize.Origin{VesselID: vessel}
	for _, msg := range messages {
		var rc envelope.Receipt
		if _, err := envelope.DecodeManifest(msg); err == nil {
			rc, err = r.ReceiveManifest(ctx, origin, msg)
		} else {
			rc, err = r.ReceiveChunk(ctx, origin, msg)
		}
		if err != nil {
			panic(err)
		}
		fmt.Println(rc.Status, rc.ChunkIndex, "complete:", rc.Complete)
	}
	out, err := r.Finalize(ctx, vessel, snap.Manifest.SnapshotID)
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Status, "revision", out.ActiveRevision)
	// Output:
	// staged 0 complete: false
	// already_received 0 complete: false
	// staged 1 complete: false
	// staged -1 complete: false
	// staged 2 complete: false
	// staged 3 complete: true
	// activated revision 1
}
