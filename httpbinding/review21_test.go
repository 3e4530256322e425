package httpbinding_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// rawExchange writes req to a plain-HTTP server at addr and returns the
// status line of its answer: odd header spellings go out as written.
func rawExchange(t *testing.T, addr, req string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = io.WriteString(conn, req)
	require.NoError(t, err)
	line, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err)
	return strings.TrimSpace(line)
}

// Edges of the request coding (SPEC.md §11.1, §11.7): an empty body
// announced as gzip is not one member (400, nothing staged); a GET
// carrying Content-Encoding: gzip and no body is answered the
// declaration; a field name and value in odd case are the same field; a
// chunk reference inside a gzip body is staged as the whole chunk.
func TestReview21GzipEdges(t *testing.T) {
	store := memstore.New()
	recv := finalize.NewReceiver(store)
	h := httpbinding.NewHandler(recv, httpbinding.InsecureNoAuth(vesselA), httpbinding.WithChunkReferences(true))
	ts := httptest.NewServer(h)
	defer ts.Close()
	addr := strings.TrimPrefix(ts.URL, "http://")
	ctx := context.Background()

	empty := "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: 0\r\n\r\n"
	assert.Equal(t, "HTTP/1.1 400 Bad Request", rawExchange(t, addr, empty))
	u, err := recv.Usage(ctx, vesselA)
	require.NoError(t, err)
	assert.Zero(t, u.IncompleteBytes.Used, "nothing staged")

	get := "GET / HTTP/1.1\r\nHost: x\r\nAccept: application/json\r\nContent-Encoding: gzip\r\n\r\n"
	assert.Equal(t, "HTTP/1.1 200 OK", rawExchange(t, addr, get))
	getBody := "GET / HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\nContent-Length: 20\r\n\r\n" + string(gz(t, nil, 0))
	assert.Equal(t, "HTTP/1.1 400 Bad Request", rawExchange(t, addr, getBody), "a GET's body is never read")

	// The first cycle whole, plain; then its unchanged chunk 1 by
	// reference, gzipped, with odd spellings of the fields.
	first := newRefBoard(t)
	c1 := first.commit("nav", 40)
	for _, e := range c1.Entries {
		var err error
		if e.EntityType == sourcecatalog.ManifestEntityType {
			_, err = recv.ReceiveManifest(ctx, finalize.Origin{VesselID: vesselA}, e.Payload)
		} else {
			_, err = recv.ReceiveChunk(ctx, finalize.Origin{VesselID: vesselA}, e.Payload)
		}
		require.NoError(t, err)
	}
	c2 := first.commit("nav", 40)
	e := c2.Entries[1]
	ch, err := envelope.DecodeChunk(e.Payload)
	require.NoError(t, err)
	ref := e
	ref.EntityType, ref.Payload = sourcecatalog.ChunkRefEntityType, envelope.NewChunkRef(ch).Canonical()
	body := gz(t, wrap(ref), 0)
	req := "POST / HTTP/1.1\r\nHost: x\r\ncontent-type: Application/JSON; Charset=UTF-8\r\ncontent-ENCODING: GZip\r\nContent-Length: " +
		itoa(len(body)) + "\r\n\r\n" + string(body)
	assert.Equal(t, "HTTP/1.1 200 OK", rawExchange(t, addr, req))
	require.NoError(t, store.WithVessel(ctx, vesselA, func(tx finalize.Tx) error {
		got, err := tx.Chunk(ctx, e.SnapshotID, ch.Index())
		require.NoError(t, err)
		assert.Equal(t, string(e.Payload), string(got.Canonical), "the whole chunk is staged")
		return nil
	}))
}

func itoa(n int) string { return strconv.Itoa(n) }

// The text of a declaration as a sender reads it (SPEC.md §11.7): §3.4
// JSON, so whitespace and member order are free, a byte-order mark is
// malformed_json (not declared), a charset parameter is application/json;
// a 200 cut before its announced length is a failed attempt, never "not
// declared".
func TestReview21DeclarationText(t *testing.T) {
	cases := []struct {
		name, ctype, body string
		cut               bool
		want              outcome
		class             error
	}{
		{"whitespace", "application/json", " {\n\t\"capabilities\" : [ \"request_gzip\" ] ,\r\n\"protocols\":[\"yachtmemory.source-catalog.v2\"] }\n", false, declared, nil},
		{"members reversed", "application/json", `{"protocols":["yachtmemory.source-catalog.v2"],"capabilities":["request_gzip"]}`, false, declared, nil},
		{"charset", "application/json; charset=utf-8", declBoth, false, declared, nil},
		{"byte-order mark", "application/json", "\uFEFF" + declV2, false, badDecl, sourcecatalog.ErrMalformedJSON},
		{"escaped name", "application/json", `{"capabilities":["request\u005fgzip"],"protocols":["yachtmemory.source-catalog.v2"]}`, false, declared, nil},
		{"cut after the headers", "application/json", declBoth, true, failed, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.ctype)
				if !tc.cut {
					_, _ = io.WriteString(w, tc.body)
					return
				}
				w.Header().Set("Content-Length", itoa(len(tc.body)))
				w.WriteHeader(http.StatusOK)
				_, _ = io.WriteString(w, tc.body[:len(tc.body)/2])
				w.(http.Flusher).Flush()
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					conn.Close()
				}
			}))
			defer ts.Close()
			d, err := testClient(t, ts).Declaration(context.Background())
			switch tc.want {
			case declared:
				require.NoError(t, err)
				assert.True(t, d.Has(httpbinding.CapabilityRequestGzip))
			case badDecl:
				var de *httpbinding.DeclarationError
				require.ErrorAs(t, err, &de)
				assert.Equal(t, tc.class, de.Problem.Class)
				assert.ErrorIs(t, err, outbox.ErrCapabilityOff)
			case failed:
				require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable)
				assert.NotErrorIs(t, err, outbox.ErrCapabilityOff, "a cut answer is not a declaration of anything")
				assert.Equal(t, httpbinding.Declaration{}, d)
			}
		})
	}
}

// A receiver that downgrades switches the sender's compression and chunk
// references off at the next Open, and a failed attempt leaves both off
// (fail closed); two Publishers of one vessel sharing the auto gate race
// on nothing (run with -race).
func TestReview21GateDowngradeAndSharing(t *testing.T) {
	var mu sync.Mutex
	decl, status := declBoth, http.StatusOK
	var gzipped int
	recv := finalize.NewReceiver(memstore.New())
	h := httpbinding.NewHandler(recv, httpbinding.InsecureNoAuth(vesselA), httpbinding.WithChunkReferences(true))
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		d, s := decl, status
		if r.Header.Get("Content-Encoding") == "gzip" {
			gzipped++
		}
		mu.Unlock()
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(s)
			_, _ = io.WriteString(w, d)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer ts.Close()
	c := testClient(t, ts)
	g := httpbinding.NewGate(c)
	ctx := context.Background()
	_, err := g.Open(ctx)
	require.NoError(t, err)
	assert.True(t, g.ChunkReferences())

	set := func(d string, s int) { mu.Lock(); decl, status = d, s; mu.Unlock() }
	set(declV2, http.StatusOK)
	_, err = g.Open(ctx)
	require.NoError(t, err)
	assert.False(t, g.ChunkReferences(), "downgraded: no references")
	b := commitCycle(t, vesselA, [16]byte{}, "nav", 60)
	_, err = c.Send(ctx, b.entries[1])
	require.NoError(t, err)
	mu.Lock()
	assert.Zero(t, gzipped, "downgraded: no compression")
	mu.Unlock()

	set(declBoth, http.StatusOK)
	_, err = g.Open(ctx)
	require.NoError(t, err)
	require.True(t, g.ChunkReferences())
	set(declBoth, http.StatusServiceUnavailable)
	_, err = g.Open(ctx)
	require.Error(t, err)
	assert.False(t, g.ChunkReferences(), "a failed attempt leaves references off")

	// Two Publishers of one vessel, one outbox, one gate, concurrently.
	set(declBoth, http.StatusOK)
	board := newRefBoard(t)
	board.commit("nav", 150)
	board.commit("nav", 150)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := outbox.NewPublisher(board.store, vesselA, c, outbox.WithGate(g))
			for range 3 {
				if _, err := p.Publish(ctx); err != nil && !errors.Is(err, sourcecatalog.ErrConflict) {
					errs[i] = err
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		assert.NoError(t, err)
	}
	require.NoError(t, board.store.WithVessel(ctx, vesselA, func(tx outbox.Tx) error {
		pending, err := tx.Pending(ctx, 1000)
		assert.Empty(t, pending, "everything delivered")
		return err
	}))
}
