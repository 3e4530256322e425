// Package inventory serves a vessel's active catalog as JSON over HTTP,
// read-only, for operators and shore services: the active snapshot and
// its inventory of paths, sources and observations, page by page, and the
// snapshots the store keeps. It reads through a finalize.Receiver and
// writes nothing.
//
// It is a package of its own, beside httpbinding and not in it, because
// the binding authenticates vessels and defines no reading (SPEC.md
// §11.2): this Handler authenticates no one and serves every vessel, so
// it belongs on an operator's listener — the admin listener of
// cmd/sourcecatalog serve, or behind the integrator's own authentication
// — never on the vessels' one.
//
// # Paths
//
//	GET {mount}/vessels/{vessel}/inventory[?limit=N&cursor=C]   a Page
//	GET {mount}/vessels/{vessel}/history                        a History
//
// {vessel} is a UUID in canonical lowercase form (SPEC.md §2.1). Mount
// the Handler at the root of a mux, or under a prefix with
// http.StripPrefix.
//
// # Pages
//
// The inventory is read in pages, in canonical record order (SPEC.md
// §5.1): paths, then sources, then observations. A page holds at most
// limit items (DefaultPageItems when absent, 1 to MaxPageItems), and stops
// early, after at least one item, where its records would pass
// MaxPageBytes. A page that is not the last has next_cursor: pass it as
// cursor to read the next. A cursor holds the active snapshot it was made
// for: once another snapshot is activated, it is answered 409 and the
// reader starts again from the first page, so that the pages read
// together are one snapshot's inventory. Each page costs one read of the
// vessel's inventory through finalize.Receiver.Active.
//
// A Page is this JSON object (members in this order; times RFC 3339 in
// UTC; digests lowercase hex):
//
//	{
//	  "vessel_id": "…", "snapshot_id": "…", "revision": 7,
//	  "discovered_at": "2026-05-01T12:00:00Z",
//	  "document_sha256": "…",   // the active snapshot's document hash
//	  "item_count": 25600,       // items of the whole inventory
//	  "items": [{
//	    "kind": "path" | "source" | "observation",
//	    "path": "…",             // path and observation items
//	    "source_ref": "…",       // source and observation items
//	    "currently_observed": true,
//	    "first_seen": {"revision": 1, "at": "…"},
//	    "last_seen":  {"revision": 7, "at": "…"},
//	    "record": {…}            // the item's latest record, canonical JSON
//	  }],
//	  "next_cursor": "…"         // absent on the last page
//	}
//
// An item's first_seen is the activation that first selected it, and
// last_seen the last active snapshot that did: the active one for an item
// currently observed. Items are never deleted.
//
// # History
//
// A History lists every snapshot the store keeps for the vessel, highest
// revision first: those still staging and the finalized ones the
// retention policy kept (finalize.Limits), with the outcome that
// finalized each. The store keeps no time of activation, so none is
// given; a snapshot's discovery time is known only for the active one.
//
// # Errors
//
// Refusals are JSON, {"error": "…"}, with Cache-Control: no-store: 400
// for a vessel id, limit or cursor that does not parse; 404 for a vessel
// with no active snapshot (inventory) or nothing stored (history), and
// for other paths; 405 for a method other than GET or HEAD; 409 for a
// cursor of a snapshot no longer active; 503 when the store fails, its
// cause given to the error log alone.
package inventory

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

// Bounds of a page.
const (
	DefaultPageItems = 500
	MaxPageItems     = 1000
	// MaxPageBytes bounds the records' bytes of a page; a page holds one
	// item however large.
	MaxPageBytes = 1 << 20
	// MaxCursor bounds a cursor's length.
	MaxCursor = 16 << 10
	// DefaultReadTimeout bounds one read of the store.
	DefaultReadTimeout = 10 * time.Second
)

// A Page is one page of a vessel's inventory; see the package doc.
type Page struct {
	VesselID       uuid.UUID `json:"vessel_id"`
	SnapshotID     uuid.UUID `json:"snapshot_id"`
	Revision       int64     `json:"revision"`
	DiscoveredAt   time.Time `json:"discovered_at"`
	DocumentSHA256 string    `json:"document_sha256"`
	ItemCount      int       `json:"item_count"`
	Items          []Item    `json:"items"`
	NextCursor     string    `json:"next_cursor,omitempty"`
}

// An Item is one inventory item of a Page.
type Item struct {
	Kind              string          `json:"kind"`
	Path              string          `json:"path,omitempty"`
	SourceRef         string          `json:"source_ref,omitempty"`
	CurrentlyObserved bool            `json:"currently_observed"`
	FirstSeen         Seen            `json:"first_seen"`
	LastSeen          Seen            `json:"last_seen"`
	Record            json.RawMessage `json:"record"`
}

// Seen is a sighting: an activation's revision and discovery time.
type Seen struct {
	Revision int64     `json:"revision"`
	At       time.Time `json:"at"`
}

// A History is the snapshots a store keeps for a vessel; see the package
// doc.
type History struct {
	VesselID         uuid.UUID  `json:"vessel_id"`
	ActiveSnapshotID *uuid.UUID `json:"active_snapshot_id"` // null before the first activation
	ActiveRevision   int64      `json:"active_revision"`
	Snapshots        []Snapshot `json:"snapshots"`
}

// A Snapshot is one snapshot of a History.
type Snapshot struct {
	SnapshotID uuid.UUID `json:"snapshot_id"`
	Revision   int64     `json:"revision"`
	// State is staging, activated, superseded or rejected; Outcome the
	// finalize outcome that finalized it ("" while staging), Reason why it
	// was rejected.
	State        string `json:"state"`
	Outcome      string `json:"outcome,omitempty"`
	Reason       string `json:"reason,omitempty"`
	Active       bool   `json:"active"`
	RecordCount  int    `json:"record_count"`
	ChunkCount   int    `json:"chunk_count"`
	ChunksStaged int    `json:"chunks_staged"`
	StagedBytes  int64  `json:"staged_bytes"`
	Complete     bool   `json:"complete"` // staging: nothing is missing
}

// A Handler serves the inventory and the history of every vessel of a
// Receiver; see the package doc. It is safe for concurrent use.
type Handler struct {
	recv     *finalize.Receiver
	mux      *http.ServeMux
	timeout  time.Duration
	errorLog func(error)
}

var _ http.Handler = (*Handler)(nil)

// An Option configures a Handler.
type Option func(*Handler)

// WithReadTimeout bounds each read of the store (default
// DefaultReadTimeout); a store slower than that is answered 503.
func WithReadTimeout(d time.Duration) Option { return func(h *Handler) { h.timeout = d } }

// WithErrorLog makes the Handler report why it answered 503 to f.
func WithErrorLog(f func(error)) Option { return func(h *Handler) { h.errorLog = f } }

// NewHandler returns the Handler reading through recv. It panics when
// recv is nil.
func NewHandler(recv *finalize.Receiver, opts ...Option) *Handler {
	if recv == nil {
		panic("inventory: NewHandler needs a Receiver")
	}
	h := &Handler{recv: recv, mux: http.NewServeMux(), timeout: DefaultReadTimeout, errorLog: func(error) {}}
	for _, o := range opts {
		o(h)
	}
	if h.timeout <= 0 {
		h.timeout = DefaultReadTimeout
	}
	h.mux.HandleFunc("GET /vessels/{vessel}/inventory", h.inventory)
	h.mux.HandleFunc("GET /vessels/{vessel}/history", h.history)
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such path: see GET /vessels/{vessel}/inventory and /vessels/{vessel}/history")
	})
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "only GET and HEAD")
		return
	}
	h.mux.ServeHTTP(w, r)
}

// vessel parses the request's vessel id, answering 400 when it does not.
func vessel(w http.ResponseWriter, r *http.Request) (uuid.UUID, bool) {
	id, err := envelope.ParseUUID(r.PathValue("vessel"))
	if err != nil || id == uuid.Nil {
		writeError(w, http.StatusBadRequest, "the vessel id must be a UUID in canonical lowercase form")
		return uuid.Nil, false
	}
	return id, true
}

func (h *Handler) inventory(w http.ResponseWriter, r *http.Request) {
	id, ok := vessel(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	limit, err := pageLimit(q["limit"])
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	var after *cursor
	if cs, ok := q["cursor"]; ok {
		if after, err = decodeCursor(cs); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.timeout)
	defer cancel()
	c, err := h.recv.Active(ctx, id)
	switch {
	case err != nil:
		h.unavailable(w, err)
		return
	case c.SnapshotID == uuid.Nil:
		writeError(w, http.StatusNotFound, "the vessel has no active catalog")
		return
	case after != nil && after.Snapshot != c.SnapshotID:
		writeError(w, http.StatusConflict, "another snapshot was activated since the cursor was made: read the inventory again from the first page")
		return
	}
	writeJSON(w, pageOf(c, after, limit))
}

// pageOf returns the page of c after the cursor (from the start when nil)
// of at most limit items and about MaxPageBytes of records.
func pageOf(c finalize.Catalog, after *cursor, limit int) Page {
	p := Page{
		VesselID: c.VesselID, SnapshotID: c.SnapshotID, Revision: c.Revision, DiscoveredAt: c.DiscoveredAt.UTC(),
		DocumentSHA256: c.Document.String(), ItemCount: len(c.Items), Items: []Item{},
	}
	start := 0
	if after != nil {
		var found bool
		start, found = slices.BinarySearchFunc(c.Items, after.key(), func(it finalize.Item, k catalog.Key) int { return it.Key.Compare(k) })
		if found {
			start++
		}
	}
	size, end := 0, start
	for ; end < len(c.Items) && end-start < limit; end++ {
		n := len(c.Items[end].Record)
		if end > start && size+n > MaxPageBytes {
			break
		}
		size += n
		p.Items = append(p.Items, itemOf(c.Items[end]))
	}
	if end < len(c.Items) {
		k := c.Items[end-1].Key
		p.NextCursor = encodeCursor(cursor{Snapshot: c.SnapshotID, Kind: k.Kind, Path: k.Path, Source: k.SourceRef})
	}
	return p
}

func itemOf(it finalize.Item) Item {
	return Item{
		Kind: it.Key.Kind.String(), Path: it.Key.Path, SourceRef: it.Key.SourceRef, CurrentlyObserved: it.CurrentlyObserved,
		FirstSeen: Seen{it.FirstSeen.Revision, it.FirstSeen.At.UTC()}, LastSeen: Seen{it.LastSeen.Revision, it.LastSeen.At.UTC()},
		Record: json.RawMessage(it.Record),
	}
}

// pageLimit parses the limit parameter: absent, or once, 1 to
// MaxPageItems in decimal digits.
func pageLimit(values []string) (int, error) {
	if len(values) == 0 {
		return DefaultPageItems, nil
	}
	errLimit := errors.New("limit must be given once, a number of items from 1 to " + strconv.Itoa(MaxPageItems))
	if len(values) > 1 || values[0] == "" || len(values[0]) > 4 {
		return 0, errLimit
	}
	n := 0
	for _, c := range values[0] {
		if c < '0' || c > '9' {
			return 0, errLimit
		}
		n = 10*n + int(c-'0')
	}
	if n < 1 || n > MaxPageItems {
		return 0, errLimit
	}
	return n, nil
}

func (h *Handler) history(w http.ResponseWriter, r *http.Request) {
	id, ok := vessel(w, r)
	if !ok {
		return
	}
	if len(r.URL.Query()) > 0 {
		writeError(w, http.StatusBadRequest, "the history takes no parameter")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.timeout)
	defer cancel()
	st, err := h.recv.Status(ctx, id)
	if err != nil {
		h.unavailable(w, err)
		return
	}
	if st.Active.ActiveSnapshot == uuid.Nil && len(st.Snapshots) == 0 {
		writeError(w, http.StatusNotFound, "the store keeps nothing of the vessel")
		return
	}
	hist := History{VesselID: id, ActiveRevision: st.Active.ActiveRevision, Snapshots: []Snapshot{}}
	if a := st.Active.ActiveSnapshot; a != uuid.Nil {
		hist.ActiveSnapshotID = &a
	}
	for _, s := range st.Snapshots {
		hist.Snapshots = append(hist.Snapshots, Snapshot{
			SnapshotID: s.ID, Revision: s.Revision, State: string(s.State), Outcome: string(s.Final), Reason: s.Reason,
			Active: s.ID == st.Active.ActiveSnapshot, RecordCount: s.RecordCount, ChunkCount: s.ChunkCount,
			ChunksStaged: s.ChunksStaged, StagedBytes: s.StagedBytes, Complete: s.Complete,
		})
	}
	writeJSON(w, hist)
}

// unavailable answers 503 for a store failure, its cause to the error log.
func (h *Handler) unavailable(w http.ResponseWriter, err error) {
	h.errorLog(err)
	w.Header().Set("Retry-After", "10")
	writeError(w, http.StatusServiceUnavailable, "the store is unavailable")
}

// A cursor is where a page ended: the active snapshot it was read from
// and the last item's key.
type cursor struct {
	Snapshot uuid.UUID    `json:"s"`
	Kind     catalog.Kind `json:"k"`
	Path     string       `json:"p"`
	Source   string       `json:"r"`
}

func (c cursor) key() catalog.Key {
	return catalog.Key{Kind: c.Kind, Path: c.Path, SourceRef: c.Source}
}

func encodeCursor(c cursor) string {
	b, _ := json.Marshal(c) // a UUID, a number and strings always marshal
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor decodes the cursor parameter strictly: given once, at most
// MaxCursor characters, one this Handler made.
func decodeCursor(values []string) (*cursor, error) {
	errCursor := errors.New("cursor must be given once, as the next_cursor of a page")
	if len(values) != 1 || values[0] == "" || len(values[0]) > MaxCursor {
		return nil, errCursor
	}
	b, err := base64.RawURLEncoding.DecodeString(values[0])
	if err != nil {
		return nil, errCursor
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var c cursor
	if err := dec.Decode(&c); err != nil || dec.More() || c.Snapshot == uuid.Nil || c.Kind < catalog.KindPath || c.Kind > catalog.KindObservation {
		return nil, errCursor
	}
	return &c, nil
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil { // the types above always marshal
		writeError(w, http.StatusInternalServerError, "the answer could not be encoded")
		return
	}
	writeBody(w, http.StatusOK, b)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{msg})
	writeBody(w, status, b)
}

// writeBody answers status with the JSON text b and a newline.
func writeBody(w http.ResponseWriter, status int, b []byte) {
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
