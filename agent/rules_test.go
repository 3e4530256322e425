package agent_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/agent"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/internal/fakeclock"
	"github.com/yachtmemory/sourcecatalog/outbox"
	outboxmem "github.com/yachtmemory/sourcecatalog/outbox/memstore"
	"github.com/yachtmemory/sourcecatalog/signalk"
)

// The settle, hold, backoff and log rules (SPEC.md §12.7).

// A startScript is a fake StartDiscoverer: a script whose answer also
// names each call's server start.
type startScript struct {
	*script
	last string // the start of the last call; the agent calls from one goroutine
}

func newStartScript(clock *fakeclock.Clock, answer func(n int) ([]*catalog.Record, string, error)) *startScript {
	s := &startScript{}
	s.script = &script{clock: clock, answer: func(n int) ([]*catalog.Record, error) {
		records, start, err := answer(n)
		s.last = start
		return records, err
	}}
	return s
}

func (s *startScript) DiscoverStart(ctx context.Context) ([]*catalog.Record, string, error) {
	records, err := s.Discover(ctx)
	return records, s.last, err
}

// firstPaths is the example boat cut to its first k paths, with their
// observations and the sources those name.
func firstPaths(k int) []*catalog.Record {
	all := examples.Boat()
	keep, refs := map[string]bool{}, map[string]bool{}
	for _, r := range all {
		if r.Kind() == catalog.KindPath && len(keep) < k {
			keep[r.PathName()] = true
		}
	}
	for _, r := range all {
		if r.Kind() == catalog.KindObservation && keep[r.PathName()] {
			refs[r.SourceRef()] = true
		}
	}
	var out []*catalog.Record
	for _, r := range all {
		switch r.Kind() {
		case catalog.KindPath, catalog.KindObservation:
			if keep[r.PathName()] {
				out = append(out, r)
			}
		case catalog.KindSource:
			if refs[r.SourceRef()] {
				out = append(out, r)
			}
		}
	}
	return out
}

var boatPaths = func() int { p, _, _ := kinds(examples.Boat()); return int(p) }()

// startRig is a rig whose discoverer names server starts.
func startRig(t *testing.T, answer func(n int) ([]*catalog.Record, string, error)) (*rig, *startScript, agent.Config) {
	g := newRig(t, boat)
	d := newStartScript(g.clock, answer)
	cfg := g.config()
	cfg.Discoverer = d
	return g, d, cfg
}

// A server up for weeks, whose start this store has never seen, is read
// at once: reads ConfirmGap apart that stand still for QuietSpan settle
// it, and the last is committed, with no wait for the settle time. The
// start is then remembered as settled, and the next cycle is one read.
func TestLongRunningServerReadAtOnce(t *testing.T) {
	g, d, cfg := startRig(t, func(int) ([]*catalog.Record, string, error) { return examples.Boat(), "up-for-weeks", nil })
	g.run(cfg, interval+time.Minute)
	assert.Equal(t, []time.Duration{0, agent.ConfirmGap, agent.QuietSpan, agent.QuietSpan + interval}, d.times(),
		"settled after QuietSpan, not the settle time; then one read a cycle")
	cycles := g.logged("cycle committed")
	require.Len(t, cycles, 2)
	assert.Equal(t, float64(start.Add(agent.QuietSpan).UnixMilli()), cycles[0]["revision"])
	wait := g.logged("scan incomplete: nothing committed")
	require.Len(t, wait, 2)
	assert.Equal(t, agent.CauseNotSettled, wait[0]["cause"])
	assert.Equal(t, "INFO", wait[0]["level"])
	remembered, err := g.boat.(outbox.StartMemory).RememberStart(context.Background(), outbox.ServerStart{ID: "up-for-weeks", FirstSeen: start.Add(time.Hour)})
	require.NoError(t, err)
	assert.Equal(t, start, remembered.FirstSeen)
	assert.Equal(t, start.Add(agent.QuietSpan), remembered.Settled, "remembered as settled in the store")
}

// A start that follows another the store remembers is a restart — a boat
// powered up, the server and the agent starting together — and a tree
// that stands still proves nothing of it: a server just started can hold
// a partial tree still for longer than QuietSpan. It settles by the clock,
// so the first cycle comes at the settle time, whether the restart came
// while the agent was down or while it ran.
func TestRestartSettlesByTheClock(t *testing.T) {
	t.Run("remembered", func(t *testing.T) {
		g, d, cfg := startRig(t, func(int) ([]*catalog.Record, string, error) { return examples.Boat(), "after-power-up", nil })
		_, err := g.boat.(outbox.StartMemory).RememberStart(context.Background(),
			outbox.ServerStart{ID: "before-power-down", FirstSeen: start.Add(-48 * time.Hour), Settled: start.Add(-48 * time.Hour)})
		require.NoError(t, err)
		g.run(cfg, agent.DefaultSettle+time.Minute)
		times := d.times()
		require.NotEmpty(t, times)
		assert.Equal(t, agent.DefaultSettle, times[len(times)-1], "read until the settle time, then trusted")
		cycles := g.logged("cycle committed")
		require.Len(t, cycles, 1)
		assert.Equal(t, float64(start.Add(agent.DefaultSettle).UnixMilli()), cycles[0]["revision"])
		wait := g.logged("scan incomplete: nothing committed")
		require.NotEmpty(t, wait)
		assert.Contains(t, wait[len(wait)-1]["error"], "follows an earlier start: a restart")
	})
	t.Run("while running", func(t *testing.T) {
		g, d, cfg := startRig(t, func(n int) ([]*catalog.Record, string, error) {
			if n < 3 {
				return examples.Boat(), "first", nil // quiet: trusted at QuietSpan
			}
			return examples.Boat(), "second", nil // the server restarted
		})
		cfg.Interval = time.Minute
		g.run(cfg, agent.QuietSpan+time.Minute+agent.DefaultSettle+time.Second)
		cycles := g.logged("cycle committed")
		require.Len(t, cycles, 2)
		restartSeen := agent.QuietSpan + time.Minute
		assert.Equal(t, float64(start.Add(restartSeen+agent.DefaultSettle).UnixMilli()), cycles[1]["revision"],
			"the restart's first cycle at the settle time after it was first read")
		assert.Equal(t, restartSeen+agent.DefaultSettle, d.times()[len(d.times())-1])
	})
}

// A tree seen growing is taken for a server that just started: it is
// not committed before the settle time, even when two reads in a lull
// agree, and then only a read that did not grow; the waits double from
// the first change, a read landing on the settle time.
func TestGrowingTreeNotCommitted(t *testing.T) {
	sizes := []int{10, 20, 20, 40, 40} // the tree the nth read finds: a lull at 5-15 s, then 40
	g, d, cfg := startRig(t, func(n int) ([]*catalog.Record, string, error) {
		return firstPaths(sizes[min(n, len(sizes)-1)]), "fresh", nil
	})
	g.run(cfg, interval-time.Minute)
	gap := agent.ConfirmGap
	assert.Equal(t, []time.Duration{0, gap, 3 * gap, 7 * gap, 15 * gap, agent.DefaultSettle}, d.times(),
		"5 s, then doubling once it changed, up to the settle time")
	cycles := g.logged("cycle committed")
	require.Len(t, cycles, 1)
	assert.Equal(t, float64(40), cycles[0]["paths"], "the whole tree, never a part: not the lull's")
	assert.Equal(t, float64(start.Add(agent.DefaultSettle).UnixMilli()), cycles[0]["revision"])
	assert.Empty(t, g.logged("the Signal K tree changed longer after the server start than the settle time: a shorter settle would have trusted a tree still filling"))

	// With a settle time shorter than the tree needs, the tree still
	// growing at the settle time is not committed, and the log says the
	// settle time is too short.
	g, d, cfg = startRig(t, func(n int) ([]*catalog.Record, string, error) {
		return firstPaths(sizes[min(n, len(sizes)-1)]), "fresh", nil
	})
	cfg.Settle = 20 * time.Second
	g.run(cfg, interval-time.Minute)
	cycles = g.logged("cycle committed")
	require.Len(t, cycles, 1)
	assert.Equal(t, float64(40), cycles[0]["paths"])
	warn := g.logged("the Signal K tree changed longer after the server start than the settle time: a shorter settle would have trusted a tree still filling")
	require.Len(t, warn, 1)
	assert.Equal(t, "20s", warn[0]["settle"])
	assert.Equal(t, "20s", warn[0]["changed_after"], "the read at the settle time still differed")
	assert.Equal(t, []time.Duration{0, gap, 3 * gap, 20 * time.Second, 60 * time.Second}, d.times(),
		"a read at the settle time, then doubling")
}

// A server start one process saw settle is trusted at once by the next,
// through the store: a discover run from cron reads once.
func TestSettledStartRemembered(t *testing.T) {
	clock := fakeclock.New(start)
	memory := outboxmem.New()
	d := newStartScript(clock, func(int) ([]*catalog.Record, string, error) { return examples.Boat(), "s1", nil })
	opts := agent.SettleOptions{Memory: memory, Clock: clock, Tries: 8}
	records, err := agent.DiscoverSettled(context.Background(), d, opts)
	require.NoError(t, err)
	assert.Len(t, records, len(examples.Boat()))
	assert.Equal(t, []time.Duration{0, agent.ConfirmGap, agent.QuietSpan}, d.times(), "the first process confirms the new start")

	clock.Advance(time.Minute) // the next run from cron, within the settle time: a new settler, the same store
	records, err = agent.DiscoverSettled(context.Background(), d, opts)
	require.NoError(t, err)
	assert.Len(t, records, len(examples.Boat()))
	assert.Equal(t, []time.Duration{0, agent.ConfirmGap, agent.QuietSpan, time.Minute + agent.QuietSpan}, d.times(), "one read: the start settled before")

	// Without the store's memory the next run confirms again.
	opts.Memory = outboxmem.New()
	_, err = agent.DiscoverSettled(context.Background(), d, opts)
	require.NoError(t, err)
	assert.Len(t, d.times(), 7)
}

// plainStore is an outbox.Store that remembers no server starts.
type plainStore struct{ outbox.Store }

// A store without a start memory does not skip settling: a new start
// waits the settle time as this process sees it, and the log says so.
func TestNoStartMemorySettlesByTheClock(t *testing.T) {
	g, d, cfg := startRig(t, func(int) ([]*catalog.Record, string, error) { return examples.Boat(), "s1", nil })
	cfg.Store = plainStore{g.boat}
	g.run(cfg, interval-time.Minute)
	assert.Equal(t, []time.Duration{0, agent.DefaultSettle}, d.times(), "two agreeing reads are not enough without the memory")
	require.Len(t, g.logged("cycle committed"), 1)
	warn := g.logged("the store remembers no server starts: a new start is trusted only after the settle time as this process sees it")
	require.Len(t, warn, 1)
	assert.Equal(t, "WARN", warn[0]["level"])

	clock := fakeclock.New(start)
	d = newStartScript(clock, func(int) ([]*catalog.Record, string, error) { return examples.Boat(), "s1", nil })
	var warned []string
	_, err := agent.DiscoverSettled(context.Background(), d, agent.SettleOptions{Clock: clock, Tries: 8,
		OnWarn: func(msg string) { warned = append(warned, msg) }})
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{0, agent.DefaultSettle}, d.times())
	assert.NotEmpty(t, warned)
}

// A scan with no paths is held until a later scan finds the same; one
// that a later scan contradicts is never committed.
func TestEmptyScanHeld(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answers [][]*catalog.Record // per scan, then the last repeats
		paths   []float64           // the cycles committed
		times   []time.Duration
	}{
		{"confirmed", [][]*catalog.Record{examples.Boat(), nil, nil},
			[]float64{float64(boatPaths), 0}, []time.Duration{0, interval, interval + agent.ConfirmGap}},
		{"contradicted", [][]*catalog.Record{examples.Boat(), nil, examples.Boat()},
			[]float64{float64(boatPaths), float64(boatPaths)}, []time.Duration{0, interval, interval + agent.ConfirmGap}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, d, cfg := startRig(t, func(n int) ([]*catalog.Record, string, error) {
				return tc.answers[min(n, len(tc.answers)-1)], "s1", nil
			})
			cfg.Settle = agent.NoSettle
			g.run(cfg, interval+time.Minute)
			assert.Equal(t, tc.times, d.times())
			var paths []float64
			for _, c := range g.logged("cycle committed") {
				paths = append(paths, c["paths"].(float64))
			}
			assert.Equal(t, tc.paths, paths)
			held := g.logged("scan held: nothing committed until a later scan confirms it")
			require.Len(t, held, 1)
			assert.Equal(t, "WARN", held[0]["level"])
			assert.Equal(t, agent.CauseHeld, held[0]["cause"])
			assert.Contains(t, held[0]["error"], "no paths")
			assert.Equal(t, agent.ConfirmGap.String(), held[0]["retry_in"])
		})
	}
	t.Run("interval shorter than the gap", func(t *testing.T) {
		g, d, cfg := startRig(t, func(n int) ([]*catalog.Record, string, error) {
			if n == 0 {
				return examples.Boat(), "s1", nil
			}
			return nil, "s1", nil
		})
		cfg.Settle, cfg.Interval = agent.NoSettle, 2*time.Second
		g.run(cfg, 8*time.Second)
		assert.Equal(t, []time.Duration{0, 2 * time.Second, 2*time.Second + agent.ConfirmGap}, d.times(),
			"the confirming read comes ConfirmGap after the held one, not the interval")
	})
	t.Run("woken early", func(t *testing.T) {
		wake := make(chan struct{}, 1)
		g, d, cfg := startRig(t, func(n int) ([]*catalog.Record, string, error) {
			if n == 0 {
				return examples.Boat(), "s1", nil
			}
			if n == 1 {
				wake <- struct{}{} // the delta stream saw the values go null
			}
			return nil, "s1", nil
		})
		cfg.Settle, cfg.Wake = agent.NoSettle, wake
		g.run(cfg, interval+time.Minute)
		times := d.times()
		require.GreaterOrEqual(t, len(times), 3)
		assert.Equal(t, []time.Duration{0, interval, interval}, times[:3], "the wake brings the next read at once")
		var paths []float64
		for _, c := range g.logged("cycle committed") {
			paths = append(paths, c["paths"].(float64))
		}
		assert.Equal(t, []float64{float64(boatPaths), 0}, paths)
		assert.Equal(t, interval+agent.ConfirmGap, times[len(times)-1],
			"a read less than ConfirmGap after the held one does not confirm it")
	})
	t.Run("first scan", func(t *testing.T) {
		g, d, cfg := startRig(t, func(n int) ([]*catalog.Record, string, error) {
			if n == 0 {
				return nil, "s1", nil
			}
			return examples.Boat(), "s1", nil
		})
		cfg.Settle = agent.NoSettle
		g.run(cfg, interval-time.Minute)
		assert.Equal(t, []time.Duration{0, agent.ConfirmGap}, d.times())
		cycles := g.logged("cycle committed")
		require.Len(t, cycles, 1)
		assert.Equal(t, float64(boatPaths), cycles[0]["paths"], "an empty first scan is held too")
	})
}

// A selection that lost more than a fifth of its paths is held until a
// later scan confirms it; a smaller loss goes through at once, as does
// a real removal once confirmed.
func TestSharpShrinkHeld(t *testing.T) {
	sharp := boatPaths - boatPaths/5 - 1 // lost more than a fifth
	mild := boatPaths - boatPaths/5 + 1  // lost less
	for _, tc := range []struct {
		name  string
		after int
		times []time.Duration
		held  int
	}{
		{"sharp", sharp, []time.Duration{0, interval, interval + agent.ConfirmGap}, 1},
		{"mild", mild, []time.Duration{0, interval}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, d, cfg := startRig(t, func(n int) ([]*catalog.Record, string, error) {
				if n == 0 {
					return examples.Boat(), "s1", nil
				}
				return firstPaths(tc.after), "s1", nil
			})
			cfg.Settle = agent.NoSettle
			g.run(cfg, interval+time.Minute)
			assert.Equal(t, tc.times, d.times())
			cycles := g.logged("cycle committed")
			require.Len(t, cycles, 2, "a real removal goes through, once confirmed")
			assert.Equal(t, float64(tc.after), cycles[1]["paths"])
			held := g.logged("scan held: nothing committed until a later scan confirms it")
			require.Len(t, held, tc.held)
			if tc.held > 0 {
				assert.Contains(t, held[0]["error"], "shrank from")
			}
		})
	}
}

// A scan error without a retry time waits a backoff doubling from
// ConfirmGap up to the interval, never a second; each failure in a row
// is WARN with its count.
func TestScanBackoff(t *testing.T) {
	incomplete := &signalk.ScanError{Reason: signalk.ReasonModel, Where: "http://sk/signalk/v1/api/", Detail: "a broken model"}
	g, d, cfg := startRig(t, func(int) ([]*catalog.Record, string, error) { return nil, "", incomplete })
	cfg.Interval = 2 * time.Minute
	g.run(cfg, 10*time.Minute)
	gap := agent.ConfirmGap
	want := []time.Duration{0, gap, 3 * gap, 7 * gap, 15 * gap, 31 * gap, 31*gap + 2*time.Minute}
	require.GreaterOrEqual(t, len(d.times()), len(want))
	assert.Equal(t, want, d.times()[:len(want)], "5 s doubling, capped at the interval")
	failed := g.logged("scan incomplete: nothing committed")
	require.GreaterOrEqual(t, len(failed), 3)
	for i, f := range failed[:3] {
		assert.Equal(t, "WARN", f["level"])
		assert.Equal(t, float64(i+1), f["failures"])
		assert.Equal(t, agent.CauseScanIncomplete, f["cause"])
	}
	assert.Equal(t, (2 * gap).String(), failed[1]["retry_in"])
}

// The log names why nothing went: the receiver unreachable or refusing,
// the store unavailable, the Signal K server unreachable or not settled,
// each with the next attempt.
func TestLogNamesTheCause(t *testing.T) {
	for _, tc := range []struct {
		name, cause, level string
		err                *signalk.ScanError
	}{
		{"Signal K unreachable", agent.CauseSignalKUnreachable, "WARN",
			&signalk.ScanError{Reason: signalk.ReasonRequest, Where: "http://sk/signalk", Detail: "no answer"}},
		{"Signal K not settled", agent.CauseNotSettled, "INFO",
			&signalk.ScanError{Reason: signalk.ReasonRestarted, Detail: "the server restarted during the scan"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, _, cfg := startRig(t, func(n int) ([]*catalog.Record, string, error) {
				if n == 0 {
					return nil, "", tc.err
				}
				return examples.Boat(), "s1", nil
			})
			cfg.Settle = agent.NoSettle
			g.run(cfg, time.Minute)
			f := g.logged("scan incomplete: nothing committed")
			require.Len(t, f, 1)
			assert.Equal(t, []any{tc.cause, tc.level, "5s"}, []any{f[0]["cause"], f[0]["level"], f[0]["retry_in"]})
		})
	}
	t.Run("store unavailable", func(t *testing.T) {
		g := newRig(t, boat)
		cfg := g.config()
		cfg.Store = failing{g.boat, g.clock, start.Add(time.Second)}
		g.run(cfg, time.Minute)
		f := g.logged("commit failed: retrying the same cycle")
		require.NotEmpty(t, f)
		assert.Equal(t, []any{agent.CauseStoreUnavailable, "1s"}, []any{f[0]["cause"], f[0]["retry_in"]})
	})
	t.Run("receiver unreachable", func(t *testing.T) {
		g := newRig(t, boat)
		ts := httptest.NewTLSServer(http.NotFoundHandler())
		cfg := g.config()
		cfg.Transport = g.newClient(ts, token)
		ts.Close() // nothing listens: connections are refused
		g.run(cfg, time.Minute)
		f := append(g.logged("published in part: entries pending"), g.logged("publishing failed: retried after the next commit")...)
		require.NotEmpty(t, f, g.logs.String())
		assert.Equal(t, agent.CauseReceiverUnreachable, f[0]["cause"])
		assert.NotEmpty(t, f[0]["retry_in"])
		assert.NotContains(t, g.logs.String(), `"cause":"store unavailable"`, "an unreachable receiver is not a broken store")
	})
	t.Run("receiver refused", func(t *testing.T) {
		g := newRig(t, boat)
		g.fail.Store(1 << 40) // every request answered 503
		g.run(g.config(), time.Minute)
		f := g.logged("published in part: entries pending")
		require.NotEmpty(t, f)
		assert.Equal(t, agent.CauseReceiverRefused, f[0]["cause"])
		assert.NotEmpty(t, f[0]["retry_in"])
	})
}

// A path that leaves the selection — its value went null — is logged
// once, by name, when the cycle without it is committed.
func TestPathLeftLoggedOnce(t *testing.T) {
	all := examples.Boat()
	var gone string
	for _, r := range all {
		if r.Kind() == catalog.KindPath {
			gone = r.PathName() // the last path
		}
	}
	without := firstPaths(boatPaths - 1)
	g, _, cfg := startRig(t, func(n int) ([]*catalog.Record, string, error) {
		if n == 0 {
			return all, "s1", nil
		}
		return without, "s1", nil
	})
	cfg.Settle = agent.NoSettle
	g.run(cfg, 3*interval+time.Minute)
	require.Len(t, g.logged("cycle committed"), 4)
	left := g.logged("path left the selection: no live value (null or stale), or gone from the model")
	require.Len(t, left, 1, "once, not at every cycle without it")
	assert.Equal(t, gone, left[0]["path"])
}

// An Unconfirmed is an incomplete scan with its wait.
func TestUnconfirmedIsAnIncompleteScan(t *testing.T) {
	err := error(&agent.Unconfirmed{Cause: agent.CauseHeld, Detail: "no paths", Wait: agent.ConfirmGap})
	require.ErrorIs(t, err, sourcecatalog.ErrIncompleteScan)
	assert.Equal(t, "agent: scan held: no paths", err.Error())
}

// failingMemory is an outbox.Store whose start memory cannot serve.
type failingMemory struct{ outbox.Store }

func (failingMemory) RememberStart(context.Context, outbox.ServerStart) (outbox.ServerStart, error) {
	return outbox.ServerStart{}, sourcecatalog.Errorf(sourcecatalog.ErrStoreUnavailable, "locked (test)")
}

// A start memory that cannot serve fails closed: nothing is committed,
// the log names the store, and the scan is tried again after the backoff.
func TestStartMemoryUnavailable(t *testing.T) {
	g, d, cfg := startRig(t, func(int) ([]*catalog.Record, string, error) { return examples.Boat(), "s1", nil })
	cfg.Store = failingMemory{g.boat}
	g.run(cfg, 20*time.Second)
	assert.Empty(t, g.logged("cycle committed"))
	f := g.logged("scan not judged: the store could not say whether the server start settled; nothing committed")
	require.NotEmpty(t, f)
	assert.Equal(t, []any{agent.CauseStoreUnavailable, "WARN", "5s"}, []any{f[0]["cause"], f[0]["level"], f[0]["retry_in"]})
	assert.Equal(t, []time.Duration{0, agent.ConfirmGap, 3 * agent.ConfirmGap}, d.times())
}
