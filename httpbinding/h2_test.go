package httpbinding_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// The attacks of limits_test.go and gzip_test.go again over HTTP/2, and
// HTTP/2's own: streams beyond the connection's limit, rapid resets,
// floods of control frames, a header list bomb, a body that never comes
// (SPEC.md §11.5). The raw ones speak frames over a tls.Conn.

// HTTP/2 frame types and flags (RFC 9113 §6).
const (
	frameData         = 0x0
	frameHeaders      = 0x1
	frameRSTStream    = 0x3
	frameSettings     = 0x4
	framePing         = 0x6
	frameGoAway       = 0x7
	frameContinuation = 0x9

	flagEndStream  = 0x1
	flagAck        = 0x1
	flagEndHeaders = 0x4

	settingMaxConcurrentStreams = 0x3
	settingMaxHeaderListSize    = 0x6
)

// A gauge counts the requests a server's Handler is serving, the most
// at once, and their protocols.
type gauge struct {
	now, most, calls, h2 atomic.Int64
}

func (g *gauge) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.calls.Add(1)
		if r.ProtoMajor == 2 {
			g.h2.Add(1)
		}
		n := g.now.Add(1)
		defer g.now.Add(-1)
		for m := g.most.Load(); n > m && !g.most.CompareAndSwap(m, n); m = g.most.Load() {
		}
		h.ServeHTTP(w, r)
	})
}

// A frame is one HTTP/2 frame read from the server.
type frame struct {
	typ, flags byte
	stream     uint32
	payload    []byte
}

// An h2conn is a raw HTTP/2 connection to a rig.
type h2conn struct {
	conn *tls.Conn
	wmu  sync.Mutex

	mu     sync.Mutex
	frames []frame
	err    error // why reading ended
	done   chan struct{}
}

// dialH2 opens an HTTP/2 connection to r presenting cert, sends the
// preface and acknowledges the server's settings; rcvbuf, when positive,
// is the socket's receive buffer. It reads frames in the background.
func dialH2(t *testing.T, r *rig, cert *tls.Certificate, rcvbuf int) *h2conn {
	t.Helper()
	raw, err := net.DialTimeout("tcp", r.addr, 5*time.Second)
	require.NoError(t, err)
	if rcvbuf > 0 {
		require.NoError(t, raw.(*net.TCPConn).SetReadBuffer(rcvbuf))
	}
	tc := r.tlsFor(cert)
	tc.NextProtos = []string{"h2"}
	tc.ServerName = "127.0.0.1"
	conn := tls.Client(raw, tc)
	require.NoError(t, conn.Handshake())
	require.Equal(t, "h2", conn.ConnectionState().NegotiatedProtocol, "the server offers HTTP/2")
	c := &h2conn{conn: conn, done: make(chan struct{})}
	t.Cleanup(func() { conn.Close(); <-c.done })
	_, err = io.WriteString(conn, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	require.NoError(t, err)
	require.NoError(t, c.write(frameSettings, 0, 0, nil))
	require.NoError(t, c.write(frameSettings, flagAck, 0, nil))
	go c.read()
	return c
}

func (c *h2conn) write(typ, flags byte, stream uint32, payload []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	var h [9]byte
	h[0], h[1], h[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
	h[3], h[4] = typ, flags
	binary.BigEndian.PutUint32(h[5:], stream)
	_, err := c.conn.Write(append(h[:], payload...))
	return err
}

func (c *h2conn) read() {
	defer close(c.done)
	for {
		var h [9]byte
		_, err := io.ReadFull(c.conn, h[:])
		var p []byte
		if err == nil {
			p = make([]byte, int(h[0])<<16|int(h[1])<<8|int(h[2]))
			_, err = io.ReadFull(c.conn, p)
		}
		c.mu.Lock()
		if err != nil {
			c.err = err
			c.mu.Unlock()
			return
		}
		c.frames = append(c.frames, frame{typ: h[3], flags: h[4], stream: binary.BigEndian.Uint32(h[5:]) &^ (1 << 31), payload: p})
		c.mu.Unlock()
	}
}

// await waits up to d for f to hold of the frames read so far, and
// whether reading ended.
func (c *h2conn) await(t *testing.T, d time.Duration, what string, f func(fs []frame, ended bool) bool) {
	t.Helper()
	require.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return f(c.frames, c.err != nil)
	}, d, 5*time.Millisecond, what)
}

// streamAnswered reports whether the server answered or reset stream, or the
// connection ended.
func streamAnswered(fs []frame, ended bool, stream uint32) bool {
	for _, f := range fs {
		if f.stream == stream && (f.typ == frameHeaders || f.typ == frameRSTStream) {
			return true
		}
	}
	return ended
}

// setting returns the value of the server's setting id, and whether it
// was sent.
func setting(fs []frame, id uint16) (uint32, bool) {
	for _, f := range fs {
		if f.typ != frameSettings || f.flags&flagAck != 0 {
			continue
		}
		for p := f.payload; len(p) >= 6; p = p[6:] {
			if binary.BigEndian.Uint16(p) == id {
				return binary.BigEndian.Uint32(p[2:]), true
			}
		}
	}
	return 0, false
}

// hpackInt appends v as an HPACK integer with an n-bit prefix (RFC 7541
// §5.1) whose other bits are first.
func hpackInt(b []byte, first byte, n uint, v int) []byte {
	max := 1<<n - 1
	if v < max {
		return append(b, first|byte(v))
	}
	b = append(b, first|byte(max))
	for v -= max; v >= 128; v >>= 7 {
		b = append(b, byte(v%128)|0x80)
	}
	return append(b, byte(v))
}

// hpackLiteral appends a header field as a literal without indexing, its
// name and value plain (RFC 7541 §6.2.2).
func hpackLiteral(b []byte, name, value string) []byte {
	b = append(b, 0)
	b = append(hpackInt(b, 0, 7, len(name)), name...)
	return append(hpackInt(b, 0, 7, len(value)), value...)
}

// postHeaders returns the header block of a POST of a body of length n
// (none announced when n < 0), with extra fields.
func postHeaders(n int, extra ...string) []byte {
	var b []byte
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "https"}, {":authority", "receiver"}, {":path", "/v2/messages"}, {"content-type", "application/json"}} {
		b = hpackLiteral(b, f[0], f[1])
	}
	if n >= 0 {
		b = hpackLiteral(b, "content-length", strconv.Itoa(n))
	}
	for i := 0; i+1 < len(extra); i += 2 {
		b = hpackLiteral(b, extra[i], extra[i+1])
	}
	return b
}

// h2Client returns a net/http client speaking HTTP/2 only to r.
func h2Client(r *rig, cert *tls.Certificate) *http.Client {
	var p http.Protocols
	p.SetHTTP2(true)
	tc := r.tlsFor(cert)
	tc.NextProtos = nil
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tc, Protocols: &p}}
}

// h2post posts body over HTTP/2, gzipped when gzipped, its length
// unannounced when unannounced.
func h2post(t *testing.T, hc *http.Client, url string, body []byte, gzipped, unannounced bool) answer {
	t.Helper()
	var rd io.Reader = bytes.NewReader(body)
	if unannounced {
		rd = io.MultiReader(rd)
	}
	req, err := http.NewRequest(http.MethodPost, url, rd)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if gzipped {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 2, resp.ProtoMajor, "answered over HTTP/2")
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	require.NoError(t, err)
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

// Both protocols are served over TLS: the Client negotiates HTTP/2, a
// client that offers HTTP/1.1 only is served HTTP/1.1.
func TestHTTP2Negotiated(t *testing.T) {
	var g gauge
	r := startRig(t, rigConfig{wrap: g.wrap})
	cert := r.ca.vessel(t, vesselA)
	b := commitCycle(t, vesselA, uuid.Nil, "nav", 1)
	rc, err := r.client(t, &cert).Send(context.Background(), b.entries[0])
	require.NoError(t, err)
	assert.Equal(t, envelope.Staged, rc.Status)
	assert.Equal(t, int64(1), g.h2.Load(), "the Client spoke HTTP/2")
	a := r.post(t, &cert, http.MethodPost, nil, wrap(b.entries[1]))
	assert.Equal(t, http.StatusOK, a.status, "%s", a.body)
	assert.Equal(t, int64(2), g.calls.Load())
	assert.Equal(t, int64(1), g.h2.Load(), "ClientTLSConfig in a plain transport speaks HTTP/1.1")
}

// The body cap over HTTP/2: 32,768 bytes are read, one more is 413
// limit_exceeded, announced or not; a gzip bomb is 413 after 32,769
// decompressed bytes.
func TestHTTP2BodyCap(t *testing.T) {
	r := startRig(t, rigConfig{})
	cert := r.ca.vessel(t, vesselA)
	b := commitCycle(t, vesselA, uuid.Nil, "nav", 1)
	hc := h2Client(r, &cert)
	defer hc.CloseIdleConnections()
	for _, tc := range []struct {
		name        string
		body        []byte
		gzipped     bool
		unannounced bool
		status      int
	}{
		{"32768", padded(t, b, httpbinding.MaxRequestBody), false, false, http.StatusOK},
		{"32769", padded(t, b, httpbinding.MaxRequestBody+1), false, false, http.StatusRequestEntityTooLarge},
		{"32768 unannounced", padded(t, b, httpbinding.MaxRequestBody), false, true, http.StatusOK},
		{"32769 unannounced", padded(t, b, httpbinding.MaxRequestBody+1), false, true, http.StatusRequestEntityTooLarge},
		{"327680", padded(t, b, 10*httpbinding.MaxRequestBody), false, false, http.StatusRequestEntityTooLarge},
		{"a gzip bomb", bomb(), true, false, http.StatusRequestEntityTooLarge},
		{"a gzip bomb unannounced", bomb(), true, true, http.StatusRequestEntityTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var most atomic.Int64
			defer httpbinding.OnGunzip(func(n int) {
				if int64(n) > most.Load() {
					most.Store(int64(n))
				}
			})()
			a := h2post(t, hc, r.url, tc.body, tc.gzipped, tc.unannounced)
			require.Equal(t, tc.status, a.status, "%s", a.body)
			assert.LessOrEqual(t, most.Load(), int64(httpbinding.MaxRequestBody+1), "decompressed bytes")
			if tc.status != http.StatusOK {
				assert.Equal(t, sourcecatalog.ErrLimitExceeded, a.refusal(t).Class)
			}
		})
	}
}

// A body announced over the cap is answered 413 at once, without waiting
// for the rest, which never comes; the stream is reset and the
// connection closed gracefully (GOAWAY): streams already open would be
// answered, new ones go to a new connection.
func TestHTTP2BodyCapDoesNotReadTheRest(t *testing.T) {
	r := startRig(t, rigConfig{})
	cert := r.ca.vessel(t, vesselA)
	c := dialH2(t, r, &cert, 0)
	require.NoError(t, c.write(frameHeaders, flagEndHeaders, 1, postHeaders(1<<20)))
	require.NoError(t, c.write(frameData, 0, 1, bytes.Repeat([]byte(" "), 16<<10)))
	c.await(t, 5*time.Second, "answered before the rest, and the stream reset", func(fs []frame, _ bool) bool {
		var answered, reset bool
		for _, f := range fs {
			answered = answered || f.stream == 1 && f.typ == frameHeaders
			reset = reset || f.stream == 1 && f.typ == frameRSTStream
		}
		return answered && reset
	})
	// The connection is closed gracefully: GOAWAY with stream 1 last.
	c.await(t, time.Second, "GOAWAY", func(fs []frame, _ bool) bool {
		for _, f := range fs {
			if f.typ == frameGoAway && binary.BigEndian.Uint32(f.payload) == 1 {
				return true
			}
		}
		return false
	})
}

// A stream whose body stalls, or never comes, is cut by the read
// timeout: it stages nothing and frees its vessel's slot, so the vessel's
// next request is served.
func TestHTTP2StalledBodiesAreCut(t *testing.T) {
	r := startRig(t, rigConfig{timeouts: httpbinding.Timeouts{ReadHeader: time.Second, Read: time.Second, Write: 5 * time.Second, Idle: 5 * time.Second}})
	cert := r.ca.vessel(t, vesselA)
	b := commitCycle(t, vesselA, uuid.Nil, "nav", 1)
	body := wrap(b.entries[0])
	c := dialH2(t, r, &cert, 0)
	// As many stalled streams as the vessel's slots: half a body, or none.
	for i := range httpbinding.DefaultMaxInFlight {
		id := uint32(2*i + 1)
		require.NoError(t, c.write(frameHeaders, flagEndHeaders, id, postHeaders(len(body))))
		if i%2 == 0 {
			require.NoError(t, c.write(frameData, 0, id, body[:len(body)/2]))
		}
	}
	start := time.Now()
	c.await(t, 5*time.Second, "every stalled stream cut", func(fs []frame, ended bool) bool {
		for i := range httpbinding.DefaultMaxInFlight {
			if !streamAnswered(fs, ended, uint32(2*i+1)) {
				return false
			}
		}
		return true
	})
	t.Logf("cut after %v", time.Since(start))
	require.Eventually(t, func() bool { return len(r.events.of(httpbinding.EventMessage)) == httpbinding.DefaultMaxInFlight }, 5*time.Second, 5*time.Millisecond)
	for _, ev := range r.events.of(httpbinding.EventMessage) {
		assert.Equal(t, httpbinding.OutcomeBadRequest, ev.Outcome)
	}
	u, err := r.recv.Usage(context.Background(), vesselA)
	require.NoError(t, err)
	assert.Zero(t, u.IncompleteSnapshots.Used, "nothing staged")
	rc, err := r.client(t, &cert).Send(context.Background(), b.entries[0])
	require.NoError(t, err, "the vessel's slots are free again")
	assert.Equal(t, envelope.Staged, rc.Status)
}

// A connection that opens more streams than the server's limit, none
// sending its body, is refused the streams beyond it: the Handler never
// serves more than 16 at once, and serves none once the connection ends.
func TestHTTP2StreamFlood(t *testing.T) {
	var g gauge
	r := startRig(t, rigConfig{wrap: g.wrap, opts: []httpbinding.HandlerOption{httpbinding.WithMaxInFlight(1000)}})
	cert := r.ca.vessel(t, vesselA)
	c := dialH2(t, r, &cert, 0)
	const streams = 64
	for i := range streams {
		require.NoError(t, c.write(frameHeaders, flagEndHeaders, uint32(2*i+1), postHeaders(100)))
	}
	c.await(t, 5*time.Second, "the streams beyond the limit refused", func(fs []frame, ended bool) bool {
		n := 0
		for _, f := range fs {
			if f.typ == frameRSTStream {
				n++
			}
		}
		return n >= streams-16 || ended
	})
	require.Eventually(t, func() bool { return g.now.Load() == 16 }, 5*time.Second, 5*time.Millisecond)
	c.mu.Lock()
	v, ok := setting(c.frames, settingMaxConcurrentStreams)
	c.mu.Unlock()
	assert.True(t, ok && v == 16, "SETTINGS_MAX_CONCURRENT_STREAMS %d", v)
	assert.LessOrEqual(t, g.most.Load(), int64(16), "requests served at once")
	c.conn.Close()
	require.Eventually(t, func() bool { return g.now.Load() == 0 }, 5*time.Second, 5*time.Millisecond, "the handlers end with the connection")
}

// goroutines waits for the goroutines to settle and returns how many
// run.
func goroutines() int {
	n := runtime.NumGoroutine()
	for range 50 {
		time.Sleep(20 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m == n {
			return m
		}
		n = m
	}
	return n
}

// Streams opened and reset at once, thousands of them: the Handler
// serves at most 16 at once, another vessel's request is answered
// promptly meanwhile, and goroutines return to their number once the
// connection ends.
func TestHTTP2RapidReset(t *testing.T) {
	var g gauge
	r := startRig(t, rigConfig{wrap: g.wrap, opts: []httpbinding.HandlerOption{httpbinding.WithMaxInFlight(1000)}})
	cert, other := r.ca.vessel(t, vesselA), r.ca.vessel(t, vesselB)
	b := commitCycle(t, vesselB, uuid.Nil, "nav", 1)
	legit := r.client(t, &other)
	_, err := legit.Send(context.Background(), b.entries[0]) // a connection open before
	require.NoError(t, err)
	before := goroutines()

	c := dialH2(t, r, &cert, 0)
	var cancel [4]byte
	binary.BigEndian.PutUint32(cancel[:], 0x8) // CANCEL
	const streams = 5000
	written := 0
	for i := range streams {
		id := uint32(2*i + 1)
		if c.write(frameHeaders, flagEndHeaders, id, postHeaders(100)) != nil || c.write(frameRSTStream, 0, id, cancel[:]) != nil {
			break // the server hung up
		}
		written++
	}
	t.Logf("%d streams opened and reset", written)
	start := time.Now()
	_, err = legit.Send(context.Background(), b.entries[0])
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 2*time.Second, "another vessel's answer")
	assert.LessOrEqual(t, g.most.Load(), int64(16), "requests served at once")
	c.conn.Close()
	require.Eventually(t, func() bool { return g.now.Load() == 0 }, 5*time.Second, 5*time.Millisecond)
	legit.CloseIdleConnections()
	after := goroutines()
	assert.LessOrEqual(t, after, before+5, "goroutines before %d, after %d", before, after)
}

// A flood of PINGs, or of SETTINGS, whose acknowledgements are never
// read does not make the server queue them without bound: it ends the
// connection (past its queue of control frames) or stops reading it (its
// writes blocked), and another vessel is served meanwhile.
func TestHTTP2ControlFrameFlood(t *testing.T) {
	for _, flood := range []struct {
		name    string
		typ     byte
		payload []byte
	}{
		{"PING", framePing, make([]byte, 8)},
		{"SETTINGS", frameSettings, []byte{0, 4, 0, 0, 0xff, 0xff}}, // SETTINGS_INITIAL_WINDOW_SIZE 65535
	} {
		t.Run(flood.name, func(t *testing.T) {
			r := startRig(t, rigConfig{})
			cert, other := r.ca.vessel(t, vesselA), r.ca.vessel(t, vesselB)
			c := dialH2(t, r, &cert, 4<<10)
			c.mu.Lock() // read nothing more: the acknowledgements pile up
			require.NoError(t, c.conn.SetWriteDeadline(time.Now().Add(5*time.Second)))
			var err error
			sent := 0
			for ; sent < 1_000_000 && err == nil; sent++ {
				err = c.write(flood.typ, 0, 0, flood.payload)
			}
			c.mu.Unlock()
			require.Error(t, err, "the server took %d %s frames unread", sent, flood.name)
			t.Logf("cut after %d frames: %v", sent, err)
			b := commitCycle(t, vesselB, uuid.Nil, "nav", 1)
			_, err = r.client(t, &other).Send(context.Background(), b.entries[0])
			require.NoError(t, err)
		})
	}
}

// A header list far over MaxHeaderBytes, in CONTINUATION frames, never
// reaches the Handler: the server refuses it (431) or ends the
// connection; it announces its bound in SETTINGS.
func TestHTTP2HeaderBomb(t *testing.T) {
	var g gauge
	r := startRig(t, rigConfig{wrap: g.wrap})
	cert := r.ca.vessel(t, vesselA)
	c := dialH2(t, r, &cert, 0)
	var extra []string
	value := string(bytes.Repeat([]byte("v"), 100))
	for i := range 4000 { // 400 KB of header list
		extra = append(extra, fmt.Sprintf("x-bomb-%04d", i), value)
	}
	block := postHeaders(2, extra...)
	const frag = 16 << 10
	typ, flags := byte(frameHeaders), byte(0)
	for len(block) > 0 {
		n := min(frag, len(block))
		if n == len(block) {
			flags |= flagEndHeaders
		}
		if c.write(typ, flags, 1, block[:n]) != nil {
			break // the server hung up
		}
		block, typ, flags = block[n:], frameContinuation, 0
	}
	_ = c.write(frameData, flagEndStream, 1, []byte("{}"))
	c.await(t, 5*time.Second, "refused", func(fs []frame, ended bool) bool { return streamAnswered(fs, ended, 1) })
	c.mu.Lock()
	v, ok := setting(c.frames, settingMaxHeaderListSize)
	c.mu.Unlock()
	assert.True(t, ok && v <= httpbinding.MaxHeaderBytes+320, "SETTINGS_MAX_HEADER_LIST_SIZE %d", v)
	assert.Zero(t, g.calls.Load(), "the bomb reached the Handler")
}

// A Publisher with as many entries in flight as the receiver's limit per
// vessel sends a cycle over one Client, over HTTP/2: every entry is
// delivered, none is answered 429, the snapshot activates, and the
// receiver never serves more than the limit at once.
func TestHTTP2PublishInFlight(t *testing.T) {
	var g gauge
	r := startRig(t, rigConfig{wrap: g.wrap})
	cert := r.ca.vessel(t, vesselA)
	b := commitCycle(t, vesselA, uuid.Nil, "nav", 1400)
	require.Greater(t, len(b.entries), 2*httpbinding.DefaultMaxInFlight)
	pub := outbox.NewPublisher(b.store, vesselA, r.client(t, &cert), outbox.WithReceiverV2(true), outbox.WithInFlight(httpbinding.DefaultMaxInFlight))
	pass, err := pub.Publish(context.Background())
	require.NoError(t, err)
	assert.Equal(t, len(b.entries), pass.Delivered)
	assert.Empty(t, pass.Failures)
	for _, ev := range r.events.of(httpbinding.EventMessage) {
		assert.Equal(t, http.StatusOK, ev.Status, "%s", ev.Outcome)
	}
	assert.Equal(t, g.calls.Load(), g.h2.Load(), "every request over HTTP/2")
	assert.LessOrEqual(t, g.most.Load(), int64(httpbinding.DefaultMaxInFlight))
	t.Logf("%d requests, at most %d at once", g.calls.Load(), g.most.Load())
	active, err := r.recv.Active(context.Background(), vesselA)
	require.NoError(t, err)
	assert.Equal(t, b.snapID, active.SnapshotID)
}
