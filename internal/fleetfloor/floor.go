// Package fleetfloor is the floor server of the service benchmark
// (BenchmarkServeFleet in cmd/sourcecatalog): the least a receiver of the
// HTTP binding (SPEC.md §11) does for each message, run as serve runs,
// so that serve's time is measured against it in the same run.
//
// A floor server serves TLS with httpbinding.NewServer and
// httpbinding.ServerTLSConfig, authenticates each request with
// httpbinding.Tokens (the SHA-256 of the bearer token compared with every
// entry, as serve's --tokens does) before reading its body, reads the
// body as serve does (application/json, at most httpbinding.MaxRequestBody
// bytes), makes it durable with one write (a Sink), and answers 200 with
// a receipt of the usual size, always the same one. With an Inventory it
// also writes, when a snapshot's last message arrives, that snapshot's
// inventory rows in one transaction: what SPEC.md §8.5 has every first
// activation write.
package fleetfloor

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
)

// A Sink makes each message's body durable before the answer: one
// durable write per message. It must be safe for concurrent use.
type Sink interface {
	Message(ctx context.Context, vessel uuid.UUID, body []byte) error
}

// An Inventory writes a snapshot's inventory rows for a vessel in one
// transaction, durably. It must be safe for concurrent use.
type Inventory interface {
	Snapshot(ctx context.Context, vessel uuid.UUID) error
}

// A Handler is the floor's http.Handler.
type Handler struct {
	auth      httpbinding.Authenticator
	sink      Sink
	inventory Inventory // nil: none
	messages  int       // of a snapshot, manifest included
	answer    []byte

	mu   sync.Mutex
	seen map[string]int // messages received, by snapshot id
}

// NewHandler returns a Handler authenticating with auth and writing each
// body to sink and, when inventory is not nil, each snapshot's rows once
// messages of its messages have arrived.
func NewHandler(auth httpbinding.Authenticator, sink Sink, inventory Inventory, messages int) *Handler {
	rc := envelope.Receipt{
		EntityType: sourcecatalog.ChunkEntityType, VesselID: uuid.New(), SnapshotID: uuid.New(),
		Revision: 1, ChunkIndex: 7, Status: envelope.Staged,
	}
	return &Handler{auth: auth, sink: sink, inventory: inventory, messages: messages, answer: rc.Canonical(), seen: map[string]int{}}
}

// ServeHTTP answers 405 to another method than POST, 401 to a request
// the Authenticator refuses, 415 to another Content-Type than
// application/json, 413 to a body over httpbinding.MaxRequestBody bytes,
// 400 to a body that is not a wrapped outbox request (SPEC.md §7.3) — its
// entity key, which names the snapshot, is the one member read —, 503
// when a write fails, and 200 with the fixed receipt otherwise.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	origin, err := h.auth.Authenticate(r)
	if err != nil {
		http.Error(w, "unauthenticated", http.StatusUnauthorized)
		return
	}
	if ct := r.Header.Values("Content-Type"); len(ct) != 1 || ct[0] != httpbinding.ContentType {
		http.Error(w, "application/json only", http.StatusUnsupportedMediaType)
		return
	}
	if r.ContentLength > httpbinding.MaxRequestBody {
		http.Error(w, "too large", http.StatusRequestEntityTooLarge)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, httpbinding.MaxRequestBody))
	if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
		http.Error(w, "too large", http.StatusRequestEntityTooLarge)
		return
	} else if err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	snapshot, ok := snapshotOf(body)
	if !ok {
		http.Error(w, "not a wrapped outbox request", http.StatusBadRequest)
		return
	}
	if err := h.sink.Message(r.Context(), origin.VesselID, body); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	if h.inventory != nil && h.last(snapshot) {
		if err := h.inventory.Snapshot(r.Context(), origin.VesselID); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
	}
	w.Header().Set("Content-Type", httpbinding.ContentType)
	w.Write(h.answer)
}

// last counts a message of snapshot and reports whether it is the
// snapshot's last.
func (h *Handler) last(snapshot string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seen[snapshot]++
	if h.seen[snapshot] < h.messages {
		return false
	}
	delete(h.seen, snapshot)
	return true
}

// keyPrefix opens every request of envelope.DefaultWrapper.
const keyPrefix = `{"entity_key":"`

// snapshotOf returns the snapshot id that opens the entity key of a
// wrapped request: a manifest's key is the id, a chunk's the id, "/" and
// the index (envelope.ManifestKey, envelope.ChunkKey).
func snapshotOf(body []byte) (string, bool) {
	const n = len(keyPrefix) + 36
	if len(body) <= n || string(body[:len(keyPrefix)]) != keyPrefix || (body[n] != '"' && body[n] != '/') {
		return "", false
	}
	id := body[len(keyPrefix):n]
	if _, err := uuid.ParseBytes(id); err != nil {
		return "", false
	}
	return string(id), true
}
