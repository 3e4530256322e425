// Package examples provides synthetic Source Catalog v2 data: the example
// boat behind example_header.json and example_chunks.json, and catalogs of
// any size for benchmarks and limit tests.
//
// Everything here is synthetic and deterministic: the UUIDs, the NMEA 2000
// NAMEs, serial numbers and crew names are invented, and no credentials or
// real vessel data appear anywhere.
//
// # The example files
//
// example_header.json holds the manifest of [BoatSnapshot] and
// example_chunks.json its chunks, in exactly the layout `sourcecatalog build`
// writes: the manifest's canonical bytes and a newline; a JSON array with one
// chunk's canonical bytes per line. Regenerate them from the repository root
// with
//
//	go generate ./examples
//
// The package test fails when the committed files differ from what the
// generator produces.
package examples

import (
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
)

//go:generate go run ./internal/gen

// The example snapshot's identity. All of it is synthetic.
var (
	// VesselID is the example vessel's server-assigned id.
	VesselID = uuid.MustParse("1ca21e28-2200-4285-8746-22675233f129")
	// SnapshotID is the example discovery cycle's random (version 4) id.
	SnapshotID = uuid.MustParse("d1029c72-155c-46b6-bfbb-988611dfb766")
	// DiscoveredAt is when the example discovery cycle ran.
	DiscoveredAt = time.Date(2026, time.May, 1, 12, 0, 0, 0, time.UTC)
)

// Revision is the example snapshot's revision.
const Revision int64 = 1

// The names of the example files in this directory.
const (
	HeaderFile = "example_header.json"
	ChunksFile = "example_chunks.json"
	// RecordsFile holds the example boat's records, one per line, as the
	// JSON array `sourcecatalog commit` and `build` read.
	RecordsFile = "example_records.json"
)

// BoatSnapshot builds the example snapshot: [Boat]'s records under the
// fixed identity above.
func BoatSnapshot() (*envelope.Snapshot, error) {
	return envelope.Build(envelope.Input{
		VesselID:     VesselID,
		SnapshotID:   SnapshotID,
		Revision:     Revision,
		DiscoveredAt: DiscoveredAt,
		Records:      Boat(),
	})
}

// record helpers shared by Boat and Scaled. The data they get is this
// package's own, so a constructor error is a bug in the package: they panic.

func must(r *catalog.Record, err error) *catalog.Record {
	if err != nil {
		panic("examples: invalid built-in record: " + err.Error())
	}
	return r
}

// observation returns the observation record of path from source, its
// value type detected from a sample value (JSON text; "" when no value was
// seen yet).
func observation(path, source, sample string) *catalog.Record {
	vt, err := catalog.DetectValueType([]byte(sample))
	if err != nil {
		panic("examples: invalid built-in sample of " + path + ": " + err.Error())
	}
	return must(catalog.NewObservation(catalog.Observation{Path: path, SourceRef: source, ValueType: vt}))
}

func pathRecord(path string, unit catalog.Unit, meta string) *catalog.Record {
	p := catalog.Path{Path: path, Unit: unit}
	if meta != "" {
		p.Meta = []byte(meta)
	}
	return must(catalog.NewPath(p))
}

func sourceRecord(ref, label, typ, meta string) *catalog.Record {
	s := catalog.Source{SourceRef: ref}
	if label != "" {
		s.Label = &label
	}
	if typ != "" {
		s.Type = &typ
	}
	if meta != "" {
		s.Meta = []byte(meta)
	}
	return must(catalog.NewSource(s))
}
