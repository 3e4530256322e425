package signalk

import (
	"encoding/json"
	"io"
	"os"
	"runtime"
	"testing"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/internal/bench"
)

// BenchmarkDiscover times one discovery — the discovery document, two
// hellos, the full model over loopback HTTP, Map — of the sample boat
// (signalk-server playing both bundled feeds, captured) and of a synthetic
// self tree of 25,600 records' worth of paths, against a floor measured in
// the same run: reading the same response and json.Unmarshal into an any.
// It reports x_floor (time, target ≤ 2) and alloc_x_floor (bytes
// allocated, target ≤ 3).
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
			if _, err := c.Discover(b.Context()); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(tt.model)))
			b.ReportAllocs()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ResetTimer()
			for range b.N {
				if _, err := c.Discover(b.Context()); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			runtime.ReadMemStats(&after)
			discover := float64(after.TotalAlloc-before.TotalAlloc) / float64(b.N)

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
			runtime.ReadMemStats(&before)
			const n = 5
			for range n {
				floor()
			}
			runtime.ReadMemStats(&after)
			floorAlloc := float64(after.TotalAlloc-before.TotalAlloc) / n
			floorNs := bench.NsPerOp(b.N, floor)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/floorNs, "x_floor")
			b.ReportMetric(discover/floorAlloc, "alloc_x_floor")
		})
	}
}
