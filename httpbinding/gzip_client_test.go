package httpbinding_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/internal/faultproxy"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// captureRequest starts a loopback listener that reads one request as
// its bytes, answers 503 and hangs up, and returns its URL and the
// request's bytes once sent.
func captureRequest(t *testing.T) (string, <-chan []byte) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	got := make(chan []byte, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		var raw bytes.Buffer
		br := bufio.NewReader(io.TeeReader(conn, &raw))
		length := 0
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if k, v, ok := strings.Cut(strings.TrimSpace(line), ": "); ok && strings.EqualFold(k, "Content-Length") {
				length, _ = strconv.Atoi(v)
			}
			if line == "\r\n" {
				break
			}
		}
		if _, err := io.CopyN(io.Discard, br, int64(length)); err != nil {
			return
		}
		got <- raw.Bytes()[:raw.Len()-br.Buffered()]
		_, _ = io.WriteString(conn, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	}()
	return "http://" + ln.Addr().String() + "/v2/messages", got
}

// sendRaw sends e with a Client of opts to a capturing listener and
// returns the request's bytes.
func sendRaw(t *testing.T, e outbox.Entry, opts ...httpbinding.ClientOption) []byte {
	t.Helper()
	url, got := captureRequest(t)
	c, err := httpbinding.NewClient(url, append([]httpbinding.ClientOption{httpbinding.WithTimeout(10 * time.Second)}, opts...)...)
	require.NoError(t, err)
	defer c.CloseIdleConnections()
	_, err = c.Send(context.Background(), e)
	require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable, "the listener answers 503")
	select {
	case raw := <-got:
		return raw
	case <-time.After(10 * time.Second):
		t.Fatal("no request arrived")
		return nil
	}
}

// Without WithRequestCompression a Client sends exactly what it sent
// before there was compression, byte for byte; with it, a body whose gzip
// member is shorter goes as that member with Content-Encoding: gzip, and
// one whose member is not goes plain.
func TestClientCompression(t *testing.T) {
	b := commitCycle(t, vesselA, uuid.Nil, "nav", 120)
	tiny := outbox.Entry{EntityType: sourcecatalog.ManifestEntityType, EntityKey: "k", Payload: []byte("{}")}
	require.GreaterOrEqual(t, len(gz(t, wrap(tiny), gzip.BestCompression)), len(wrap(tiny)), "the tiny entry does not compress")
	for _, e := range []outbox.Entry{b.entries[0], b.entries[1], tiny} {
		t.Run(fmt.Sprintf("%s %d bytes", e.EntityType, len(wrap(e))), func(t *testing.T) {
			body := wrap(e)
			raw := sendRaw(t, e)
			want := "POST /v2/messages HTTP/1.1\r\nHost: " + hostOf(raw) + "\r\nUser-Agent: Go-http-client/1.1\r\n" +
				"Content-Length: " + strconv.Itoa(len(body)) + "\r\nAccept: application/json\r\nContent-Type: application/json\r\n\r\n" + string(body)
			assert.Equal(t, want, string(raw), "without the option, the request of before")

			raw = sendRaw(t, e, httpbinding.WithRequestCompression())
			req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
			require.NoError(t, err)
			sent, err := io.ReadAll(req.Body)
			require.NoError(t, err)
			member := gz(t, body, gzip.BestCompression)
			if len(member) >= len(body) {
				assert.Empty(t, req.Header.Values("Content-Encoding"), "an entry that does not shrink goes plain")
				assert.Equal(t, body, sent)
				return
			}
			assert.Equal(t, []string{"gzip"}, req.Header.Values("Content-Encoding"))
			assert.Equal(t, member, sent, "one member at the best compression, no name or time")
			assert.Equal(t, int64(len(sent)), req.ContentLength)
			zr, err := gzip.NewReader(bytes.NewReader(sent))
			require.NoError(t, err)
			decoded, err := io.ReadAll(zr)
			require.NoError(t, err)
			assert.Equal(t, body, decoded)
		})
	}
}

// hostOf returns the Host field of a raw request.
func hostOf(raw []byte) string {
	for _, line := range strings.Split(string(raw), "\r\n") {
		if h, ok := strings.CutPrefix(line, "Host: "); ok {
			return h
		}
	}
	return ""
}

// exampleBoard commits the example boat's records for vesselA.
func exampleBoard(t *testing.T) *board {
	t.Helper()
	return commitRecords(t, vesselA, uuid.Nil, examples.Boat())
}

// A snapshot published with compression on, through the real Handler on
// a memstore, is staged and activated as one sent plain: every body went
// gzipped and shorter, every receipt matches its entry, and a resend of
// each, compressed, is already_received.
func TestPublishCompressed(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		board func(t *testing.T) *board
	}{
		{"the example boat", exampleBoard},
		{"a synthetic boat", func(t *testing.T) *board { return commitCycle(t, vesselA, uuid.Nil, "nav", 120) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startPlain(t)
			c, err := httpbinding.NewClient(r.url, httpbinding.WithRequestCompression(), httpbinding.WithTimeout(10*time.Second))
			require.NoError(t, err)
			defer c.CloseIdleConnections()
			b := tc.board(t)
			pass, err := outbox.NewPublisher(b.store, vesselA, c, outbox.WithReceiverV2(true)).Publish(ctx)
			require.NoError(t, err)
			assert.Equal(t, outbox.Pass{Sent: len(b.entries), Delivered: len(b.entries)}, noBytes(pass))
			active, err := r.recv.Active(ctx, vesselA)
			require.NoError(t, err)
			assert.Equal(t, b.snapID, active.SnapshotID)
			fin := r.events.of(httpbinding.EventFinalize)
			require.Len(t, fin, 1)
			assert.Equal(t, finalize.Activated, fin[0].Finalize.Status)
			r.mu.Lock()
			sent := r.sent
			r.mu.Unlock()
			require.Len(t, sent, len(b.entries))
			var plainBytes, gzipBytes int
			for i, s := range sent {
				assert.Equal(t, "gzip", s.encoding, "request %d", i)
				gzipBytes += int(s.length)
			}
			for _, e := range b.entries {
				plainBytes += len(wrap(e))
				rc, err := c.Send(ctx, e)
				require.NoError(t, err)
				assert.Equal(t, envelope.AlreadyReceived, rc.Status)
				assert.True(t, rc.Matches(e.Receipt()), "the receipt is of the decompressed bytes")
			}
			t.Logf("%d entries: %d bytes plain, %d gzipped (%.1f %%)", len(b.entries), plainBytes, gzipBytes, 100*float64(gzipBytes)/float64(plainBytes))
			assert.Less(t, gzipBytes, plainBytes/2)
		})
	}
}

// A compressed body cut on its way — the proxy relays half of the
// request's second TLS record, in its body, and hangs up — stages
// nothing and is a transient failure; the resend is staged, and the
// snapshot activates.
func TestCompressedBodyCutIsResent(t *testing.T) {
	ctx := context.Background()
	r := startRig(t, rigConfig{tlsMax: tls.VersionTLS12, http1: true})
	p, err := faultproxy.Start(faultproxy.Config{Target: r.addr})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	cert := r.ca.vessel(t, vesselA)
	c, err := httpbinding.NewClient("https://"+p.Addr()+"/v2/messages", httpbinding.WithTLSConfig(r.tlsFor(&cert)),
		httpbinding.WithTimeout(10*time.Second), httpbinding.WithRequestCompression())
	require.NoError(t, err)
	defer c.CloseIdleConnections()
	b := exampleBoard(t)
	chunk := b.entries[1]
	require.Greater(t, len(gz(t, wrap(chunk), 0)), 3000, "the compressed chunk spans several TLS records")

	p.CutRequest(2)
	_, err = c.Send(ctx, chunk)
	require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable)
	assert.Equal(t, sourcecatalog.ErrStoreUnavailable, sourcecatalog.Class(err), "a cut request is transient: %v", err)
	assert.Equal(t, 1, p.Counts().RequestCuts)
	require.Eventually(t, func() bool { return len(r.events.of(httpbinding.EventMessage)) == 1 }, 5*time.Second, 10*time.Millisecond)
	ev := r.events.of(httpbinding.EventMessage)[0]
	assert.Equal(t, http.StatusBadRequest, ev.Status, "the Handler read a body cut short: %v", ev.Err)
	u, err := r.recv.Usage(ctx, vesselA)
	require.NoError(t, err)
	assert.Zero(t, u.IncompleteSnapshots.Used, "nothing staged")
	assert.Zero(t, u.IncompleteBytes.Used, "nothing staged")

	rc, err := c.Send(ctx, chunk)
	require.NoError(t, err)
	assert.Equal(t, envelope.Staged, rc.Status)
	assert.True(t, rc.Matches(chunk.Receipt()))
	pass, err := outbox.NewPublisher(b.store, vesselA, c, outbox.WithReceiverV2(true)).Publish(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, pass.Failed)
	active, err := r.recv.Active(ctx, vesselA)
	require.NoError(t, err)
	assert.Equal(t, b.snapID, active.SnapshotID)
}
