package httpbinding_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
)

// Requests that do not decode are 422 with the class and location of the
// first problem, and stage nothing.
func TestRefusalsAreLocated(t *testing.T) {
	r := startRig(t, rigConfig{})
	cert := r.ca.vessel(t, vesselA)
	b := commitCycle(t, vesselA, uuid.Nil, "nav", 10)
	manifest, chunk := b.entries[0], b.entries[1]
	other := commitCycle(t, vesselA, uuid.Nil, "nav", 10).entries[0]

	badChunk := chunk
	badChunk.Payload = []byte(strings.Replace(string(chunk.Payload), `"path":"nav.sensor0003"`, `"path":"nav..sensor0003"`, 1))
	require.NotEqual(t, chunk.Payload, badChunk.Payload)
	misnamed := manifest
	misnamed.EntityKey = envelope.ManifestKey(other.SnapshotID)
	asManifest := chunk
	asManifest.EntityType, asManifest.EntityKey = sourcecatalog.ManifestEntityType, envelope.ManifestKey(chunk.SnapshotID)

	cases := []struct {
		name          string
		body          string
		class         error
		chunk, record int
		field         string
	}{
		{"malformed chunk", string(wrap(badChunk)), sourcecatalog.ErrInvalidValue, 0, 3, "path"},
		{"not JSON", "{entity_key", sourcecatalog.ErrMalformedJSON, -1, -1, ""},
		{"duplicate member", `{"entity_key":"a","entity_key":"a","entity_type":"x","payload":"{}"}`, sourcecatalog.ErrMalformedJSON, -1, -1, ""},
		{"not an object", `["entity_key"]`, sourcecatalog.ErrInvalidValue, -1, -1, ""},
		{"unknown member", `{"a":1,"entity_key":"k","entity_type":"t","payload":"{}"}`, sourcecatalog.ErrUnknownField, -1, -1, "a"},
		{"unknown member last", `{"entity_key":"k","entity_type":"t","payload":"{}","zz":1}`, sourcecatalog.ErrUnknownField, -1, -1, "zz"},
		{"missing payload", `{"entity_key":"k","entity_type":"signalk_catalog_chunk_v2"}`, sourcecatalog.ErrMissingField, -1, -1, "payload"},
		{"names before values", `{"entity_key":1,"entity_type":"t"}`, sourcecatalog.ErrMissingField, -1, -1, "payload"},
		{"key not a string", `{"entity_key":1,"entity_type":"t","payload":"{}"}`, sourcecatalog.ErrInvalidValue, -1, -1, "entity_key"},
		{"other entity type", `{"entity_key":"k","entity_type":"signalk_catalog_v1","payload":"{}"}`, sourcecatalog.ErrUnsupported, -1, -1, "entity_type"},
		{"payload an object", `{"entity_key":"k","entity_type":"signalk_catalog_chunk_v2","payload":{}}`, sourcecatalog.ErrInvalidValue, -1, -1, "payload"},
		{"key of another snapshot", string(wrap(misnamed)), sourcecatalog.ErrInvalidValue, -1, -1, "entity_key"},
		{"chunk as a manifest", string(wrap(asManifest)), sourcecatalog.ErrMissingField, -1, -1, "chunk_count"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := r.post(t, &cert, http.MethodPost, nil, []byte(tc.body))
			require.Equal(t, http.StatusUnprocessableEntity, a.status, "%s", a.body)
			f := a.refusal(t)
			assert.Equal(t, tc.class, f.Class, "%s", a.body)
			assert.Equal(t, tc.chunk, f.Chunk, "%s", a.body)
			assert.Equal(t, tc.record, f.Record, "%s", a.body)
			assert.Equal(t, tc.field, f.Field, "%s", a.body)
			assert.Equal(t, tc.class.Error(), f.Message, "the class's text alone")
			ev := r.events.of(httpbinding.EventMessage)
			assert.Equal(t, sourcecatalog.WireName(tc.class), ev[len(ev)-1].Outcome)
		})
	}
	u, err := r.recv.Usage(t.Context(), vesselA)
	require.NoError(t, err)
	assert.Zero(t, u.IncompleteSnapshots.Used, "nothing staged")
}

// The status of each class, as SPEC.md §11.3 tabulates it.
func TestStatusOf(t *testing.T) {
	want := map[string]int{
		"malformed_json": 422, "unknown_field": 422, "missing_field": 422, "invalid_value": 422,
		"limit_exceeded": 422, "record_too_large": 422, "hash_mismatch": 422, "integrity": 422,
		"unsupported": 422, "incomplete_scan": 422, "foreign_vessel": 403, "unregistered_vessel": 403,
		"conflict": 409, "revision_conflict": 409, "staging_exhausted": 503, "store_unavailable": 503,
		"reference_unavailable": 422,
	}
	for _, c := range sourcecatalog.Classes() {
		assert.Equal(t, want[sourcecatalog.WireName(c)], httpbinding.StatusOf(c), sourcecatalog.WireName(c))
	}
}
