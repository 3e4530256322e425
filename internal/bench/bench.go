// Package bench times the baselines that the module's benchmarks report
// their ratios against.
package bench

import "time"

// NsPerOp returns the mean time in nanoseconds of n calls of f, measured
// after one warm-up call. Benchmarks call it outside their timer, so that
// a ratio and its baseline come from one run. (A testing.Benchmark nested
// in a running benchmark would deadlock.)
func NsPerOp(n int, f func()) float64 {
	f()
	start := time.Now()
	for range n {
		f()
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}
