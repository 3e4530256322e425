package envelope

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
)

// A member is one name and raw JSON value of a hand-written message.
type member struct{ name, value string }

type members []member

// render writes the members as a JSON object: sep goes between tokens
// (whitespace), order permutes the members (nil: as they are).
func (ms members) render(sep string, order []int) string {
	if order == nil {
		order = make([]int, len(ms))
		for i := range order {
			order[i] = i
		}
	}
	parts := make([]string, len(order))
	for k, i := range order {
		parts[k] = `"` + ms[i].name + `"` + sep + ":" + sep + ms[i].value
	}
	return "{" + sep + strings.Join(parts, sep+","+sep) + sep + "}"
}

func (ms members) String() string { return ms.render("", nil) }

func (ms members) set(name, value string) members {
	out := slices.Clone(ms)
	for i := range out {
		if out[i].name == name {
			out[i].value = value
			return out
		}
	}
	panic("no member " + name)
}

func (ms members) without(name string) members {
	return slices.DeleteFunc(slices.Clone(ms), func(m member) bool { return m.name == name })
}

func (ms members) with(name, value string) members {
	return append(slices.Clone(ms), member{name, value})
}

func (ms members) value(name string) string {
	for _, m := range ms {
		if m.name == name {
			return m.value
		}
	}
	panic("no member " + name)
}

var testDigest = strings.Repeat("0123456789abcdef", 4)

// baseManifest is a valid manifest, members in canonical order.
var baseManifest = members{
	{"chunk_count", "3"},
	{"discovered_at_utc", `"2026-05-01T12:00:00Z"`},
	{"document_sha256", `"` + testDigest + `"`},
	{"inventory_coverage", `"selected-only"`},
	{"protocol", `"yachtmemory.source-catalog.v2"`},
	{"record_count", "42"},
	{"revision", "7"},
	{"scope", `"current-selected-sources"`},
	{"snapshot_id", `"7c9e6679-7425-40de-944b-e07fc1f90ae7"`},
	{"transport_complete", "true"},
	{"vessel_id", `"0f8fad5b-d9cb-469f-a165-70867728950e"`},
}

func baseManifestValue(t testing.TB) Manifest {
	d, err := canonical.ParseDigest(testDigest)
	require.NoError(t, err)
	return Manifest{
		VesselID: testVessel, SnapshotID: testSnapshot, Revision: 7, DiscoveredAt: testTime,
		ChunkCount: 3, RecordCount: 42, DocumentSHA256: d,
	}
}

func TestDecodeManifestValid(t *testing.T) {
	want := baseManifestValue(t)
	require.Equal(t, baseManifest.String(), string(want.Canonical()), "base fixture must be canonical")

	reversed := make([]int, len(baseManifest))
	for i := range reversed {
		reversed[i] = len(reversed) - 1 - i
	}
	rotated := make([]int, len(baseManifest))
	for i := range rotated {
		rotated[i] = (i + 5) % len(rotated)
	}
	cases := []struct {
		name string
		raw  string
		want func(*Manifest)
	}{
		{"canonical", baseManifest.String(), nil},
		{"reversed", baseManifest.render("", reversed), nil},
		{"rotated", baseManifest.render("", rotated), nil},
		{"spaces", baseManifest.render(" ", rotated), nil},
		{"newlines and tabs", "\n" + baseManifest.render("\r\n\t", reversed) + "\n\t ", nil},
		{"escaped string", baseManifest.set("scope", `"current\u002dselected-sources"`).String(), nil},
		{"escaped uuid", baseManifest.set("vessel_id", `"0f8fad5b\u002dd9cb-469f-a165-70867728950e"`).String(), nil},
		{"escaped name", strings.Replace(baseManifest.String(), `"scope"`, `"sc\u006fpe"`, 1), nil},
		{"max revision", baseManifest.set("revision", "9007199254740991").String(), func(m *Manifest) { m.Revision = 9007199254740991 }},
		{"revision 1", baseManifest.set("revision", "1").String(), func(m *Manifest) { m.Revision = 1 }},
		{"chunk_count 1", baseManifest.set("chunk_count", "1").String(), func(m *Manifest) { m.ChunkCount = 1 }},
		{"chunk_count 256", baseManifest.set("chunk_count", "256").String(), func(m *Manifest) { m.ChunkCount = 256 }},
		{"record_count 0", baseManifest.set("record_count", "0").String(), func(m *Manifest) { m.RecordCount = 0 }},
		{"record_count 25600", baseManifest.set("record_count", "25600").String(), func(m *Manifest) { m.RecordCount = 25600 }},
		{"fraction", baseManifest.set("discovered_at_utc", `"2026-05-01T12:00:00.5Z"`).String(), func(m *Manifest) { m.DiscoveredAt = testTime.Add(500 * time.Millisecond) }},
		{"nanoseconds", baseManifest.set("discovered_at_utc", `"2026-05-01T12:00:00.123456789Z"`).String(), func(m *Manifest) { m.DiscoveredAt = testTime.Add(123456789) }},
		{"any vessel uuid", baseManifest.set("vessel_id", `"6ba7b810-9dad-11d1-80b4-00c04fd430c8"`).String(), func(m *Manifest) {
			m.VesselID = [16]byte{0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			exp := baseManifestValue(t)
			if c.want != nil {
				c.want(&exp)
			}
			m, err := DecodeManifest([]byte(c.raw))
			require.NoError(t, err)
			assert.Equal(t, exp, m)
			assert.Equal(t, time.UTC, m.DiscoveredAt.Location())
			// The decoded manifest re-encodes to the canonical form of
			// the input.
			canon, err := canonical.Transform([]byte(c.raw))
			require.NoError(t, err)
			assert.Equal(t, string(canon), string(m.Canonical()))
		})
	}
}

func TestDecodeManifestInvalid(t *testing.T) {
	none := sourcecatalog.NoIndex
	inv := func(field string) where { return at(sourcecatalog.ErrInvalidValue, none, none, field) }
	uns := func(field string) where { return at(sourcecatalog.ErrUnsupported, none, none, field) }
	malformed := at(sourcecatalog.ErrMalformedJSON, none, none, "")
	type tc struct {
		name string
		raw  string
		want where
	}
	var cases []tc
	add := func(name string, raw string, w where) { cases = append(cases, tc{name, raw, w}) }

	// Unknown, missing and duplicate members.
	add("unknown field", baseManifest.with("extra", "1").String(), at(sourcecatalog.ErrUnknownField, none, none, "extra"))
	add("unknown field last", baseManifest.with("zz", "1").String(), at(sourcecatalog.ErrUnknownField, none, none, "zz"))
	add("unknown non-ASCII field", baseManifest.with("été", "1").String(), at(sourcecatalog.ErrUnknownField, none, none, "été"))
	add("unknown field first", baseManifest.with("aaa", "null").String(), at(sourcecatalog.ErrUnknownField, none, none, "aaa"))
	add("unknown field middle", baseManifest.with("record_index", "1").String(), at(sourcecatalog.ErrUnknownField, none, none, "record_index"))
	add("unknown capability", baseManifest.with("all_sources", "true").String(), at(sourcecatalog.ErrUnknownField, none, none, "all_sources"))
	add("unknown field case", baseManifest.with("Scope", `"x"`).String(), at(sourcecatalog.ErrUnknownField, none, none, "Scope"))
	long := strings.Repeat("n", 5000)
	add("long unknown field is bounded", baseManifest.with(long, "1").String(), at(sourcecatalog.ErrUnknownField, none, none, long[:64]+"…"))
	longUTF8 := strings.Repeat("a", 63) + "é" + strings.Repeat("b", 100)
	add("long non-ASCII unknown field is cut at a character", baseManifest.with(longUTF8, "1").String(), at(sourcecatalog.ErrUnknownField, none, none, strings.Repeat("a", 63)+"…"))
	for _, m := range baseManifest {
		add("missing "+m.name, baseManifest.without(m.name).String(), at(sourcecatalog.ErrMissingField, none, none, m.name))
		add("duplicate "+m.name, baseManifest.with(m.name, m.value).String(), malformed)
	}
	add("empty object", "{}", at(sourcecatalog.ErrMissingField, none, none, "chunk_count"))
	add("duplicate spelled with escape", baseManifest.with(`sc\u006fpe`, `"current-selected-sources"`).String(), malformed)

	// Not a JSON object, not JSON.
	add("array", "[]", inv(""))
	add("string", `"manifest"`, inv(""))
	add("null", "null", inv(""))
	add("empty input", "", malformed)
	add("whitespace only", " \n", malformed)
	add("trailing data", baseManifest.String()+"{}", malformed)
	add("byte-order mark", "\ufeff"+baseManifest.String(), malformed)
	add("invalid UTF-8", baseManifest.set("scope", "\"\xff\"").String(), malformed)
	add("truncated", baseManifest.String()[:100], malformed)
	add("NaN", baseManifest.set("revision", "NaN").String(), malformed)
	add("leading zero", baseManifest.set("revision", "07").String(), malformed)
	add("plus sign", baseManifest.set("revision", "+7").String(), malformed)
	add("lossy integer", baseManifest.set("revision", "9007199254740993").String(), malformed)

	// Integers must be JSON integers written as digits.
	for _, f := range []string{"revision", "chunk_count", "record_count"} {
		for _, v := range []string{"42.0", "4.2e1", "42e0", "true", "false", `"42"`, "null", "[42]", `{"n":42}`} {
			add(f+" "+v, baseManifest.set(f, v).String(), inv(f))
		}
		add(f+" -1", baseManifest.set(f, "-1").String(), inv(f))
		add(f+" 1e20", baseManifest.set(f, "100000000000000000000").String(), inv(f))
	}
	add("revision 0", baseManifest.set("revision", "0").String(), inv("revision"))
	add("revision 2^53", baseManifest.set("revision", "9007199254740992").String(), inv("revision"))
	add("chunk_count 0", baseManifest.set("chunk_count", "0").String(), inv("chunk_count"))
	add("chunk_count 257", baseManifest.set("chunk_count", "257").String(), at(sourcecatalog.ErrLimitExceeded, none, none, "chunk_count"))
	add("record_count 25601", baseManifest.set("record_count", "25601").String(), at(sourcecatalog.ErrLimitExceeded, none, none, "record_count"))

	// UUIDs.
	for _, f := range []string{"vessel_id", "snapshot_id"} {
		good := strings.Trim(baseManifest.value(f), `"`)
		for name, v := range map[string]string{
			"uppercase":    `"` + strings.ToUpper(good) + `"`,
			"one upper":    `"` + strings.Replace(good, "c", "C", 1) + `"`,
			"braces":       `"{` + good + `}"`,
			"urn":          `"urn:uuid:` + good + `"`,
			"no hyphens":   `"` + strings.ReplaceAll(good, "-", "") + `"`,
			"short":        `"` + good[:35] + `"`,
			"long":         `"` + good + `0"`,
			"moved hyphen": `"` + good[:7] + "-" + good[7:8] + good[9:] + `"`,
			"not hex":      `"` + "g" + good[1:] + `"`,
			"nil":          `"00000000-0000-0000-0000-000000000000"`,
			"empty":        `""`,
			"number":       "42",
			"null":         "null",
			"spaces":       `" ` + good[1:] + `"`,
		} {
			add(f+" "+name, baseManifest.set(f, v).String(), inv(f))
		}
	}
	add("snapshot_id v1", baseManifest.set("snapshot_id", `"6ba7b810-9dad-11d1-80b4-00c04fd430c8"`).String(), inv("snapshot_id"))
	add("snapshot_id v7", baseManifest.set("snapshot_id", `"01890a5d-ac96-774b-bcce-b302099a8057"`).String(), inv("snapshot_id"))
	add("snapshot_id v4 wrong variant", baseManifest.set("snapshot_id", `"7c9e6679-7425-40de-c44b-e07fc1f90ae7"`).String(), inv("snapshot_id"))

	// Digest.
	for name, v := range map[string]string{
		"uppercase":  `"` + strings.ToUpper(testDigest) + `"`,
		"one upper":  `"` + "A" + testDigest[1:] + `"`,
		"short":      `"` + testDigest[:63] + `"`,
		"long":       `"` + testDigest + `0"`,
		"not hex":    `"` + "g" + testDigest[1:] + `"`,
		"empty":      `""`,
		"prefixed":   `"sha256:` + testDigest[7:] + `"`,
		"number":     "1",
		"array":      "[]",
		"whitespace": `" ` + testDigest[1:] + `"`,
	} {
		add("document_sha256 "+name, baseManifest.set("document_sha256", v).String(), inv("document_sha256"))
	}

	// Timestamps: one spelling per instant.
	for name, v := range map[string]string{
		"+00:00 offset":      `"2026-05-01T12:00:00+00:00"`,
		"-00:00 offset":      `"2026-05-01T12:00:00-00:00"`,
		"+02:00 offset":      `"2026-05-01T14:00:00+02:00"`,
		"missing Z":          `"2026-05-01T12:00:00"`,
		"lowercase z":        `"2026-05-01T12:00:00z"`,
		"lowercase t":        `"2026-05-01t12:00:00Z"`,
		"space separator":    `"2026-05-01 12:00:00Z"`,
		"trailing zeros":     `"2026-05-01T12:00:00.500Z"`,
		"zero fraction":      `"2026-05-01T12:00:00.0Z"`,
		"date only":          `"2026-05-01"`,
		"no seconds":         `"2026-05-01T12:00Z"`,
		"leap second":        `"2026-06-30T23:59:60Z"`,
		"month 13":           `"2026-13-01T12:00:00Z"`,
		"february 30":        `"2026-02-30T12:00:00Z"`,
		"hour 24":            `"2026-05-01T24:00:00Z"`,
		"single digit month": `"2026-5-01T12:00:00Z"`,
		"unix seconds":       "1777636800",
		"empty":              `""`,
		"zero time":          `"0001-01-01T00:00:00Z"`,
		"too precise":        `"2026-05-01T12:00:00.1234567891Z"`,
	} {
		add("discovered_at_utc "+name, baseManifest.set("discovered_at_utc", v).String(), inv("discovered_at_utc"))
	}

	// Capabilities of other protocol versions.
	add("protocol v1", baseManifest.set("protocol", `"yachtmemory.source-catalog.v1"`).String(), uns("protocol"))
	add("protocol v3", baseManifest.set("protocol", `"yachtmemory.source-catalog.v3"`).String(), uns("protocol"))
	add("protocol case", baseManifest.set("protocol", `"YachtMemory.source-catalog.v2"`).String(), uns("protocol"))
	add("protocol empty", baseManifest.set("protocol", `""`).String(), uns("protocol"))
	add("protocol number", baseManifest.set("protocol", "2").String(), inv("protocol"))
	add("scope all", baseManifest.set("scope", `"all-sources"`).String(), uns("scope"))
	add("scope padded", baseManifest.set("scope", `"current-selected-sources "`).String(), uns("scope"))
	add("scope null", baseManifest.set("scope", "null").String(), inv("scope"))
	add("coverage all", baseManifest.set("inventory_coverage", `"all-connected"`).String(), uns("inventory_coverage"))
	add("coverage full", baseManifest.set("inventory_coverage", `"full"`).String(), uns("inventory_coverage"))
	add("coverage array", baseManifest.set("inventory_coverage", `["selected-only"]`).String(), inv("inventory_coverage"))

	// Transport completeness.
	add("transport_complete false", baseManifest.set("transport_complete", "false").String(), at(sourcecatalog.ErrIncompleteScan, none, none, "transport_complete"))
	for _, v := range []string{`"true"`, "1", "null", "0", "[true]"} {
		add("transport_complete "+v, baseManifest.set("transport_complete", v).String(), inv("transport_complete"))
	}

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := DecodeManifest([]byte(c.raw))
			assert.Equal(t, Manifest{}, m, "nothing partial is returned")
			requireOne(t, err, c.want)
		})
	}
}

func TestDecodeManifestSize(t *testing.T) {
	base := baseManifest.String()
	pad := func(n int) []byte { return []byte(base + strings.Repeat(" ", n-len(base))) }

	m, err := DecodeManifest(pad(MaxMessageSize))
	require.NoError(t, err)
	assert.Equal(t, baseManifestValue(t), m)

	_, err = DecodeManifest(pad(MaxMessageSize + 1))
	requireOne(t, err, at(sourcecatalog.ErrLimitExceeded, sourcecatalog.NoIndex, sourcecatalog.NoIndex, ""))

	// The limit applies before parsing: even garbage is a limit error.
	_, err = DecodeManifest([]byte(strings.Repeat("[", MaxMessageSize+1)))
	requireOne(t, err, at(sourcecatalog.ErrLimitExceeded, sourcecatalog.NoIndex, sourcecatalog.NoIndex, ""))
}

func TestManifestCheck(t *testing.T) {
	none := sourcecatalog.NoIndex
	cases := []struct {
		name   string
		mutate func(*Manifest)
		want   *where
	}{
		{"valid", func(*Manifest) {}, nil},
		{"chunk_count 0", func(m *Manifest) { m.ChunkCount = 0 }, &where{sourcecatalog.ErrInvalidValue, none, none, "chunk_count"}},
		{"chunk_count 257", func(m *Manifest) { m.ChunkCount = 257 }, &where{sourcecatalog.ErrLimitExceeded, none, none, "chunk_count"}},
		{"record_count -1", func(m *Manifest) { m.RecordCount = -1 }, &where{sourcecatalog.ErrInvalidValue, none, none, "record_count"}},
		{"record_count 25601", func(m *Manifest) { m.RecordCount = 25601 }, &where{sourcecatalog.ErrLimitExceeded, none, none, "record_count"}},
		{"nil vessel", func(m *Manifest) { m.VesselID = [16]byte{} }, &where{sourcecatalog.ErrInvalidValue, none, none, "vessel_id"}},
		{"nil snapshot", func(m *Manifest) { m.SnapshotID = [16]byte{} }, &where{sourcecatalog.ErrInvalidValue, none, none, "snapshot_id"}},
		{"revision 0", func(m *Manifest) { m.Revision = 0 }, &where{sourcecatalog.ErrInvalidValue, none, none, "revision"}},
		{"zero time", func(m *Manifest) { m.DiscoveredAt = time.Time{} }, &where{sourcecatalog.ErrInvalidValue, none, none, "discovered_at_utc"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := baseManifestValue(t)
			c.mutate(&m)
			err := m.Check()
			if c.want == nil {
				require.NoError(t, err)
				return
			}
			requireOne(t, err, *c.want)
		})
	}
}
