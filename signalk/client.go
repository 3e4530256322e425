package signalk

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
)

// Defaults of a Client's bounds (SPEC.md §12.6).
const (
	// DefaultMaxBytes bounds the full model's body, after any content
	// coding is removed: 32 MiB, room for a self tree of 25,600 records'
	// worth of paths with their metadata beside a busy AIS picture.
	DefaultMaxBytes = 32 << 20
	// DefaultTimeout bounds one scan, every request of it included.
	DefaultTimeout = 30 * time.Second
	// DefaultSettle is how long a server must have run, as this Client
	// has seen it, before its tree is trusted: after a start a server's
	// tree fills over tens of seconds as devices report, and NMEA 2000
	// device identity comes later still.
	DefaultSettle = 2 * time.Minute
	// DefaultMaxAge is the age bound of a value (SPEC.md §12.4): 5
	// minutes, the longest data timeout signalk-server's own staleness
	// enforcer derives for a periodic path (its AUTO_MAX_TIMEOUT_MS; its
	// fixed default is 60 s). A source silent for longer is not one a
	// periodic path is waiting for, while a slow source that writes a
	// configuration string once a minute or two does not flap out of the
	// picture between scans.
	DefaultMaxAge = 5 * time.Minute
)

// Smaller bounds of the small documents a scan reads.
const (
	maxDiscoveryBytes = 64 << 10
	maxHelloBytes     = 64 << 10
)

// A Client reads discovery cycles from one Signal K server over its v1
// REST API (SPEC.md §12). Keep one Client for the life of an on-board
// process: it remembers when it first saw the server's current start, which
// the settle time is measured from. A Client is safe for concurrent use.
type Client struct {
	server   *url.URL
	http     *http.Client
	token    string
	maxBytes int64
	timeout  time.Duration
	settle   time.Duration
	maxAge   time.Duration
	sel      Selection
	now      func() time.Time

	mu        sync.Mutex
	startID   string    // the server start last seen
	startSeen time.Time // when this Client first saw it
}

// An Option configures a Client.
type Option func(*Client)

// WithToken sends token as a bearer token (Signal K security on) with
// every request, which only ever go to the server's own origin.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithHTTPClient makes requests through hc, for TLS settings (a private
// CA, a client certificate) or a proxy. Its redirect policy is replaced:
// a scan follows no redirect. The default is a client with Go's default
// transport.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithMaxBytes bounds the full model's body to n bytes (default
// DefaultMaxBytes); a larger one is an incomplete scan.
func WithMaxBytes(n int64) Option { return func(c *Client) { c.maxBytes = n } }

// WithTimeout bounds each scan to d (default DefaultTimeout).
func WithTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// WithSettle sets the settle time (default DefaultSettle); 0 trusts a
// server's tree as soon as the Client has seen its start, which suits
// tests, not boats.
func WithSettle(d time.Duration) Option { return func(c *Client) { c.settle = d } }

// WithMaxAge sets the age bound of a value (default DefaultMaxAge): a
// value whose timestamp is older than d before the server's time, as its
// hello after the model states it, is not live (SPEC.md §12.4). 0 turns
// the bound off, leaving only null values not live.
func WithMaxAge(d time.Duration) Option { return func(c *Client) { c.maxAge = d } }

// WithSelection sets how the source of a path fed by several live sources
// is chosen (default SelectLowestRef).
func WithSelection(s Selection) Option { return func(c *Client) { c.sel = s } }

// withClock replaces time.Now, for tests.
func withClock(now func() time.Time) Option { return func(c *Client) { c.now = now } }

// New returns a Client for the Signal K server at server, an http or
// https URL such as "http://localhost:3000" (a path, if any, is where the
// server's /signalk discovery document lives below). It returns an error
// wrapping sourcecatalog.ErrInvalidValue for another URL or an option
// out of range; it does not contact the server.
func New(server string, opts ...Option) (*Client, error) {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "signalk: server "+strconv.Quote(truncate(server))+" is not an http or https URL without credentials, query or fragment")
	}
	c := &Client{
		server: u, http: &http.Client{}, maxBytes: DefaultMaxBytes,
		timeout: DefaultTimeout, settle: DefaultSettle, maxAge: DefaultMaxAge, now: time.Now,
	}
	for _, o := range opts {
		o(c)
	}
	switch {
	case c.http == nil:
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "signalk: nil HTTP client")
	case c.maxBytes < 1:
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "signalk: max bytes must be at least 1")
	case c.timeout <= 0:
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "signalk: timeout must be positive")
	case c.settle < 0:
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "signalk: settle time must not be negative")
	case c.maxAge < 0:
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "signalk: maximum age must not be negative")
	case c.sel > SelectServer:
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "signalk: unknown selection")
	}
	hc := *c.http
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.http = &hc
	return c, nil
}

// Discover reads one discovery cycle and returns the records of what the
// vessel currently selects, in canonical order, as Map makes them from
// the server's full model under the Client's age bound, measured from
// the timestamp of the hello read after the model (SPEC.md §12, §12.4).
//
// A scan reads the server's start id from its WebSocket hello, the full
// model in one response, and the start id again. It is an incomplete scan
// — a *ScanError, class sourcecatalog.ErrIncompleteScan, nothing to
// commit — when any request fails or answers other than 2xx, a body is
// cut short or over its bound, the scan's time bound passes, an answer is
// not what the v1 API defines (a hello after the model without a
// timestamp, with the age bound on, included), the server started less than the settle
// time before the scan as this Client has seen it (ReasonSettling) or
// restarted during it (ReasonRestarted), both with RetryAfter set, or Map
// refuses the model. Map's other errors are returned as they are.
func (c *Client) Discover(ctx context.Context) ([]*catalog.Record, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	api, stream, err := c.endpoints(ctx)
	if err != nil {
		return nil, err
	}
	before, err := c.hello(ctx, stream)
	if err != nil {
		return nil, err
	}
	if err := c.settled(before); err != nil {
		return nil, err
	}
	model, err := c.get(ctx, api, c.maxBytes)
	if err != nil {
		return nil, err
	}
	after, err := c.hello(ctx, stream)
	if err != nil {
		return nil, err
	}
	if after.ServerStartID != before.ServerStartID {
		c.settled(after) // start the settle time of the new start
		return nil, &ScanError{Reason: ReasonRestarted, Where: truncate(stream), Detail: "the server restarted during the scan", Retry: c.settle}
	}
	age := AgeBound{Now: after.Timestamp, MaxAge: c.maxAge}
	if age.MaxAge > 0 && age.Now.IsZero() {
		return nil, scanErr(ReasonModel, truncate(stream), "the hello carries no timestamp, so the age of values cannot be told", nil)
	}
	records, self, err := mapModel(model, c.sel, age)
	if err != nil {
		return nil, err
	}
	if after.Self != "" && vesselKey(after.Self) != self {
		return nil, scanErr(ReasonSelf, "self", "the model's self is not the vessel the stream announced", nil)
	}
	return records, nil
}

// settled records h's start and reports a ScanError with ReasonSettling
// unless this Client first saw that start at least the settle time ago.
func (c *Client) settled(h hello) error {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if h.ServerStartID != c.startID {
		c.startID, c.startSeen = h.ServerStartID, now
	}
	if wait := c.settle - now.Sub(c.startSeen); wait > 0 {
		return &ScanError{Reason: ReasonSettling, Detail: "the server started less than the settle time ago (" + c.settle.String() + ")", Retry: wait}
	}
	return nil
}

// endpoints reads the server's discovery document and returns its v1
// REST and stream URLs, which must be of the server's own origin.
func (c *Client) endpoints(ctx context.Context) (api, stream string, err error) {
	where := c.server.JoinPath("signalk").String()
	body, err := c.get(ctx, where, maxDiscoveryBytes)
	if err != nil {
		return "", "", err
	}
	var doc struct {
		Endpoints struct {
			V1 struct {
				HTTP string `json:"signalk-http"`
				WS   string `json:"signalk-ws"`
			} `json:"v1"`
		} `json:"endpoints"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return "", "", scanErr(ReasonModel, where, "the discovery document is not what Signal K defines", nil)
	}
	wsScheme := map[string]string{"http": "ws", "https": "wss"}[c.server.Scheme]
	for _, e := range []struct {
		raw    *string
		scheme string
	}{{&doc.Endpoints.V1.HTTP, c.server.Scheme}, {&doc.Endpoints.V1.WS, wsScheme}} {
		u, err := url.Parse(*e.raw)
		if *e.raw == "" || err != nil || u.Scheme != e.scheme || u.Host != c.server.Host || u.User != nil {
			return "", "", scanErr(ReasonModel, where, "a v1 endpoint is missing or not of the server's origin: "+strconv.Quote(truncate(*e.raw)), nil)
		}
	}
	return doc.Endpoints.V1.HTTP, doc.Endpoints.V1.WS, nil
}

// A hello is what a scan reads of the first message of a Signal K
// WebSocket stream.
type hello struct {
	ServerStartID string
	Self          string
	Timestamp     time.Time // zero when the hello has no RFC 3339 timestamp
}

// hello opens the stream without subscribing, reads its hello and closes
// it.
func (c *Client) hello(ctx context.Context, stream string) (hello, error) {
	su, err := url.Parse(stream)
	if err != nil {
		return hello{}, scanErr(ReasonModel, truncate(stream), "the stream endpoint is not a URL", nil)
	}
	q := su.Query()
	q.Set("subscribe", "none")
	su.RawQuery, su.Fragment = q.Encode(), ""
	u := su.String()
	stream = truncate(stream) // for errors: it is the server's text
	conn, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: c.http, HTTPHeader: c.header()})
	if err != nil {
		detail := "the stream could not be opened"
		if resp != nil {
			detail += ": " + truncate(resp.Status)
		}
		return hello{}, scanErr(ReasonRequest, stream, detail, flatten(err))
	}
	defer conn.CloseNow()
	conn.SetReadLimit(maxHelloBytes)
	typ, data, err := conn.Read(ctx)
	if err != nil {
		return hello{}, scanErr(ReasonRequest, stream, "no hello", flatten(err))
	}
	if typ != websocket.MessageText {
		return hello{}, scanErr(ReasonModel, stream, "the hello is not a text message", nil)
	}
	v, err := canonical.Parse(data)
	if err != nil || v.Kind() != canonical.KindObject {
		return hello{}, scanErr(ReasonJSON, stream, "the hello is not a strict JSON object", nil)
	}
	var h hello
	if id := member(&v, "serverStartId"); id != nil && id.Kind() == canonical.KindString {
		h.ServerStartID = id.Str()
	}
	if self := member(&v, "self"); self != nil && self.Kind() == canonical.KindString {
		h.Self = self.Str()
	}
	if ts := member(&v, "timestamp"); ts != nil && ts.Kind() == canonical.KindString {
		h.Timestamp, _ = time.Parse(time.RFC3339Nano, ts.Str()) // zero when it is not one
	}
	if h.ServerStartID == "" {
		return hello{}, scanErr(ReasonModel, stream, "the hello carries no serverStartId, so restarts cannot be seen", nil)
	}
	return h, nil
}

// get reads u's body, of at most max bytes.
func (c *Client) get(ctx context.Context, u string, max int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	u = truncate(u) // for errors: it may be the server's text
	if err != nil {
		return nil, scanErr(ReasonRequest, u, "bad request", flatten(err))
	}
	req.Header = c.header()
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, scanErr(ReasonRequest, u, "no answer", flatten(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, scanErr(ReasonRequest, u, "answered "+truncate(resp.Status), nil)
	}
	if resp.ContentLength > max {
		return nil, scanErr(ReasonBody, u, "the body is over "+strconv.FormatInt(max, 10)+" bytes", nil)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	switch {
	case err != nil:
		return nil, scanErr(ReasonBody, u, "the body was cut short", flatten(err))
	case int64(len(b)) > max:
		return nil, scanErr(ReasonBody, u, "the body is over "+strconv.FormatInt(max, 10)+" bytes", nil)
	}
	return b, nil
}

func (c *Client) header() http.Header {
	h := http.Header{}
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	return h
}
