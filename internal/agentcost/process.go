package agentcost

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/yachtmemory/sourcecatalog/internal/fleetload"
)

// BuildAgent builds the sourcecatalog binary into dir and returns its
// path.
func BuildAgent(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "sourcecatalog")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/yachtmemory/sourcecatalog/cmd/sourcecatalog")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("agentcost: go build: %v: %s", err, out)
	}
	return bin, nil
}

// The agent's log messages an Agent counts (package agent).
const (
	msgWoken     = "scan woken early"
	msgCommitted = "cycle committed"
	msgPublished = "published"
)

// An Agent is `sourcecatalog agent` run as a child process, logging in
// JSON; it counts the cycles the log reports committed and published.
type Agent struct {
	cmd     *exec.Cmd
	done    chan struct{}
	changed chan struct{} // closed and replaced on every counted line

	mu        sync.Mutex
	committed int
	published int
	lastAt    map[string]time.Time // the time of the last line of each message
	tail      []string
}

// StartAgent runs bin agent with args and --log-format json.
func StartAgent(bin string, args ...string) (*Agent, error) {
	a := &Agent{cmd: exec.Command(bin, append([]string{"agent", "--log-format", "json"}, args...)...),
		done: make(chan struct{}), changed: make(chan struct{}), lastAt: map[string]time.Time{}}
	stderr, err := a.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := a.cmd.Start(); err != nil {
		return nil, fmt.Errorf("agentcost: %w", err)
	}
	go func() {
		a.read(stderr)
		_ = a.cmd.Wait()
		close(a.done)
		a.mu.Lock()
		close(a.changed)
		a.mu.Unlock()
	}()
	return a, nil
}

func (a *Agent) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var line struct {
			Msg  string
			Time time.Time
		}
		_ = json.Unmarshal(sc.Bytes(), &line)
		a.mu.Lock()
		a.lastAt[line.Msg] = line.Time
		a.tail = append(a.tail, sc.Text())
		if len(a.tail) > 20 {
			a.tail = a.tail[1:]
		}
		switch line.Msg {
		case msgCommitted:
			a.committed++
		case msgPublished:
			a.published++
		}
		close(a.changed)
		a.changed = make(chan struct{})
		a.mu.Unlock()
	}
}

// Pid is the process's id.
func (a *Agent) Pid() int { return a.cmd.Process.Pid }

// Cycles returns how many cycles the log has reported committed and
// published so far.
func (a *Agent) Cycles() (committed, published int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.committed, a.published
}

// last returns the time the log gives its last line of msg, or the zero
// time.
func (a *Agent) last(msg string) time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lastAt[msg]
}

// WaitPublished waits until the log has reported n publishes, and fails
// when ctx ends or the process exits first.
func (a *Agent) WaitPublished(ctx context.Context, n int) error {
	for {
		a.mu.Lock()
		got, changed := a.published, a.changed
		a.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-changed:
		case <-a.done:
			return fmt.Errorf("agentcost: the agent exited after %d publishes, before %d: %s", got, n, a.Log())
		case <-ctx.Done():
			return fmt.Errorf("agentcost: %d publishes, not %d: %w: %s", got, n, ctx.Err(), a.Log())
		}
	}
}

// Log returns the last lines the process logged.
func (a *Agent) Log() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return strings.Join(a.tail, "\n")
}

// Usage is what the process has used: processor time (user and system)
// and resident memory now and at its peak.
type Usage struct {
	CPU       time.Duration
	RSS, Peak int64 // bytes
}

// Usage reads the process's usage from /proc.
func (a *Agent) Usage() (Usage, error) {
	var u Usage
	var errs [3]error
	u.CPU, errs[0] = fleetload.CPUTime(a.Pid())
	u.RSS, errs[1] = fleetload.RSS(a.Pid())
	u.Peak, errs[2] = fleetload.PeakRSS(a.Pid())
	return u, errors.Join(errs[:]...)
}

// Stop ends the process with SIGTERM, as a service manager does, and
// waits for it, killing it after 30 s.
func (a *Agent) Stop() error {
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.done:
	case <-time.After(30 * time.Second):
		_ = a.cmd.Process.Signal(os.Kill)
		<-a.done
		return fmt.Errorf("agentcost: the agent did not stop within 30 s: %s", a.Log())
	}
	return nil
}
