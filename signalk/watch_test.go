package signalk

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
)

// A streamServer serves the discovery document and a delta stream whose
// every connection, numbered from 0, is handed to serve.
type streamServer struct {
	*httptest.Server
	mu      sync.Mutex
	conns   int
	queries []string
}

const watchSelf = "vessels.urn:mrn:signalk:uuid:c0d79334-4e25-4245-8892-54e8ccc8021d"

func newStreamServer(t *testing.T, serve func(ctx context.Context, c *websocket.Conn, n int)) *streamServer {
	s := &streamServer{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /signalk", func(w http.ResponseWriter, r *http.Request) {
		base := "http://" + r.Host
		w.Write([]byte(`{"endpoints":{"v1":{"signalk-http":"` + base + `/signalk/v1/api/","signalk-ws":"ws://` + r.Host + `/signalk/v1/stream"}}}`))
	})
	mux.HandleFunc("GET /signalk/v1/stream", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		n := s.conns
		s.conns++
		s.queries = append(s.queries, r.URL.RawQuery)
		s.mu.Unlock()
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		serve(r.Context(), c, n)
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func (s *streamServer) connections() int { s.mu.Lock(); defer s.mu.Unlock(); return s.conns }

func writeHello(ctx context.Context, c *websocket.Conn) {
	c.Write(ctx, websocket.MessageText, []byte(`{"name":"boat","version":"2.32.0","self":"`+watchSelf+`","roles":["master","main"],"timestamp":"2026-12-01T21:00:00.000Z","serverStartId":"s1"}`))
}

// delta returns a delta of one value of path from src.
func delta(src, path, value string) []byte {
	return []byte(`{"context":"` + watchSelf + `","updates":[{"$source":"` + src + `","timestamp":"2026-12-01T21:00:00.000Z","values":[{"path":"` + path + `","value":` + value + `}]}]}`)
}

// A wakeLog collects a Watch's wake reasons and errors.
type wakeLog struct {
	mu     sync.Mutex
	whys   []string
	errs   []error
	sleeps []time.Duration
	signal chan struct{}
}

func newWakeLog() *wakeLog { return &wakeLog{signal: make(chan struct{}, 1000)} }

func (l *wakeLog) options(o WatchOptions) WatchOptions {
	o.onWake = func(why string) {
		l.mu.Lock()
		l.whys = append(l.whys, why)
		l.mu.Unlock()
		l.signal <- struct{}{}
	}
	o.OnError = func(err error) {
		l.mu.Lock()
		l.errs = append(l.errs, err)
		l.mu.Unlock()
		l.signal <- struct{}{}
	}
	if o.sleep == nil {
		o.sleep = func(ctx context.Context, d time.Duration) bool {
			l.mu.Lock()
			l.sleeps = append(l.sleeps, d)
			l.mu.Unlock()
			return sleepCtx(ctx, time.Millisecond)
		}
	}
	return o
}

// until waits for the log to satisfy cond, failing the test when ctx ends.
func (l *wakeLog) until(t *testing.T, ctx context.Context, cond func(whys []string, errs []error) bool) {
	t.Helper()
	for {
		l.mu.Lock()
		ok := cond(append([]string(nil), l.whys...), append([]error(nil), l.errs...))
		l.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-l.signal:
		case <-ctx.Done():
			l.mu.Lock()
			defer l.mu.Unlock()
			t.Fatalf("not reached: wakes %v, errors %v", l.whys, l.errs)
		}
	}
}

func watchClient(t *testing.T, s *streamServer, opts ...Option) *Client {
	c, err := New(s.URL, append([]Option{WithHTTPClient(s.Client())}, opts...)...)
	require.NoError(t, err)
	return c
}

func count(whys []string, why string) int {
	n := 0
	for _, w := range whys {
		if w == why {
			n++
		}
	}
	return n
}

// TestWatchWakes: a new path or source wakes, a known one again does
// not, a value written null wakes, and a reconnection replaying what the
// Watch knows does not wake; the wake reaches the channel after the
// debounce, once for a burst.
func TestWatchWakes(t *testing.T) {
	step := make(chan int)
	s := newStreamServer(t, func(ctx context.Context, c *websocket.Conn, n int) {
		writeHello(ctx, c)
		if n == 0 {
			c.Write(ctx, websocket.MessageText, delta("n2k.115", "environment.depth.belowTransducer", "4.2"))
			c.Write(ctx, websocket.MessageText, delta("n2k.115", "environment.depth.belowTransducer", "4.3"))
			c.Write(ctx, websocket.MessageText, delta("n2k.160", "environment.depth.belowTransducer", "4.1"))
			<-step
			c.Write(ctx, websocket.MessageText, delta("n2k.160", "environment.depth.belowTransducer", "null"))
			<-step
			c.Close(websocket.StatusNormalClosure, "bye")
			return
		}
		// The second connection replays the cached values, then one new path.
		c.Write(ctx, websocket.MessageText, delta("n2k.115", "environment.depth.belowTransducer", "4.2"))
		c.Write(ctx, websocket.MessageText, delta("n2k.115", "navigation.gnss.type", `"GPS"`))
		c.Read(ctx)
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	l := newWakeLog()
	wakes := watchClient(t, s, WithMaxAge(0)).Watch(ctx, l.options(WatchOptions{Debounce: time.Millisecond}))
	l.until(t, ctx, func(whys []string, _ []error) bool { return len(whys) == 2 })
	<-wakes
	step <- 1
	l.until(t, ctx, func(whys []string, _ []error) bool { return len(whys) == 3 })
	step <- 2
	l.until(t, ctx, func(whys []string, errs []error) bool { return len(whys) == 4 })
	l.mu.Lock()
	require.Equal(t, []string{wakeNewPath, wakeNewPath, wakeNulled, wakeNewPath}, l.whys,
		"the repeated value and the replayed one woke nothing")
	require.Len(t, l.errs, 1, "the closed connection")
	l.mu.Unlock()
	require.Equal(t, []string{"subscribe=self", "subscribe=self"}, s.queries)
	<-wakes
	cancel()
	for range wakes {
	}
}

// TestWatchSilentSource: a source the stream delivers nothing from for the
// age bound wakes once and is forgotten: when it returns it is new.
func TestWatchSilentSource(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC)}
	again := make(chan struct{})
	s := newStreamServer(t, func(ctx context.Context, c *websocket.Conn, n int) {
		writeHello(ctx, c)
		c.Write(ctx, websocket.MessageText, delta("n2k.115", "environment.depth.belowTransducer", "4.2"))
		<-again
		c.Write(ctx, websocket.MessageText, delta("n2k.115", "environment.depth.belowTransducer", "4.2"))
		c.Read(ctx)
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	l := newWakeLog()
	c := watchClient(t, s, WithMaxAge(40*time.Millisecond), withClock(clock.Now))
	c.Watch(ctx, l.options(WatchOptions{Debounce: time.Millisecond}))
	l.until(t, ctx, func(whys []string, _ []error) bool { return len(whys) == 1 })
	clock.Add(40 * time.Millisecond)
	time.Sleep(20 * time.Millisecond) // checks at the bound itself find nothing silent
	l.mu.Lock()
	require.Equal(t, []string{wakeNewPath}, l.whys, "exactly the bound old is not silent")
	l.mu.Unlock()
	clock.Add(time.Millisecond)
	l.until(t, ctx, func(whys []string, _ []error) bool { return count(whys, wakeSilent) == 1 })
	close(again)
	l.until(t, ctx, func(whys []string, _ []error) bool { return count(whys, wakeNewPath) == 2 })
}

// TestWatchHostile: a frame over the bound, text that is not strict JSON,
// a binary frame, a delta of the wrong shape and a refused upgrade each
// end the connection with an error and a back-off, doubling up to its
// bound and reset after a hello, and wake nothing.
func TestWatchHostile(t *testing.T) {
	msgs := [][]byte{
		append(append([]byte(`{"context":"`+watchSelf+`","x":"`), strings.Repeat("a", 2048)...), `"}`...),
		[]byte(`{"updates":[], "updates":[]}`),
		nil, // binary
		[]byte(`{"context":"` + watchSelf + `","updates":[{"$source":"n2k.1","values":{"path":"a","value":1}}]}`),
		[]byte(`{"context":"` + watchSelf + `","updates":[{"values":[{"path":"a","value":1}]}]}`),
		[]byte(`{"context":7,"updates":[]}`),
	}
	s := newStreamServer(t, func(ctx context.Context, c *websocket.Conn, n int) {
		writeHello(ctx, c)
		if n >= len(msgs) {
			c.Read(ctx)
			return
		}
		if msgs[n] == nil {
			c.Write(ctx, websocket.MessageBinary, []byte("{}"))
		} else {
			c.Write(ctx, websocket.MessageText, msgs[n])
		}
		c.Read(ctx)
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	l := newWakeLog()
	watchClient(t, s, WithMaxAge(0)).Watch(ctx, l.options(WatchOptions{MaxDeltaBytes: 1024, MinBackoff: time.Second, MaxBackoff: 4 * time.Second}))
	l.until(t, ctx, func(_ []string, errs []error) bool { return len(errs) == len(msgs) })
	l.mu.Lock()
	defer l.mu.Unlock()
	require.Empty(t, l.whys)
	for _, err := range l.errs {
		require.ErrorIs(t, err, sourcecatalog.ErrIncompleteScan)
	}
	require.Equal(t, time.Second, l.sleeps[0], "each connection delivered its hello: the back-off starts again")
	require.Equal(t, time.Second, l.sleeps[len(l.sleeps)-1])
}

// TestWatchBackoff: connections that fail before their hello wait ever
// longer, up to the bound; the channel closes when ctx is done.
func TestWatchBackoff(t *testing.T) {
	s := newStreamServer(t, func(ctx context.Context, c *websocket.Conn, n int) {
		c.Close(websocket.StatusInternalError, "no")
	})
	ctx, cancel := context.WithCancel(t.Context())
	l := newWakeLog()
	wakes := watchClient(t, s).Watch(ctx, l.options(WatchOptions{MinBackoff: time.Second, MaxBackoff: 4 * time.Second}))
	l.until(t, ctx, func(_ []string, errs []error) bool { return len(errs) >= 5 })
	cancel()
	for range wakes {
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	require.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second}, l.sleeps[:4])
}

// TestWatchBoundsPairs: past sourcecatalog.MaxRecords pairs a new one
// wakes without being remembered.
func TestWatchBoundsPairs(t *testing.T) {
	w := &watch{c: &Client{}, o: WatchOptions{Debounce: time.Hour}, out: make(chan struct{}, 1), sources: map[string]*watched{}}
	var whys []string
	w.o.onWake = func(why string) { whys = append(whys, why) }
	now := time.Now()
	for i := range sourcecatalog.MaxRecords + 10 {
		w.see("n2k.1", "p"+strconv.Itoa(i), false, now)
	}
	require.Equal(t, sourcecatalog.MaxRecords, w.pairs)
	require.Len(t, whys, sourcecatalog.MaxRecords+10)
	w.pending.Stop()
}
