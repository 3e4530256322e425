package envelope

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
)

func TestParseUUID(t *testing.T) {
	good := []string{
		"7c9e6679-7425-40de-944b-e07fc1f90ae7",
		"6ba7b810-9dad-11d1-80b4-00c04fd430c8", // v1: ParseUUID does not care about the version
		"00000000-0000-0000-0000-000000000001",
		"ffffffff-ffff-ffff-ffff-ffffffffffff",
	}
	for _, s := range good {
		id, err := ParseUUID(s)
		require.NoError(t, err, s)
		assert.Equal(t, s, id.String())
		assert.Equal(t, uuid.MustParse(s), id)
	}
	bad := []string{
		"",
		"00000000-0000-0000-0000-000000000000", // nil
		"7C9E6679-7425-40DE-944B-E07FC1F90AE7",
		"7c9e6679-7425-40de-944b-e07fc1f90aE7",
		"{7c9e6679-7425-40de-944b-e07fc1f90ae7}",
		"urn:uuid:7c9e6679-7425-40de-944b-e07fc1f90ae7",
		"7c9e6679742540de944be07fc1f90ae7",
		"7c9e6679-7425-40de-944b-e07fc1f90ae",
		"7c9e6679-7425-40de-944b-e07fc1f90ae70",
		"7c9e6679_7425_40de_944b_e07fc1f90ae7",
		"7c9e667-97425-40de-944b-e07fc1f90ae7",
		"7c9e6679-7425-40de-944b-e07fc1f90ag7",
		" 7c9e6679-7425-40de-944b-e07fc1f90ae",
		"7c9e6679-7425-40de-944b-e07fc1f90ae\n",
		"7c9e6679-7425-40de-944b-e07fc1f90a\u00e9", // 36 bytes, not 36 characters
	}
	for _, s := range bad {
		id, err := ParseUUID(s)
		assert.Equal(t, uuid.Nil, id, "%q", s)
		requireOne(t, err, at(sourcecatalog.ErrInvalidValue, sourcecatalog.NoIndex, sourcecatalog.NoIndex, ""))
	}
}

func TestFormatTime(t *testing.T) {
	cases := []struct {
		t    time.Time
		want string
	}{
		{testTime, "2026-05-01T12:00:00Z"},
		{time.Date(2026, 5, 1, 14, 0, 0, 0, time.FixedZone("CEST", 2*3600)), "2026-05-01T12:00:00Z"},
		{time.Date(2026, 5, 1, 0, 30, 0, 0, time.FixedZone("", -5*3600)), "2026-05-01T05:30:00Z"},
		{testTime.Add(500 * time.Millisecond), "2026-05-01T12:00:00.5Z"},
		{testTime.Add(120 * time.Millisecond), "2026-05-01T12:00:00.12Z"},
		{testTime.Add(1), "2026-05-01T12:00:00.000000001Z"},
		{testTime.Add(123456789), "2026-05-01T12:00:00.123456789Z"},
		{time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), "1970-01-01T00:00:00Z"},
		{time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), "9999-12-31T23:59:59Z"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, FormatTime(c.t))
		back, err := ParseTime(c.want)
		require.NoError(t, err, c.want)
		assert.True(t, back.Equal(c.t), c.want)
		assert.Equal(t, time.UTC, back.Location())
	}
	// A monotonic clock reading does not leak into the text.
	now := time.Now()
	assert.Equal(t, FormatTime(now.Round(0)), FormatTime(now))
	back, err := ParseTime(FormatTime(now))
	require.NoError(t, err)
	assert.True(t, back.Equal(now))
}

func TestParseTime(t *testing.T) {
	good := map[string]time.Time{
		"2026-05-01T12:00:00Z":           testTime,
		"2026-05-01T12:00:00.5Z":         testTime.Add(500 * time.Millisecond),
		"2026-05-01T12:00:00.000000001Z": testTime.Add(1),
		"2024-02-29T00:00:00Z":           time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC),
		"0000-01-01T00:00:00Z":           time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	for s, want := range good {
		got, err := ParseTime(s)
		require.NoError(t, err, s)
		assert.True(t, want.Equal(got), s)
		assert.Equal(t, time.UTC, got.Location(), s)
		assert.Equal(t, s, FormatTime(got), s)
	}
	bad := []string{
		"",
		"2026-05-01T12:00:00+00:00",
		"2026-05-01T12:00:00-00:00",
		"2026-05-01T14:00:00+02:00",
		"2026-05-01T12:00:00",
		"2026-05-01T12:00:00z",
		"2026-05-01t12:00:00Z",
		"2026-05-01 12:00:00Z",
		"2026-05-01T12:00:00.500Z",
		"2026-05-01T12:00:00.0Z",
		"2026-05-01T12:00:00.Z",
		"2026-05-01T12:00:00,5Z",
		"2026-05-01",
		"2026-05-01T12:00Z",
		"2026-05-01T12Z",
		"12:00:00Z",
		"2026-06-30T23:59:60Z",
		"2026-13-01T12:00:00Z",
		"2026-02-29T12:00:00Z",
		"2026-05-01T24:00:00Z",
		"2026-5-1T12:00:00Z",
		"+2026-05-01T12:00:00Z",
		"12026-05-01T12:00:00Z",
		"2026-05-01T12:00:00.1234567891Z",
		" 2026-05-01T12:00:00Z",
		"2026-05-01T12:00:00Z ",
		"Fri, 01 May 2026 12:00:00 GMT",
	}
	for _, s := range bad {
		got, err := ParseTime(s)
		assert.True(t, got.IsZero(), "%q", s)
		requireOne(t, err, at(sourcecatalog.ErrInvalidValue, sourcecatalog.NoIndex, sourcecatalog.NoIndex, ""))
	}
}

func TestKeys(t *testing.T) {
	assert.Equal(t, "7c9e6679-7425-40de-944b-e07fc1f90ae7", ManifestKey(testSnapshot))
	assert.Equal(t, "7c9e6679-7425-40de-944b-e07fc1f90ae7/0", ChunkKey(testSnapshot, 0))
	assert.Equal(t, "7c9e6679-7425-40de-944b-e07fc1f90ae7/9", ChunkKey(testSnapshot, 9))
	assert.Equal(t, "7c9e6679-7425-40de-944b-e07fc1f90ae7/255", ChunkKey(testSnapshot, 255))
	assert.Equal(t, "f47ac10b-58cc-4372-a567-0e02b2c3d479/10", ChunkKey(testSnapshot2, 10))
	// Keys are distinct per snapshot and chunk.
	seen := map[string]bool{ManifestKey(testSnapshot): true, ManifestKey(testSnapshot2): true}
	for _, s := range []uuid.UUID{testSnapshot, testSnapshot2} {
		for i := 0; i < sourcecatalog.MaxChunks; i++ {
			k := ChunkKey(s, i)
			require.False(t, seen[k], k)
			seen[k] = true
		}
	}
}

// wrapperPayloads returns payloads that exercise every escaping rule.
func wrapperPayloads() []string {
	ps := []string{
		"",
		"{}",
		`{"records":[]}`,
		`"`, `\`, `\"`, `"\"\\`,
		"\x00", "\x01\x02\x1f", "\b\f\n\r\t", "\x7f", "a\u0080b", "\u2028\u2029",
		"é", "\U0001F6A2 ship", "\ufeff",
		`{"d":"\"\\\u0001"}`,
		strings.Repeat(`"\`, 5000),
		strings.Repeat("\x00", 1000),
	}
	var all strings.Builder
	for c := 0; c < 0x80; c++ {
		all.WriteByte(byte(c))
	}
	ps = append(ps, all.String())
	rng := rand.New(rand.NewPCG(7, 7))
	alphabet := []rune{'a', '"', '\\', '\n', '\t', 0, 0x1f, 0x7f, 'é', 0x2028, 0x1F6A2, '/', '<', '&'}
	for range 200 {
		n := rng.IntN(300)
		rs := make([]rune, n)
		for i := range rs {
			rs[i] = alphabet[rng.IntN(len(alphabet))]
		}
		ps = append(ps, string(rs))
	}
	return ps
}

func TestDefaultWrapper(t *testing.T) {
	w := DefaultWrapper{}
	keys := []string{ChunkKey(testSnapshot, 0), ManifestKey(testSnapshot), "", `k"\` + "\x01"}
	types := []string{sourcecatalog.ChunkEntityType, sourcecatalog.ManifestEntityType}
	for _, p := range wrapperPayloads() {
		require.True(t, utf8.ValidString(p))
		for _, key := range keys {
			for _, typ := range types {
				out := w.Wrap(nil, typ, key, []byte(p))
				require.Equal(t, len(out), w.WrappedSize(typ, key, []byte(p)), "payload %.60q", p)

				// The request is canonical JSON carrying exactly the
				// payload, key and type.
				canon, err := canonical.Transform(out)
				require.NoError(t, err)
				require.Equal(t, string(out), string(canon))
				var got struct {
					Key     string `json:"entity_key"`
					Type    string `json:"entity_type"`
					Payload string `json:"payload"`
				}
				dec := json.NewDecoder(strings.NewReader(string(out)))
				dec.DisallowUnknownFields()
				require.NoError(t, dec.Decode(&got))
				require.Equal(t, p, got.Payload)
				require.Equal(t, key, got.Key)
				require.Equal(t, typ, got.Type)
			}
		}
	}

	// Wrap appends.
	out := w.Wrap([]byte("prefix"), "t", "k", []byte("p"))
	assert.Equal(t, `prefix{"entity_key":"k","entity_type":"t","payload":"p"}`, string(out))

	// Escaping can double a body: every " and \ of the payload costs two.
	heavy := []byte(strings.Repeat(`\"`, 100))
	assert.Equal(t, w.WrappedSize("t", "k", nil)+400, w.WrappedSize("t", "k", heavy))
}

func TestDefaultWrapperOnRealChunks(t *testing.T) {
	// Every chunk of snapshots with escape-heavy and control-character meta.
	for _, meta := range []string{`"\`, "\x01\x1f", "\n\t", "é\u2028", "plain"} {
		want := makeCatalog(t, 40, 2, func(i int) string { return metaJSON(strings.Repeat(meta, 10*i)) })
		s := mustBuild(t, input(want))
		checkSnapshot(t, s, want, DefaultWrapper{}) // wrappedLen checks WrappedSize == len(Wrap)
		w := DefaultWrapper{}
		m := s.Manifest.Canonical()
		key := ManifestKey(s.Manifest.SnapshotID)
		assert.Equal(t, len(w.Wrap(nil, sourcecatalog.ManifestEntityType, key, m)), w.WrappedSize(sourcecatalog.ManifestEntityType, key, m))
	}
}
