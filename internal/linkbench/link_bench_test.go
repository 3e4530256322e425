package linkbench

import (
	"context"
	"testing"
	"time"

	"github.com/yachtmemory/sourcecatalog/internal/linksim"
)

// BenchmarkLink publishes the three cycles of the typical boat
// (examples.Scaled(1500)) and the example boat over the VSAT profile
// (linksim.VSAT: 300 ms each way, 256 kbit/s up, 1 Mbit/s down), as a new
// process for each cycle (cold) and as one sender over an open
// connection (warm), and reports for each cycle C (first, identical,
// changed-1pct):
//   - C_x_floor: its wall time over its floor, measured through the same
//     link in the same run (target ≤ 2);
//   - C_wall_ms and C_floor_ms;
//   - C_requests: requests the receiver answered (target for identical:
//     ≤ 2);
//   - C_up_B and C_down_B: bytes across the link.
//
// Each iteration takes real seconds: run it with -benchtime 1x.
func BenchmarkLink(b *testing.B) {
	ctx := context.Background()
	for _, boat := range boats {
		recs := boat.recs()
		for _, mode := range []string{"cold", "warm"} {
			b.Run(boat.name+"/"+mode, func(b *testing.B) {
				r, err := Start(ctx, b.TempDir(), linksim.VSAT)
				if err != nil {
					b.Fatal(err)
				}
				defer r.Close()
				for b.Loop() {
					cycles, err := r.Cycles(ctx, recs, mode == "cold")
					if err != nil {
						b.Fatal(err)
					}
					for _, c := range cycles {
						b.ReportMetric(c.Ratio(), c.Name+"_x_floor")
						b.ReportMetric(float64(c.Wall)/float64(time.Millisecond), c.Name+"_wall_ms")
						b.ReportMetric(float64(c.Floor)/float64(time.Millisecond), c.Name+"_floor_ms")
						b.ReportMetric(float64(c.Requests), c.Name+"_requests")
						b.ReportMetric(float64(c.Up), c.Name+"_up_B")
						b.ReportMetric(float64(c.Down), c.Name+"_down_B")
					}
				}
			})
		}
	}
}
