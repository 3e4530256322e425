package signalk

import (
	"encoding/json"
	"io"
	"os"
	"runtime"
	"slices"
	"testing"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/internal/bench"
)

// BenchmarkDiscover times one discovery — the discovery document, two
// hellos, the full model over loopback HTTP, Map — of the sample boat
// (signalk-server playing both bundled feeds, captured) and of a synthetic
// self tree of 25,600 records' worth of paths, against a floor measured in
// the same run: reading the same response and json.Unmarshal into an any.
// Each discovery is followed by one floor, outside the timer, so that both
// see the same load on a shared machine, and each starts after a
// collection, so that neither pays for the other's garbage. It reports
// x_floor, the median of the discoveries' processor times over their
// floors' (target ≤ 2), x_floor_max, the largest, and alloc_x_floor, the
// bytes allocated over the floors' (target ≤ 3).
func BenchmarkDiscover(b *testing.B) {
	sample, err := os.ReadFile(sampleFixture)
	if err != nil {
		b.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		model []byte
		self  string
	}{
		{"sample", sample, "vessels.urn:mrn:signalk:uuid:5e1f0000-5e1f-4000-8000-00000000c0de"},
		{"synthetic", syntheticModel(sourcecatalog.MaxRecords/2 - 1), "vessels.urn:mrn:signalk:uuid:c0d79334-4e25-4245-8892-54e8ccc8021d"},
	} {
		b.Run(tt.name, func(b *testing.B) {
			f := newFakeServer(b, false)
			f.model, f.self = string(tt.model), tt.self
			c, err := New(f.URL, WithSettle(0), WithHTTPClient(f.Client()))
			if err != nil {
				b.Fatal(err)
			}
			discover := func() {
				if _, err := c.Discover(b.Context()); err != nil {
					b.Fatal(err)
				}
			}
			api := f.URL + "/signalk/v1/api/"
			hc := f.Client()
			floor := func() {
				resp, err := hc.Get(api)
				if err != nil {
					b.Fatal(err)
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					b.Fatal(err)
				}
				var v any
				if err := json.Unmarshal(body, &v); err != nil {
					b.Fatal(err)
				}
			}
			discover()
			floor()
			b.SetBytes(int64(len(tt.model)))
			b.ReportAllocs()
			ratios := make([]float64, 0, b.N)
			var discoverAlloc, floorAlloc uint64
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				runtime.GC() // neither pays for the garbage of the other
				b.StartTimer()
				a := totalAlloc()
				d := bench.Measure(discover)
				discoverAlloc += totalAlloc() - a
				b.StopTimer()
				runtime.GC()
				a = totalAlloc()
				fl := bench.Measure(floor)
				floorAlloc += totalAlloc() - a
				ratios = append(ratios, spanRatio(d, fl))
				b.StartTimer()
			}
			b.StopTimer()
			slices.Sort(ratios)
			b.ReportMetric(ratios[len(ratios)/2], "x_floor")
			b.ReportMetric(ratios[len(ratios)-1], "x_floor_max")
			b.ReportMetric(float64(discoverAlloc)/float64(floorAlloc), "alloc_x_floor")
		})
	}
}

// spanRatio returns a's time over b's: processor time where it can be
// read, which other processes on a shared machine disturb less than the
// wall clock, and wall-clock time otherwise.
func spanRatio(a, b bench.Span) float64 {
	if a.CPU > 0 && b.CPU > 0 {
		return float64(a.CPU) / float64(b.CPU)
	}
	return float64(a.Wall) / float64(b.Wall)
}

// totalAlloc returns the bytes the process has allocated so far.
func totalAlloc() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}
