// Package faultproxy relays TCP connections that carry the HTTP binding of
// SPEC.md §11 over TLS 1.2 and breaks answers after their request reached
// the server: it resets the sender's connection, cuts the answer midway,
// or delays it; CutRequest cuts a request on its way instead. It is for
// tests and the demo.
//
// The proxy cannot decrypt; it reads the TLS records. With TLS 1.2 every
// handshake message travels in handshake records, so an application-data
// record from the sender is a request and the first application-data
// record from the server after it starts the answer: the server has
// handled the request by then. That is where a fault strikes. Under TLS
// 1.3 the handshake's end and session tickets travel as application data
// too: a server that sends a ticket after the client's Finished would have
// the ticket taken for an answer. Go's server sends its tickets before,
// but limit the server to TLS 1.2 (tls.Config.MaxVersion) all the same;
// the proxy does not check. Limit it to HTTP/1.1 as well
// (http.Server.Protocols): HTTP/2's SETTINGS, PING and WINDOW_UPDATE
// frames travel as application data and would be taken for requests and
// answers.
//
// Which answers break is decided one answer at a time, in the order the
// answers reach the proxy, by a generator seeded with Config.Seed: a
// sender that waits for each answer before its next request meets the
// same faults on every run.
package faultproxy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// A Fault is what the proxy does to one answer.
type Fault int

// The faults.
const (
	// None relays the answer.
	None Fault = iota
	// Reset resets the sender's connection (TCP RST) instead of relaying
	// the answer: the request was handled, its answer is lost.
	Reset
	// Cut relays the first half of the answer's first record and closes
	// both connections: the sender reads an answer cut short.
	Cut
	// Delay holds the answer back for Config.DelayFor, then relays it.
	Delay
)

func (f Fault) String() string {
	switch f {
	case None:
		return "none"
	case Reset:
		return "reset"
	case Cut:
		return "cut"
	case Delay:
		return "delay"
	}
	return fmt.Sprintf("Fault(%d)", int(f))
}

// Config configures a Proxy. Reset, Cut and Delay are the probabilities
// that an answer suffers that fault; their sum is at most 1. The zero
// Config (with a Target) relays everything until Arm is called.
type Config struct {
	// Target is the server's address, host:port.
	Target string
	// Seed seeds the generator that decides each answer's fault.
	Seed              uint64
	Reset, Cut, Delay float64
	// DelayFor is how long a delayed answer is held back.
	DelayFor time.Duration
}

func (c Config) check() error {
	for _, p := range []float64{c.Reset, c.Cut, c.Delay} {
		if !(p >= 0 && p <= 1) {
			return errors.New("faultproxy: the probabilities must be in [0, 1]")
		}
	}
	switch {
	case c.Reset+c.Cut+c.Delay > 1:
		return errors.New("faultproxy: the probabilities add up to more than 1")
	case c.DelayFor < 0:
		return errors.New("faultproxy: a negative delay")
	case c.Target == "":
		return errors.New("faultproxy: no target")
	}
	return nil
}

// Counts are what a Proxy saw and did.
type Counts struct {
	Conns   int // connections accepted
	Answers int // answers that started: requests the server handled
	Resets  int
	Cuts    int
	Delays  int
	// RequestCuts are the sender's records cut by CutRequest.
	RequestCuts int
}

// Faults is the number of answers broken or delayed.
func (c Counts) Faults() int { return c.Resets + c.Cuts + c.Delays }

// Sub returns the counts since an earlier c0.
func (c Counts) Sub(c0 Counts) Counts {
	return Counts{c.Conns - c0.Conns, c.Answers - c0.Answers, c.Resets - c0.Resets, c.Cuts - c0.Cuts, c.Delays - c0.Delays, c.RequestCuts - c0.RequestCuts}
}

// A Proxy listens on a loopback port and relays each connection to the
// target. Its methods are safe for concurrent use.
type Proxy struct {
	cfg  Config
	ln   net.Listener
	done chan struct{} // closed by Close

	mu     sync.Mutex
	rng    *rand.Rand
	armed  []Fault // the faults of the next answers, before the generator's
	cutIn  int     // CutRequest's countdown of the sender's records, 0 for none
	counts Counts
	conns  map[net.Conn]bool
	closed bool

	wg sync.WaitGroup
}

// Start listens on 127.0.0.1 on a free port and relays to cfg.Target. It
// returns an error for a Config out of range or when it cannot listen.
func Start(cfg Config) (*Proxy, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: %w", err)
	}
	p := &Proxy{
		cfg: cfg, ln: ln, done: make(chan struct{}),
		rng:   rand.New(rand.NewPCG(cfg.Seed, 0x70726f7879)), // "proxy"
		conns: map[net.Conn]bool{},
	}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address the proxy listens on, 127.0.0.1:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Arm makes the next answer suffer f, whatever the generator would
// decide; armed faults queue up, one answer each.
func (p *Proxy) Arm(f Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed = append(p.armed, f)
}

// CutRequest makes the proxy cut the record-th application-data record
// the sender sends from now on (1 for the next): it relays the record's
// first half and closes both connections, so that the server reads a
// request cut short and nothing answers it. TLS splits a request into
// records of about 1.2 KB at a connection's start, so the second record of
// a request of a few KB falls in its body. It is not decided by the
// generator, and a later call replaces an earlier one.
func (p *Proxy) CutRequest(record int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutIn = max(record, 0)
}

// cutNow counts a record of the sender's for CutRequest, reporting
// whether to cut it.
func (p *Proxy) cutNow() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cutIn == 0 {
		return false
	}
	if p.cutIn--; p.cutIn > 0 {
		return false
	}
	p.counts.RequestCuts++
	return true
}

// Counts returns what the proxy saw and did so far.
func (p *Proxy) Counts() Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts
}

// Close stops listening, closes every connection, ends a delay early and
// waits for the relays to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.done)
	err := p.ln.Close()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

// track records a connection for Close; it reports false, closing c, once
// the proxy is closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = true
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
	c.Close()
}

// decide counts an answer and returns its fault.
func (p *Proxy) decide() Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts.Answers++
	f := None
	if len(p.armed) > 0 {
		f, p.armed = p.armed[0], p.armed[1:]
	} else if u := p.rng.Float64(); u < p.cfg.Reset {
		f = Reset
	} else if u < p.cfg.Reset+p.cfg.Cut {
		f = Cut
	} else if u < p.cfg.Reset+p.cfg.Cut+p.cfg.Delay {
		f = Delay
	}
	switch f {
	case Reset:
		p.counts.Resets++
	case Cut:
		p.counts.Cuts++
	case Delay:
		p.counts.Delays++
	}
	return f
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.cfg.Target)
		if err != nil {
			client.Close()
			continue
		}
		if !p.track(client) || !p.track(server) {
			p.untrack(client)
			server.Close()
			return
		}
		p.mu.Lock()
		p.counts.Conns++
		p.mu.Unlock()
		c := &conn{client: client, server: server}
		p.wg.Add(2)
		go func() {
			defer p.wg.Done()
			defer p.untrack(server)
			p.relayRequests(c)
		}()
		go func() {
			defer p.wg.Done()
			defer p.untrack(client)
			defer p.untrack(server)
			p.relayAnswers(c)
		}()
	}
}

// conn is one relayed connection.
type conn struct {
	client, server net.Conn
	// asked is set when the sender sent application data that no answer
	// has started to answer yet.
	asked atomic.Bool
}

// recordApplicationData is the TLS record content type of application data
// (RFC 5246 §6.2.1).
const recordApplicationData = 23

// readRecord reads one TLS record: its 5-byte header and its body.
func readRecord(r io.Reader) ([]byte, error) {
	rec := make([]byte, 5, 5+512)
	if _, err := io.ReadFull(r, rec); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint16(rec[3:]))
	rec = append(rec, make([]byte, n)...)
	if _, err := io.ReadFull(r, rec[5:]); err != nil {
		return nil, err
	}
	return rec, nil
}

// relayRequests relays the sender's records to the server, noting the
// requests, and cuts the one CutRequest named.
func (p *Proxy) relayRequests(c *conn) {
	for {
		rec, err := readRecord(c.client)
		if err != nil {
			return
		}
		if rec[0] == recordApplicationData {
			if p.cutNow() {
				_, _ = c.server.Write(rec[:5+(len(rec)-5)/2])
				c.client.Close()
				return
			}
			c.asked.Store(true) // before the server can answer it
		}
		if _, err := c.server.Write(rec); err != nil {
			return
		}
	}
}

// relayAnswers relays the server's records to the sender, applying a
// fault at the first record of each answer.
func (p *Proxy) relayAnswers(c *conn) {
	for {
		rec, err := readRecord(c.server)
		if err != nil {
			return
		}
		if rec[0] == recordApplicationData && c.asked.CompareAndSwap(true, false) {
			switch p.decide() {
			case Reset:
				_ = c.client.(*net.TCPConn).SetLinger(0) // RST, not FIN
				return
			case Cut:
				_, _ = c.client.Write(rec[:5+(len(rec)-5)/2])
				return
			case Delay:
				select {
				case <-time.After(p.cfg.DelayFor):
				case <-p.done:
					return
				}
			}
		}
		if _, err := c.client.Write(rec); err != nil {
			return
		}
	}
}
