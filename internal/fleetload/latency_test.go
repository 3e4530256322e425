package fleetload

import (
	"testing"
	"time"
)

func TestQuantile(t *testing.T) {
	ms := func(v ...int) *Latencies {
		l := &Latencies{}
		for _, x := range v {
			l.Add(time.Duration(x) * time.Millisecond)
		}
		return l
	}
	hundred := &Latencies{}
	for i := 100; i >= 1; i-- { // added out of order
		hundred.Add(time.Duration(i) * time.Millisecond)
	}
	for _, tc := range []struct {
		name string
		l    *Latencies
		q    float64
		want time.Duration
	}{
		{"empty", &Latencies{}, 0.5, 0},
		{"one", ms(7), 0.99, 7 * time.Millisecond},
		{"p50 of 100", hundred, 0.50, 50 * time.Millisecond},
		{"p99 of 100", hundred, 0.99, 99 * time.Millisecond},
		{"p100 of 100", hundred, 1, 100 * time.Millisecond},
		{"p50 of 4", ms(4, 1, 3, 2), 0.5, 2 * time.Millisecond},
		{"p99 of 4", ms(4, 1, 3, 2), 0.99, 4 * time.Millisecond},
		{"p1 of 100", hundred, 0.01, 1 * time.Millisecond},
	} {
		if got := tc.l.Quantile(tc.q); got != tc.want {
			t.Errorf("%s: Quantile(%v) = %v, want %v", tc.name, tc.q, got, tc.want)
		}
	}
}

func TestMerge(t *testing.T) {
	a, b := &Latencies{}, &Latencies{}
	a.Add(3 * time.Millisecond)
	if a.Quantile(1) != 3*time.Millisecond {
		t.Fatal("one sample")
	}
	b.Add(1 * time.Millisecond)
	b.Add(9 * time.Millisecond)
	a.Merge(b)
	if a.Len() != 3 || a.Quantile(1) != 9*time.Millisecond || a.Quantile(0.1) != time.Millisecond {
		t.Errorf("merged: %d samples, max %v, min %v; want 3, 9ms, 1ms", a.Len(), a.Quantile(1), a.Quantile(0.1))
	}
}
