package sktest

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"sync"
	"time"
)

// replayRate is how many bytes a second the replayer sends: the rate at
// which the server's own FileStream provider plays plaka.log (a throttle of
// 1000 bytes a second).
const replayRate = 1000

// A replayer serves an NMEA 0183 log over TCP on a loopback port, in a
// loop, to every connection, at replayRate; paused, it closes its
// connections and sends nothing to new ones.
type replayer struct {
	ln    net.Listener
	lines [][]byte

	mu     sync.Mutex
	paused bool
	conns  map[net.Conn]struct{}
	wake   chan struct{} // closed and replaced on resume
	done   chan struct{}
}

func newReplayer(file string) (*replayer, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var lines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if len(sc.Bytes()) > 0 {
			lines = append(lines, append(bytes.Clone(sc.Bytes()), '\r', '\n'))
		}
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &replayer{ln: ln, lines: lines, conns: map[net.Conn]struct{}{}, wake: make(chan struct{}), done: make(chan struct{})}
	go r.accept()
	return r, nil
}

func (r *replayer) port() int { return r.ln.Addr().(*net.TCPAddr).Port }

func (r *replayer) accept() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.mu.Lock()
		r.conns[c] = struct{}{}
		r.mu.Unlock()
		go r.serve(c)
	}
}

// serve sends the log in a loop, a chunk every 100 ms, until the
// connection fails or the replayer is closed; while paused it waits.
func (r *replayer) serve(c net.Conn) {
	defer func() {
		r.mu.Lock()
		delete(r.conns, c)
		r.mu.Unlock()
		c.Close()
	}()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	i := 0
	for {
		r.mu.Lock()
		paused, wake := r.paused, r.wake
		r.mu.Unlock()
		if paused {
			select {
			case <-wake:
			case <-r.done:
				return
			}
			continue
		}
		var chunk []byte
		for len(chunk) < replayRate/10 {
			chunk = append(chunk, r.lines[i]...)
			i = (i + 1) % len(r.lines)
		}
		if _, err := c.Write(chunk); err != nil {
			return
		}
		select {
		case <-tick.C:
		case <-r.done:
			return
		}
	}
}

// pause stops (true) or resumes (false) the feed. Stopping closes the
// connections the server has made, so it sees the feed end.
func (r *replayer) pause(p bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.paused == p {
		return
	}
	r.paused = p
	if p {
		for c := range r.conns {
			c.Close()
		}
		return
	}
	close(r.wake)
	r.wake = make(chan struct{})
}

func (r *replayer) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.done:
		return
	default:
	}
	close(r.done)
	r.ln.Close()
	for c := range r.conns {
		c.Close()
	}
}
