package signalk

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/catalog"
)

// A fakeServer answers as a Signal K server does: the discovery document,
// the full model and the stream's hello. Its fields may be changed
// between scans; api, when set, replaces the full model's handler.
type fakeServer struct {
	*httptest.Server
	mu        sync.Mutex
	model     string
	startIDs  []string // the hello's serverStartId, one per hello; the last repeats
	hellos    int
	discovery func(base string) string
	api       http.HandlerFunc
	auth      []string // Authorization headers seen
	self      string   // the hello's self
	rawHello  func() (websocket.MessageType, []byte)
	streamURL string // the stream's query as the client asked for it
}

func newFakeServer(t testing.TB, tls bool) *fakeServer {
	f := &fakeServer{model: model(`{"p":`+leaf("1", "n2k.160", "")+`}`, twoBuses), startIDs: []string{"start-1"},
		self: "vessels.urn:mrn:signalk:uuid:c0d79334-4e25-4245-8892-54e8ccc8021d"}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /signalk", func(w http.ResponseWriter, r *http.Request) {
		f.seen(r)
		base := "http://" + r.Host
		if r.TLS != nil {
			base = "https://" + r.Host
		}
		doc := `{"endpoints":{"v1":{"version":"2.32.0","signalk-http":"` + base + `/signalk/v1/api/","signalk-ws":"` + strings.Replace(base, "http", "ws", 1) + `/signalk/v1/stream"}},"server":{"id":"signalk-server-node","version":"2.32.0"}}`
		f.mu.Lock()
		if f.discovery != nil {
			doc = f.discovery(base)
		}
		f.mu.Unlock()
		w.Write([]byte(doc))
	})
	mux.HandleFunc("GET /signalk/v1/api/", func(w http.ResponseWriter, r *http.Request) {
		f.seen(r)
		f.mu.Lock()
		api, body := f.api, f.model
		f.mu.Unlock()
		if api != nil {
			api(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(body))
	})
	mux.HandleFunc("GET /signalk/v1/stream", func(w http.ResponseWriter, r *http.Request) {
		f.seen(r)
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer conn.CloseNow()
		f.mu.Lock()
		id := f.startIDs[min(f.hellos, len(f.startIDs)-1)]
		f.hellos++
		self, raw := f.self, f.rawHello
		f.streamURL = r.URL.RawQuery
		f.mu.Unlock()
		if raw != nil {
			typ, b := raw()
			conn.Write(r.Context(), typ, b)
			conn.Read(r.Context())
			return
		}
		hello := `{"name":"boat","version":"2.32.0","self":"` + self + `","roles":["master","main"],"timestamp":"2026-12-01T21:00:00.000Z"`
		if id != "" {
			hello += `,"serverStartId":"` + id + `"`
		}
		conn.Write(r.Context(), websocket.MessageText, []byte(hello+"}"))
		conn.Read(r.Context()) // until the client closes
	})
	if tls {
		f.Server = httptest.NewTLSServer(mux)
	} else {
		f.Server = httptest.NewServer(mux)
	}
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) seen(r *http.Request) {
	f.mu.Lock()
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	f.mu.Unlock()
}

func (f *fakeServer) set(fn func(f *fakeServer)) { f.mu.Lock(); fn(f); f.mu.Unlock() }

// A fakeClock is a clock a test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func newClient(t *testing.T, f *fakeServer, opts ...Option) *Client {
	opts = append([]Option{WithSettle(0), WithHTTPClient(f.Client())}, opts...)
	c, err := New(f.URL, opts...)
	require.NoError(t, err)
	return c
}

func TestDiscover(t *testing.T) {
	for _, tls := range []bool{false, true} {
		t.Run("tls="+strconv.FormatBool(tls), func(t *testing.T) {
			f := newFakeServer(t, tls)
			c := newClient(t, f, WithToken("s3cret"))
			rs, err := c.Discover(t.Context())
			require.NoError(t, err)
			want, err := Map([]byte(f.model), SelectLowestRef)
			require.NoError(t, err)
			require.Equal(t, canonicalRecords(want), canonicalRecords(rs))
			require.Len(t, rs, 3)
			for _, a := range f.auth {
				require.Equal(t, "Bearer s3cret", a, "every request carries the token")
			}
			require.Len(t, f.auth, 4, "discovery, hello, model, hello")
			require.Equal(t, "subscribe=none", f.streamURL)
		})
	}
}

func TestDiscoverSettles(t *testing.T) {
	f := newFakeServer(t, false)
	clock := &fakeClock{now: time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC)}
	c := newClient(t, f, WithSettle(time.Minute), withClock(clock.Now))

	_, err := c.Discover(t.Context())
	requireScanError(t, err, ReasonSettling)
	require.Equal(t, time.Minute, err.(*ScanError).RetryAfter())

	clock.Add(40 * time.Second)
	_, err = c.Discover(t.Context())
	requireScanError(t, err, ReasonSettling)
	require.Equal(t, 20*time.Second, err.(*ScanError).RetryAfter())

	clock.Add(20 * time.Second)
	rs, err := c.Discover(t.Context())
	require.NoError(t, err)
	require.NotEmpty(t, rs)

	// A new start id starts the settle time again.
	f.set(func(f *fakeServer) { f.startIDs = []string{"start-2"}; f.hellos = 0 })
	_, err = c.Discover(t.Context())
	requireScanError(t, err, ReasonSettling)
	clock.Add(time.Minute)
	_, err = c.Discover(t.Context())
	require.NoError(t, err)
}

func TestDiscoverRestartDuringScan(t *testing.T) {
	f := newFakeServer(t, false)
	f.startIDs = []string{"start-1", "start-2"}
	clock := &fakeClock{now: time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC)}
	c := newClient(t, f, WithSettle(time.Minute), withClock(clock.Now))
	c.startID, c.startSeen = "start-1", clock.Now().Add(-time.Hour) // settled long ago
	_, err := c.Discover(t.Context())
	requireScanError(t, err, ReasonRestarted)
	require.Equal(t, time.Minute, err.(*ScanError).RetryAfter())
	// The new start is settling now.
	_, err = c.Discover(t.Context())
	requireScanError(t, err, ReasonSettling)
}

// TestDiscoverHostile: a server answering badly gets an incomplete scan
// or the library's own class, within the bounds.
func TestDiscoverHostile(t *testing.T) {
	bigBody := func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"self":"`))
		chunk := bytes.Repeat([]byte("a"), 1<<20)
		for range 100 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		w.Write([]byte(`"}`))
	}
	tests := []struct {
		name   string
		opts   []Option
		setup  func(f *fakeServer)
		reason Reason
		class  error
	}{
		{"a body cut short", nil, func(f *fakeServer) {
			f.api = func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", strconv.Itoa(len(f.model)))
				w.Write([]byte(f.model[:len(f.model)/2]))
			}
		}, ReasonBody, nil},
		{"a chunked body cut short", nil, func(f *fakeServer) {
			f.api = func(w http.ResponseWriter, r *http.Request) {
				w.Write([]byte(f.model[:len(f.model)/2]))
				w.(http.Flusher).Flush()
				conn, _, _ := w.(http.Hijacker).Hijack()
				conn.Close()
			}
		}, ReasonBody, nil},
		{"a gzipped body cut short", nil, func(f *fakeServer) {
			f.api = func(w http.ResponseWriter, r *http.Request) {
				var b bytes.Buffer
				z := gzip.NewWriter(&b)
				z.Write([]byte(f.model))
				z.Close()
				w.Header().Set("Content-Encoding", "gzip")
				w.Write(b.Bytes()[:b.Len()-10])
			}
		}, ReasonBody, nil},
		{"100 MB body", nil, func(f *fakeServer) { f.api = bigBody }, ReasonBody, nil},
		{"a body over a small bound", []Option{WithMaxBytes(100)}, nil, ReasonBody, nil},
		{"a declared length over the bound", []Option{WithMaxBytes(100)}, func(f *fakeServer) {
			f.api = func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", "1000")
				w.Write(bytes.Repeat([]byte(" "), 1000))
			}
		}, ReasonBody, nil},
		{"10,000-deep nesting", nil, func(f *fakeServer) {
			f.model = strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
		}, ReasonJSON, nil},
		{"a byte a second", []Option{WithTimeout(300 * time.Millisecond)}, func(f *fakeServer) {
			f.api = func(w http.ResponseWriter, r *http.Request) {
				for i := range len(f.model) {
					if _, err := w.Write([]byte{f.model[i]}); err != nil {
						return
					}
					w.(http.Flusher).Flush()
					select {
					case <-time.After(time.Second):
					case <-r.Context().Done():
						return
					}
				}
			}
		}, ReasonBody, nil},
		{"401", nil, func(f *fakeServer) {
			f.api = func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", http.StatusUnauthorized) }
		}, ReasonRequest, nil},
		{"a redirect", nil, func(f *fakeServer) {
			f.api = func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Query().Has("moved") {
					w.Write([]byte(f.model))
					return
				}
				http.Redirect(w, r, "/signalk/v1/api/?moved", http.StatusFound)
			}
		}, ReasonRequest, nil},
		{"wrong types everywhere", nil, func(f *fakeServer) {
			f.model = `{"self":"vessels.a","vessels":{"a":{"p":{"value":1,"$source":["x"],"meta":7,"values":"v"}}},"sources":[]}`
		}, ReasonModel, nil},
		{"a $source naming nothing", nil, func(f *fakeServer) {
			f.model = model(`{"p":`+leaf("1", "n2k.7", "")+`}`, twoBuses)
		}, ReasonSource, nil},
		{"a self naming nothing", nil, func(f *fakeServer) {
			f.model = `{"self":"vessels.b","vessels":{"a":{}}}`
		}, ReasonSelf, nil},
		{"a self other than the stream's", nil, func(f *fakeServer) {
			f.model = `{"self":"vessels.b","vessels":{"b":{}},"sources":{}}`
		}, ReasonSelf, nil},
		{"a discovery document pointing elsewhere", nil, func(f *fakeServer) {
			f.discovery = func(base string) string {
				return `{"endpoints":{"v1":{"signalk-http":"http://127.0.0.2:1/signalk/v1/api/","signalk-ws":"ws://127.0.0.2:1/signalk/v1/stream"}}}`
			}
		}, ReasonModel, nil},
		{"a discovery document without v1", nil, func(f *fakeServer) {
			f.discovery = func(base string) string { return `{"endpoints":{}}` }
		}, ReasonModel, nil},
		{"a discovery document that is not JSON", nil, func(f *fakeServer) {
			f.discovery = func(base string) string { return `<html>` }
		}, ReasonModel, nil},
		{"a hello without a start id", nil, func(f *fakeServer) { f.startIDs = []string{""} }, ReasonModel, nil},
		{"a binary hello", nil, func(f *fakeServer) {
			f.rawHello = func() (websocket.MessageType, []byte) {
				return websocket.MessageBinary, []byte(`{"serverStartId":"s","self":"x"}`)
			}
		}, ReasonModel, nil},
		{"a hello that is not strict JSON", nil, func(f *fakeServer) {
			f.rawHello = func() (websocket.MessageType, []byte) {
				return websocket.MessageText, []byte(`{"serverStartId":"a","serverStartId":"b"}`)
			}
		}, ReasonJSON, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeServer(t, false)
			if tt.setup != nil {
				f.set(tt.setup)
			}
			c := newClient(t, f, tt.opts...)
			start := time.Now()
			rs, err := c.Discover(t.Context())
			require.Nil(t, rs)
			require.Less(t, time.Since(start), 20*time.Second, "a hang guard, not a speed target")
			if tt.class != nil {
				require.ErrorIs(t, err, tt.class)
				require.Equal(t, tt.class, sourcecatalog.Class(err))
				return
			}
			requireScanError(t, err, tt.reason)
		})
	}
}

// TestDiscoverBoundsMemory: a body far over the bound costs memory of the
// order of the bound, not of the body.
func TestDiscoverBoundsMemory(t *testing.T) {
	f := newFakeServer(t, false)
	f.api = func(w http.ResponseWriter, r *http.Request) {
		chunk := bytes.Repeat([]byte(" "), 1<<20)
		for range 64 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}
	c := newClient(t, f, WithMaxBytes(1<<20))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := c.Discover(t.Context())
	runtime.ReadMemStats(&after)
	requireScanError(t, err, ReasonBody)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(16<<20), "a 64 MiB body read against a 1 MiB bound")
}

func TestDiscoverUnreachable(t *testing.T) {
	c, err := New("http://127.0.0.1:1", WithSettle(0))
	require.NoError(t, err)
	_, err = c.Discover(t.Context())
	requireScanError(t, err, ReasonRequest)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	f := newFakeServer(t, false)
	_, err = newClient(t, f).Discover(ctx)
	requireScanError(t, err, ReasonRequest)
}

func TestNewRefuses(t *testing.T) {
	for _, tt := range []struct {
		server string
		opts   []Option
	}{
		{"ftp://boat", nil},
		{"http://", nil},
		{"boat:3000", nil},
		{"http://user:pw@boat", nil},
		{"http://boat?x=1", nil},
		{"http://boat#x", nil},
		{"http://boat", []Option{WithMaxBytes(0)}},
		{"http://boat", []Option{WithTimeout(0)}},
		{"http://boat", []Option{WithSettle(-1)}},
		{"http://boat", []Option{WithSelection(9)}},
		{"http://boat", []Option{WithHTTPClient(nil)}},
	} {
		_, err := New(tt.server, tt.opts...)
		require.ErrorIs(t, err, sourcecatalog.ErrInvalidValue, tt.server)
	}
}

func requireScanError(t *testing.T, err error, reason Reason) {
	t.Helper()
	var se *ScanError
	require.ErrorAs(t, err, &se)
	require.Equal(t, reason, se.Reason, "%v", err)
	require.Equal(t, sourcecatalog.ErrIncompleteScan, sourcecatalog.Class(err), "exactly one class: %v", err)
}

// TestDiscoverAgeBound: Discover measures ages from the timestamp of the
// server's hello after the model, with DefaultMaxAge unless set; a hello
// without one fails the scan while the bound is on.
func TestDiscoverAgeBound(t *testing.T) {
	f := newFakeServer(t, false) // the hello says 2026-12-01T21:00:00.000Z
	f.model = model(`{"fresh":`+strings.Replace(leaf("1", "n2k.160", ""), "21:00:00.000Z", "20:55:00.000Z", 1)+
		`,"stale":`+strings.Replace(leaf(`"GPS"`, "n2k.115", ""), "21:00:00.000Z", "20:54:59.999Z", 1)+`}`, twoBuses)
	paths := func(rs []*catalog.Record) (ps []string) {
		for _, r := range rs {
			if p, ok := r.AsPath(); ok {
				ps = append(ps, p.Path)
			}
		}
		return ps
	}
	rs, err := newClient(t, f).Discover(t.Context())
	require.NoError(t, err)
	require.Equal(t, []string{"fresh"}, paths(rs), "DefaultMaxAge before the hello's time")
	rs, err = newClient(t, f, WithMaxAge(0)).Discover(t.Context())
	require.NoError(t, err)
	require.Equal(t, []string{"fresh", "stale"}, paths(rs), "no bound")
	rs, err = newClient(t, f, WithMaxAge(time.Hour)).Discover(t.Context())
	require.NoError(t, err)
	require.Equal(t, []string{"fresh", "stale"}, paths(rs))

	f.set(func(f *fakeServer) {
		f.rawHello = func() (websocket.MessageType, []byte) {
			return websocket.MessageText, []byte(`{"self":"` + f.self + `","serverStartId":"s","timestamp":"yesterday"}`)
		}
	})
	_, err = newClient(t, f).Discover(t.Context())
	var se *ScanError
	require.ErrorAs(t, err, &se)
	require.Equal(t, ReasonModel, se.Reason, "%v", err)
	_, err = newClient(t, f, WithMaxAge(0)).Discover(t.Context())
	require.NoError(t, err, "without a bound the hello's time is not needed")

	_, err = New(f.URL, WithMaxAge(-time.Second))
	require.ErrorIs(t, err, sourcecatalog.ErrInvalidValue)
}
