//go:build linux

package fleetload_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/yachtmemory/sourcecatalog/internal/dbtest"
	"github.com/yachtmemory/sourcecatalog/internal/fleetload"
)

// BenchmarkServeFleet is the service benchmark: serve as users run it, a
// process of its own over TLS with bearer tokens, on each store (sqlite, a
// fresh file per run; mysql, a fresh database per run on the server
// SOURCECATALOG_MYSQL_DSN names, skipped without one). 64 vessels each send
// a typical snapshot (1,500 records: 15 chunks and the manifest), 8 at a
// time, each one message at a time with its own httpbinding.Client and
// token, as a boat's Publisher sends to a receiver declaring
// manifest_index (SPEC.md §6.7, §7.5): the declaration read once and
// reused for its max-age, the manifest index, then whole only the chunks
// its receipt names missing. Round 1 is every vessel's first snapshot:
// the index and all 15 chunks; round 2 an identical document as the next
// revision: the index alone. The floors, each a process of its own on a
// fresh store, get the same messages from the same senders, round 1 then
// round 2: floor A, one durable write per message (SQLite: appended to a
// file and fdatasync; MariaDB: one INSERT, committed); floor B, A and,
// with each snapshot's last message of round 1, its inventory rows in
// plain multi-row INSERTs into empty inventory tables in one transaction
// (SPEC.md §8.5). Floor A on round 2 is the identical round's floor: the
// index read and one durable write, the least a receiver can do to make
// the new revision durable, since the set is verified by identity (SPEC.md
// §8.4) and its activation writes no inventory row (§8.5). See this
// package and fleetfloor.
//
// Metrics (means over b.N; names are stable for scripts/bench.sh):
//   - rR_ms: round R's time per snapshot (the round's time / 64);
//     floor_a_ms, floor_b_ms: the floors' for round 1; floor_a2_ms: floor
//     A's for round 2;
//   - r1_x_floor_a, r1_x_floor_b: round 1's time over the floor's
//     (targets: SQLite ≤ 2.5 over A; MariaDB ≤ 1.5 over B);
//   - r2_x_floor_a2: round 2's time over its floor, floor A's for round
//     2's messages (target: SQLite ≤ 1.5); r2_x_floor_a, round 2's over
//     floor A's for round 1 (the figure before indexes);
//   - rR_snapshots/s, rR_messages/s, floor_a_snapshots/s,
//     floor_b_snapshots/s;
//   - rR_p50_ms, rR_p99_ms: a message's latency, Send to receipt;
//   - rR_cpu_ms/snapshot: serve's CPU time (utime + stime) in the round
//     per snapshot; r2_cpu_x_r1: round 2's over round 1's, what the
//     steady state costs the shore (target ≤ 0.10);
//   - rR_chunks/snapshot: chunks sent whole (15 and 0);
//   - peak_rss_MiB: serve's VmHWM at the end (target ≤ 64);
//   - rR_fsyncs/message (SQLite, when strace is installed): fsync and
//     fdatasync calls per message, counted in a separate pass under
//     strace that is not timed, of the first 16 vessels (8 senders still).
//
// Alone: go test -run '^$' -bench '^BenchmarkServeFleet$' -benchtime 1x
// -count 3 . in internal/fleetload, or bash scripts/bench.sh -only fleet.
func BenchmarkServeFleet(b *testing.B) {
	dir := b.TempDir()
	goTool, err := exec.LookPath("go")
	if err != nil {
		b.Skipf("builds serve and the floor server: %v", err)
	}
	build := exec.Command(goTool, "build", "-o", dir+string(filepath.Separator), "../../cmd/sourcecatalog", "../fleetfloor/cmd/fleetfloor")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	cfg := fleetload.Config{
		Serve: filepath.Join(dir, "sourcecatalog"), Floor: filepath.Join(dir, "fleetfloor"),
		Vessels: 64, Records: 1500, Messages: 16, Senders: 8, StraceVessels: 16,
	}
	if path, err := exec.LookPath("strace"); err == nil {
		cfg.Strace = path
	}
	b.Run("sqlite", func(b *testing.B) {
		if cfg.Strace == "" {
			b.Log("strace not found: no fsyncs/message")
		}
		benchFleet(b, cfg)
	})
	b.Run("mysql", func(b *testing.B) {
		c := cfg
		c.MySQL = dbtest.MySQL(b).Clone()
		c.MySQL.DBName = ""
		benchFleet(b, c)
	})
}

// benchFleet runs b.N runs of cfg and reports their means.
func benchFleet(b *testing.B, cfg fleetload.Config) {
	var sum fleetload.Report
	var p50, p99 [2]time.Duration
	syncs := []float64{0, 0}
	for range b.N {
		cfg.Dir = b.TempDir()
		rep, err := fleetload.Run(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		for i, r := range rep.Rounds {
			sum.Rounds[i].Elapsed += r.Elapsed
			sum.Rounds[i].CPU += r.CPU
			sum.Rounds[i].Snapshots += r.Snapshots
			sum.Rounds[i].Messages += r.Messages
			sum.Rounds[i].Chunks += r.Chunks
			p50[i] += r.Latency.Quantile(0.50)
			p99[i] += r.Latency.Quantile(0.99)
		}
		sum.FloorA += rep.FloorA
		sum.FloorB += rep.FloorB
		sum.FloorA2 += rep.FloorA2
		sum.PeakRSS = max(sum.PeakRSS, rep.PeakRSS)
		if rep.Syncs == nil {
			syncs = nil
		} else if syncs != nil {
			syncs[0], syncs[1] = syncs[0]+rep.Syncs[0], syncs[1]+rep.Syncs[1]
		}
	}
	n := float64(b.N)
	snaps := float64(cfg.Vessels) * n // per round, over the runs
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	floorA, floorB, floorA2 := ms(sum.FloorA)/snaps, ms(sum.FloorB)/snaps, ms(sum.FloorA2)/snaps
	b.ReportMetric(floorA, "floor_a_ms")
	b.ReportMetric(floorB, "floor_b_ms")
	b.ReportMetric(floorA2, "floor_a2_ms")
	b.ReportMetric(1000/floorA, "floor_a_snapshots/s")
	b.ReportMetric(1000/floorB, "floor_b_snapshots/s")
	for i, r := range sum.Rounds {
		p := "r" + string(rune('1'+i)) + "_"
		per := ms(r.Elapsed) / float64(r.Snapshots)
		b.ReportMetric(per, p+"ms")
		b.ReportMetric(per/floorA, p+"x_floor_a")
		b.ReportMetric(per/floorB, p+"x_floor_b")
		b.ReportMetric(float64(r.Snapshots)/r.Elapsed.Seconds(), p+"snapshots/s")
		b.ReportMetric(float64(r.Messages)/r.Elapsed.Seconds(), p+"messages/s")
		b.ReportMetric(ms(p50[i])/n, p+"p50_ms")
		b.ReportMetric(ms(p99[i])/n, p+"p99_ms")
		b.ReportMetric(ms(r.CPU)/float64(r.Snapshots), p+"cpu_ms/snapshot")
		b.ReportMetric(float64(r.Chunks)/float64(r.Snapshots), p+"chunks/snapshot")
		if syncs != nil {
			b.ReportMetric(syncs[i]/n, p+"fsyncs/message")
		}
	}
	r1, r2 := sum.Rounds[0], sum.Rounds[1]
	b.ReportMetric(ms(r2.Elapsed)/float64(r2.Snapshots)/floorA2, "r2_x_floor_a2")
	b.ReportMetric(float64(r2.CPU)/float64(r1.CPU), "r2_cpu_x_r1")
	b.ReportMetric(float64(sum.PeakRSS)/(1<<20), "peak_rss_MiB")
}
