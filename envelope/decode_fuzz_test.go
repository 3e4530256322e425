package envelope

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
)

func fuzzSnapshot(f testing.TB) *Snapshot {
	p, _ := catalog.NewPath(catalog.Path{Path: "environment.depth.belowKeel", Unit: catalog.UnitOf("m"), Meta: []byte(`{"zones":[{"lower":0,"upper":2,"state":"alarm"}]}`)})
	s, _ := catalog.NewSource(catalog.Source{SourceRef: "can0.c0788c00e7e04312"})
	o, _ := catalog.NewObservation(catalog.Observation{Path: "environment.depth.belowKeel", SourceRef: "can0.c0788c00e7e04312", ValueType: catalog.Number})
	snap, err := Build(Input{
		VesselID: uuid.MustParse("0d1f3c5e-2a4b-4c6d-8e0f-1a2b3c4d5e6f"), SnapshotID: uuid.MustParse("6f1c2d3e-4a5b-4c6d-9e8f-0a1b2c3d4e5f"),
		Revision: 7, DiscoveredAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), Records: []*catalog.Record{o, s, p},
	})
	if err != nil {
		f.Fatal(err)
	}
	return snap
}

// FuzzDecodeMessage checks that the manifest and chunk decoders either
// refuse input with a classified *sourcecatalog.Error or return a value
// whose canonical bytes decode again to the same bytes; and that every
// message decoder decides on input as on its canonical form.
func FuzzDecodeMessage(f *testing.F) {
	snap := fuzzSnapshot(f)
	f.Add(snap.Manifest.Canonical())
	f.Add(snap.Chunks[0].Canonical())
	f.Add([]byte(`{"chunk_index":0}`))
	f.Add(Receipt{EntityType: sourcecatalog.ChunkEntityType, VesselID: snap.Manifest.VesselID, SnapshotID: snap.Manifest.SnapshotID, Revision: 7, ChunkIndex: 3, Status: Staged}.Canonical())
	f.Add(Refusal{Class: sourcecatalog.ErrInvalidValue, Chunk: 2, Record: 5, Field: "path", Message: "empty path segment"}.Canonical())
	f.Fuzz(func(t *testing.T, in []byte) {
		if canon, err := canonical.Transform(in); err == nil {
			sameAsCanonical(t, in, canon)
		}
		classified := func(err error) {
			var e *sourcecatalog.Error
			if !errors.As(err, &e) || e.Class == nil {
				t.Fatalf("unclassified error %v", err)
			}
		}
		// The encoders write RFC 8785 bytes: Transform keeps them.
		fixedPoint := func(what string, b []byte) {
			if out, err := canonical.Transform(b); err != nil || !bytes.Equal(out, b) {
				t.Fatalf("the %s encoder's %q is not a Transform fixed point: %q, %v", what, b, out, err)
			}
		}
		if m, err := DecodeManifest(in); err != nil {
			classified(err)
		} else if again, err := DecodeManifest(m.Canonical()); err != nil || again != m {
			t.Fatalf("manifest round trip: %v", err)
		} else {
			fixedPoint("manifest", m.Canonical())
		}
		if c, err := DecodeChunk(in); err != nil {
			classified(err)
		} else if again, err := DecodeChunk(c.Canonical()); err != nil || !bytes.Equal(again.Canonical(), c.Canonical()) {
			t.Fatalf("chunk round trip: %v", err)
		} else {
			fixedPoint("chunk", c.Canonical())
		}
	})
}

// sameAsCanonical fails t unless each message decoder returns the same for
// in and for canon, its canonical form.
func sameAsCanonical(t *testing.T, in, canon []byte) {
	t.Helper()
	for _, decode := range []func([]byte) (any, error){
		func(b []byte) (any, error) { return DecodeManifest(b) },
		func(b []byte) (any, error) { return DecodeChunk(b) },
		func(b []byte) (any, error) { return DecodeReceipt(b) },
		func(b []byte) (any, error) { return DecodeRefusal(b) },
	} {
		v, err := decode(in)
		cv, cerr := decode(canon)
		if !reflect.DeepEqual(v, cv) || !reflect.DeepEqual(err, cerr) {
			t.Fatalf("%q decodes to %+v, %v; its canonical form to %+v, %v", in, v, err, cv, cerr)
		}
	}
}
