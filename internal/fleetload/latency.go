package fleetload

import (
	"math"
	"slices"
	"time"
)

// Latencies collects durations, one per message, for their quantiles. It
// keeps every sample: a round has a few thousand. The zero value is empty
// and ready; it is not safe for concurrent use.
type Latencies struct {
	d      []time.Duration
	sorted bool
}

// Add records one sample.
func (l *Latencies) Add(d time.Duration) { l.d, l.sorted = append(l.d, d), false }

// Merge adds every sample of o.
func (l *Latencies) Merge(o *Latencies) { l.d, l.sorted = append(l.d, o.d...), false }

// Len returns the number of samples.
func (l *Latencies) Len() int { return len(l.d) }

// Quantile returns the q-quantile (0 < q ≤ 1) by the nearest-rank method:
// the smallest sample that at least q of the samples do not exceed. It
// returns 0 without samples.
func (l *Latencies) Quantile(q float64) time.Duration {
	if len(l.d) == 0 {
		return 0
	}
	if !l.sorted {
		slices.Sort(l.d)
		l.sorted = true
	}
	rank := int(math.Ceil(q*float64(len(l.d)) - 1e-9)) // ⌈q·n⌉, float error aside
	return l.d[min(max(rank, 1), len(l.d))-1]
}
