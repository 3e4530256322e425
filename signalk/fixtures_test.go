package signalk

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/catalog"
)

// sampleFixture is the sample boat: signalk-server playing both of its
// bundled feeds, without source priorities (testdata/README.md).
const sampleFixture = "testdata/full-both-nopriority-1.json"

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

func countKinds(rs []*catalog.Record) (paths, sources int) {
	for _, r := range rs {
		switch r.Kind() {
		case catalog.KindPath:
			paths++
		case catalog.KindSource:
			sources++
		}
	}
	return paths, sources
}

// TestFixturesMap: every capture of a real server maps, under either
// rule, to a valid snapshot's content.
func TestFixturesMap(t *testing.T) {
	for _, f := range []string{"full-n2k.json", "full-0183.json", "full-both-nopriority-1.json", "full-both-nopriority-2.json", "full-both-priority.json", "full-usecanname.json", "full-early.json", "full-n2k-noidentity.json", "full-n2k-filetimestamps.json", "secured-full-n2k.json"} {
		for _, sel := range []Selection{SelectLowestRef, SelectServer} {
			rs, err := Map(readFixture(t, f), sel)
			require.NoError(t, err, f)
			p, s := countKinds(rs)
			require.Positive(t, p, f)
			require.Positive(t, s, f)
			require.NoError(t, catalog.Check(rs), f)
		}
	}
}

func mapFixture(t *testing.T, name string, sel Selection) []*catalog.Record {
	t.Helper()
	rs, err := Map(readFixture(t, name), sel)
	require.NoError(t, err, name)
	return rs
}

// TestTwoReadsWithoutPriorities: two reads of a server without source
// priorities, whose $source differs on shared paths, give one document
// under lowest-ref, and two under server.
func TestTwoReadsWithoutPriorities(t *testing.T) {
	one, two := "full-both-nopriority-1.json", "full-both-nopriority-2.json"
	require.Equal(t, canonicalRecords(mapFixture(t, one, SelectLowestRef)), canonicalRecords(mapFixture(t, two, SelectLowestRef)))
	require.NotEqual(t, canonicalRecords(mapFixture(t, one, SelectServer)), canonicalRecords(mapFixture(t, two, SelectServer)),
		"the captures differ in $source, which the server rule reports")
}

// TestTimestampsDoNotMatter: the same feed with the sample's own 2014
// timestamps maps to the same records as with the server's.
func TestTimestampsDoNotMatter(t *testing.T) {
	require.Equal(t, canonicalRecords(mapFixture(t, "full-n2k.json", SelectLowestRef)),
		canonicalRecords(mapFixture(t, "full-n2k-filetimestamps.json", SelectLowestRef)))
}

// TestServerPriorities: with source priorities preferring NMEA 2000, the
// server rule reports the NMEA 2000 source of every shared path, as the
// server selects it.
func TestServerPriorities(t *testing.T) {
	rs := mapFixture(t, "full-both-priority.json", SelectServer)
	var prio struct {
		Overrides map[string][]struct{ SourceRef string } `json:"priorityOverrides"`
	}
	require.NoError(t, json.Unmarshal(readFixture(t, "priorities.json"), &prio))
	require.NotEmpty(t, prio.Overrides)
	got := map[string]string{}
	for _, r := range rs {
		if o, ok := r.AsObservation(); ok {
			got[o.Path] = o.SourceRef
		}
	}
	for path, ranked := range prio.Overrides {
		require.Equal(t, ranked[0].SourceRef, got[path], path)
	}
}

// TestDeviceMetadata: the NMEA 2000 devices keep their identity without
// volatile members, resolved through CAN-name refs too; NMEA 0183
// talkers keep their sentence names.
func TestDeviceMetadata(t *testing.T) {
	for _, f := range []string{"full-both-nopriority-1.json", "full-usecanname.json"} {
		n2k, talkers := 0, 0
		for _, r := range mapFixture(t, f, SelectLowestRef) {
			s, ok := r.AsSource()
			if !ok {
				continue
			}
			require.NotNil(t, s.Type, s.SourceRef)
			var meta map[string]any
			require.NoError(t, json.Unmarshal(s.Meta, &meta), s.SourceRef)
			switch *s.Type {
			case "NMEA2000":
				n2k++
				dev := meta["n2k"].(map[string]any)
				require.NotEmpty(t, dev["modelId"], s.SourceRef)
				for _, gone := range droppedN2K {
					require.NotContains(t, dev, gone, s.SourceRef)
				}
				if f == "full-usecanname.json" {
					require.Regexp(t, `^n2k-sample-data\.[0-9a-f]{16}$`, s.SourceRef)
					require.Equal(t, s.SourceRef[len("n2k-sample-data."):], dev["canName"])
				}
			case "NMEA0183":
				talkers++
				require.NotEmpty(t, meta["talker"])
				require.IsType(t, []any{}, meta["sentences"])
			}
		}
		require.Equal(t, 3, n2k, f)
		require.Equal(t, 2, talkers, f)
	}
}

// TestEarlyTreeIsPartial: right after a start the tree is well-formed but
// smaller than once it settled, which is why a scan waits for the settle
// time.
func TestEarlyTreeIsPartial(t *testing.T) {
	early, _ := countKinds(mapFixture(t, "full-early.json", SelectLowestRef))
	settled, _ := countKinds(mapFixture(t, "full-both-nopriority-1.json", SelectLowestRef))
	require.Less(t, early, settled)
}

// TestDiscoverCaptures: Discover over HTTP, the captured models served by
// the fake server, returns what Map makes of them.
func TestDiscoverCaptures(t *testing.T) {
	for _, name := range []string{"full-both-nopriority-1.json", "full-usecanname.json", "secured-full-n2k.json"} {
		t.Run(name, func(t *testing.T) {
			f := newFakeServer(t, false)
			f.model, f.self = string(readFixture(t, name)), "vessels.urn:mrn:signalk:uuid:5e1f0000-5e1f-4000-8000-00000000c0de"
			rs, err := newClient(t, f).Discover(t.Context())
			require.NoError(t, err)
			require.Equal(t, canonicalRecords(mapFixture(t, name, SelectLowestRef)), canonicalRecords(rs))
		})
	}
}
