package agentcost

import (
	"slices"
	"testing"
	"time"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/examples"
)

// BenchmarkAgentCost runs the `sourcecatalog agent` binary against a
// fake Signal K server of the typical boat (examples.Scaled(1500)) and
// of the largest (Scaled(25594): the 2 devices added, 3 records each,
// bring it to 25,600, the protocol's largest snapshot, which a device
// more would take over the limit, refused by the scan), with
// a trickle of 10 values a second of known paths on the delta stream,
// publishing to a receiver in this process (Measure says how each phase
// runs), and reports:
//   - cycle_cpu_ms: processor time (utime + stime of /proc/PID/stat) of
//     one cycle — scan, map, commit, publish — over 3 cycles of an agent
//     at --interval 5s, less the idle rate over the same wall time;
//   - idle_cpu_s/h: processor seconds per hour between cycles, the delta
//     stream open, measured over 10 s of an agent at the default interval;
//   - cpu_s/h: processor seconds per hour at the default 15-minute
//     interval, extrapolated as cycle_cpu × 4 + idle_cpu_s/h;
//   - peak_rss_MiB: the largest VmHWM of the two agents; steady_rss_MiB,
//     VmRSS of the resting agent after its idle window;
//   - activation_min_s and activation_max_s: the least and the largest
//     wall time of 2 devices added, from the device's delta on the stream
//     until the receiver's active snapshot holds its path; expected: the
//     delta stream's debounce (signalk.DefaultDebounce, 10 s), a scan, a
//     commit and a publish;
//   - act_wake_s, act_commit_s, act_publish_s: the mean of each step of
//     those activations (Result.Steps). At the largest size the
//     content-defined cut cannot fit and Build cuts greedily (envelope's
//     WithContentDefinedCuts), so a device added shifts every chunk after
//     its records, and the publish resends most of them.
//
// Each iteration takes about a minute: run it with -benchtime 1x.
func BenchmarkAgentCost(b *testing.B) {
	const devices = 2
	bin, err := BuildAgent(b.Context(), b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for _, boat := range []struct {
		name string
		recs func() []*catalog.Record
	}{
		{"typical", func() []*catalog.Record { return examples.Scaled(1500) }},
		{"largest", func() []*catalog.Record { return examples.Scaled(sourcecatalog.MaxRecords - devices*recordsPerDevice) }},
	} {
		b.Run(boat.name, func(b *testing.B) {
			recs := boat.recs()
			for b.Loop() {
				res, err := Measure(b.Context(), Options{Bin: bin, Dir: b.TempDir(), Records: recs, Rate: 10,
					Interval: 5 * time.Second, Cycles: 3, Idle: 10 * time.Second, Devices: devices})
				if err != nil {
					b.Fatal(err)
				}
				acts := slices.Clone(res.Activation)
				slices.Sort(acts)
				b.ReportMetric(ms(res.CycleCPU), "cycle_cpu_ms")
				b.ReportMetric(res.IdleCPURate*3600, "idle_cpu_s/h")
				b.ReportMetric(res.CPUPerHour.Seconds(), "cpu_s/h")
				b.ReportMetric(float64(res.PeakRSS)/(1<<20), "peak_rss_MiB")
				b.ReportMetric(float64(res.SteadyRSS)/(1<<20), "steady_rss_MiB")
				b.ReportMetric(acts[0].Seconds(), "activation_min_s")
				b.ReportMetric(acts[len(acts)-1].Seconds(), "activation_max_s")
				var sum Steps
				for _, s := range res.Steps {
					sum.Wake, sum.Commit, sum.Publish = sum.Wake+s.Wake, sum.Commit+s.Commit, sum.Publish+s.Publish
				}
				n := time.Duration(len(res.Steps))
				b.ReportMetric((sum.Wake / n).Seconds(), "act_wake_s")
				b.ReportMetric((sum.Commit / n).Seconds(), "act_commit_s")
				b.ReportMetric((sum.Publish / n).Seconds(), "act_publish_s")
			}
		})
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
