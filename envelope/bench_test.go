package envelope_test

import (
	"crypto/sha256"
	"encoding/json"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gowebpki/jcs"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/internal/bench"
)

// Benchmarks B1–B3 of the codec. Each reports its target ratio as a metric
// measured in the same run: x_floor (B1, target ≤ 2), x_faster (B2, target
// ≥ 30), x_unmarshal (B3, target ≤ 1.0), and alloc_x_canonical, the bytes
// allocated per operation over the snapshot's canonical size (target ≤ 4;
// allocation bounds peak memory).

// sizes are the snapshots measured: records in random order, and (for
// Build) in canonical order, as a discovery that walks the Signal K tree
// yields them.
var sizes = []struct {
	name    string
	records int
	sorted  bool
}{
	{"max", 25600, false},
	{"typical", 1500, false},
	{"max-sorted", 25600, true},
	{"typical-sorted", 1500, true},
}

func benchInput(n int, sorted ...bool) envelope.Input {
	records := examples.Scaled(n)
	if len(sorted) > 0 && sorted[0] {
		catalog.Sort(records)
	} else {
		rand.New(rand.NewPCG(7, 7)).Shuffle(len(records), func(i, j int) { records[i], records[j] = records[j], records[i] })
	}
	return envelope.Input{
		VesselID:     uuid.MustParse("0d1f3c5e-2a4b-4c6d-8e0f-1a2b3c4d5e6f"),
		SnapshotID:   uuid.MustParse("6f1c2d3e-4a5b-4c6d-9e8f-0a1b2c3d4e5f"),
		Revision:     42,
		DiscoveredAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC),
		Records:      records,
	}
}

func mustBuild(b *testing.B, in envelope.Input) *envelope.Snapshot {
	s, err := envelope.Build(in)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// bodies returns each chunk's canonical body and the document body.
func bodies(s *envelope.Snapshot) [][]byte {
	var out [][]byte
	var doc []byte
	doc = append(doc, `{"records":[`...)
	first := true
	for _, c := range s.Chunks {
		body := []byte(`{"records":[`)
		for i, r := range c.Records() {
			if i > 0 {
				body = append(body, ',')
			}
			body = append(body, r.Canonical()...)
			if !first {
				doc = append(doc, ',')
			}
			first = false
			doc = append(doc, r.Canonical()...)
		}
		out = append(out, append(body, ']', '}'))
	}
	return append(out, append(doc, ']', '}'))
}

func canonicalSize(s *envelope.Snapshot) int {
	n := len(s.Manifest.Canonical())
	for _, c := range s.Chunks {
		n += len(c.Canonical())
	}
	return n
}

func perOp(b *testing.B) float64 { return float64(b.Elapsed().Nanoseconds()) / float64(b.N) }

func BenchmarkB1Build(b *testing.B) {
	for _, size := range sizes {
		b.Run(size.name, func(b *testing.B) {
			in := benchInput(size.records, size.sorted)
			snap := mustBuild(b, in)
			all := bodies(snap)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				mustBuild(b, in)
			}
			b.StopTimer()
			floor := bench.NsPerOp(b.N, func() {
				for _, body := range all {
					sha256.Sum256(body)
				}
			})
			b.ReportMetric(perOp(b)/floor, "x_floor")
			b.ReportMetric(float64(len(snap.Chunks)), "chunks")
		})
	}
}

// naiveBuild is the pipeline B2 compares against: encoding/json.Marshal of
// Go values, jcs.Transform, SHA-256, for every chunk and the document.
func naiveBuild(chunks [][]any, all []any) [][32]byte {
	sums := make([][32]byte, 0, len(chunks)+1)
	for _, recs := range append(chunks, all) {
		raw, _ := json.Marshal(map[string]any{"records": recs})
		canon, _ := jcs.Transform(raw)
		sums = append(sums, sha256.Sum256(canon))
	}
	return sums
}

func BenchmarkB2BuildVsNaive(b *testing.B) {
	for _, size := range sizes {
		b.Run(size.name, func(b *testing.B) {
			in := benchInput(size.records, size.sorted)
			snap := mustBuild(b, in)
			var chunks [][]any
			var all []any
			for _, c := range snap.Chunks {
				var recs []any
				for _, r := range c.Records() {
					var v any
					if err := json.Unmarshal(r.Canonical(), &v); err != nil {
						b.Fatal(err)
					}
					recs = append(recs, v)
				}
				chunks = append(chunks, recs)
				all = append(all, recs...)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				mustBuild(b, in)
			}
			b.StopTimer()
			naive := bench.NsPerOp(max(1, b.N/30), func() { naiveBuild(chunks, all) })
			b.ReportMetric(naive/perOp(b), "x_faster")
		})
	}
}

func BenchmarkB3DecodeVerify(b *testing.B) {
	for _, size := range sizes[:2] {
		b.Run(size.name, func(b *testing.B) {
			snap := mustBuild(b, benchInput(size.records))
			manifest := snap.Manifest.Canonical()
			raw := make([][]byte, len(snap.Chunks))
			for i, c := range snap.Chunks {
				raw[i] = c.Canonical()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := envelope.DecodeSnapshot(manifest, raw); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			unmarshal := bench.NsPerOp(b.N, func() {
				var m map[string]any
				json.Unmarshal(manifest, &m)
				for _, c := range raw {
					var v map[string]any
					if err := json.Unmarshal(c, &v); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.ReportMetric(perOp(b)/unmarshal, "x_unmarshal")
		})
	}
}

// BenchmarkMemory reports the bytes allocated by Build and by DecodeSnapshot
// of the maximal snapshot over its canonical size. Allocation bounds the
// peak heap an operation needs.
func BenchmarkMemory(b *testing.B) {
	in := benchInput(25600)
	snap := mustBuild(b, in)
	size := float64(canonicalSize(snap))
	manifest := snap.Manifest.Canonical()
	raw := make([][]byte, len(snap.Chunks))
	for i, c := range snap.Chunks {
		raw[i] = c.Canonical()
	}
	for _, tc := range []struct {
		name string
		op   func()
	}{
		{"build", func() { mustBuild(b, in) }},
		{"decode", func() { envelope.DecodeSnapshot(manifest, raw) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for range b.N {
				tc.op()
			}
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/size, "alloc_x_canonical")
			b.ReportMetric(size, "canonical_bytes")
		})
	}
}
