package examples_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/internal/files"
)

const regenerate = "the example files are stale: run `go generate ./examples` from the repository root"

// The committed files are exactly what the generator writes now.
func TestFilesUpToDate(t *testing.T) {
	s, err := examples.BoatSnapshot()
	require.NoError(t, err)
	header, err := os.ReadFile(examples.HeaderFile)
	require.NoError(t, err)
	chunks, err := os.ReadFile(examples.ChunksFile)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(files.Header(s), header), regenerate)
	assert.True(t, bytes.Equal(files.Chunks(s), chunks), regenerate)
	records, err := os.ReadFile(examples.RecordsFile)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(catalog.EncodeList(examples.Boat()), records), regenerate)
	list, err := catalog.DecodeList(records)
	require.NoError(t, err)
	assert.Len(t, list, len(examples.Boat()))

	// The generator writes through files.Write: the same bytes on disk.
	dir := t.TempDir()
	require.NoError(t, files.Write(dir, s, examples.HeaderFile, examples.ChunksFile))
	for name, want := range map[string][]byte{examples.HeaderFile: header, examples.ChunksFile: chunks} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(want, got), "%s: %s", name, regenerate)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "no temporary files are left behind")
}

// The files decode and verify with envelope.DecodeSnapshot, and have the
// documented layout: the manifest's canonical bytes and a newline; "[",
// one chunk's canonical bytes per line in index order, "]".
func TestFilesVerify(t *testing.T) {
	header, err := os.ReadFile(examples.HeaderFile)
	require.NoError(t, err)
	chunks, err := os.ReadFile(examples.ChunksFile)
	require.NoError(t, err)

	require.True(t, bytes.HasSuffix(header, []byte("}\n")))
	manifest := bytes.TrimSuffix(header, []byte("\n"))
	canon, err := canonical.Transform(manifest)
	require.NoError(t, err)
	assert.Equal(t, string(canon), string(manifest), "the header is canonical")

	lines := strings.Split(string(chunks), "\n")
	require.GreaterOrEqual(t, len(lines), 4)
	assert.Equal(t, "[", lines[0])
	assert.Equal(t, []string{"]", ""}, lines[len(lines)-2:])
	var msgs [][]byte
	for i, line := range lines[1 : len(lines)-2] {
		if i < len(lines)-4 {
			require.True(t, strings.HasSuffix(line, ","), "line %d", i+1)
			line = strings.TrimSuffix(line, ",")
		}
		canon, err := canonical.Transform([]byte(line))
		require.NoError(t, err)
		assert.Equal(t, string(canon), line, "chunk line %d is canonical", i)
		msgs = append(msgs, []byte(line))
	}

	s, err := envelope.DecodeSnapshot(manifest, msgs)
	require.NoError(t, err)
	m := s.Manifest
	assert.Equal(t, examples.VesselID, m.VesselID)
	assert.Equal(t, examples.SnapshotID, m.SnapshotID)
	assert.Equal(t, examples.Revision, m.Revision)
	assert.True(t, examples.DiscoveredAt.Equal(m.DiscoveredAt))
	assert.Equal(t, len(examples.Boat()), m.RecordCount)
	for i, c := range s.Chunks {
		assert.Equal(t, i, c.Index())
		assert.Equal(t, string(msgs[i]), string(c.Canonical()), "line %d holds chunk %d", i, i)
	}

	// The shared reader agrees.
	s2, err := files.Decode(header, chunks)
	require.NoError(t, err)
	assert.Equal(t, m, s2.Manifest)
}

func TestBoatSnapshotIdentity(t *testing.T) {
	assert.Equal(t, 4, int(examples.SnapshotID.Version()), "the snapshot id is a random (version 4) UUID")
	assert.Equal(t, examples.SnapshotID.String(), strings.ToLower(examples.SnapshotID.String()))
	s, err := examples.BoatSnapshot()
	require.NoError(t, err)
	require.NoError(t, envelope.Verify(&s.Manifest, s.Chunks))
	assert.Greater(t, len(s.Chunks), 1, "the example shows more than one chunk")
}

// The boat covers what the examples are for: every value type, the three
// unit states, the three source types and a source with no optional
// member, alarm zones, integrity.
func TestBoatCoverage(t *testing.T) {
	records := examples.Boat()
	assert.False(t, catalog.IsSorted(records), "Boat is not in canonical order: Build must sort")

	valueTypes := map[catalog.ValueType]int{}
	var null, absent, symbol, zones int
	sourceTypes := map[string]int{}
	bare := 0
	for _, r := range records {
		switch r.Kind() {
		case catalog.KindPath:
			p, _ := r.AsPath()
			switch {
			case p.Unit.IsNone():
				null++
			case p.Unit.IsUnknown():
				absent++
			default:
				symbol++
			}
			if bytes.Contains(p.Meta, []byte(`"zones":[{`)) {
				zones++
			}
		case catalog.KindSource:
			s, _ := r.AsSource()
			if s.Type == nil {
				bare++
				assert.Nil(t, s.Label)
				assert.Nil(t, s.Meta)
				continue
			}
			sourceTypes[*s.Type]++
			if *s.Type == "NMEA2000" {
				assert.Regexp(t, `^can0\.[0-9a-f]{16}$`, s.SourceRef)
				for _, key := range []string{"manufacturer", "model", "serial"} {
					assert.Contains(t, string(s.Meta), `"`+key+`":`)
				}
			}
		case catalog.KindObservation:
			o, _ := r.AsObservation()
			valueTypes[o.ValueType]++
		}
	}
	for _, vt := range catalog.ValueTypes() {
		assert.Positive(t, valueTypes[vt], "value type %s", vt)
	}
	assert.Positive(t, null, "paths with a null unit")
	assert.Positive(t, absent, "paths with an absent unit")
	assert.Positive(t, symbol, "paths with an SI unit")
	assert.GreaterOrEqual(t, zones, 2, "paths with alarm zones")
	for _, typ := range []string{"NMEA0183", "NMEA2000", "Plugin"} {
		assert.Positive(t, sourceTypes[typ], "sources of type %s", typ)
	}
	assert.Equal(t, 1, bare, "one source without label, type or meta")

	sorted := append([]*catalog.Record(nil), records...)
	catalog.Sort(sorted)
	require.NoError(t, catalog.Check(sorted))
}

func TestBoatDeterministic(t *testing.T) {
	a, b := examples.Boat(), examples.Boat()
	require.Equal(t, len(a), len(b))
	for i := range a {
		assert.Equal(t, string(a[i].Canonical()), string(b[i].Canonical()))
	}
}

func TestScaled(t *testing.T) {
	for _, n := range []int{3, 5, 6, 7, 8, 9, 101, 1500, 25600} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			records := examples.Scaled(n)
			require.Len(t, records, n)
			s, err := envelope.Build(envelope.Input{
				VesselID: examples.VesselID, SnapshotID: examples.SnapshotID,
				Revision: 1, DiscoveredAt: examples.DiscoveredAt, Records: records,
			})
			require.NoError(t, err)
			assert.Equal(t, n, s.Manifest.RecordCount)
			again := examples.Scaled(n)
			for i := range records {
				require.Equal(t, string(records[i].Canonical()), string(again[i].Canonical()), "deterministic")
			}
			if n == 25600 {
				assert.Len(t, s.Chunks, sourcecatalog.MaxChunks)
				for _, c := range s.Chunks {
					assert.Len(t, c.Records(), sourcecatalog.MaxRecordsPerChunk, "chunk %d", c.Index())
				}
			}
		})
	}
}

func TestScaledValueTypes(t *testing.T) {
	seen := map[catalog.ValueType]bool{}
	units := map[string]bool{}
	for _, r := range examples.Scaled(1500) {
		if o, ok := r.AsObservation(); ok {
			seen[o.ValueType] = true
		}
		if p, ok := r.AsPath(); ok {
			units[p.Unit.String()] = true
		}
	}
	for _, vt := range catalog.ValueTypes() {
		assert.True(t, seen[vt], "value type %s", vt)
	}
	assert.True(t, units["null"] && units["(absent)"] && units["V"], "all three unit states")
}

func TestScaledLimit(t *testing.T) {
	_, err := envelope.Build(envelope.Input{
		VesselID: examples.VesselID, SnapshotID: examples.SnapshotID,
		Revision: 1, DiscoveredAt: examples.DiscoveredAt,
		Records: examples.Scaled(sourcecatalog.MaxRecords + 1),
	})
	require.ErrorIs(t, err, sourcecatalog.ErrLimitExceeded)
}

func TestScaledRefusesImpossibleSizes(t *testing.T) {
	for _, n := range []int{-1, 0, 1, 2, 4} {
		assert.Panics(t, func() { examples.Scaled(n) }, "n=%d", n)
	}
}

func BenchmarkBuild(b *testing.B) {
	for _, n := range []int{1500, 25600} {
		records := examples.Scaled(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, err := envelope.Build(envelope.Input{
					VesselID: examples.VesselID, SnapshotID: examples.SnapshotID,
					Revision: 1, DiscoveredAt: examples.DiscoveredAt, Records: records,
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecodeSnapshot(b *testing.B) {
	for _, n := range []int{1500, 25600} {
		s, err := envelope.Build(envelope.Input{
			VesselID: examples.VesselID, SnapshotID: examples.SnapshotID,
			Revision: 1, DiscoveredAt: examples.DiscoveredAt, Records: examples.Scaled(n),
		})
		if err != nil {
			b.Fatal(err)
		}
		manifest := s.Manifest.Canonical()
		msgs := make([][]byte, len(s.Chunks))
		size := len(manifest)
		for i, c := range s.Chunks {
			msgs[i] = c.Canonical()
			size += len(msgs[i])
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				if _, err := envelope.DecodeSnapshot(manifest, msgs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
