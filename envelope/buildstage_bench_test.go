//go:build unix

package envelope_test

import (
	"syscall"
	"testing"

	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
)

// cpuTime returns the CPU time the process has used, in nanoseconds.
func cpuTime() int64 {
	var u syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &u)
	return u.Utime.Nano() + u.Stime.Nano()
}

// stage times f as a sub-benchmark, reporting beside the wall time the CPU
// time per operation of the whole process (every goroutine, the garbage
// collector included), which other load on the machine disturbs less.
func stage(b *testing.B, name string, f func()) {
	b.Run(name, func(b *testing.B) {
		b.ReportAllocs()
		cpu := cpuTime()
		for range b.N {
			f()
		}
		b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
	})
}

// BenchmarkBuildStages times the stages of Build on the maximal snapshot in
// random order, to show where B1's distance to its floor goes.
func BenchmarkBuildStages(b *testing.B) {
	in := benchInput(25600)
	sorted, _ := envelope.SortRecords(in.Records)
	stage(b, "build", func() { mustBuild(b, in) })
	stage(b, "sort", func() { envelope.SortRecords(in.Records) })
	stage(b, "sort-keys", envelope.KeyArena(in.Records))
	stage(b, "sort-radix", envelope.KeySort(in.Records))
	stage(b, "check", func() { catalog.Check(sorted) })
	stage(b, "cut-parallel", envelope.CutAndDigest(in.Records))
	stage(b, "cut-sequential", envelope.CutSequential(in.Records))
}
