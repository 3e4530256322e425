package linksim

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// echoServer accepts connections and echoes each until its end of
// stream, then closes it.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

func start(t *testing.T, target string, p Profile) *Proxy {
	t.Helper()
	px, err := Start(target, p)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, px.Close()) })
	return px
}

// Lower bounds only: timers never fire early, so a byte can never arrive
// sooner than the link allows, however loaded the machine.

func TestNoByteArrivesBeforeTheDelay(t *testing.T) {
	const delay = 40 * time.Millisecond
	px := start(t, echoServer(t), Profile{Delay: delay})
	t0 := time.Now()
	c, err := net.Dial("tcp", px.Addr())
	require.NoError(t, err)
	defer c.Close()
	buf := make([]byte, 1)
	_, err = c.Write([]byte{'a'})
	require.NoError(t, err)
	_, err = io.ReadFull(c, buf)
	require.NoError(t, err)
	// The handshake's round trip, then the byte there and back.
	require.GreaterOrEqual(t, time.Since(t0), 4*delay, "the first echo on a new connection")

	t1 := time.Now()
	_, err = c.Write([]byte{'b'})
	require.NoError(t, err)
	_, err = io.ReadFull(c, buf)
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(t1), 2*delay, "an echo on an open connection")
	require.Equal(t, byte('b'), buf[0])
}

func TestThroughputIsBoundedByTheRate(t *testing.T) {
	const n = 48 << 10
	for _, tc := range []struct {
		name string
		p    Profile
		rate int64 // the slower of the two ways
	}{
		{"up", Profile{Delay: time.Millisecond, Up: 64 << 10}, 64 << 10},
		{"down", Profile{Delay: time.Millisecond, Down: 48 << 10}, 48 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			px := start(t, echoServer(t), tc.p)
			c, err := net.Dial("tcp", px.Addr())
			require.NoError(t, err)
			defer c.Close()
			require.NoError(t, c.SetDeadline(time.Now().Add(20*time.Second))) // fail, not hang
			data := bytes.Repeat([]byte("0123456789abcdef"), n/16)
			t0 := time.Now()
			go func() {
				_, _ = c.Write(data)
				_ = c.(*net.TCPConn).CloseWrite()
			}()
			got, err := io.ReadAll(c)
			require.NoError(t, err)
			require.Equal(t, data, got, "every byte echoed, in order")
			require.GreaterOrEqual(t, time.Since(t0), time.Duration(n)*time.Second/time.Duration(tc.rate)+2*tc.p.Delay,
				"%d bytes through a line of %d B/s", n, tc.rate)
			c0 := px.Counts()
			require.Equal(t, Counts{Conns: 1, Up: n, Down: n}, c0)
		})
	}
}

// The schedule is pipelined: a segment read while others are in flight
// leaves when the line is free, not when those before it arrived.
func TestScheduleIsPipelined(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := &line{delay: 300 * time.Millisecond, rate: 1000} // 1 ms a byte
	require.Equal(t, t0.Add(310*time.Millisecond), l.schedule(t0, 10))
	// Read 1 ms later, while the first is on the line: it queues behind
	// it on the line, and flies with it.
	require.Equal(t, t0.Add(320*time.Millisecond), l.schedule(t0.Add(time.Millisecond), 10))
	// Read once the line is idle: it leaves at once.
	require.Equal(t, t0.Add(time.Second+305*time.Millisecond), l.schedule(t0.Add(time.Second), 5))

	unlimited := &line{delay: 300 * time.Millisecond}
	require.Equal(t, t0.Add(300*time.Millisecond), unlimited.schedule(t0, 1<<20))
	require.Equal(t, t0.Add(300*time.Millisecond), unlimited.schedule(t0, 1<<20))
}

func TestHalfCloseCarriesTheAnswer(t *testing.T) {
	// The server answers after the client's end of stream: the proxy
	// passes the half-close on and keeps the other way open.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		req, _ := io.ReadAll(c)
		_, _ = c.Write(append([]byte("got "), req...))
	}()
	px := start(t, ln.Addr().String(), Profile{Delay: time.Millisecond, Up: 1 << 20, Down: 1 << 20})
	c, err := net.Dial("tcp", px.Addr())
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second))) // fail, not hang, without the half-close
	_, err = c.Write([]byte("ping"))
	require.NoError(t, err)
	require.NoError(t, c.(*net.TCPConn).CloseWrite())
	got, err := io.ReadAll(c)
	require.NoError(t, err)
	require.Equal(t, "got ping", string(got))
}

func TestStartRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		target string
		p      Profile
	}{
		{"negative delay", "127.0.0.1:1", Profile{Delay: -1}},
		{"negative up", "127.0.0.1:1", Profile{Up: -1}},
		{"negative down", "127.0.0.1:1", Profile{Down: -1}},
		{"no target", "", Profile{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			px, err := Start(tc.target, tc.p)
			require.Error(t, err)
			require.Nil(t, px)
		})
	}
}

func TestProfile(t *testing.T) {
	require.Equal(t, 600*time.Millisecond, VSAT.RTT())
	require.Equal(t, time.Second, VSAT.Serialise(32000), "256 kbit/s up")
	require.Equal(t, time.Duration(0), Profile{}.Serialise(1<<20), "unlimited")
}
