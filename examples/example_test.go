package examples_test

import (
	"fmt"

	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
)

func ExampleBoatSnapshot() {
	s, err := examples.BoatSnapshot()
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Manifest.RecordCount, "records in", len(s.Chunks), "chunks")
	for _, c := range s.Chunks {
		fmt.Printf("chunk %d: %d records, %d body bytes\n", c.Index(), len(c.Records()), c.BodyLen())
	}
	fmt.Println("document", s.Manifest.DocumentSHA256)
	// Output:
	// 129 records in 2 chunks
	// chunk 0: 100 records, 16277 body bytes
	// chunk 1: 29 records, 3391 body bytes
	// document 14592fcb7112302e00da656d159c1221136f91c503ca6d65109b946f05a83092
}

// The largest snapshot the protocol allows fills all 256 chunks with 100
// records each.
func ExampleScaled() {
	s, err := envelope.Build(envelope.Input{
		VesselID:     examples.VesselID,
		SnapshotID:   examples.SnapshotID,
		Revision:     examples.Revision,
		DiscoveredAt: examples.DiscoveredAt,
		Records:      examples.Scaled(25600),
	})
	if err != nil {
		panic(err)
	}
	body, smallest, largest := 0, 1<<20, 0
	for _, c := range s.Chunks {
		body += c.BodyLen()
		smallest, largest = min(smallest, c.BodyLen()), max(largest, c.BodyLen())
	}
	fmt.Println(len(s.Chunks), "chunks,", s.Manifest.RecordCount, "records")
	fmt.Println(body, "body bytes, from", smallest, "to", largest, "per chunk")
	// Output:
	// 256 chunks, 25600 records
	// 3745855 body bytes, from 12926 to 16051 per chunk
}
