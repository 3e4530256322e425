package envelope_test

import (
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
)

// Build a one-path snapshot: the path, its selected source and the
// observation that links them, handed over in any order. Build sorts and
// checks them, cuts them into chunks and computes the hashes; the manifest
// and each chunk's canonical bytes are the payloads of the outbox entities.
func Example() {
	path, err := catalog.NewPath(catalog.Path{
		Path: "navigation.speedOverGround",
		Unit: catalog.UnitOf("m/s"),
		Meta: []byte(`{"description":"Speed over ground"}`),
	})
	if err != nil {
		panic(err)
	}
	label := "can0"
	source, err := catalog.NewSource(catalog.Source{SourceRef: "can0.c0788c00e7e04312", Label: &label})
	if err != nil {
		panic(err)
	}
	obs, err := catalog.NewObservation(catalog.Observation{
		Path: "navigation.speedOverGround", SourceRef: "can0.c0788c00e7e04312", ValueType: catalog.Number,
	})
	if err != nil {
		panic(err)
	}

	snap, err := envelope.Build(envelope.Input{
		VesselID:     uuid.MustParse("0f8fad5b-d9cb-469f-a165-70867728950e"),
		SnapshotID:   uuid.MustParse("7c9e6679-7425-40de-944b-e07fc1f90ae7"),
		Revision:     1,
		DiscoveredAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC),
		Records:      []*catalog.Record{obs, source, path},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("chunks:", snap.Manifest.ChunkCount)
	fmt.Println("records:", snap.Manifest.RecordCount)
	fmt.Println("document_sha256:", snap.Manifest.DocumentSHA256)
	fmt.Println("chunk 0 key:", envelope.ChunkKey(snap.Manifest.SnapshotID, snap.Chunks[0].Index()))
	fmt.Println("verify:", envelope.Verify(&snap.Manifest, snap.Chunks))
	// Output:
	// chunks: 1
	// records: 3
	// document_sha256: 9fccd98593bcd62b3e262524085c66042c1f8a461fe36919026038542cd2961a
	// chunk 0 key: 7c9e6679-7425-40de-944b-e07fc1f90ae7/0
	// verify: <nil>
}
