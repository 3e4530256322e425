// Package agentcost measures what `sourcecatalog agent` costs on board —
// processor time and resident memory of the process — and how long a new
// device takes to become active ashore.
//
// A Boat is a fake Signal K server: the v1 full model of a catalog's
// records over HTTP (every value stamped with the time of the request,
// so an age bound keeps them live) and the delta stream over a
// websocket, which sends every cached value when a client connects, as
// signalk-server does for ?subscribe=self, and then a steady trickle of
// values of known paths. An Ashore is a receiver as `sourcecatalog serve`
// runs one. An Agent is the `sourcecatalog agent` binary as a child
// process between the two. Measure runs the phases the benchmark reports.
package agentcost

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/yachtmemory/sourcecatalog/catalog"
)

// boatSelf is the self vessel of a Boat's model and stream.
const boatSelf = "urn:mrn:signalk:uuid:c0d79334-4e25-4245-8892-54e8ccc8021d"

// startID is the serverStartId of a Boat's hello: one server start for
// the Boat's life.
const startID = "agentcost-start-1"

// stampHolder stands for the time of the request in a rendered model.
const stampHolder = "1999-01-01T00:00:00.000Z"

// A pair is a (path, source) the stream delivers, with a value.
type pair struct{ path, source, value string }

// A Boat is a fake Signal K server of a catalog's records. Its methods
// are safe for concurrent use.
type Boat struct {
	srv  *httptest.Server
	rate int // trickle values a second

	mu      sync.Mutex
	tree    map[string]any // vessels.<self>
	sources map[string]any
	model   []byte // rendered, stamps as stampHolder; nil when stale
	pairs   []pair // the trickle's, interleaved across sources
	streams map[chan []byte]struct{}
	added   int
}

// NewBoat serves recs (a valid catalog: every observation's path and
// source among them) as a Signal K server does, with a trickle of rate
// values a second over the delta stream. The caller must Close it.
//
// Each path record becomes a value object at its path, with its meta and
// its unit as meta.units, the value of its observation's type (null and
// unknown types, which Signal K would not report live, as a number) and
// the observation's source as $source; each source record becomes a
// provider entry of the sources tree named by its ref, with its label,
// type and meta. The model maps back to as many records as recs.
func NewBoat(recs []*catalog.Record, rate int) (*Boat, error) {
	b := &Boat{rate: rate, tree: map[string]any{}, sources: map[string]any{}, streams: map[chan []byte]struct{}{}}
	obs := map[string]catalog.Observation{}
	for _, r := range recs {
		if o, ok := r.AsObservation(); ok {
			obs[o.Path] = o
		}
	}
	bySource := map[string][]pair{}
	var order []string
	for _, r := range recs {
		switch r.Kind() {
		case catalog.KindPath:
			p, _ := r.AsPath()
			o, ok := obs[p.Path]
			if !ok {
				return nil, fmt.Errorf("agentcost: path %s has no observation", p.Path)
			}
			v := sampleOf(o.ValueType)
			if err := b.setLeaf(p, o.SourceRef, v); err != nil {
				return nil, err
			}
			if _, seen := bySource[o.SourceRef]; !seen {
				order = append(order, o.SourceRef)
			}
			bySource[o.SourceRef] = append(bySource[o.SourceRef], pair{p.Path, o.SourceRef, v})
		case catalog.KindSource:
			s, _ := r.AsSource()
			if err := b.setSource(s); err != nil {
				return nil, err
			}
		}
	}
	for k := 0; len(b.pairs) < len(obs); k++ { // each source in turn
		for _, src := range order {
			if ps := bySource[src]; k < len(ps) {
				b.pairs = append(b.pairs, ps[k])
			}
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /signalk", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"endpoints":{"v1":{"version":"2.32.0","signalk-http":"http://%s/signalk/v1/api/","signalk-ws":"ws://%s/signalk/v1/stream"}},"server":{"id":"signalk-server-node","version":"2.32.0"}}`, r.Host, r.Host)
	})
	mux.HandleFunc("GET /signalk/v1/api/", b.serveModel)
	mux.HandleFunc("GET /signalk/v1/stream", b.serveStream)
	b.srv = httptest.NewServer(mux)
	return b, nil
}

// URL is the server's base URL, for --signalk.
func (b *Boat) URL() string { return b.srv.URL }

// Close stops the server and its streams.
func (b *Boat) Close() {
	b.srv.CloseClientConnections()
	b.srv.Close()
}

// recordsPerDevice is how many records AddDevice adds to what the model
// maps to: a source, a path and its observation.
const recordsPerDevice = 3

// AddDevice adds a new source with one new path to the model and sends
// the path's value on every open stream, as a device switched on does.
// It returns the new path.
func (b *Boat) AddDevice() (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.added++
	n := fmt.Sprint(b.added)
	ref, path := "agentcost-new-"+n+".XX", "environment.agentcost.device"+n+".temperature"
	label, typ := "agentcost-new-"+n, "Plugin"
	if err := b.setSource(catalog.Source{SourceRef: ref, Label: &label, Type: &typ, Meta: []byte(`{"description":"a device added while the agent runs"}`)}); err != nil {
		return "", err
	}
	if err := b.setLeaf(catalog.Path{Path: path, Unit: catalog.UnitOf("K"), Meta: []byte(`{"description":"Temperature"}`)}, ref, "293.15"); err != nil {
		return "", err
	}
	d := deltaOf(pair{path, ref, "293.15"}, time.Now())
	for ch := range b.streams {
		select {
		case ch <- d:
		default: // a stream that does not read loses it, as over a real link
		}
	}
	return path, nil
}

// setLeaf puts the value object of p at its path. b.mu is held or b is
// not shared yet.
func (b *Boat) setLeaf(p catalog.Path, source, value string) error {
	meta := map[string]any{}
	if p.Meta != nil {
		if err := json.Unmarshal(p.Meta, &meta); err != nil {
			return fmt.Errorf("agentcost: meta of %s: %w", p.Path, err)
		}
	}
	if !p.Unit.IsUnknown() && !p.Unit.IsNone() {
		meta["units"] = p.Unit.Symbol()
	}
	node := b.tree
	segs := strings.Split(p.Path, ".")
	for _, s := range segs[:len(segs)-1] {
		next, ok := node[s].(map[string]any)
		if !ok {
			next = map[string]any{}
			node[s] = next
		}
		node = next
	}
	leaf := map[string]any{"value": json.RawMessage(value), "$source": source, "timestamp": stampHolder}
	if len(meta) > 0 {
		leaf["meta"] = meta
	}
	node[segs[len(segs)-1]] = leaf
	b.model = nil
	return nil
}

// setSource puts the provider entry of s. b.mu is held or b is not
// shared yet.
func (b *Boat) setSource(s catalog.Source) error {
	entry := map[string]any{}
	if s.Meta != nil {
		if err := json.Unmarshal(s.Meta, &entry); err != nil {
			return fmt.Errorf("agentcost: meta of %s: %w", s.SourceRef, err)
		}
	}
	if s.Label != nil {
		entry["label"] = *s.Label
	}
	if s.Type != nil {
		entry["type"] = *s.Type
	}
	b.sources[s.SourceRef] = entry
	b.model = nil
	return nil
}

// sampleOf returns a value of type t; null and unknown, which a live
// Signal K value never is, become a number.
func sampleOf(t catalog.ValueType) string {
	switch t {
	case catalog.String:
		return `"on"`
	case catalog.Boolean:
		return "true"
	case catalog.Position:
		return `{"latitude":37.9,"longitude":23.7}`
	case catalog.Object:
		return `{"state":"charging","mode":2}`
	case catalog.Array:
		return `[1,2,3]`
	}
	return "12.5"
}

// serveModel answers GET /signalk/v1/api/ with the full model, every
// timestamp the time of the request.
func (b *Boat) serveModel(w http.ResponseWriter, _ *http.Request) {
	b.mu.Lock()
	if b.model == nil {
		m, err := json.Marshal(map[string]any{
			"self": "vessels." + boatSelf, "version": "2.32.0",
			"vessels": map[string]any{boatSelf: b.tree}, "sources": b.sources,
		})
		if err != nil {
			b.mu.Unlock()
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		b.model = m
	}
	model := b.model
	b.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(bytes.ReplaceAll(model, []byte(stampHolder), []byte(stamp(time.Now()))))
}

// serveStream sends the hello, every cached value, and then the trickle
// and the values AddDevice sends, until the client leaves.
func (b *Boat) serveStream(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	ctx := c.CloseRead(r.Context())
	ch := make(chan []byte, 16)
	b.mu.Lock()
	b.streams[ch] = struct{}{}
	pairs := b.pairs
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.streams, ch)
		b.mu.Unlock()
	}()
	hello := `{"name":"boat","version":"2.32.0","self":"vessels.` + boatSelf + `","roles":["master","main"],"timestamp":"` + stamp(time.Now()) + `","serverStartId":"` + startID + `"}`
	if c.Write(ctx, websocket.MessageText, []byte(hello)) != nil {
		return
	}
	now := time.Now()
	for _, p := range pairs {
		if c.Write(ctx, websocket.MessageText, deltaOf(p, now)) != nil {
			return
		}
	}
	var tick <-chan time.Time
	if b.rate > 0 && len(pairs) > 0 {
		t := time.NewTicker(time.Second / time.Duration(b.rate))
		defer t.Stop()
		tick = t.C
	}
	for i := 0; ; {
		var msg []byte
		select {
		case <-ctx.Done():
			return
		case msg = <-ch:
		case now := <-tick:
			msg = deltaOf(pairs[i%len(pairs)], now)
			i++
		}
		if c.Write(ctx, websocket.MessageText, msg) != nil {
			return
		}
	}
}

// deltaOf returns a delta of one value of p, stamped at.
func deltaOf(p pair, at time.Time) []byte {
	return []byte(`{"context":"vessels.` + boatSelf + `","updates":[{"$source":"` + p.source + `","timestamp":"` + stamp(at) +
		`","values":[{"path":"` + p.path + `","value":` + p.value + `}]}]}`)
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
