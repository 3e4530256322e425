package envelope

import (
	"strconv"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/canonical"
)

// A Wrapper measures the complete outbox request that carries one entity:
// the transport's framing around the entity's canonical payload.
//
// WrappedSize must return exactly the number of bytes of that request, and
// must not shrink when the payload grows by a record; the chunker relies on
// both to cut chunks greedily and exactly. It is called with payloads of up
// to a few tens of kilobytes, many times per Build, and must be safe for
// concurrent use.
type Wrapper interface {
	WrappedSize(entityType, entityKey string, payload []byte) int
}

// DefaultWrapper is the outbox request format used when the integrator
// supplies none: a canonical JSON object whose "payload" member carries the
// entity's canonical JSON as a JSON string,
//
//	{"entity_key":KEY,"entity_type":TYPE,"payload":"{\"chunk_index\":0,...}"}
//
// Carrying the payload as a string, as outbox tables and request forms
// commonly do, escapes every quotation mark and reverse solidus again, so a
// body heavy with escapes can approach twice its size once wrapped.
type DefaultWrapper struct{}

var _ Wrapper = DefaultWrapper{}

// Wrap appends the request to dst.
func (DefaultWrapper) Wrap(dst []byte, entityType, entityKey string, payload []byte) []byte {
	dst = append(dst, `{"entity_key":`...)
	dst, _ = canonical.AppendString(dst, entityKey)
	dst = append(dst, `,"entity_type":`...)
	dst, _ = canonical.AppendString(dst, entityType)
	dst = append(dst, `,"payload":`...)
	dst, _ = canonical.AppendString(dst, string(payload))
	return append(dst, '}')
}

// WrappedSize returns len(Wrap(nil, entityType, entityKey, payload)) without
// building the request.
func (DefaultWrapper) WrappedSize(entityType, entityKey string, payload []byte) int {
	return len(`{"entity_key":,"entity_type":,"payload":}`) +
		canonical.EscapedLen(entityKey) + canonical.EscapedLen(entityType) +
		canonical.EscapedLen(payload)
}

// ManifestKey returns the outbox entity key of a snapshot's manifest: the
// snapshot_id.
func ManifestKey(snapshot uuid.UUID) string { return snapshot.String() }

// ChunkKey returns the outbox entity key of a chunk: the snapshot_id, a
// slash and the chunk_index.
func ChunkKey(snapshot uuid.UUID, index int) string {
	return snapshot.String() + "/" + strconv.Itoa(index)
}
