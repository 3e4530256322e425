// Package linksim relays TCP connections through a simulated far link —
// a satellite or cellular one: every byte arrives a one-way delay after
// it left, and each direction is clocked out at its own rate, as a
// serial line of that many bytes a second. It is for benchmarks that
// hold a sender's wall time against the floor such a link allows.
//
// The link is pipelined, as a real one: bytes read from one end are
// queued at once, each segment leaves when the line has clocked out the
// segments before it, and arrives Delay later, whatever is still in
// flight behind it. A new connection costs one round trip before its
// first byte leaves, as TCP's handshake does on the real link; the
// loopback connection to the proxy is made at once. Buffers are deep
// (the proxy never drops), so the rate is the only bound on throughput.
package linksim

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// A Profile is a link: a one-way delay and a rate each way.
type Profile struct {
	// Delay is the one-way delay every byte takes, each way.
	Delay time.Duration
	// Up is the rate from the client (the side that connects to the
	// proxy) to the target, and Down the reverse, in bytes a second;
	// 0 is unlimited.
	Up, Down int64
}

// VSAT is a VSAT-like satellite link: 300 ms each way, 256 kbit/s up
// and 1 Mbit/s down.
var VSAT = Profile{Delay: 300 * time.Millisecond, Up: 256_000 / 8, Down: 1_000_000 / 8}

// RTT is the round trip of p: twice its delay.
func (p Profile) RTT() time.Duration { return 2 * p.Delay }

// Serialise is the time p's up line takes to clock out n bytes.
func (p Profile) Serialise(n int64) time.Duration { return clock(n, p.Up) }

func (p Profile) check() error {
	switch {
	case p.Delay < 0:
		return errors.New("linksim: a negative delay")
	case p.Up < 0 || p.Down < 0:
		return errors.New("linksim: a negative rate")
	}
	return nil
}

// clock is the time a line of rate bytes a second takes to clock out n
// bytes, rounded up; 0 for an unlimited rate.
func clock(n, rate int64) time.Duration {
	if rate == 0 || n <= 0 {
		return 0
	}
	return time.Duration((n*int64(time.Second) + rate - 1) / rate)
}

// segment is the most bytes one read takes: a TCP segment's payload, so
// that the first byte of a large write does not wait for the last.
const segment = 1460

// queueDepth is how many segments a direction holds in flight before its
// reader waits: about 1.5 MB, deeper than any bandwidth-delay product a
// benchmark here sets up.
const queueDepth = 1024

// A line schedules one direction's segments: each leaves when the line
// has clocked out those before it, and arrives delay after.
type line struct {
	delay time.Duration
	rate  int64
	free  time.Time // when the line has clocked out every segment so far
}

// schedule returns when a segment of n bytes read at now arrives at the
// far end, and books the line for it.
func (l *line) schedule(now time.Time, n int) time.Time {
	if l.free.Before(now) {
		l.free = now
	}
	l.free = l.free.Add(clock(int64(n), l.rate))
	return l.free.Add(l.delay)
}

// Counts are the bytes that crossed a Proxy's link, over every
// connection.
type Counts struct {
	Conns int   // connections accepted
	Up    int64 // bytes arrived at the target
	Down  int64 // bytes arrived at the clients
}

// Sub returns the counts since an earlier c0.
func (c Counts) Sub(c0 Counts) Counts {
	return Counts{Conns: c.Conns - c0.Conns, Up: c.Up - c0.Up, Down: c.Down - c0.Down}
}

// A Proxy listens on a loopback port and relays each connection to its
// target over the simulated link. Its methods are safe for concurrent
// use.
type Proxy struct {
	target  string
	profile Profile
	ln      net.Listener
	done    chan struct{} // closed by Close

	mu     sync.Mutex
	counts Counts
	conns  map[net.Conn]bool
	closed bool

	wg sync.WaitGroup
}

// Start listens on 127.0.0.1 on a free port and relays to target over a
// link of profile p. It returns an error for a Profile out of range (a
// negative delay or rate) or when it cannot listen.
func Start(target string, p Profile) (*Proxy, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if target == "" {
		return nil, errors.New("linksim: no target")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("linksim: %w", err)
	}
	px := &Proxy{target: target, profile: p, ln: ln, done: make(chan struct{}), conns: map[net.Conn]bool{}}
	px.wg.Add(1)
	go px.accept()
	return px, nil
}

// Addr is the address the proxy listens on, 127.0.0.1:port.
func (px *Proxy) Addr() string { return px.ln.Addr().String() }

// Profile is the link the proxy simulates.
func (px *Proxy) Profile() Profile { return px.profile }

// Counts returns the bytes that crossed the link so far.
func (px *Proxy) Counts() Counts {
	px.mu.Lock()
	defer px.mu.Unlock()
	return px.counts
}

// Close stops listening, closes every connection, drops what is in
// flight and waits for the relays to end.
func (px *Proxy) Close() error {
	px.mu.Lock()
	if px.closed {
		px.mu.Unlock()
		return nil
	}
	px.closed = true
	close(px.done)
	err := px.ln.Close()
	for c := range px.conns {
		c.Close()
	}
	px.mu.Unlock()
	px.wg.Wait()
	return err
}

// track records connections for Close; it reports false, closing them,
// once the proxy is closed.
func (px *Proxy) track(cs ...net.Conn) bool {
	px.mu.Lock()
	defer px.mu.Unlock()
	if px.closed {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		px.conns[c] = true
	}
	px.counts.Conns++
	return true
}

func (px *Proxy) untrack(cs ...net.Conn) {
	px.mu.Lock()
	defer px.mu.Unlock()
	for _, c := range cs {
		delete(px.conns, c)
		c.Close()
	}
}

// arrived counts n bytes arrived up or down, as they are handed to the
// far end.
func (px *Proxy) arrived(up bool, n int) {
	px.mu.Lock()
	defer px.mu.Unlock()
	if up {
		px.counts.Up += int64(n)
	} else {
		px.counts.Down += int64(n)
	}
}

func (px *Proxy) accept() {
	defer px.wg.Done()
	for {
		client, err := px.ln.Accept()
		if err != nil {
			return
		}
		accepted := time.Now()
		server, err := net.Dial("tcp", px.target)
		if err != nil {
			client.Close()
			continue
		}
		if !px.track(client, server) {
			return
		}
		// The client's first byte leaves once the handshake's round
		// trip is over; the server speaks only after it heard it.
		up := &line{delay: px.profile.Delay, rate: px.profile.Up, free: accepted.Add(px.profile.RTT())}
		down := &line{delay: px.profile.Delay, rate: px.profile.Down}
		var both sync.WaitGroup
		both.Add(2)
		px.wg.Add(3)
		go func() { defer px.wg.Done(); defer both.Done(); px.relay(client, server, up, true) }()
		go func() { defer px.wg.Done(); defer both.Done(); px.relay(server, client, down, false) }()
		go func() { defer px.wg.Done(); both.Wait(); px.untrack(client, server) }()
	}
}

// A packet is a segment in flight and when it arrives.
type packet struct {
	data []byte
	at   time.Time
}

// relay carries src's bytes to dst over l: a reader queues each segment
// as it comes, a writer delivers it when it arrives. At src's end of
// stream, once every segment is delivered, it closes dst's writing half;
// on an error either way it closes both.
func (px *Proxy) relay(src, dst net.Conn, l *line, up bool) {
	queue := make(chan packet, queueDepth)
	go func() {
		defer close(queue)
		for {
			buf := make([]byte, segment)
			n, err := src.Read(buf)
			if n > 0 {
				select {
				case queue <- packet{buf[:n], l.schedule(time.Now(), n)}:
				case <-px.done:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for p := range queue {
		if wait := time.Until(p.at); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-px.done:
				return
			}
		}
		px.arrived(up, len(p.data))
		if _, err := dst.Write(p.data); err != nil {
			src.Close()
			for range queue { // let the reader end
			}
			return
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}
