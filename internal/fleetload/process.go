package fleetload

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Bounds of a server process's life.
const (
	startTimeout = time.Minute      // until it logs where it listens
	stopTimeout  = 30 * time.Second // from SIGTERM to its exit
	tailLines    = 40               // log lines kept for error messages
)

// A Process is a server run as a child process: serve, or a floor
// server, which logs in JSON (one object a line, log/slog's JSON handler)
// a line {"msg":"listening","addr":...} once it accepts connections, and
// serve also {"msg":"admin listening","addr":...}.
type Process struct {
	Addr  string // the address of "listening"
	Admin string // of "admin listening", when Start waited for it
	cmd   *exec.Cmd
	pid   int // the server's: cmd's, or its child's when traced
	done  chan struct{}
	err   error // cmd.Wait's, once done is closed
	mu    sync.Mutex
	tail  []string
}

// StartOptions say what Start waits for.
type StartOptions struct {
	Admin bool // wait for "admin listening" too
	// Traced: the command is a tracer (strace) that runs the server as its
	// child, which Pid and Stop then name.
	Traced bool
}

// Start runs name with args, its standard error read as the server's log,
// and returns once the log says where it listens. It fails, the process
// killed, when the process exits first or takes more than a minute.
func Start(name string, args []string, opts StartOptions) (*Process, error) {
	p := &Process{cmd: exec.Command(name, args...), done: make(chan struct{})}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("fleetload: %w", err)
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("fleetload: %w", err)
	}
	p.pid = p.cmd.Process.Pid
	addrs := make(chan [2]string, 2) // both lines, however soon they come
	read := make(chan struct{})
	go func() {
		p.read(stderr, addrs)
		close(read)
	}()
	go func() {
		<-read // the log read to its end: Wait closes the pipe
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	fail := func(err error) (*Process, error) {
		p.cmd.Process.Kill()
		<-p.done
		return nil, fmt.Errorf("fleetload: %s: %w; its log:\n%s", name, err, p.Log())
	}
	for need := 1 + boolInt(opts.Admin); need > 0; need-- {
		select {
		case a := <-addrs:
			if a[0] == "listening" {
				p.Addr = a[1]
			} else {
				p.Admin = a[1]
			}
		case <-p.done:
			return fail(fmt.Errorf("exited before listening: %v", p.err))
		case <-time.After(startTimeout):
			return fail(errors.New("not listening within a minute"))
		}
	}
	if p.Addr == "" || (opts.Admin && p.Admin == "") {
		return fail(errors.New("logged no listening address"))
	}
	if opts.Traced {
		child, err := onlyChild(p.pid)
		if err != nil {
			return fail(err)
		}
		p.pid = child
	}
	return p, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// read reads the log, sending the listening addresses on addrs, and keeps
// its last lines.
func (p *Process) read(r io.Reader, addrs chan<- [2]string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	sent := 0
	for sc.Scan() {
		line := sc.Text()
		p.mu.Lock()
		p.tail = append(p.tail, line)
		if len(p.tail) > tailLines {
			p.tail = p.tail[1:]
		}
		p.mu.Unlock()
		if sent == 2 || !strings.Contains(line, "listening") {
			continue
		}
		var m struct{ Msg, Addr string }
		if json.Unmarshal([]byte(line), &m) == nil && (m.Msg == "listening" || m.Msg == "admin listening") && m.Addr != "" {
			sent++
			addrs <- [2]string{m.Msg, m.Addr} // never blocks: room for two
		}
	}
	io.Copy(io.Discard, r) // a line over 1 MiB: keep the pipe flowing
}

// onlyChild returns the one child of process pid's main thread, waiting
// for the tracer to start it.
func onlyChild(pid int) (int, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
		if err != nil {
			return 0, err
		}
		if f := strings.Fields(string(b)); len(f) == 1 {
			return strconv.Atoi(f[0])
		} else if len(f) > 1 || time.Now().After(deadline) {
			return 0, fmt.Errorf("process %d has children %q, want one", pid, f)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Pid returns the server's process id.
func (p *Process) Pid() int { return p.pid }

// Log returns the last lines the process logged.
func (p *Process) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail, "\n")
}

// Stop sends the server SIGTERM and waits for it (and its tracer) to
// exit; after 30 seconds it kills it. It returns an error unless the
// process exited with status 0.
func (p *Process) Stop() error {
	if err := p.signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("fleetload: %w", err)
	}
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("fleetload: process %d did not stop within %v of SIGTERM; its log:\n%s", p.pid, stopTimeout, p.Log())
	}
	if p.err != nil {
		return fmt.Errorf("fleetload: process %d: %w; its log:\n%s", p.pid, p.err, p.Log())
	}
	return nil
}

// Kill kills the process, if still running, and waits for it: for a
// cleanup after a failure.
func (p *Process) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	if p.pid != p.cmd.Process.Pid {
		p.signal(os.Kill)
	}
	p.cmd.Process.Kill()
	<-p.done
}

// signal sends sig to the server.
func (p *Process) signal(sig os.Signal) error {
	if p.pid == p.cmd.Process.Pid {
		return p.cmd.Process.Signal(sig)
	}
	proc, err := os.FindProcess(p.pid)
	if err != nil {
		return err
	}
	return proc.Signal(sig)
}
