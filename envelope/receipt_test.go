package envelope

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
)

func testReceipt(chunk int) Receipt {
	r := Receipt{
		EntityType: sourcecatalog.ChunkEntityType, VesselID: testVessel, SnapshotID: testSnapshot,
		Revision: 7, ChunkIndex: chunk, Digest: canonical.Sum([]byte("body")), Status: Staged,
	}
	if chunk == sourcecatalog.NoIndex {
		r.EntityType = sourcecatalog.ManifestEntityType
	}
	return r
}

func TestReceiptRoundTrip(t *testing.T) {
	for _, r := range []Receipt{
		testReceipt(sourcecatalog.NoIndex),
		testReceipt(0),
		func() Receipt { r := testReceipt(255); r.Status, r.Complete = AlreadyReceived, true; return r }(),
		func() Receipt { r := testReceipt(3); r.Revision = sourcecatalog.MaxRevision; return r }(),
	} {
		require.NoError(t, r.Check())
		b := r.Canonical()
		require.True(t, canonical.IsCanonical(b), "%s is not canonical", b)
		got, err := DecodeReceipt(b)
		require.NoError(t, err, "%s", b)
		require.Equal(t, r, got)

		// Any member order and whitespace decode to the same receipt.
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		indented, err := json.MarshalIndent(m, "", "  ")
		require.NoError(t, err)
		got, err = DecodeReceipt(indented)
		require.NoError(t, err, "%s", indented)
		require.Equal(t, r, got)
	}
}

func TestReceiptMatches(t *testing.T) {
	r := testReceipt(2)
	retry := r
	retry.Status, retry.Complete = AlreadyReceived, true
	require.True(t, r.Matches(retry), "status and complete are not compared")
	for name, change := range map[string]func(*Receipt){
		"entity type": func(o *Receipt) { o.EntityType = sourcecatalog.ManifestEntityType },
		"vessel":      func(o *Receipt) { o.VesselID = testVessel2 },
		"snapshot":    func(o *Receipt) { o.SnapshotID = testSnapshot2 },
		"revision":    func(o *Receipt) { o.Revision++ },
		"chunk index": func(o *Receipt) { o.ChunkIndex++ },
		"digest":      func(o *Receipt) { o.Digest[0] ^= 1 },
	} {
		o := r
		change(&o)
		require.False(t, r.Matches(o), "a receipt with another %s matches", name)
	}
}

// receiptText is the canonical chunk receipt with member name replaced by
// value (a JSON text), or removed when value is "".
func receiptText(t *testing.T, name, value string) string {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(testReceipt(3).Canonical(), &m))
	if value == "" {
		delete(m, name)
	} else {
		m[name] = json.RawMessage(value)
	}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return string(b)
}

func TestDecodeReceiptInvalid(t *testing.T) {
	manifest := string(testReceipt(sourcecatalog.NoIndex).Canonical())
	for _, tc := range []struct {
		name string
		text string
		want where
	}{
		{"too long", `{"x":"` + strings.Repeat("a", MaxAnswerSize) + `"}`, at(sourcecatalog.ErrLimitExceeded, -1, -1, "")},
		{"malformed", `{"status":"staged",}`, at(sourcecatalog.ErrMalformedJSON, -1, -1, "")},
		{"not an object", `["staged"]`, at(sourcecatalog.ErrInvalidValue, -1, -1, "")},
		{"entity type missing", receiptText(t, "entity_type", ""), at(sourcecatalog.ErrMissingField, -1, -1, "entity_type")},
		{"entity type not a string", receiptText(t, "entity_type", `1`), at(sourcecatalog.ErrInvalidValue, -1, -1, "entity_type")},
		{"entity type v1", receiptText(t, "entity_type", `"signalk_catalog"`), at(sourcecatalog.ErrUnsupported, -1, -1, "entity_type")},
		{"unknown member", receiptText(t, "error", `"conflict"`), at(sourcecatalog.ErrUnknownField, -1, -1, "error")},
		{"chunk index missing", receiptText(t, "chunk_index", ""), at(sourcecatalog.ErrMissingField, -1, -1, "chunk_index")},
		{"chunk index on a manifest", strings.Replace(manifest, `{"complete"`, `{"chunk_index":0,"complete"`, 1), at(sourcecatalog.ErrUnknownField, -1, -1, "chunk_index")},
		{"chunk index 256", receiptText(t, "chunk_index", `256`), at(sourcecatalog.ErrInvalidValue, -1, -1, "chunk_index")},
		{"chunk index float", receiptText(t, "chunk_index", `3.0`), at(sourcecatalog.ErrInvalidValue, -1, -1, "chunk_index")},
		{"complete null", receiptText(t, "complete", `null`), at(sourcecatalog.ErrInvalidValue, -1, -1, "complete")},
		{"protocol v1", receiptText(t, "protocol", `"yachtmemory.source-catalog.v1"`), at(sourcecatalog.ErrUnsupported, -1, -1, "protocol")},
		{"revision zero", receiptText(t, "revision", `0`), at(sourcecatalog.ErrInvalidValue, -1, -1, "revision")},
		{"sha256 upper case", receiptText(t, "sha256", `"`+strings.ToUpper(testReceipt(3).Digest.String())+`"`), at(sourcecatalog.ErrInvalidValue, -1, -1, "sha256")},
		{"snapshot not v4", receiptText(t, "snapshot_id", `"`+testVessel.String()[:14]+`1`+testVessel.String()[15:]+`"`), at(sourcecatalog.ErrInvalidValue, -1, -1, "snapshot_id")},
		{"status other", receiptText(t, "status", `"activated"`), at(sourcecatalog.ErrInvalidValue, -1, -1, "status")},
		{"vessel nil", receiptText(t, "vessel_id", `"00000000-0000-0000-0000-000000000000"`), at(sourcecatalog.ErrInvalidValue, -1, -1, "vessel_id")},
		// The first problem in canonical name order is the one reported.
		{"names before values", strings.Replace(receiptText(t, "revision", `0`), `{`, `{"zzz":1,`, 1), at(sourcecatalog.ErrUnknownField, -1, -1, "zzz")},
		{"values in name order", strings.Replace(receiptText(t, "status", `"x"`), `"complete":false`, `"complete":1`, 1), at(sourcecatalog.ErrInvalidValue, -1, -1, "complete")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeReceipt([]byte(tc.text))
			requireOne(t, err, tc.want)
		})
	}
}

func TestRefusalOf(t *testing.T) {
	long := strings.Repeat("é", 200)
	for _, tc := range []struct {
		name string
		err  error
		want Refusal
	}{
		{"located", sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "empty path segment").InChunk(2).AtRecord(5).AtField("path"),
			Refusal{Class: sourcecatalog.ErrInvalidValue, Chunk: 2, Record: 5, Field: "path", Message: "invalid value: empty path segment"}},
		{"first of several", sourcecatalog.Errorf(sourcecatalog.ErrIntegrity, "duplicate path").InChunk(1).AtRecord(3),
			Refusal{Class: sourcecatalog.ErrIntegrity, Chunk: 1, Record: 3, Message: "integrity violation: duplicate path"}},
		{"record of a list is not a chunk location", sourcecatalog.Errorf(sourcecatalog.ErrIntegrity, "x").AtRecord(300),
			Refusal{Class: sourcecatalog.ErrIntegrity, Chunk: -1, Record: -1, Message: "integrity violation: x"}},
		{"cause not echoed", sourcecatalog.Wrap(sourcecatalog.ErrStoreUnavailable, errorString("dial tcp 10.0.0.7:3306: refused")),
			Refusal{Class: sourcecatalog.ErrStoreUnavailable, Chunk: -1, Record: -1, Message: "store unavailable"}},
		{"no class", errorString("boom"),
			Refusal{Class: sourcecatalog.ErrStoreUnavailable, Chunk: -1, Record: -1, Message: "store unavailable"}},
		{"bounded message", sourcecatalog.Errorf(sourcecatalog.ErrConflict, long),
			Refusal{Class: sourcecatalog.ErrConflict, Chunk: -1, Record: -1, Message: cutString("conflict: "+long, 256)}},
		{"nil", nil,
			Refusal{Class: sourcecatalog.ErrStoreUnavailable, Chunk: -1, Record: -1, Message: "store unavailable"}},
		{"empty join", errors.Join(),
			Refusal{Class: sourcecatalog.ErrStoreUnavailable, Chunk: -1, Record: -1, Message: "store unavailable"}},
		{"negative indexes", &sourcecatalog.Error{Class: sourcecatalog.ErrIntegrity, Chunk: 1, Record: -7},
			Refusal{Class: sourcecatalog.ErrIntegrity, Chunk: 1, Record: -1, Message: "integrity violation"}},
		{"negative chunk", &sourcecatalog.Error{Class: sourcecatalog.ErrIntegrity, Chunk: -7, Record: 3},
			Refusal{Class: sourcecatalog.ErrIntegrity, Chunk: -1, Record: -1, Message: "integrity violation"}},
		{"long field built by hand", &sourcecatalog.Error{Class: sourcecatalog.ErrInvalidValue, Chunk: 1, Record: -1, Field: strings.Repeat("x", 100)},
			Refusal{Class: sourcecatalog.ErrInvalidValue, Chunk: 1, Record: -1, Field: strings.Repeat("x", 64) + "…", Message: "invalid value"}},
		{"field repaired then cut", sourcecatalog.Errorf(sourcecatalog.ErrUnknownField, "x").AtField(strings.Repeat("\xffa", 40)),
			Refusal{Class: sourcecatalog.ErrUnknownField, Chunk: -1, Record: -1, Field: sourcecatalog.Errorf(sourcecatalog.ErrUnknownField, "").AtField(strings.ToValidUTF8(strings.Repeat("\xffa", 32), "\uFFFD")).Field, Message: "unknown field: x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := RefusalOf(tc.err)
			require.Equal(t, tc.want, got)
			require.NoError(t, got.Check())
			b := got.Canonical()
			require.True(t, canonical.IsCanonical(b), "%s", b)
			back, err := DecodeRefusal(b)
			require.NoError(t, err, "%s", b)
			require.Equal(t, got, back)
			requireOne(t, back.Err(), at(got.Class, got.Chunk, got.Record, got.Field))
		})
	}
	require.LessOrEqual(t, len(RefusalOf(sourcecatalog.Errorf(sourcecatalog.ErrConflict, long)).Message), 256)
}

type errorString string

func (e errorString) Error() string { return string(e) }

func TestDecodeRefusalInvalid(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		want where
	}{
		{"error missing", `{"message":"m","protocol":"yachtmemory.source-catalog.v2"}`, at(sourcecatalog.ErrMissingField, -1, -1, "error")},
		{"unknown class", `{"error":"oops","message":"m","protocol":"yachtmemory.source-catalog.v2"}`, at(sourcecatalog.ErrInvalidValue, -1, -1, "error")},
		{"class spelled with hyphens", `{"error":"malformed-json","message":"m","protocol":"yachtmemory.source-catalog.v2"}`, at(sourcecatalog.ErrInvalidValue, -1, -1, "error")},
		{"message missing", `{"error":"conflict","protocol":"yachtmemory.source-catalog.v2"}`, at(sourcecatalog.ErrMissingField, -1, -1, "message")},
		{"unknown member", `{"error":"conflict","message":"m","protocol":"yachtmemory.source-catalog.v2","status":"staged"}`, at(sourcecatalog.ErrUnknownField, -1, -1, "status")},
		{"record without chunk", `{"error":"conflict","message":"m","protocol":"yachtmemory.source-catalog.v2","record_index":1}`, at(sourcecatalog.ErrInvalidValue, -1, -1, "record_index")},
		{"record 100", `{"chunk_index":1,"error":"conflict","message":"m","protocol":"yachtmemory.source-catalog.v2","record_index":100}`, at(sourcecatalog.ErrInvalidValue, -1, -1, "record_index")},
		{"empty field", `{"error":"conflict","field":"","message":"m","protocol":"yachtmemory.source-catalog.v2"}`, at(sourcecatalog.ErrInvalidValue, -1, -1, "field")},
		{"long message", `{"error":"conflict","message":"` + strings.Repeat("m", 257) + `","protocol":"yachtmemory.source-catalog.v2"}`, at(sourcecatalog.ErrLimitExceeded, -1, -1, "message")},
		{"names before values", `{"error":"oops","message":"m","protocol":"yachtmemory.source-catalog.v2","zzz":0}`, at(sourcecatalog.ErrUnknownField, -1, -1, "zzz")},
		{"a receipt is not a refusal", string(testReceipt(1).Canonical()), at(sourcecatalog.ErrMissingField, -1, -1, "error")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeRefusal([]byte(tc.text))
			requireOne(t, err, tc.want)
		})
	}
}
