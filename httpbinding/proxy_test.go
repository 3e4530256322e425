package httpbinding_test

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// A faultProxy relays TCP between a sender and the receiver and, once
// armed, breaks the first answer that comes back: it reads the server's
// TLS records and, at the first application-data record — with TLS 1.2,
// the HTTP answer, so the request has reached the server and been handled
// — resets the sender's connection (reset) or relays half of the record
// and closes (cut).
type faultProxy struct {
	ln     net.Listener
	target string
	cut    bool // cut the answer midway instead of resetting
	armed  atomic.Bool
	faults atomic.Int32
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
}

const recordApplicationData = 23

func startProxy(t *testing.T, target string, cut bool) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &faultProxy{ln: ln, target: target, cut: cut}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *faultProxy) track(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns = append(p.conns, c)
}

func (p *faultProxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		p.track(client)
		p.track(server)
		p.wg.Add(2)
		go func() { defer p.wg.Done(); _, _ = io.Copy(server, client); server.Close() }()
		go func() { defer p.wg.Done(); p.relayAnswers(client, server) }()
	}
}

// relayAnswers relays the server's TLS records to the client, breaking the
// first application-data record while armed.
func (p *faultProxy) relayAnswers(client, server net.Conn) {
	defer client.Close()
	defer server.Close()
	head := make([]byte, 5)
	for {
		if _, err := io.ReadFull(server, head); err != nil {
			return
		}
		body := make([]byte, binary.BigEndian.Uint16(head[3:]))
		if _, err := io.ReadFull(server, body); err != nil {
			return
		}
		if head[0] == recordApplicationData && p.armed.CompareAndSwap(true, false) {
			p.faults.Add(1)
			if p.cut {
				_, _ = client.Write(append(head, body[:len(body)/2]...))
			} else {
				_ = client.(*net.TCPConn).SetLinger(0) // RST, not FIN
			}
			return
		}
		if _, err := client.Write(append(head, body...)); err != nil {
			return
		}
	}
}

// url returns the rig's URL through the proxy.
func (p *faultProxy) url() string { return "https://" + p.ln.Addr().String() + "/v2/messages" }
