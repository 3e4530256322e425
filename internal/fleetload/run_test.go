package fleetload

import "testing"

func TestMetricValue(t *testing.T) {
	text := []byte(`# HELP sourcecatalog_finalize_total finalize outcomes
sourcecatalog_finalize_total{outcome="activated_again"} 7
sourcecatalog_finalize_total{outcome="activated"} 128
sourcecatalog_finalize_total{outcome="rejected"} 0
`)
	for _, tc := range []struct {
		series string
		want   float64
		ok     bool
	}{
		{`sourcecatalog_finalize_total{outcome="activated"}`, 128, true},
		{`sourcecatalog_finalize_total{outcome="rejected"}`, 0, true},
		{`sourcecatalog_finalize_total{outcome="superseded"}`, 0, false},
		{`sourcecatalog_finalize_total`, 0, false},
	} {
		got, err := metricValue(text, tc.series)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%s: %v, %v; want %v (ok %v)", tc.series, got, err, tc.want, tc.ok)
		}
	}
}
