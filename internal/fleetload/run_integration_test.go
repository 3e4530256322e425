package fleetload

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Run on SQLite end to end, with a small fleet: the two binaries built,
// the floors and serve run as processes, serve's rounds checked, every
// figure of the report measured.
func TestRun(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("builds serve and the floor server and runs them")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("go is needed under CI=true: %v", err)
		}
		t.Skipf("no go tool: %v", err)
	}
	bin := t.TempDir()
	build := exec.Command(goTool, "build", "-o", bin+string(filepath.Separator), "../../cmd/sourcecatalog", "../fleetfloor/cmd/fleetfloor")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cfg := Config{
		Serve: filepath.Join(bin, "sourcecatalog"), Floor: filepath.Join(bin, "fleetfloor"), Dir: t.TempDir(),
		Vessels: 3, Records: 300, Messages: 4, Senders: 2, StraceVessels: 2,
	}
	if path, err := exec.LookPath("strace"); err == nil {
		cfg.Strace = path
	}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Round 1: each index and every chunk whole; round 2, identical: each
	// index alone.
	for i, want := range []struct{ messages, chunks int }{{12, 9}, {3, 0}} {
		r := rep.Rounds[i]
		if r.Snapshots != 3 || r.Messages != want.messages || r.Chunks != want.chunks || r.Latency.Len() != want.messages || r.Elapsed <= 0 || r.CPU < 0 {
			t.Errorf("round %d: %+v, %d samples; want %d messages, %d chunks", i+1, r, r.Latency.Len(), want.messages, want.chunks)
		}
	}
	if rep.FloorA <= 0 || rep.FloorB <= 0 || rep.FloorA2 <= 0 || rep.PeakRSS < 1<<20 {
		t.Errorf("floors %v %v %v, peak RSS %d", rep.FloorA, rep.FloorB, rep.FloorA2, rep.PeakRSS)
	}
	switch {
	case cfg.Strace == "" && rep.Syncs != nil:
		t.Errorf("no strace, but fsyncs %v", rep.Syncs)
	case cfg.Strace != "" && (len(rep.Syncs) != 2 || !(rep.Syncs[0] > 0 && rep.Syncs[0] <= 4) || !(rep.Syncs[1] > 0 && rep.Syncs[1] <= 4)):
		// Every commit syncs the WAL once and a checkpoint syncs twice
		// more, but serve groups the commits of messages arriving
		// together, so a round may sync less than once a message; none
		// at all would be a count that missed them.
		t.Errorf("fsyncs per message %v, want more than 0 and at most 4 in each round", rep.Syncs)
	}
}
