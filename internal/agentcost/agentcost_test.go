package agentcost

import (
	"context"
	"testing"
	"time"

	"github.com/yachtmemory/sourcecatalog/examples"
)

// TestMeasure runs Measure on a small boat with short windows: the
// periodic agent's cycles reach the receiver, the resting agent rests in
// its idle window, and each device added becomes active with its path;
// every figure is one a process that ran would give.
func TestMeasure(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the agent binary for about half a minute")
	}
	ctx := context.Background()
	bin, err := BuildAgent(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	res, err := Measure(ctx, Options{Bin: bin, Dir: t.TempDir(), Records: examples.Scaled(60), Rate: 10,
		Interval: time.Second, Cycles: 2, Idle: time.Second, Devices: 2, Settle: "0"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Activation) != 2 {
		t.Fatalf("activations %v, want 2", res.Activation)
	}
	for _, d := range res.Activation {
		if d <= 0 {
			t.Errorf("activation delay %v", d)
		}
	}
	if res.PeakRSS < 1<<20 || res.SteadyRSS < 1<<20 || res.SteadyRSS > res.PeakRSS || res.CPUPerHour <= 0 {
		t.Errorf("implausible usage: %+v", res)
	}
	t.Logf("%+v", res)
}
