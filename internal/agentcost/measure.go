package agentcost

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/yachtmemory/sourcecatalog/agent"
	"github.com/yachtmemory/sourcecatalog/catalog"
)

// Options say what Measure runs.
type Options struct {
	Bin     string // the sourcecatalog binary (BuildAgent)
	Dir     string // for the stores and files
	Records []*catalog.Record
	// Rate is the trickle of values of known paths a second on the delta
	// stream, as a boat's instruments emit (0: none).
	Rate int
	// Interval is the periodic agent's --interval; Cycles, how many of
	// its cycles the cycle window spans.
	Interval time.Duration
	Cycles   int
	// Idle is the idle window of the resting agent; Devices, how many
	// devices are added, one after the other, while it rests.
	Idle    time.Duration
	Devices int
	// Settle and Cut, when set, are both agents' --settle and --cut.
	Settle, Cut string
}

// A Result is what Measure measured.
type Result struct {
	CycleCPU    time.Duration // processor time of one cycle, the idle rate taken out
	IdleCPURate float64       // processor seconds per second between cycles
	// CPUPerHour is the agent's processor time per hour at
	// agent.DefaultInterval: CycleCPU × (1 h / DefaultInterval) +
	// IdleCPURate × 1 h.
	CPUPerHour time.Duration
	PeakRSS    int64 // the largest VmHWM of the two agents, bytes
	SteadyRSS  int64 // the resting agent's VmRSS after its idle window, bytes
	// Activation is, for each device added, the wall time from its delta
	// on the stream until the receiver's active snapshot holds its path.
	Activation []time.Duration
	// Steps splits each activation by the agent's log: Wake, from the
	// delta to "scan woken early" (the debounce); Commit, from there to
	// "cycle committed" (scan, map, build, commit); Publish, from there
	// to "published". The rest of an activation is the receiver's
	// activation and this process's polling (20 ms).
	Steps []Steps
}

// Steps are the parts of one activation; see Result.Steps.
type Steps struct{ Wake, Commit, Publish time.Duration }

// Measure serves opts.Records from a Boat to an Ashore through two
// agents in turn, on one outbox store, and measures:
//
//  1. the periodic agent (--interval opts.Interval, a new store, the
//     server start settled by the clock): once its first cycle is
//     published, the processor time of the next opts.Cycles cycles,
//     from one "published" log line to the opts.Cycles-th after it,
//     over the wall time between them;
//  2. the resting agent (--interval agent.DefaultInterval, the same
//     store, the start remembered settled): once it has published its
//     first cycle and the one its delta stream's first connection wakes,
//     its processor time over opts.Idle with no cycle in it — the idle
//     rate — and its VmRSS at the end (SteadyRSS); then, opts.Devices
//     times, a device added (Boat.AddDevice) and the wall time until the
//     receiver's active snapshot changes, its path checked in it.
//
// CycleCPU is the cycle window's processor time less the idle rate times
// its wall time, over opts.Cycles: the delta stream keeps costing its
// idle rate while a cycle runs. It fails when an agent exits, a phase
// takes over two minutes, a cycle runs in the idle window or a device's
// path is missing from the snapshot that activated after it.
func Measure(ctx context.Context, opts Options) (Result, error) {
	var res Result
	boat, err := NewBoat(opts.Records, opts.Rate)
	if err != nil {
		return res, err
	}
	defer boat.Close()
	ashore, err := StartAshore(ctx, opts.Dir)
	if err != nil {
		return res, err
	}
	defer ashore.Close()
	args := []string{"--signalk", boat.URL(), "--store", "sqlite:" + filepath.Join(opts.Dir, "outbox.db"),
		"--vessel", ashore.Vessel.String(), "--url", ashore.URL, "--ca", ashore.CAFile, "--token-file", ashore.TokenFile}
	if opts.Settle != "" {
		args = append(args, "--settle", opts.Settle)
	}
	if opts.Cut != "" {
		args = append(args, "--cut", opts.Cut)
	}
	// 1. The periodic agent.
	periodic, err := StartAgent(opts.Bin, append(args, "--interval", opts.Interval.String())...)
	if err != nil {
		return res, err
	}
	var window time.Duration
	var cycleCPU time.Duration
	err = func() error {
		defer periodic.Stop()
		if err := waitPublished(ctx, periodic, 1); err != nil {
			return err
		}
		if _, err := ashore.Active(); err != nil {
			return fmt.Errorf("agentcost: after the first publish: %w", err)
		}
		_, p0 := periodic.Cycles()
		u0, t0, err := usage(periodic)
		if err != nil {
			return err
		}
		if err := waitPublished(ctx, periodic, p0+opts.Cycles); err != nil {
			return err
		}
		u1, t1, err := usage(periodic)
		if err != nil {
			return err
		}
		window, cycleCPU = t1.Sub(t0), u1.CPU-u0.CPU
		res.PeakRSS = u1.Peak
		return nil
	}()
	if err != nil {
		return res, err
	}
	// 2. The resting agent.
	resting, err := StartAgent(opts.Bin, append(args, "--interval", agent.DefaultInterval.String())...)
	if err != nil {
		return res, err
	}
	defer resting.Stop()
	if err := waitPublished(ctx, resting, 2); err != nil {
		return res, err
	}
	time.Sleep(time.Second) // the publish's last requests
	c0, _ := resting.Cycles()
	u0, t0, err := usage(resting)
	if err != nil {
		return res, err
	}
	time.Sleep(opts.Idle)
	u1, t1, err := usage(resting)
	if err != nil {
		return res, err
	}
	if c1, _ := resting.Cycles(); c1 != c0 {
		return res, fmt.Errorf("agentcost: %d cycles in the idle window: %s", c1-c0, resting.Log())
	}
	res.IdleCPURate = (u1.CPU - u0.CPU).Seconds() / t1.Sub(t0).Seconds()
	res.SteadyRSS = u1.RSS
	res.CycleCPU = max(0, time.Duration((cycleCPU.Seconds()-res.IdleCPURate*window.Seconds())/float64(opts.Cycles)*float64(time.Second)))
	res.CPUPerHour = res.CycleCPU*time.Duration(time.Hour/agent.DefaultInterval) +
		time.Duration(res.IdleCPURate*float64(time.Hour))
	for range opts.Devices {
		d, steps, err := activate(ctx, boat, ashore, resting)
		if err != nil {
			return res, err
		}
		res.Activation, res.Steps = append(res.Activation, d), append(res.Steps, steps)
	}
	u, err := resting.Usage()
	if err != nil {
		return res, err
	}
	res.PeakRSS = max(res.PeakRSS, u.Peak)
	return res, nil
}

// phaseTimeout bounds each wait of Measure.
const phaseTimeout = 2 * time.Minute

func waitPublished(ctx context.Context, a *Agent, n int) error {
	ctx, cancel := context.WithTimeout(ctx, phaseTimeout)
	defer cancel()
	return a.WaitPublished(ctx, n)
}

func usage(a *Agent) (Usage, time.Time, error) {
	u, err := a.Usage()
	return u, time.Now(), err
}

// activate adds a device to boat and returns the wall time until ashore's
// active snapshot changes, checking that it holds the device's path,
// with its steps read from the agent's log.
func activate(ctx context.Context, boat *Boat, ashore *Ashore, a *Agent) (time.Duration, Steps, error) {
	before, err := ashore.Active()
	if err != nil {
		return 0, Steps{}, err
	}
	_, published := a.Cycles()
	t0 := time.Now()
	path, err := boat.AddDevice()
	if err != nil {
		return 0, Steps{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, phaseTimeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		page, err := ashore.Active()
		if err != nil {
			return 0, Steps{}, err
		}
		if page.SnapshotID != before.SnapshotID {
			d := time.Since(t0)
			if ok, err := ashore.Has(path); err != nil || !ok {
				return 0, Steps{}, fmt.Errorf("agentcost: the snapshot activated after device %s lacks its path (%v): %s", path, err, a.Log())
			}
			// The receiver may activate before the agent logs the
			// publish.
			if err := a.WaitPublished(ctx, published+1); err != nil {
				return 0, Steps{}, err
			}
			woken, committed, published := a.last(msgWoken), a.last(msgCommitted), a.last(msgPublished)
			if woken.Before(t0) || committed.Before(woken) || published.Before(committed) {
				return 0, Steps{}, fmt.Errorf("agentcost: device %s activated without a woken scan, committed and published after it: %s", path, a.Log())
			}
			return d, Steps{Wake: woken.Sub(t0), Commit: committed.Sub(woken), Publish: published.Sub(committed)}, nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return 0, Steps{}, fmt.Errorf("agentcost: device %s not active: %w: %s", path, ctx.Err(), a.Log())
		}
	}
}
