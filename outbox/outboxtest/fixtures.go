package outboxtest

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// Source references of the fixtures: opaque, with dots.
var fixtureSources = []struct{ ref, label, typ, meta string }{
	{"can0.c0788c00e7e04312", "can0", "NMEA2000", `{"manufacturer":"Garmin","modelId":"GND™ 10 \"Black Box\""}`},
	{"ttyUSB0.GP", "ttyUSB0", "NMEA0183", ""},
	{"derived-data", "", "", `{"plugin":"derived\u0000data"}`},
}

// An inventory is what a discovery scan found: n selected paths named
// prefix.sensorNNN, each observed from one of the fixture sources, with
// units in all three states and metadata that needs escaping.
type inventory struct {
	prefix string
	n      int
	unit   string
	bare   bool // no units, no metadata, one source: the smallest records
}

// inv returns an inventory of n paths under prefix.
func inv(prefix string, n int) inventory { return inventory{prefix: prefix, n: n, unit: "m"} }

func (in inventory) withUnit(u string) inventory { in.unit = u; return in }

// bareInv returns an inventory of n paths with the smallest records.
func bareInv(prefix string, n int) inventory { return inventory{prefix: prefix, n: n, bare: true} }

// records returns the inventory's records in an order that is not the
// canonical one (observations first, paths backwards), so the Writer has
// to sort them.
func (in inventory) records(t testing.TB) []*catalog.Record {
	t.Helper()
	var paths, obs []*catalog.Record
	used := make(map[string]bool)
	for i := range in.n {
		name := fmt.Sprintf("%s.sensor%03d", in.prefix, i)
		p := catalog.Path{Path: name}
		switch {
		case in.bare:
		case i%3 == 0:
			p.Unit = catalog.UnitOf(in.unit)
		case i%3 == 1:
			p.Unit = catalog.NoUnit()
		}
		if i%4 == 0 && !in.bare {
			p.Meta = []byte(`{"description":"Sensor ` + strconv.Itoa(i) + ` — Tiefe \"unter\" Kiel\n","zones":[{"lower":0.5,"state":"alarm"}]}`)
		}
		pr, err := catalog.NewPath(p)
		require.NoError(t, err, "fixture path")
		paths = append(paths, pr)
		src := fixtureSources[i%len(fixtureSources)].ref
		vt := catalog.ValueTypes()[i%len(catalog.ValueTypes())]
		if in.bare {
			src, vt = fixtureSources[0].ref, catalog.Number
		}
		used[src] = true
		or, err := catalog.NewObservation(catalog.Observation{Path: name, SourceRef: src, ValueType: vt})
		require.NoError(t, err, "fixture observation")
		obs = append(obs, or)
	}
	out := obs
	for _, s := range fixtureSources {
		if !used[s.ref] {
			continue
		}
		src := catalog.Source{SourceRef: s.ref}
		if s.label != "" && !in.bare {
			src.Label, src.Type = &s.label, &s.typ
		}
		if s.meta != "" && !in.bare {
			src.Meta = []byte(s.meta)
		}
		r, err := catalog.NewSource(src)
		require.NoError(t, err, "fixture source")
		out = append(out, r)
	}
	slices.Reverse(paths)
	return append(out, paths...)
}

// canonicalOrder returns the records in the protocol's global order,
// computed here from the rules: paths by path, sources by source_ref,
// observations by path then source_ref, bytewise.
func canonicalOrder(records []*catalog.Record) []*catalog.Record {
	out := slices.Clone(records)
	slices.SortStableFunc(out, func(a, b *catalog.Record) int {
		if c := cmp.Compare(a.Kind(), b.Kind()); c != 0 {
			return c
		}
		if c := cmp.Compare(a.PathName(), b.PathName()); c != 0 {
			return c
		}
		return cmp.Compare(a.SourceRef(), b.SourceRef())
	})
	return out
}

// requireCommitted checks a commit of c at revision rev against the rules,
// with digests computed here: the manifest first, then every chunk by
// index, all pending, each payload the canonical bytes that decode strictly
// to the snapshot's header and records, each digest what the receipt will
// carry.
func requireCommitted(t testing.TB, c outbox.Cycle, rev int64, entries []outbox.Entry) {
	t.Helper()
	want := canonicalOrder(c.Records)
	require.NotEmpty(t, entries, "a commit writes a manifest")
	m := entries[0]
	require.Equal(t, sourcecatalog.ManifestEntityType, m.EntityType, "the manifest comes first")
	require.Equal(t, c.SnapshotID.String(), m.EntityKey)
	require.Equal(t, sourcecatalog.NoIndex, m.ChunkIndex)
	require.Equal(t, c.VesselID, m.VesselID)
	require.Equal(t, c.SnapshotID, m.SnapshotID)
	require.Equal(t, rev, m.Revision)
	require.Equal(t, outbox.Pending, m.State)
	require.Equal(t, canonical.Digest(sha256.Sum256(m.Payload)), m.Digest, "the manifest's digest is the SHA-256 of its bytes")
	manifest, err := envelope.DecodeManifest(m.Payload)
	require.NoError(t, err, "the manifest decodes strictly")
	require.Equal(t, string(manifest.Canonical()), string(m.Payload), "the manifest's bytes are canonical")
	require.Equal(t, envelope.Manifest{
		VesselID: c.VesselID, SnapshotID: c.SnapshotID, Revision: rev, DiscoveredAt: c.DiscoveredAt.UTC(),
		ChunkCount: len(entries) - 1, RecordCount: len(c.Records),
		DocumentSHA256: envelope.BodyDigest(want),
	}, manifest, "the manifest describes the whole snapshot")

	var got []*catalog.Record
	for i, e := range entries[1:] {
		require.Equal(t, sourcecatalog.ChunkEntityType, e.EntityType, "chunk %d", i)
		require.Equal(t, c.SnapshotID.String()+"/"+strconv.Itoa(i), e.EntityKey, "chunk %d", i)
		require.Equal(t, i, e.ChunkIndex, "chunks by index")
		require.Equal(t, c.VesselID, e.VesselID)
		require.Equal(t, c.SnapshotID, e.SnapshotID)
		require.Equal(t, rev, e.Revision, "chunk %d", i)
		require.Equal(t, outbox.Pending, e.State, "chunk %d", i)
		chunk, err := envelope.DecodeChunk(e.Payload)
		require.NoError(t, err, "chunk %d decodes strictly", i)
		require.Equal(t, string(chunk.Canonical()), string(e.Payload), "chunk %d: canonical bytes", i)
		require.Equal(t, c.VesselID, chunk.VesselID())
		require.Equal(t, c.SnapshotID, chunk.SnapshotID())
		require.Equal(t, rev, chunk.Revision())
		require.Equal(t, i, chunk.Index())
		if len(want) > 0 {
			require.NotEmpty(t, chunk.Records(), "chunk %d: only an empty snapshot has an empty chunk", i)
		}
		require.LessOrEqual(t, len(chunk.Records()), sourcecatalog.MaxRecordsPerChunk)
		d := envelope.BodyDigest(chunk.Records())
		require.Equal(t, d, chunk.PayloadSHA256(), "chunk %d: payload_sha256", i)
		require.Equal(t, d, e.Digest, "chunk %d: the digest is its payload_sha256", i)
		require.LessOrEqual(t, len(envelope.DefaultWrapper{}.Wrap(nil, e.EntityType, e.EntityKey, e.Payload)), sourcecatalog.MaxRequest)
		got = append(got, chunk.Records()...)
	}
	if len(want) == 0 {
		require.Len(t, entries, 2, "an empty snapshot is one chunk with no records")
		return
	}
	require.Equal(t, len(want), len(got), "every record is in exactly one chunk")
	for i := range want {
		if !bytes.Equal(want[i].Canonical(), got[i].Canonical()) {
			require.Failf(t, "records out of order or changed", "record %d: want %s, got %s", i, want[i].Canonical(), got[i].Canonical())
		}
	}
}
