package signalk

import (
	"context"
	"errors"
	"net/url"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
)

// Defaults of a Watch.
const (
	// DefaultDebounce is how long a Watch collects changes before it
	// wakes: a device that starts reports its paths over seconds, and one
	// scan should see them all. It is also the shortest time between two
	// wakes, however many changes a server sends.
	DefaultDebounce = 10 * time.Second
	// DefaultMaxDeltaBytes bounds one message of the delta stream; a
	// larger one ends the connection. signalk-server sends one update of a
	// few values a message, well under a kilobyte.
	DefaultMaxDeltaBytes = 256 << 10
	// DefaultMinBackoff and DefaultMaxBackoff bound the wait before a
	// Watch connects again after a connection failed or ended: it doubles
	// from the first to the second, and starts again from the first once
	// a connection has delivered its hello.
	DefaultMinBackoff = time.Second
	DefaultMaxBackoff = time.Minute
)

// WatchOptions configures a Watch; a zero field takes its default.
type WatchOptions struct {
	Debounce      time.Duration // default DefaultDebounce
	MaxDeltaBytes int64         // default DefaultMaxDeltaBytes
	MinBackoff    time.Duration // default DefaultMinBackoff
	MaxBackoff    time.Duration // default DefaultMaxBackoff
	// OnError, when set, is called with each error that ends a connection
	// (a *ScanError of class sourcecatalog.ErrIncompleteScan), from the
	// Watch's goroutine. The Watch connects again after its back-off.
	OnError func(error)

	// Test hooks.
	sleep  func(ctx context.Context, d time.Duration) bool // default: a timer or ctx
	onWake func(why string)
}

// A wakeReason says what made a Watch wake; tests read them.
const (
	wakeNewPath = "new path"
	wakeNulled  = "value nulled"
	wakeSilent  = "source silent"
)

// Watch follows the server's delta stream (SPEC.md §12.7) until ctx is
// done, and returns a channel that receives when a scan is worth doing
// before the next one due: a (path, source) pair the stream has not
// delivered before, a value of a known pair written null (a server's data
// timeout), or a source the stream has delivered nothing from for the
// Client's age bound (WithMaxAge; no silence is watched without one).
// Changes are collected for the debounce time before one wake is sent, so
// there is at most one wake per debounce time. The channel holds one wake
// and a wake is never blocked on: one pending absorbs the next. It is
// closed once ctx is done and the Watch has stopped.
//
// A wake is only a trigger: the full model read by Discover stays the
// only picture to commit, and a caller keeps scanning on its interval,
// since the stream may miss what a scan sees. The stream is opened at the
// discovery document's signalk-ws endpoint, of the server's own origin,
// with ?subscribe=self, the Client's token and TLS settings; each message
// is bounded (MaxDeltaBytes) and strict JSON, and a connection that fails,
// ends or sends anything else is closed and opened again after a back-off.
// The pairs a Watch knows are bounded by sourcecatalog.MaxRecords; a new
// pair beyond it wakes without being remembered. The first connection's
// cached values are new to a Watch that just started, so it wakes once
// after them; later connections replay what it knows and wake for what it
// does not.
func (c *Client) Watch(ctx context.Context, o WatchOptions) <-chan struct{} {
	if o.Debounce <= 0 {
		o.Debounce = DefaultDebounce
	}
	if o.MaxDeltaBytes <= 0 {
		o.MaxDeltaBytes = DefaultMaxDeltaBytes
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = DefaultMinBackoff
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(DefaultMaxBackoff, o.MinBackoff)
	}
	if o.sleep == nil {
		o.sleep = sleepCtx
	}
	w := &watch{c: c, o: o, out: make(chan struct{}, 1), sources: map[string]*watched{}}
	go w.run(ctx)
	return w.out
}

// sleepCtx waits d, and reports false when ctx is done first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// A watch is the state of one Watch.
type watch struct {
	c   *Client
	o   WatchOptions
	out chan struct{}

	mu      sync.Mutex
	sources map[string]*watched // by source ref
	pairs   int                 // paths known, over all sources
	pending *time.Timer         // the debounce timer of a wake to come
	closed  bool
}

// watched is what a Watch knows of one source.
type watched struct {
	last  time.Time // when the stream last delivered a value of it
	paths map[string]bool
}

func (w *watch) run(ctx context.Context) {
	defer func() {
		w.mu.Lock()
		w.closed = true
		if w.pending != nil {
			w.pending.Stop()
		}
		close(w.out)
		w.mu.Unlock()
	}()
	if w.c.maxAge > 0 {
		go w.watchSilence(ctx)
	}
	backoff := w.o.MinBackoff
	for ctx.Err() == nil {
		helloRead, err := w.connect(ctx)
		if ctx.Err() != nil {
			return
		}
		if helloRead {
			backoff = w.o.MinBackoff
		}
		if err != nil && w.o.OnError != nil {
			w.o.OnError(err)
		}
		if !w.o.sleep(ctx, backoff) {
			return
		}
		backoff = min(2*backoff, w.o.MaxBackoff)
	}
}

// connect opens the stream and reads it until it fails or ctx is done. It
// reports whether the hello was read.
func (w *watch) connect(ctx context.Context) (bool, error) {
	dialCtx, cancel := context.WithTimeout(ctx, w.c.timeout)
	defer cancel()
	_, stream, err := w.c.endpoints(dialCtx)
	if err != nil {
		return false, err
	}
	su, err := url.Parse(stream)
	if err != nil {
		return false, scanErr(ReasonModel, truncate(stream), "the stream endpoint is not a URL", nil)
	}
	q := su.Query()
	q.Set("subscribe", "self")
	su.RawQuery, su.Fragment = q.Encode(), ""
	where := truncate(stream)
	conn, resp, err := websocket.Dial(dialCtx, su.String(), &websocket.DialOptions{HTTPClient: w.c.http, HTTPHeader: w.c.header()})
	if err != nil {
		detail := "the stream could not be opened"
		if resp != nil {
			detail += ": " + truncate(resp.Status)
		}
		return false, scanErr(ReasonRequest, where, detail, flatten(err))
	}
	defer conn.CloseNow()
	conn.SetReadLimit(w.o.MaxDeltaBytes)
	self := ""
	for n := 0; ; n++ {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			return n > 0, scanErr(ReasonRequest, where, "the stream ended", flatten(err))
		}
		if typ != websocket.MessageText {
			return n > 0, scanErr(ReasonModel, where, "a stream message is not text", nil)
		}
		v, err := canonical.Parse(data)
		if err != nil || v.Kind() != canonical.KindObject {
			return n > 0, scanErr(ReasonJSON, where, "a stream message is not a strict JSON object", nil)
		}
		if n == 0 {
			if s := member(&v, "self"); s != nil && s.Kind() == canonical.KindString {
				self = s.Str()
			}
			continue
		}
		if err := w.delta(&v, self); err != nil {
			return true, scanErr(ReasonModel, where, err.Error(), nil)
		}
	}
}

// delta reads one delta message of the self vessel: its updates, each a
// $source and values, each a path and a value.
func (w *watch) delta(v *canonical.Value, self string) error {
	if ctxv := member(v, "context"); ctxv != nil {
		if ctxv.Kind() != canonical.KindString {
			return errors.New("a delta's context is not a string")
		}
		if c := ctxv.Str(); c != self && c != "vessels.self" {
			return nil // another vessel's, which subscribe=self should not send
		}
	}
	updates := member(v, "updates")
	if updates == nil {
		return nil // not a delta: a server's message of another kind
	}
	if updates.Kind() != canonical.KindArray {
		return errors.New("a delta's updates is not an array")
	}
	now := w.c.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, u := range updates.Elems() {
		if u.Kind() != canonical.KindObject {
			return errors.New("an update is not an object")
		}
		src := member(&u, "$source")
		values := member(&u, "values")
		if values == nil {
			continue // meta only
		}
		if src == nil || src.Kind() != canonical.KindString || src.Str() == "" || values.Kind() != canonical.KindArray {
			return errors.New("an update has no $source or its values are not an array")
		}
		for _, pv := range values.Elems() {
			var path, value *canonical.Value
			if pv.Kind() == canonical.KindObject {
				path, value = member(&pv, "path"), member(&pv, "value")
			}
			if path == nil || path.Kind() != canonical.KindString || value == nil {
				return errors.New("an update's value has no path or no value")
			}
			w.see(src.Str(), path.Str(), value.Kind() == canonical.KindNull, now)
		}
	}
	return nil
}

// see records one value of path from src, null or not, at now; w.mu is
// held.
func (w *watch) see(src, path string, null bool, now time.Time) {
	s := w.sources[src]
	if null {
		if s != nil && s.paths[path] {
			delete(s.paths, path)
			w.pairs--
			w.wake(wakeNulled)
		}
		return
	}
	if s == nil {
		if w.pairs >= sourcecatalog.MaxRecords {
			w.wake(wakeNewPath)
			return
		}
		s = &watched{paths: map[string]bool{}}
		w.sources[src] = s
	}
	s.last = now
	if !s.paths[path] {
		if w.pairs >= sourcecatalog.MaxRecords {
			w.wake(wakeNewPath)
			return
		}
		s.paths[path] = true
		w.pairs++
		w.wake(wakeNewPath)
	}
}

// watchSilence wakes for each source the stream has delivered nothing
// from for the Client's age bound, and forgets it, so that it is new
// again when it returns.
func (w *watch) watchSilence(ctx context.Context) {
	every := max(w.c.maxAge/8, time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := w.c.now()
		w.mu.Lock()
		for ref, s := range w.sources {
			if now.Sub(s.last) > w.c.maxAge {
				w.pairs -= len(s.paths)
				delete(w.sources, ref)
				w.wake(wakeSilent)
			}
		}
		w.mu.Unlock()
	}
}

// wake sends a wake a debounce time from now, unless one is pending; w.mu
// is held.
func (w *watch) wake(why string) {
	if w.o.onWake != nil {
		w.o.onWake(why)
	}
	if w.pending != nil || w.closed {
		return
	}
	w.pending = time.AfterFunc(w.o.Debounce, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.pending = nil
		if w.closed {
			return
		}
		select {
		case w.out <- struct{}{}:
		default: // one is pending already
		}
	})
}
