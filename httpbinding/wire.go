package httpbinding

import (
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/envelope"
)

// MaxRequestBody is the largest request body the server reads: one
// wrapped outbox request (SPEC.md §7.3). A larger body is answered 413
// without reading the rest.
const MaxRequestBody = sourcecatalog.MaxRequest

// ContentType is the media type of every request and of every receipt or
// refusal answer.
const ContentType = "application/json"

// A request is a decoded outbox request: the wrapper of SPEC.md §7.3.
type request struct {
	entityKey  string
	entityType string
	payload    []byte
}

var wrapperFields = []string{"entity_key", "entity_type", "payload"}

// decodeRequest strictly decodes the default wrapper of SPEC.md §7.3 in any
// member order and whitespace, reporting the first problem: malformed JSON
// (ErrMalformedJSON); not an object (ErrInvalidValue); an unknown
// (ErrUnknownField) or missing (ErrMissingField) member in canonical name
// order; a member that is not a string (ErrInvalidValue at it); an entity
// type other than the v2 types (ErrUnsupported at entity_type), the chunk
// reference type among them unless refs (SPEC.md §6.6), the manifest
// index type unless index (§6.7).
func decodeRequest(body []byte, refs, index bool) (request, error) {
	v, err := canonical.Parse(body)
	if err != nil {
		return request{}, sourcecatalog.Wrap(sourcecatalog.ErrMalformedJSON, err)
	}
	if v.Kind() != canonical.KindObject {
		return request{}, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "the request must be a JSON object")
	}
	mems := v.Members()
	for i, name := range wrapperFields {
		switch {
		case i < len(mems) && mems[i].Name < name:
			return request{}, sourcecatalog.Errorf(sourcecatalog.ErrUnknownField, "not a member of the request").AtField(mems[i].Name)
		case i >= len(mems) || mems[i].Name != name:
			return request{}, sourcecatalog.Errorf(sourcecatalog.ErrMissingField, "required").AtField(name)
		}
	}
	if len(mems) > len(wrapperFields) {
		return request{}, sourcecatalog.Errorf(sourcecatalog.ErrUnknownField, "not a member of the request").AtField(mems[len(wrapperFields)].Name)
	}
	for i, name := range wrapperFields {
		if mems[i].Value.Kind() != canonical.KindString {
			return request{}, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "must be a string").AtField(name)
		}
		if name == "entity_type" && !knownType(mems[i].Value.Str(), refs, index) {
			return request{}, sourcecatalog.Errorf(sourcecatalog.ErrUnsupported, "not a v2 entity type").AtField("entity_type")
		}
	}
	return request{entityKey: mems[0].Value.Str(), entityType: mems[1].Value.Str(), payload: []byte(mems[2].Value.Str())}, nil
}

// knownType reports whether a request may carry entity type t.
func knownType(t string, refs, index bool) bool {
	return t == sourcecatalog.ManifestEntityType || t == sourcecatalog.ChunkEntityType ||
		(refs && t == sourcecatalog.ChunkRefEntityType) || (index && t == sourcecatalog.ManifestIndexEntityType)
}

// checkKey refuses an entity key that does not name the decoded message
// (SPEC.md §7.3), with ErrInvalidValue at entity_key. It decodes the
// payload to learn the message's snapshot and chunk index, reporting the
// decoder's first problem as the Receiver would, and returns the snapshot
// (uuid.Nil when the payload does not decode) and, for a chunk or a chunk
// reference, the decoded message, which the Receiver takes as it is. A
// manifest, a few hundred bytes, the Receiver decodes again: it takes no
// manifest value, which anyone can make; so does a manifest index, whose
// key is its manifest's.
func (q request) checkKey() (uuid.UUID, *envelope.Chunk, *envelope.ChunkRef, error) {
	var snapshot uuid.UUID
	var want string
	var c *envelope.Chunk
	var r *envelope.ChunkRef
	switch q.entityType {
	case sourcecatalog.ChunkRefEntityType:
		var err error
		if r, err = envelope.DecodeChunkRef(q.payload); err != nil {
			return uuid.Nil, nil, nil, err
		}
		snapshot, want = r.SnapshotID(), envelope.ChunkKey(r.SnapshotID(), r.Index())
	case sourcecatalog.ManifestIndexEntityType:
		x, err := envelope.DecodeManifestIndex(q.payload)
		if err != nil {
			return uuid.Nil, nil, nil, err
		}
		snapshot, want = x.Manifest().SnapshotID, envelope.ManifestKey(x.Manifest().SnapshotID)
	case sourcecatalog.ManifestEntityType:
		m, err := envelope.DecodeManifest(q.payload)
		if err != nil {
			return uuid.Nil, nil, nil, err
		}
		snapshot, want = m.SnapshotID, envelope.ManifestKey(m.SnapshotID)
	default:
		var err error
		if c, err = envelope.DecodeChunk(q.payload); err != nil {
			return uuid.Nil, nil, nil, err
		}
		snapshot, want = c.SnapshotID(), envelope.ChunkKey(c.SnapshotID(), c.Index())
	}
	if q.entityKey != want {
		return snapshot, nil, nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "the entity key does not name the message").AtField("entity_key")
	}
	return snapshot, c, r, nil
}

// isJSON reports whether a Content-Type header names application/json,
// with no parameter other than charset=utf-8.
func isJSON(header string) bool {
	mt, params, err := mime.ParseMediaType(header)
	if err != nil || mt != ContentType {
		return false
	}
	for k, v := range params {
		if k != "charset" || !strings.EqualFold(v, "utf-8") {
			return false
		}
	}
	return true
}

// StatusOf returns the HTTP status of a refusal of class (SPEC.md §11.3):
// 409 for ErrConflict and ErrRevisionConflict, 403 for ErrForeignVessel
// and ErrUnregisteredVessel, 503 for ErrStagingExhausted and
// ErrStoreUnavailable, and 422 for every decoding and verification class
// and for ErrReferenceUnavailable: not 409, which a sender takes as a
// conflict, nor 503, after which it would send the same again, nor 404,
// which a wrong URL answers too.
// A body over MaxRequestBody is answered 413 (ErrLimitExceeded) and a
// request over the per-vessel concurrency limit 429
// (ErrStoreUnavailable) instead, before anything is decoded.
func StatusOf(class error) int {
	switch class {
	case sourcecatalog.ErrConflict, sourcecatalog.ErrRevisionConflict:
		return http.StatusConflict
	case sourcecatalog.ErrForeignVessel, sourcecatalog.ErrUnregisteredVessel:
		return http.StatusForbidden
	case sourcecatalog.ErrStagingExhausted, sourcecatalog.ErrStoreUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusUnprocessableEntity
}

// statusAllowed reports whether a refusal of class may come with status:
// its StatusOf, or one of the binding's own answers (413, 415, 429).
func statusAllowed(class error, status int) bool {
	switch status {
	case http.StatusRequestEntityTooLarge:
		return class == sourcecatalog.ErrLimitExceeded
	case http.StatusUnsupportedMediaType:
		return class == sourcecatalog.ErrUnsupported
	case http.StatusTooManyRequests:
		return class == sourcecatalog.ErrStoreUnavailable
	}
	return status == StatusOf(class)
}

// writeAnswer writes a receipt or refusal body with its status. Every
// answer carries its Content-Length, so that hanging up after it (hangUp)
// leaves nothing unterminated.
func writeAnswer(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", ContentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if h.Get("Cache-Control") == "" { // the declaration's is its own
		h.Set("Cache-Control", "no-store")
	}
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body) // a client gone away is not the server's error
}

// writeRefusal writes f with status; a 429 or 503 carries Retry-After.
func writeRefusal(w http.ResponseWriter, status int, f envelope.Refusal, retryAfter time.Duration) {
	if status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", strconv.FormatInt(int64(max(time.Second, retryAfter)/time.Second), 10))
	}
	writeAnswer(w, status, f.Canonical())
}

// writePlain writes a text answer of its status's text alone, neither a
// receipt nor a refusal: Health's 405 (the Handler's go through
// Handler.plain).
func writePlain(w http.ResponseWriter, status int) {
	writeText(w, status, http.StatusText(status)+"\n")
}
