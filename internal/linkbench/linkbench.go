// Package linkbench measures what publishing a boat's cycles costs over
// a far link, against the floor that link allows, both measured in the
// same run through the same simulated link (internal/linksim).
//
// A Rig runs a receiver as `sourcecatalog serve` does — receiver.New on
// SQLite, HTTP/2 over TLS (httpbinding.NewServer), a bearer token —
// behind a linksim proxy, and a floor server behind another proxy of the
// same profile. Cycles commits and publishes three discovery cycles of a
// boat as `sourcecatalog publish --receiver-v2=auto` does
// (agent.NewSender over a SQLite outbox, GateAuto): a first snapshot, an
// identical one and one with 1 % of its paths' units changed. Each is
// timed from the commit to the end of the publish, its requests counted
// at the receiver and its bytes at the proxy, and checked: the
// receiver's active snapshot is the one committed, with the document's
// hash. Its floor is one POST through the floor's proxy carrying as many
// bytes up as the cycle did, answered by a tiny answer: one round trip
// and the bytes at the up rate, over an open connection — and for a
// cold cycle over a new one, whose TCP and TLS handshakes the floor pays
// too.
package linkbench

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/agent"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/httpbinding/inventory"
	"github.com/yachtmemory/sourcecatalog/internal/linksim"
	"github.com/yachtmemory/sourcecatalog/internal/testpki"
	"github.com/yachtmemory/sourcecatalog/outbox"
	"github.com/yachtmemory/sourcecatalog/receiver"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// The cycles' names, in the order Cycles runs them.
const (
	First     = "first"
	Identical = "identical"
	Changed   = "changed-1pct"
)

// A Cycle is what one commit and publish cost.
type Cycle struct {
	Name  string
	Wall  time.Duration // from the commit to the end of the publish
	Floor time.Duration // the floor measured for it
	// Requests counts the requests the receiver answered: POSTs and the
	// declaration's GETs.
	Requests, GETs int
	// Up and Down count the bytes that crossed the link, TCP's payload
	// (TLS and HTTP/2 framing included).
	Up, Down int64
	Report   agent.Report
}

// Ratio is the wall time over the floor.
func (c Cycle) Ratio() float64 { return float64(c.Wall) / float64(c.Floor) }

// A Rig is a receiver and a floor server, each behind a proxy of one
// profile.
type Rig struct {
	dir       string
	profile   linksim.Profile
	svc       *receiver.Service
	servers   []*http.Server
	proxy     *linksim.Proxy // to the receiver
	floor     *linksim.Proxy // to the floor server
	roots     *x509.CertPool
	caFile    string
	tokens    *tokenAuth
	posts     atomic.Int64
	gets      atomic.Int64
	stopRecon context.CancelFunc
}

// Start starts a Rig over the link p, keeping its files in dir. The
// caller must Close it.
func Start(ctx context.Context, dir string, p linksim.Profile) (_ *Rig, err error) {
	r := &Rig{dir: dir, profile: p, tokens: &tokenAuth{}}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	ca, err := testpki.NewCA("linkbench")
	if err != nil {
		return nil, err
	}
	cert, err := ca.Server()
	if err != nil {
		return nil, err
	}
	r.roots = x509.NewCertPool()
	r.roots.AppendCertsFromPEM(ca.CertPEM())
	r.caFile = filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(r.caFile, ca.CertPEM(), 0o600); err != nil {
		return nil, err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	r.svc, err = receiver.New(ctx, receiver.Config{
		Store: sqlitestore.Source(filepath.Join(dir, "receiver.db")), Retention: receiver.Keep(8),
		Auth: r.tokens, Logger: quiet,
	})
	if err != nil {
		return nil, err
	}
	reconCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	r.stopRecon = stop
	go func() { _ = r.svc.Run(reconCtx) }()
	counted := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodGet {
			r.gets.Add(1)
		} else {
			r.posts.Add(1)
		}
		r.svc.Handler().ServeHTTP(w, req)
	})
	tc := httpbinding.ServerTLSConfig(cert, nil)
	if r.proxy, err = r.serve(counted, tc); err != nil {
		return nil, err
	}
	tiny := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		w.WriteHeader(http.StatusNoContent)
	})
	if r.floor, err = r.serve(tiny, tc); err != nil {
		return nil, err
	}
	return r, nil
}

// serve serves h over TLS as httpbinding.NewServer does, behind a proxy
// of the rig's profile.
func (r *Rig) serve(h http.Handler, tc *tls.Config) (*linksim.Proxy, error) {
	srv, err := httpbinding.NewServer("", h, tc, httpbinding.Timeouts{}, nil)
	if err != nil {
		return nil, err
	}
	srv.ErrorLog = nil
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r.servers = append(r.servers, srv)
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	return linksim.Start(ln.Addr().String(), r.profile)
}

// Close stops the servers and the proxies and closes the receiver's
// store.
func (r *Rig) Close() error {
	var errs []error
	for _, px := range []*linksim.Proxy{r.proxy, r.floor} {
		if px != nil {
			errs = append(errs, px.Close())
		}
	}
	for _, srv := range r.servers {
		errs = append(errs, srv.Close())
	}
	if r.stopRecon != nil {
		r.stopRecon()
	}
	if r.svc != nil {
		errs = append(errs, r.svc.Close())
	}
	return errors.Join(errs...)
}

// Cycles commits and publishes the three cycles of recs for a new vessel
// (First, Identical, Changed) and measures each beside its floor. Cold,
// each cycle is a new Sender — a new connection and a fresh reading of
// the declaration, as a `publish` process is; warm, one Sender publishes
// all three, its connection open and the declaration read before the
// first. It returns an error when a publish fails, leaves entries
// pending, or the receiver's active snapshot is not the one committed.
func (r *Rig) Cycles(ctx context.Context, recs []*catalog.Record, cold bool) ([]Cycle, error) {
	vessel := uuid.New()
	token := make([]byte, 24)
	_, _ = rand.Read(token)
	tokenFile := filepath.Join(r.dir, vessel.String()+".token")
	if err := os.WriteFile(tokenFile, []byte(hex.EncodeToString(token)+"\n"), 0o600); err != nil {
		return nil, err
	}
	if err := r.tokens.add(hex.EncodeToString(token), vessel); err != nil {
		return nil, err
	}
	outboxStore, err := sqlitestore.Open(ctx, filepath.Join(r.dir, vessel.String()+".outbox.db"))
	if err != nil {
		return nil, err
	}
	defer outboxStore.Close()
	cfg := agent.Config{
		Vessel: vessel, Store: outboxStore.Outbox(), URL: "https://" + r.proxy.Addr() + "/v2/messages",
		CAFile: r.caFile, TokenFile: tokenFile, Gate: agent.GateAuto,
	}
	var warm *agent.Sender
	if !cold {
		if warm, err = agent.NewSender(cfg); err != nil {
			return nil, err
		}
		defer warm.Close()
		// Nothing pending: the pass reads the declaration, opening the
		// connection.
		if _, err := warm.Publish(ctx, outbox.DrainOptions{}); err != nil {
			return nil, fmt.Errorf("linkbench: warming the connection: %w", err)
		}
	}
	floor, err := r.newFloorClient(ctx, cold)
	if err != nil {
		return nil, err
	}
	defer floor.close()
	paths := 0
	for _, rec := range recs {
		if rec.Kind() == catalog.KindPath {
			paths++
		}
	}
	docs := []struct {
		name string
		recs []*catalog.Record
	}{{First, recs}, {Identical, recs}, {Changed, examples.WithChangedUnits(recs, max(1, paths/100))}}
	var out []Cycle
	for _, d := range docs {
		s := warm
		if cold {
			if s, err = agent.NewSender(cfg); err != nil {
				return nil, err
			}
		}
		c, err := r.cycle(ctx, s, vessel, d.recs)
		if cold {
			s.Close()
		}
		if err != nil {
			return nil, fmt.Errorf("linkbench: the %s cycle: %w", d.name, err)
		}
		c.Name = d.name
		if c.Floor, err = floor.post(ctx, c.Up); err != nil {
			return nil, fmt.Errorf("linkbench: the floor of the %s cycle: %w", d.name, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// cycle commits recs with s, publishes them and checks that the receiver
// activated them.
func (r *Rig) cycle(ctx context.Context, s *agent.Sender, vessel uuid.UUID, recs []*catalog.Record) (Cycle, error) {
	posts, gets, link := r.posts.Load(), r.gets.Load(), r.proxy.Counts()
	t0 := time.Now()
	com, err := s.Commit(ctx, recs)
	if err != nil {
		return Cycle{}, err
	}
	rep, err := s.Publish(ctx, outbox.DrainOptions{Until: t0.Add(5 * time.Minute)})
	wall := time.Since(t0)
	if err != nil {
		return Cycle{}, err
	}
	if rep.Pending != 0 || rep.Outcome != outbox.Drained {
		return Cycle{}, fmt.Errorf("publish ended %s with %d pending", rep.Outcome, rep.Pending)
	}
	// The answers are in before the publish ends: every byte counted.
	d := r.proxy.Counts().Sub(link)
	c := Cycle{
		Wall: wall, Requests: int(r.posts.Load()-posts) + int(r.gets.Load()-gets), GETs: int(r.gets.Load() - gets),
		Up: d.Up, Down: d.Down, Report: rep,
	}
	return c, r.checkActive(vessel, com)
}

// checkActive checks that the receiver's active snapshot of vessel is
// com's, with the document hash its manifest states.
func (r *Rig) checkActive(vessel uuid.UUID, com outbox.Commit) error {
	m, err := envelope.DecodeManifest(com.Entries[0].Payload)
	if err != nil {
		return err
	}
	rec := httptest.NewRecorder()
	r.svc.Admin().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/vessels/"+vessel.String()+"/inventory?limit=1", nil))
	if rec.Code != http.StatusOK {
		return fmt.Errorf("the receiver's inventory answered %d: %s", rec.Code, rec.Body.Bytes())
	}
	var page inventory.Page
	if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
		return err
	}
	if page.SnapshotID != m.SnapshotID || page.DocumentSHA256 != m.DocumentSHA256.String() {
		return fmt.Errorf("the receiver's active snapshot is %s (document %s), not the committed %s (document %s)",
			page.SnapshotID, page.DocumentSHA256, m.SnapshotID, m.DocumentSHA256)
	}
	return nil
}

// A floorClient posts floor requests through the floor's proxy.
type floorClient struct {
	r     *Rig
	cold  bool
	hc    *http.Client
	extra int64 // bytes up of an empty POST, on the link
}

// newFloorClient returns a floor client: warm, over a connection opened
// now; cold, over a new connection for each POST. It measures the bytes
// an empty POST puts on the link, which a floor request leaves out of its
// body.
func (r *Rig) newFloorClient(ctx context.Context, cold bool) (*floorClient, error) {
	f := &floorClient{r: r, cold: cold, hc: r.floorHTTP()}
	if !cold {
		if err := f.do(ctx, 0); err != nil { // the connection, and HTTP/2's first exchanges
			return nil, err
		}
	}
	c0 := r.floor.Counts()
	if _, err := f.post(ctx, 0); err != nil {
		return nil, err
	}
	f.extra = r.floor.Counts().Sub(c0).Up
	return f, nil
}

// floorHTTP returns an HTTP/2 client of the floor server, over TLS as
// httpbinding.Client's.
func (r *Rig) floorHTTP() *http.Client {
	tc := httpbinding.ClientTLSConfig(r.roots, nil)
	tc.NextProtos = []string{"h2", "http/1.1"}
	var protocols http.Protocols
	protocols.SetHTTP2(true)
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tc, Protocols: &protocols, DisableCompression: true}}
}

func (f *floorClient) close() { f.hc.CloseIdleConnections() }

// post times one POST putting up bytes on the link, its answer read:
// over a new connection when cold.
func (f *floorClient) post(ctx context.Context, up int64) (time.Duration, error) {
	if f.cold {
		f.hc.CloseIdleConnections()
		f.hc = f.r.floorHTTP()
	}
	t0 := time.Now()
	err := f.do(ctx, max(0, up-f.extra))
	return time.Since(t0), err
}

// do posts a body of n bytes to the floor server.
func (f *floorClient) do(ctx context.Context, n int64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+f.r.floor.Addr()+"/", bytes.NewReader(make([]byte, n)))
	if err != nil {
		return err
	}
	resp, err := f.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("the floor server answered %d", resp.StatusCode)
	}
	return nil
}

// tokenAuth is httpbinding.Tokens over a token file that grows: a vessel
// is added for each run of Cycles.
type tokenAuth struct {
	mu     sync.Mutex
	lines  []string
	tokens atomic.Pointer[httpbinding.Tokens]
}

// add lists token for vessel.
func (a *tokenAuth) add(token string, vessel uuid.UUID) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	lines := append(a.lines, httpbinding.TokenHash(token, vessel))
	t, err := httpbinding.ParseTokens(strings.NewReader(strings.Join(lines, "\n") + "\n"))
	if err != nil {
		return err
	}
	a.lines = lines
	a.tokens.Store(t)
	return nil
}

// Authenticate is httpbinding.Tokens's; with no token listed yet, every
// request is refused.
func (a *tokenAuth) Authenticate(req *http.Request) (finalize.Origin, error) {
	t := a.tokens.Load()
	if t == nil {
		return finalize.Origin{}, httpbinding.ErrBadCredentials
	}
	return t.Authenticate(req)
}

// Challenge is httpbinding.Tokens's.
func (a *tokenAuth) Challenge(err error) string { return (&httpbinding.Tokens{}).Challenge(err) }
