package httpbinding_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
)

// gz returns b as one gzip member at level (gzip.DefaultCompression for
// 0).
func gz(t testing.TB, b []byte, level int) []byte {
	t.Helper()
	if level == 0 {
		level = gzip.DefaultCompression
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, level)
	require.NoError(t, err)
	_, err = zw.Write(b)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// bombZeros is how many zeros the zip bomb inflates to: deflate's best
// ratio is about 1,032 to 1, so 30 MiB is the most whose gzip member fits
// the body cap.
const bombZeros = 30 << 20

var bomb = sync.OnceValue(func() []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zeros := make([]byte, 1<<20)
	for range bombZeros / len(zeros) {
		_, _ = zw.Write(zeros)
	}
	_ = zw.Close()
	return buf.Bytes()
})

// A plainRig is a Handler on a memstore served over plain HTTP on
// loopback, authenticating everyone as vesselA: fast, for what the body
// rules alone decide.
type plainRig struct {
	url    string
	recv   *finalize.Receiver
	events *eventLog
	// sent records each request's Content-Encoding and body length as
	// sent, before the Handler.
	mu   sync.Mutex
	sent []sentBody
}

type sentBody struct {
	encoding string
	length   int64
}

func startPlain(t *testing.T) *plainRig {
	t.Helper()
	r := &plainRig{recv: finalize.NewReceiver(memstore.New()), events: &eventLog{}}
	h := httpbinding.NewHandler(r.recv, httpbinding.InsecureNoAuth(vesselA), httpbinding.WithObserver(r.events.observe))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.sent = append(r.sent, sentBody{req.Header.Get("Content-Encoding"), req.ContentLength})
		r.mu.Unlock()
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.url = srv.URL + "/v2/messages"
	return r
}

// post sends body with the given Content-Encoding field lines (none for
// nil), chunked when chunked is set.
func (r *plainRig) post(t *testing.T, encodings []string, body []byte, chunked bool) (answer, bool) {
	t.Helper()
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableCompression: true}}
	defer hc.CloseIdleConnections()
	var rd io.Reader = bytes.NewReader(body)
	if chunked {
		rd = io.MultiReader(rd)
	}
	req, err := http.NewRequest(http.MethodPost, r.url, rd)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if encodings != nil {
		req.Header["Content-Encoding"] = encodings
	}
	resp, err := hc.Do(req)
	require.NoError(t, err, "the answer is read, not reset")
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	require.NoError(t, err)
	return answer{status: resp.StatusCode, header: resp.Header, body: b}, resp.Close
}

// nothingStaged checks that the receiver staged nothing for vesselA.
func (r *plainRig) nothingStaged(t *testing.T) {
	t.Helper()
	u, err := r.recv.Usage(context.Background(), vesselA)
	require.NoError(t, err)
	assert.Zero(t, u.IncompleteSnapshots.Used, "snapshots staged")
	assert.Zero(t, u.IncompleteBytes.Used, "bytes staged")
	assert.Zero(t, u.RetainedSnapshots.Used, "snapshots finalized")
}

// Hostile gzip bodies are refused and stage nothing: a zip bomb is 413
// after at most 32,769 decompressed bytes; a member that is not exactly
// one valid gzip member is 400 in plain text; a valid member of no JSON is
// malformed_json as the same bytes sent plain; a compressed body over the
// cap is 413 as a plain one. Every answer but the 422 closes the
// connection (SPEC.md §11.1).
func TestRequestGzipHostile(t *testing.T) {
	b := commitCycle(t, vesselA, uuid.Nil, "nav", 1)
	plain := wrap(b.entries[0])
	member := gz(t, plain, 0)
	flip := func(at int) []byte {
		c := bytes.Clone(member)
		c[len(c)+at] ^= 0x01
		return c
	}
	half := len(plain) / 2
	noise := make([]byte, 40<<10)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	incompressible := gz(t, noise, 0)
	require.Greater(t, len(incompressible), httpbinding.MaxRequestBody)
	require.LessOrEqual(t, len(bomb()), httpbinding.MaxRequestBody, "the bomb fits the body cap")
	cases := []struct {
		name    string
		body    []byte
		chunked bool
		status  int
		class   error // nil: plain text
		inflate bool  // decompressed past the cap
	}{
		{"a zip bomb of 30 MiB of zeros", bomb(), false, http.StatusRequestEntityTooLarge, sourcecatalog.ErrLimitExceeded, true},
		{"a zip bomb, chunked", bomb(), true, http.StatusRequestEntityTooLarge, sourcecatalog.ErrLimitExceeded, true},
		{"decompressing to 32,769 bytes", gz(t, padded(t, b, httpbinding.MaxRequestBody+1), 0), false, http.StatusRequestEntityTooLarge, sourcecatalog.ErrLimitExceeded, true},
		{"a bomb cut short", bomb()[:len(bomb())/2], false, http.StatusRequestEntityTooLarge, sourcecatalog.ErrLimitExceeded, true},
		{"over the compressed cap, announced", incompressible, false, http.StatusRequestEntityTooLarge, sourcecatalog.ErrLimitExceeded, false},
		{"over the compressed cap, chunked", incompressible, true, http.StatusRequestEntityTooLarge, sourcecatalog.ErrLimitExceeded, false},
		{"truncated in the deflate stream", member[:len(member)/2], false, http.StatusBadRequest, nil, false},
		{"truncated in the trailer", member[:len(member)-3], false, http.StatusBadRequest, nil, false},
		{"truncated in the header", member[:5], false, http.StatusBadRequest, nil, false},
		{"empty", nil, false, http.StatusBadRequest, nil, false},
		{"a bad CRC-32", flip(-8), false, http.StatusBadRequest, nil, false},
		{"a bad ISIZE", flip(-1), false, http.StatusBadRequest, nil, false},
		{"a bad magic", flip(-len(member)), false, http.StatusBadRequest, nil, false},
		{"a bad deflate stream", append(bytes.Clone(member[:10]), 0xff, 0xff, 0xff, 0xff), false, http.StatusBadRequest, nil, false},
		{"a trailing byte", append(bytes.Clone(member), 'x'), false, http.StatusBadRequest, nil, false},
		{"trailing zeros", append(bytes.Clone(member), 0, 0, 0, 0), false, http.StatusBadRequest, nil, false},
		{"two members making the request", append(gz(t, plain[:half], 0), gz(t, plain[half:], 0)...), false, http.StatusBadRequest, nil, false},
		{"the request twice", append(bytes.Clone(member), member...), false, http.StatusBadRequest, nil, false},
		{"the plain request said gzip", plain, false, http.StatusBadRequest, nil, false},
		{"a gzip of no JSON", gz(t, []byte("not json at all"), 0), false, http.StatusUnprocessableEntity, sourcecatalog.ErrMalformedJSON, false},
		{"a gzip of nothing", gz(t, nil, 0), false, http.StatusUnprocessableEntity, sourcecatalog.ErrMalformedJSON, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := startPlain(t)
			var most, calls atomic.Int64
			defer httpbinding.OnGunzip(func(n int) {
				calls.Add(1)
				if int64(n) > most.Load() {
					most.Store(int64(n))
				}
			})()
			a, closed := r.post(t, []string{"gzip"}, tc.body, tc.chunked)
			require.Equal(t, tc.status, a.status, "%s", a.body)
			if tc.class != nil {
				f := a.refusal(t)
				assert.Equal(t, tc.class, f.Class)
				assert.Equal(t, sourcecatalog.NoIndex, f.Chunk)
				assert.Empty(t, f.Field)
			} else {
				assert.Equal(t, "text/plain; charset=utf-8", a.header.Get("Content-Type"), "%s", a.body)
			}
			assert.Equal(t, tc.status != http.StatusUnprocessableEntity, closed, "the connection is closed after an early answer")
			assert.LessOrEqual(t, most.Load(), int64(httpbinding.MaxRequestBody+1), "decompressed bytes")
			if tc.inflate {
				assert.Equal(t, int64(httpbinding.MaxRequestBody+1), most.Load(), "the bomb was decompressed to one byte past the cap, no further")
			}
			if tc.status == http.StatusRequestEntityTooLarge && !tc.inflate {
				assert.Zero(t, calls.Load(), "a body over the compressed cap is not decompressed")
			}
			r.nothingStaged(t)
			ev := r.events.of(httpbinding.EventMessage)
			require.Len(t, ev, 1)
			assert.Equal(t, tc.status, ev[0].Status)
		})
	}
}

// The Content-Encoding field lines: none, identity and gzip (in any case)
// are the request; anything else is 415 unsupported before the body is
// read, and closes the connection. A gzip body's receipt is the plain
// body's: receipts are of the decompressed bytes.
func TestRequestGzipCodings(t *testing.T) {
	b := commitCycle(t, vesselA, uuid.Nil, "nav", 1)
	plain := wrap(b.entries[0])
	member := gz(t, plain, 0)
	cases := []struct {
		name      string
		encodings []string
		body      []byte
		status    int
	}{
		{"none", nil, plain, http.StatusOK},
		{"identity", []string{"identity"}, plain, http.StatusOK},
		{"Identity", []string{"Identity"}, plain, http.StatusOK},
		{"gzip", []string{"gzip"}, member, http.StatusOK},
		{"GZIP", []string{"GZIP"}, member, http.StatusOK},
		{"gzip at its best compression", []string{"gzip"}, gz(t, plain, gzip.BestCompression), http.StatusOK},
		{"gzip, uncompressed blocks", []string{"gzip"}, gz(t, plain, gzip.NoCompression), http.StatusOK},
		{"gzip of the request at the cap", []string{"gzip"}, gz(t, padded(t, b, httpbinding.MaxRequestBody), 0), http.StatusOK},
		{"gzip, gzip", []string{"gzip, gzip"}, gz(t, member, 0), http.StatusUnsupportedMediaType},
		{"two field lines", []string{"gzip", "gzip"}, gz(t, member, 0), http.StatusUnsupportedMediaType},
		{"gzip then identity", []string{"gzip", "identity"}, member, http.StatusUnsupportedMediaType},
		{"gzip, identity", []string{"gzip, identity"}, member, http.StatusUnsupportedMediaType},
		{"identity, gzip", []string{"identity, gzip"}, member, http.StatusUnsupportedMediaType},
		{"x-gzip", []string{"x-gzip"}, member, http.StatusUnsupportedMediaType},
		{"deflate", []string{"deflate"}, member, http.StatusUnsupportedMediaType},
		{"br", []string{"br"}, member, http.StatusUnsupportedMediaType},
		{"zstd", []string{"zstd"}, member, http.StatusUnsupportedMediaType},
		{"compress", []string{"compress"}, member, http.StatusUnsupportedMediaType},
		{"empty", []string{""}, plain, http.StatusUnsupportedMediaType},
		{"gzip with a parameter", []string{"gzip;q=1"}, member, http.StatusUnsupportedMediaType},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := startPlain(t)
			var calls atomic.Int64
			defer httpbinding.OnGunzip(func(int) { calls.Add(1) })()
			a, closed := r.post(t, tc.encodings, tc.body, false)
			require.Equal(t, tc.status, a.status, "%s", a.body)
			if tc.status == http.StatusOK {
				rc, err := envelope.DecodeReceipt(a.body)
				require.NoError(t, err)
				if bytes.Equal(tc.body, plain) || bytes.Equal(tc.body, member) {
					assert.True(t, rc.Matches(b.entries[0].Receipt()), "the receipt is the plain body's")
				}
				return
			}
			assert.Equal(t, sourcecatalog.ErrUnsupported, a.refusal(t).Class)
			assert.True(t, closed, "the connection is closed")
			assert.Zero(t, calls.Load(), "nothing is decompressed")
			r.nothingStaged(t)
		})
	}
}

// A gzip body cut while it is sent — the sender gone after part of it —
// is 400 and stages nothing, as a plain body cut short.
func TestRequestGzipCutWhileSent(t *testing.T) {
	b := commitCycle(t, vesselA, uuid.Nil, "nav", 1)
	member := gz(t, wrap(b.entries[0]), 0)
	r := startPlain(t)
	hc := &http.Client{Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	pr, pw := io.Pipe()
	req, err := http.NewRequest(http.MethodPost, r.url, pr)
	require.NoError(t, err)
	req.ContentLength = int64(len(member))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Encoding", "gzip")
	go func() {
		_, _ = pw.Write(member[:len(member)/2])
		pw.CloseWithError(fmt.Errorf("the sender is gone"))
	}()
	if resp, err := hc.Do(req); err == nil {
		resp.Body.Close()
	}
	require.Eventually(t, func() bool { return len(r.events.of(httpbinding.EventMessage)) == 1 }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, http.StatusBadRequest, r.events.of(httpbinding.EventMessage)[0].Status)
	r.nothingStaged(t)
}
