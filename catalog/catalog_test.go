package catalog_test

import (
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
)

// ---------------------------------------------------------------------------
// Helpers

// classes are the error classes package catalog may return.
var classes = []error{
	sourcecatalog.ErrMalformedJSON,
	sourcecatalog.ErrUnknownField,
	sourcecatalog.ErrMissingField,
	sourcecatalog.ErrInvalidValue,
	sourcecatalog.ErrLimitExceeded,
	sourcecatalog.ErrIntegrity,
}

// requireClass checks that err wraps class and no other class, that it is a
// *sourcecatalog.Error naming field, and that its text stays bounded.
func requireClass(t *testing.T, err error, class error, field string) *sourcecatalog.Error {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, class)
	for _, other := range classes {
		if other != class {
			assert.NotErrorIs(t, err, other, "an error wraps exactly one class")
		}
	}
	var e *sourcecatalog.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, field, e.Field, "field")
	assert.LessOrEqual(t, len(err.Error()), 300, "error text must stay bounded: %q", err.Error())
	return e
}

// problems returns the *sourcecatalog.Error values an error from Check
// carries: the error itself, or each element of an errors.Join. A
// *sourcecatalog.Error also has Unwrap() []error, so it is matched first.
func problems(err error) []*sourcecatalog.Error {
	if err == nil {
		return nil
	}
	var e *sourcecatalog.Error
	if errors.As(err, &e) && e == err {
		return []*sourcecatalog.Error{e}
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return nil
	}
	var out []*sourcecatalog.Error
	for _, sub := range j.Unwrap() {
		out = append(out, problems(sub)...)
	}
	return out
}

type loc struct {
	Record int
	Field  string
}

func locs(ps []*sourcecatalog.Error) []loc {
	out := make([]loc, len(ps))
	for i, p := range ps {
		out[i] = loc{p.Record, p.Field}
	}
	return out
}

func ptr(s string) *string { return &s }

func mustDecode(t *testing.T, raw string) *catalog.Record {
	t.Helper()
	r, err := catalog.Decode([]byte(raw))
	require.NoError(t, err, "decode %s", raw)
	require.NotNil(t, r)
	return r
}

func mustPath(t *testing.T, path string) *catalog.Record {
	t.Helper()
	r, err := catalog.NewPath(catalog.Path{Path: path})
	require.NoError(t, err)
	return r
}

func mustSource(t *testing.T, ref string) *catalog.Record {
	t.Helper()
	r, err := catalog.NewSource(catalog.Source{SourceRef: ref})
	require.NoError(t, err)
	return r
}

func mustObs(t *testing.T, path, ref string) *catalog.Record {
	t.Helper()
	r, err := catalog.NewObservation(catalog.Observation{Path: path, SourceRef: ref, ValueType: catalog.Number})
	require.NoError(t, err)
	return r
}

func canonicals(rs []*catalog.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r.Canonical())
	}
	return out
}

// nestedObjects returns a JSON object nesting n objects deep (n ≥ 1).
func nestedObjects(n int) string {
	return strings.Repeat(`{"a":`, n-1) + `{}` + strings.Repeat(`}`, n-1)
}

// nestedArrays returns a JSON object holding n-1 nested arrays: n levels.
func nestedArrays(n int) string {
	return `{"a":` + strings.Repeat(`[`, n-1) + strings.Repeat(`]`, n-1) + `}`
}

// ---------------------------------------------------------------------------
// 1. Valid records, canonical bytes, round trip, constructors, accessors

func TestDecodeValid(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
		kind catalog.Kind
		path string
		ref  string
	}{
		{
			name: "path minimal",
			in:   `{"kind":"path","path":"navigation.speedOverGround"}`,
			want: `{"kind":"path","path":"navigation.speedOverGround"}`,
			kind: catalog.KindPath, path: "navigation.speedOverGround",
		},
		{
			name: "path reordered with whitespace",
			in: " \n\t{ \"unit\" : \"m/s\" ,\r\n \"path\":\"navigation.speedOverGround\",\n" +
				"\t\"meta\" : { \"description\" : \"Speed over ground\" } , \"kind\" : \"path\" }\n ",
			want: `{"kind":"path","meta":{"description":"Speed over ground"},"path":"navigation.speedOverGround","unit":"m/s"}`,
			kind: catalog.KindPath, path: "navigation.speedOverGround",
		},
		{
			name: "path null unit",
			in:   `{"unit":null,"kind":"path","path":"navigation.state"}`,
			want: `{"kind":"path","path":"navigation.state","unit":null}`,
			kind: catalog.KindPath, path: "navigation.state",
		},
		{
			name: "path meta canonicalised",
			in: `{"path":"environment.wind.speedApparent","kind":"path","meta":{"zones":[{"upper":1.50,"lower":-0,"state":"normal"}],` +
				`"displayScale":{"upper":2E1,"lower":0.0,"type":"linear"},"big":1e21,"small":1E-7,"int":100000000000000000000,` +
				`"esc":"\u00e9\/\u001f\t","\uff61":1,"\ud83d\ude00":2,"é":3,"b":[true,false,null]}}`,
			want: `{"kind":"path","meta":{"b":[true,false,null],"big":1e+21,"displayScale":{"lower":0,"type":"linear","upper":20},` +
				`"esc":"é/\u001f\t","int":100000000000000000000,"small":1e-7,"zones":[{"lower":0,"state":"normal","upper":1.5}],` +
				`"é":3,"😀":2,"｡":1},"path":"environment.wind.speedApparent"}`,
			kind: catalog.KindPath, path: "environment.wind.speedApparent",
		},
		{
			name: "path empty meta",
			in:   `{"meta":{},"path":"a","kind":"path"}`,
			want: `{"kind":"path","meta":{},"path":"a"}`,
			kind: catalog.KindPath, path: "a",
		},
		{
			name: "path with escaped characters in identifier",
			in:   `{"kind":"path","path":"a.\u00e9.\"q\".\\"}`,
			want: `{"kind":"path","path":"a.é.\"q\".\\"}`,
			kind: catalog.KindPath, path: `a.é."q".\`,
		},
		{
			name: "source minimal",
			in:   `{"source_ref":"can0.c0788c00e7e04312","kind":"source"}`,
			want: `{"kind":"source","source_ref":"can0.c0788c00e7e04312"}`,
			kind: catalog.KindSource, ref: "can0.c0788c00e7e04312",
		},
		{
			name: "source full reordered",
			in: `{ "type" : "NMEA2000", "meta":{"manufacturer":{"name":"Garmin","code":229},"canName":"c0788c00e7e04312"},` +
				` "source_ref":"can0.c0788c00e7e04312", "label":"can0", "kind":"source" }`,
			want: `{"kind":"source","label":"can0","meta":{"canName":"c0788c00e7e04312","manufacturer":{"code":229,"name":"Garmin"}},` +
				`"source_ref":"can0.c0788c00e7e04312","type":"NMEA2000"}`,
			kind: catalog.KindSource, ref: "can0.c0788c00e7e04312",
		},
		{
			name: "source empty label and type are kept",
			in:   `{"kind":"source","source_ref":"x","label":"","type":""}`,
			want: `{"kind":"source","label":"","source_ref":"x","type":""}`,
			kind: catalog.KindSource, ref: "x",
		},
		{
			name: "source label with control characters and unicode",
			in:   `{"kind":"source","source_ref":"x","label":"a\u0000\n\u007f\u0085é"}`,
			want: "{\"kind\":\"source\",\"label\":\"a\\u0000\\n\x7f\u0085é\",\"source_ref\":\"x\"}",
			kind: catalog.KindSource, ref: "x",
		},
		{
			name: "observation reordered",
			in:   `{"value_type":"number","source_ref":"can0.c0788c00e7e04312","path":"navigation.speedOverGround","kind":"observation"}`,
			want: `{"kind":"observation","path":"navigation.speedOverGround","source_ref":"can0.c0788c00e7e04312","value_type":"number"}`,
			kind: catalog.KindObservation, path: "navigation.speedOverGround", ref: "can0.c0788c00e7e04312",
		},
		{
			name: "observation position",
			in:   "{\n  \"kind\": \"observation\",\n  \"path\": \"navigation.position\",\n  \"source_ref\": \"gps.0\",\n  \"value_type\": \"position\"\n}",
			want: `{"kind":"observation","path":"navigation.position","source_ref":"gps.0","value_type":"position"}`,
			kind: catalog.KindObservation, path: "navigation.position", ref: "gps.0",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := mustDecode(t, tc.in)
			assert.Equal(t, tc.want, string(r.Canonical()))
			assert.Equal(t, tc.kind, r.Kind())
			assert.Equal(t, tc.path, r.PathName())
			assert.Equal(t, tc.ref, r.SourceRef())

			// The expected bytes are canonical JSON of the same value.
			transformed, err := canonical.Transform([]byte(tc.in))
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(transformed), "record bytes must equal the RFC 8785 form")

			// Round trip: canonical bytes decode to the same bytes.
			again := mustDecode(t, string(r.Canonical()))
			assert.Equal(t, tc.want, string(again.Canonical()))
			assert.Equal(t, 0, catalog.Compare(r, again))
		})
	}
}

func TestConstructorsMatchDecode(t *testing.T) {
	tests := []struct {
		name  string
		build func() (*catalog.Record, error)
		json  string
	}{
		{
			name: "path bare",
			build: func() (*catalog.Record, error) {
				return catalog.NewPath(catalog.Path{Path: "navigation.speedOverGround"})
			},
			json: `{"path":"navigation.speedOverGround","kind":"path"}`,
		},
		{
			name: "path unit and meta",
			build: func() (*catalog.Record, error) {
				return catalog.NewPath(catalog.Path{
					Path: "navigation.speedOverGround",
					Unit: catalog.UnitOf("m/s"),
					Meta: []byte(` { "units":"m/s", "description" : "SOG", "displayScale":{"upper":1E1,"lower":0.0} } `),
				})
			},
			json: `{"unit":"m/s","path":"navigation.speedOverGround","kind":"path","meta":{"displayScale":{"lower":0,"upper":10},"description":"SOG","units":"m/s"}}`,
		},
		{
			name: "path no unit",
			build: func() (*catalog.Record, error) {
				return catalog.NewPath(catalog.Path{Path: "navigation.state", Unit: catalog.NoUnit()})
			},
			json: `{"kind":"path","path":"navigation.state","unit":null}`,
		},
		{
			name: "path unicode",
			build: func() (*catalog.Record, error) {
				return catalog.NewPath(catalog.Path{Path: "a.é.😀\u00a0\u2028", Unit: catalog.UnitOf("°C")})
			},
			json: `{"kind":"path","path":"a.\u00e9.\ud83d\ude00\u00a0\u2028","unit":"\u00b0C"}`,
		},
		{
			name: "source bare",
			build: func() (*catalog.Record, error) {
				return catalog.NewSource(catalog.Source{SourceRef: "can0.c0788c00e7e04312"})
			},
			json: `{"kind":"source","source_ref":"can0.c0788c00e7e04312"}`,
		},
		{
			name: "source full",
			build: func() (*catalog.Record, error) {
				return catalog.NewSource(catalog.Source{
					SourceRef: "can0.c0788c00e7e04312",
					Label:     ptr("can0"),
					Type:      ptr("NMEA2000"),
					Meta:      []byte(`{"src":"3","pgns":[129025, 129026.0]}`),
				})
			},
			json: `{"type":"NMEA2000","meta":{"pgns":[129025,129026],"src":"3"},"label":"can0","source_ref":"can0.c0788c00e7e04312","kind":"source"}`,
		},
		{
			name: "source label with escapes",
			build: func() (*catalog.Record, error) {
				return catalog.NewSource(catalog.Source{SourceRef: "x", Label: ptr("tab\there \"q\" \\")})
			},
			json: `{"kind":"source","source_ref":"x","label":"tab\there \"q\" \\"}`,
		},
		{
			name: "observation",
			build: func() (*catalog.Record, error) {
				return catalog.NewObservation(catalog.Observation{Path: "navigation.position", SourceRef: "gps.0", ValueType: catalog.Position})
			},
			json: `{"source_ref":"gps.0","value_type":"position","kind":"observation","path":"navigation.position"}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			built, err := tc.build()
			require.NoError(t, err)
			decoded := mustDecode(t, tc.json)
			assert.Equal(t, string(decoded.Canonical()), string(built.Canonical()))
			assert.Equal(t, decoded.Kind(), built.Kind())
			assert.Equal(t, decoded.PathName(), built.PathName())
			assert.Equal(t, decoded.SourceRef(), built.SourceRef())
			again := mustDecode(t, string(built.Canonical()))
			assert.Equal(t, string(built.Canonical()), string(again.Canonical()))
		})
	}
}

// Every observation value type encodes under its wire name and decodes back.
func TestObservationValueTypes(t *testing.T) {
	for _, vt := range catalog.ValueTypes() {
		t.Run(vt.String(), func(t *testing.T) {
			r, err := catalog.NewObservation(catalog.Observation{Path: "a.b", SourceRef: "s", ValueType: vt})
			require.NoError(t, err)
			want := `{"kind":"observation","path":"a.b","source_ref":"s","value_type":"` + vt.String() + `"}`
			assert.Equal(t, want, string(r.Canonical()))
			o, ok := mustDecode(t, want).AsObservation()
			require.True(t, ok)
			assert.Equal(t, vt, o.ValueType)
		})
	}
}

func TestAccessors(t *testing.T) {
	t.Run("path", func(t *testing.T) {
		r := mustDecode(t, `{"kind":"path","path":"a.b","unit":"m","meta":{"z":1.0,"a":[1E2]}}`)
		p, ok := r.AsPath()
		require.True(t, ok)
		assert.Equal(t, "a.b", p.Path)
		assert.Equal(t, catalog.UnitOf("m"), p.Unit)
		assert.Equal(t, `{"a":[100],"z":1}`, string(p.Meta))
		assert.Contains(t, string(r.Canonical()), `"meta":`+string(p.Meta)+`,`)
		_, ok = r.AsSource()
		assert.False(t, ok)
		_, ok = r.AsObservation()
		assert.False(t, ok)

		// A record built from AsPath's content is the same record.
		rebuilt, err := catalog.NewPath(p)
		require.NoError(t, err)
		assert.Equal(t, string(r.Canonical()), string(rebuilt.Canonical()))
	})
	t.Run("path without meta", func(t *testing.T) {
		p, ok := mustDecode(t, `{"kind":"path","path":"a"}`).AsPath()
		require.True(t, ok)
		assert.Nil(t, p.Meta)
		assert.True(t, p.Unit.IsUnknown())
	})
	t.Run("source", func(t *testing.T) {
		r := mustDecode(t, `{"kind":"source","source_ref":"can0.1","label":"can0","type":"NMEA2000","meta":{"b":{"y":2,"x":1},"a":-0.0}}`)
		s, ok := r.AsSource()
		require.True(t, ok)
		assert.Equal(t, catalog.Source{
			SourceRef: "can0.1",
			Label:     ptr("can0"),
			Type:      ptr("NMEA2000"),
			Meta:      []byte(`{"a":0,"b":{"x":1,"y":2}}`),
		}, s)
		_, ok = r.AsPath()
		assert.False(t, ok)
		_, ok = r.AsObservation()
		assert.False(t, ok)
		assert.Equal(t, "", r.PathName())

		rebuilt, err := catalog.NewSource(s)
		require.NoError(t, err)
		assert.Equal(t, string(r.Canonical()), string(rebuilt.Canonical()))
	})
	t.Run("source without options", func(t *testing.T) {
		s, ok := mustDecode(t, `{"kind":"source","source_ref":"x"}`).AsSource()
		require.True(t, ok)
		assert.Equal(t, catalog.Source{SourceRef: "x"}, s)
	})
	t.Run("observation", func(t *testing.T) {
		r := mustDecode(t, `{"kind":"observation","path":"a.b","source_ref":"x.y","value_type":"array"}`)
		o, ok := r.AsObservation()
		require.True(t, ok)
		assert.Equal(t, catalog.Observation{Path: "a.b", SourceRef: "x.y", ValueType: catalog.Array}, o)
		_, ok = r.AsPath()
		assert.False(t, ok)
		_, ok = r.AsSource()
		assert.False(t, ok)
	})
}

// Records are immutable: neither the constructor's input nor the accessors'
// results alias the record's state.
func TestRecordImmutable(t *testing.T) {
	meta := []byte(`{"a":"x"}`)
	label, typ := "can0", "NMEA2000"
	src := catalog.Source{SourceRef: "s", Label: &label, Type: &typ, Meta: meta}
	r, err := catalog.NewSource(src)
	require.NoError(t, err)
	want := `{"kind":"source","label":"can0","meta":{"a":"x"},"source_ref":"s","type":"NMEA2000"}`
	require.Equal(t, want, string(r.Canonical()))

	copy(meta, `{"b":"y"}`)
	label, typ = "changed", "changed"
	assert.Equal(t, want, string(r.Canonical()), "input changes must not reach the record")

	got, ok := r.AsSource()
	require.True(t, ok)
	*got.Label, *got.Type = "mutated", "mutated"
	again, _ := r.AsSource()
	assert.Equal(t, "can0", *again.Label)
	assert.Equal(t, "NMEA2000", *again.Type)
	assert.Equal(t, want, string(r.Canonical()))

	// Meta is capped at its end: appending to it cannot overwrite canon.
	p, ok := mustDecode(t, `{"kind":"path","meta":{"a":1},"path":"p","unit":"m"}`).AsPath()
	require.True(t, ok)
	assert.Equal(t, len(p.Meta), cap(p.Meta))
}

func TestConcurrentReads(t *testing.T) {
	r := mustDecode(t, `{"kind":"path","path":"a.b","unit":"m","meta":{"x":[1,2]}}`)
	want := string(r.Canonical())
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				p, ok := r.AsPath()
				if !ok || string(r.Canonical()) != want || string(p.Meta) != `{"x":[1,2]}` {
					t.Error("concurrent read saw a different record")
					return
				}
				_ = catalog.Compare(r, r)
			}
		}()
	}
	wg.Wait()
}

// ---------------------------------------------------------------------------
// 2. The tri-state unit

func TestUnitTriState(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		unit    catalog.Unit
		unknown bool
		none    bool
		symbol  string
		text    string
		member  string // the unit member in canonical bytes, "" when absent
	}{
		{"absent", `{"kind":"path","path":"p"}`, catalog.Unit{}, true, false, "", "(absent)", ""},
		{"null", `{"unit":null,"kind":"path","path":"p"}`, catalog.NoUnit(), false, true, "", "null", `,"unit":null`},
		{"symbol", `{"unit":"m/s","kind":"path","path":"p"}`, catalog.UnitOf("m/s"), false, false, "m/s", "m/s", `,"unit":"m/s"`},
		{"escaped symbol", `{"unit":"\u00b0","kind":"path","path":"p"}`, catalog.UnitOf("°"), false, false, "°", "°", `,"unit":"°"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := mustDecode(t, tc.in)
			want := `{"kind":"path","path":"p"` + tc.member + `}`
			assert.Equal(t, want, string(r.Canonical()))

			p, ok := r.AsPath()
			require.True(t, ok)
			check := func(u catalog.Unit) {
				t.Helper()
				assert.Equal(t, tc.unit, u)
				assert.Equal(t, tc.unknown, u.IsUnknown(), "IsUnknown")
				assert.Equal(t, tc.none, u.IsNone(), "IsNone")
				assert.Equal(t, tc.symbol, u.Symbol(), "Symbol")
				assert.Equal(t, tc.text, u.String(), "String")
			}
			check(p.Unit)

			// Decode → Canonical → Decode keeps the state.
			again := mustDecode(t, string(r.Canonical()))
			assert.Equal(t, want, string(again.Canonical()))
			p2, _ := again.AsPath()
			check(p2.Unit)

			// The constructor with the same unit gives the same bytes.
			built, err := catalog.NewPath(catalog.Path{Path: "p", Unit: tc.unit})
			require.NoError(t, err)
			assert.Equal(t, want, string(built.Canonical()))
		})
	}

	// The three states are pairwise distinct.
	states := []catalog.Unit{{}, catalog.NoUnit(), catalog.UnitOf("m/s")}
	for i := range states {
		for j := range states {
			if i != j {
				assert.NotEqual(t, states[i], states[j])
			}
		}
	}
}

func TestUnitInvalid(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		class error
	}{
		{"empty string", `{"kind":"path","path":"p","unit":""}`, sourcecatalog.ErrInvalidValue},
		{"number", `{"kind":"path","path":"p","unit":1}`, sourcecatalog.ErrInvalidValue},
		{"bool", `{"kind":"path","path":"p","unit":false}`, sourcecatalog.ErrInvalidValue},
		{"object", `{"kind":"path","path":"p","unit":{}}`, sourcecatalog.ErrInvalidValue},
		{"array", `{"kind":"path","path":"p","unit":["m"]}`, sourcecatalog.ErrInvalidValue},
		{"too long", `{"kind":"path","path":"p","unit":"` + strings.Repeat("m", catalog.MaxUnitLen+1) + `"}`, sourcecatalog.ErrLimitExceeded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := catalog.Decode([]byte(tc.in))
			assert.Nil(t, r)
			requireClass(t, err, tc.class, "unit")
		})
	}

	// The longest unit is accepted.
	long := strings.Repeat("m", catalog.MaxUnitLen)
	r := mustDecode(t, `{"kind":"path","path":"p","unit":"`+long+`"}`)
	p, _ := r.AsPath()
	assert.Equal(t, long, p.Unit.Symbol())

	// Constructor side.
	for _, u := range []struct {
		name  string
		unit  catalog.Unit
		class error
	}{
		{"empty symbol", catalog.UnitOf(""), sourcecatalog.ErrInvalidValue},
		{"invalid UTF-8", catalog.UnitOf("m\xff"), sourcecatalog.ErrInvalidValue},
		{"too long", catalog.UnitOf(long + "m"), sourcecatalog.ErrLimitExceeded},
	} {
		t.Run("NewPath "+u.name, func(t *testing.T) {
			r, err := catalog.NewPath(catalog.Path{Path: "p", Unit: u.unit})
			assert.Nil(t, r)
			requireClass(t, err, u.class, "unit")
		})
	}
}

// ---------------------------------------------------------------------------
// 3. Invalid records

func TestDecodeInvalid(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	path := func(p string) string { return `{"kind":"path","path":"` + p + `"}` }
	source := func(ref string) string { return `{"kind":"source","source_ref":"` + ref + `"}` }
	obs := func(p, ref, vt string) string {
		return `{"kind":"observation","path":"` + p + `","source_ref":"` + ref + `","value_type":"` + vt + `"}`
	}
	var (
		unknown   = sourcecatalog.ErrUnknownField
		missing   = sourcecatalog.ErrMissingField
		invalid   = sourcecatalog.ErrInvalidValue
		limit     = sourcecatalog.ErrLimitExceeded
		malformed = sourcecatalog.ErrMalformedJSON
	)
	tests := []struct {
		name  string
		in    string
		class error
		field string
	}{
		// Not a record.
		{"array", `[]`, invalid, ""},
		{"string", `"path"`, invalid, ""},
		{"null", `null`, invalid, ""},
		{"number", `1`, invalid, ""},
		{"array of a record", `[` + path("a") + `]`, invalid, ""},

		// Malformed JSON.
		{"empty input", ``, malformed, ""},
		{"truncated", `{"kind":"path","path":"a"`, malformed, ""},
		{"trailing data", path("a") + `x`, malformed, ""},
		{"two records", path("a") + path("b"), malformed, ""},
		{"duplicate member", `{"kind":"path","path":"a","path":"b"}`, malformed, ""},
		{"duplicate member by escape", `{"kind":"path","path":"a","p\u0061th":"b"}`, malformed, ""},
		{"invalid UTF-8 in path", "{\"kind\":\"path\",\"path\":\"a\xff\"}", malformed, ""},
		{"lone surrogate in path", `{"kind":"path","path":"a\ud800"}`, malformed, ""},
		{"byte-order mark", "\xef\xbb\xbf" + path("a"), malformed, ""},
		{"lossy number in meta", `{"kind":"path","path":"a","meta":{"n":9007199254740993}}`, malformed, ""},
		{"single quotes", `{'kind':'path','path':'a'}`, malformed, ""},

		// Kind.
		{"missing kind", `{"path":"a"}`, missing, "kind"},
		{"missing kind with unknown member", `{"path":"a","foo":1}`, missing, "kind"},
		{"empty object", `{}`, missing, "kind"},
		{"unknown kind", `{"kind":"device","path":"a"}`, invalid, "kind"},
		{"kind wrong case", `{"kind":"Path","path":"a"}`, invalid, "kind"},
		{"kind empty", `{"kind":"","path":"a"}`, invalid, "kind"},
		{"kind number", `{"kind":1,"path":"a"}`, invalid, "kind"},
		{"kind null", `{"kind":null,"path":"a"}`, invalid, "kind"},

		// Unknown members.
		{"unknown member in path", `{"kind":"path","path":"a","description":"x"}`, unknown, "description"},
		{"unknown member in source", `{"kind":"source","source_ref":"s","units":"m"}`, unknown, "units"},
		{"unknown member in observation", `{"kind":"observation","path":"a","source_ref":"s","value_type":"number","value":1}`, unknown, "value"},
		{"unit on a source", `{"kind":"source","source_ref":"s","unit":"m"}`, unknown, "unit"},
		{"label on a path", `{"kind":"path","path":"a","label":"x"}`, unknown, "label"},
		{"source_ref on a path", `{"kind":"path","path":"a","source_ref":"s"}`, unknown, "source_ref"},
		{"path on a source", `{"kind":"source","source_ref":"s","path":"a"}`, unknown, "path"},
		{"meta on an observation", `{"kind":"observation","path":"a","source_ref":"s","value_type":"number","meta":{}}`, unknown, "meta"},
		{"member name wrong case", `{"kind":"path","Path":"a"}`, unknown, "Path"},
		{"unknown before missing", `{"kind":"observation","zzz":1}`, unknown, "zzz"},
		{"long unknown name is bounded", `{"kind":"path","path":"a","` + long(1000) + `":1}`, unknown, long(64) + "…"},

		// Missing members.
		{"missing path", `{"kind":"path","unit":"m"}`, missing, "path"},
		{"missing source_ref", `{"kind":"source","label":"x"}`, missing, "source_ref"},
		{"observation missing path", `{"kind":"observation","source_ref":"s","value_type":"number"}`, missing, "path"},
		{"observation missing source_ref", `{"kind":"observation","path":"a","value_type":"number"}`, missing, "source_ref"},
		{"observation missing value_type", `{"kind":"observation","path":"a","source_ref":"s"}`, missing, "value_type"},
		{"observation missing all", `{"kind":"observation"}`, missing, "path"},

		// Wrong JSON types.
		{"path number", `{"kind":"path","path":1}`, invalid, "path"},
		{"path null", `{"kind":"path","path":null}`, invalid, "path"},
		{"path array", `{"kind":"path","path":["a"]}`, invalid, "path"},
		{"source_ref number", `{"kind":"source","source_ref":1}`, invalid, "source_ref"},
		{"source_ref object", `{"kind":"source","source_ref":{}}`, invalid, "source_ref"},
		{"label bool", `{"kind":"source","source_ref":"s","label":true}`, invalid, "label"},
		{"label null", `{"kind":"source","source_ref":"s","label":null}`, invalid, "label"},
		{"type number", `{"kind":"source","source_ref":"s","type":2000}`, invalid, "type"},
		{"observation path number", `{"kind":"observation","path":1,"source_ref":"s","value_type":"number"}`, invalid, "path"},
		{"observation source_ref bool", `{"kind":"observation","path":"a","source_ref":false,"value_type":"number"}`, invalid, "source_ref"},
		{"value_type number", `{"kind":"observation","path":"a","source_ref":"s","value_type":1}`, invalid, "value_type"},
		{"value_type null", `{"kind":"observation","path":"a","source_ref":"s","value_type":null}`, invalid, "value_type"},
		{`value_type "1"`, obs("a", "s", "1"), invalid, "value_type"},
		{"value_type unknown name", obs("a", "s", "integer"), invalid, "value_type"},
		{"value_type wrong case", obs("a", "s", "Number"), invalid, "value_type"},
		{"value_type empty", obs("a", "s", ""), invalid, "value_type"},
		{"value_type padded", obs("a", "s", " number"), invalid, "value_type"},
		{"meta string", `{"kind":"path","path":"a","meta":"{}"}`, invalid, "meta"},
		{`meta "1"`, `{"kind":"path","path":"a","meta":"1"}`, invalid, "meta"},
		{"meta null", `{"kind":"path","path":"a","meta":null}`, invalid, "meta"},
		{"meta array", `{"kind":"path","path":"a","meta":[]}`, invalid, "meta"},
		{"meta number", `{"kind":"source","source_ref":"s","meta":1}`, invalid, "meta"},

		// Path rules.
		{"path empty", path(""), invalid, "path"},
		{"path too long", path(long(catalog.MaxPathLen + 1)), limit, "path"},
		{"path too long in bytes", path(strings.Repeat("€", 171)), limit, "path"},
		{"path leading dot", path(".a"), invalid, "path"},
		{"path trailing dot", path("a."), invalid, "path"},
		{"path double dot", path("a..b"), invalid, "path"},
		{"path only dot", path("."), invalid, "path"},
		{"path U+0000", path(`a\u0000b`), invalid, "path"},
		{"path U+0009 tab", path(`a\tb`), invalid, "path"},
		{"path U+000A newline", path(`a\nb`), invalid, "path"},
		{"path U+001F", path(`a\u001fb`), invalid, "path"},
		{"path U+007F", path(`a\u007fb`), invalid, "path"},
		{"path raw U+007F", path("a\x7fb"), invalid, "path"},
		{"path U+0080 (C1)", path(`a\u0080b`), invalid, "path"},
		{"path U+0085 (C1)", path(`a\u0085b`), invalid, "path"},
		{"path raw U+0085 (C1)", path("a\xc2\x85b"), invalid, "path"},
		{"path U+009F (C1)", path(`a\u009fb`), invalid, "path"},
		{"observation path double dot", obs("a..b", "s", "number"), invalid, "path"},
		{"observation path too long", obs(long(catalog.MaxPathLen+1), "s", "number"), limit, "path"},
		{"observation path control", obs(`a\u0085`, "s", "number"), invalid, "path"},

		// source_ref rules.
		{"source_ref empty", source(""), invalid, "source_ref"},
		{"source_ref too long", source(long(catalog.MaxSourceRefLen + 1)), limit, "source_ref"},
		{"source_ref U+0000", source(`s\u0000`), invalid, "source_ref"},
		{"source_ref U+001F", source(`\u001f`), invalid, "source_ref"},
		{"source_ref U+007F", source(`s\u007f`), invalid, "source_ref"},
		{"source_ref U+0085 (C1)", source(`s\u0085`), invalid, "source_ref"},
		{"observation source_ref empty", obs("a", "", "number"), invalid, "source_ref"},
		{"observation source_ref too long", obs("a", long(catalog.MaxSourceRefLen+1), "number"), limit, "source_ref"},
		{"observation source_ref control", obs("a", `s\u0000`, "number"), invalid, "source_ref"},

		// label and type.
		{"label too long", `{"kind":"source","source_ref":"s","label":"` + long(catalog.MaxLabelLen+1) + `"}`, limit, "label"},
		{"type too long", `{"kind":"source","source_ref":"s","type":"` + long(catalog.MaxLabelLen+1) + `"}`, limit, "type"},
		{"label too long in bytes", `{"kind":"source","source_ref":"s","label":"` + strings.Repeat("é", 128) + `"}`, limit, "label"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := catalog.Decode([]byte(tc.in))
			assert.Nil(t, r)
			e := requireClass(t, err, tc.class, tc.field)
			assert.Equal(t, sourcecatalog.NoIndex, e.Record, "Decode has no record index")
			assert.Equal(t, sourcecatalog.NoIndex, e.Chunk)
			if len(tc.in) > 200 {
				assert.NotContains(t, err.Error(), tc.in[len(tc.in)/2-50:len(tc.in)/2+50], "must not echo input")
			}
		})
	}
}

func TestConstructorInvalid(t *testing.T) {
	var (
		invalid   = sourcecatalog.ErrInvalidValue
		limit     = sourcecatalog.ErrLimitExceeded
		malformed = sourcecatalog.ErrMalformedJSON
	)
	newPath := func(p string) func() (*catalog.Record, error) {
		return func() (*catalog.Record, error) { return catalog.NewPath(catalog.Path{Path: p}) }
	}
	newSource := func(s catalog.Source) func() (*catalog.Record, error) {
		return func() (*catalog.Record, error) { return catalog.NewSource(s) }
	}
	newObs := func(o catalog.Observation) func() (*catalog.Record, error) {
		return func() (*catalog.Record, error) { return catalog.NewObservation(o) }
	}
	newMeta := func(meta string) func() (*catalog.Record, error) {
		return func() (*catalog.Record, error) { return catalog.NewPath(catalog.Path{Path: "a", Meta: []byte(meta)}) }
	}
	tests := []struct {
		name  string
		build func() (*catalog.Record, error)
		class error
		field string
	}{
		{"path empty", newPath(""), invalid, "path"},
		{"path too long", newPath(strings.Repeat("a", 513)), limit, "path"},
		{"path leading dot", newPath(".a"), invalid, "path"},
		{"path trailing dot", newPath("a.b."), invalid, "path"},
		{"path double dot", newPath("a..b"), invalid, "path"},
		{"path U+0000", newPath("a\x00"), invalid, "path"},
		{"path U+001F", newPath("a\x1f"), invalid, "path"},
		{"path U+007F", newPath("a\x7f"), invalid, "path"},
		{"path U+0085", newPath("a\u0085"), invalid, "path"},
		{"path invalid UTF-8", newPath("a.\xff"), invalid, "path"},
		{"path truncated UTF-8", newPath("a.\xc3"), invalid, "path"},
		{"path overlong UTF-8", newPath("a.\xc0\xae"), invalid, "path"},
		{"path UTF-8 surrogate", newPath("a.\xed\xa0\x80"), invalid, "path"},
		{"path literal U+FFFD is fine but invalid byte is not", newPath("\uFFFD\xff"), invalid, "path"},

		{"source_ref empty", newSource(catalog.Source{}), invalid, "source_ref"},
		{"source_ref too long", newSource(catalog.Source{SourceRef: strings.Repeat("s", 256)}), limit, "source_ref"},
		{"source_ref control", newSource(catalog.Source{SourceRef: "s\n"}), invalid, "source_ref"},
		{"source_ref C1", newSource(catalog.Source{SourceRef: "s\u009f"}), invalid, "source_ref"},
		{"source_ref invalid UTF-8", newSource(catalog.Source{SourceRef: "s\xff"}), invalid, "source_ref"},
		{"label too long", newSource(catalog.Source{SourceRef: "s", Label: ptr(strings.Repeat("l", 256))}), limit, "label"},
		{"label invalid UTF-8", newSource(catalog.Source{SourceRef: "s", Label: ptr("\xff")}), invalid, "label"},
		{"type too long", newSource(catalog.Source{SourceRef: "s", Type: ptr(strings.Repeat("t", 256))}), limit, "type"},
		{"type invalid UTF-8", newSource(catalog.Source{SourceRef: "s", Type: ptr("\xc3")}), invalid, "type"},
		{"source meta not an object", newSource(catalog.Source{SourceRef: "s", Meta: []byte(`[]`)}), invalid, "meta"},
		{"source meta malformed", newSource(catalog.Source{SourceRef: "s", Meta: []byte(`{`)}), malformed, "meta"},

		{"meta null", newMeta(`null`), invalid, "meta"},
		{"meta string", newMeta(`"x"`), invalid, "meta"},
		{"meta number", newMeta(`1`), invalid, "meta"},
		{"meta malformed", newMeta(`{"a":}`), malformed, "meta"},
		{"meta empty non-nil", newMeta(``), malformed, "meta"},
		{"meta duplicate name", newMeta(`{"a":1,"a":2}`), malformed, "meta"},
		{"meta invalid UTF-8", newMeta("{\"a\":\"\xff\"}"), malformed, "meta"},
		{"meta trailing data", newMeta(`{}{}`), malformed, "meta"},

		{"observation zero value type", newObs(catalog.Observation{Path: "a", SourceRef: "s"}), invalid, "value_type"},
		{"observation value type out of range", newObs(catalog.Observation{Path: "a", SourceRef: "s", ValueType: catalog.Unknown + 1}), invalid, "value_type"},
		{"observation path empty", newObs(catalog.Observation{SourceRef: "s", ValueType: catalog.Number}), invalid, "path"},
		{"observation path double dot", newObs(catalog.Observation{Path: "a..b", SourceRef: "s", ValueType: catalog.Number}), invalid, "path"},
		{"observation source_ref empty", newObs(catalog.Observation{Path: "a", ValueType: catalog.Number}), invalid, "source_ref"},
		{"observation source_ref too long", newObs(catalog.Observation{Path: "a", SourceRef: strings.Repeat("s", 256), ValueType: catalog.Number}), limit, "source_ref"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := tc.build()
			assert.Nil(t, r)
			requireClass(t, err, tc.class, tc.field)
		})
	}
}

func TestIdentifierBoundaries(t *testing.T) {
	path512 := strings.Repeat("a", 255) + "." + strings.Repeat("b", 256)
	require.Len(t, path512, catalog.MaxPathLen)
	ref255 := strings.Repeat("r", catalog.MaxSourceRefLen)
	label255 := strings.Repeat("é", 127) + "x" // 255 bytes, 128 runes
	require.Len(t, label255, catalog.MaxLabelLen)
	multibyte512 := strings.Repeat("€", 170) + "ab" // 512 bytes
	require.Len(t, multibyte512, catalog.MaxPathLen)

	tests := []struct {
		name string
		in   string
	}{
		{"512-byte path", `{"kind":"path","path":"` + path512 + `"}`},
		{"512-byte multibyte path", `{"kind":"path","path":"` + multibyte512 + `"}`},
		{"one-byte path", `{"kind":"path","path":"a"}`},
		{"255-byte source_ref", `{"kind":"source","source_ref":"` + ref255 + `"}`},
		{"one-byte source_ref", `{"kind":"source","source_ref":"x"}`},
		{"255-byte label and type", `{"kind":"source","source_ref":"x","label":"` + label255 + `","type":"` + label255 + `"}`},
		{"observation at limits", `{"kind":"observation","path":"` + path512 + `","source_ref":"` + ref255 + `","value_type":"string"}`},
		{"source_ref with dots", `{"kind":"source","source_ref":"can0.c0788c00e7e04312"}`},
		{"source_ref with empty segments (opaque)", `{"kind":"source","source_ref":".a..b."}`},
		{"source_ref only dots", `{"kind":"source","source_ref":".."}`},
		{"observation source_ref with empty segments", `{"kind":"observation","path":"a","source_ref":"..x.","value_type":"null"}`},
		{"unicode path", `{"kind":"path","path":"électricité.batterie.😀.日本"}`},
		{"unicode source_ref", `{"kind":"source","source_ref":"gerät.ß.😀"}`},
		{"path U+00A0 (not a control)", `{"kind":"path","path":"a\u00a0b"}`},
		{"path U+2028 (not a control)", `{"kind":"path","path":"a\u2028b"}`},
		{"path U+FFFD (a real character)", `{"kind":"path","path":"a\ufffdb"}`},
		{"path U+10FFFF", `{"kind":"path","path":"a\udbff\udfff"}`},
		{"path space and punctuation", `{"kind":"path","path":"a b.c-d.e_f.[0]./x"}`},
		{"meta strings hold anything", `{"kind":"path","path":"a","meta":{"s":"\u0000\u001f\u007f\u0085\u2028\ud83d\ude00\"\\","\u0000":"k"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := mustDecode(t, tc.in)
			again := mustDecode(t, string(r.Canonical()))
			assert.Equal(t, string(r.Canonical()), string(again.Canonical()))
		})
	}

	// The same limits through the constructors.
	_, err := catalog.NewPath(catalog.Path{Path: path512})
	assert.NoError(t, err)
	_, err = catalog.NewPath(catalog.Path{Path: path512 + "c"})
	requireClass(t, err, sourcecatalog.ErrLimitExceeded, "path")
	_, err = catalog.NewSource(catalog.Source{SourceRef: ref255, Label: &label255, Type: &label255})
	assert.NoError(t, err)
	_, err = catalog.NewSource(catalog.Source{SourceRef: ".a..b."})
	assert.NoError(t, err)
	_, err = catalog.NewObservation(catalog.Observation{Path: path512, SourceRef: ref255, ValueType: catalog.Unknown})
	assert.NoError(t, err)
	_, err = catalog.NewPath(catalog.Path{Path: "a", Meta: []byte("{\"s\":\"\x7f\u0085\"}")})
	assert.NoError(t, err)
}

func TestMetaDepth(t *testing.T) {
	// A record is one level; its meta object adds its own nesting. The record
	// must fit two levels down in a chunk ({"records":[record]}), whose
	// nesting may not exceed sourcecatalog.MaxDepth.
	require.Equal(t, sourcecatalog.MaxDepth-2, catalog.MaxRecordDepth)
	maxMeta := catalog.MaxRecordDepth - 1

	for _, shape := range []struct {
		name string
		meta func(int) string
	}{
		{"objects", nestedObjects},
		{"arrays", nestedArrays},
	} {
		t.Run(shape.name, func(t *testing.T) {
			for _, kind := range []string{
				`{"kind":"path","path":"a","meta":%s}`,
				`{"kind":"source","source_ref":"s","meta":%s}`,
			} {
				// The deepest meta is accepted, and the record fits in a chunk.
				r := mustDecode(t, fmt.Sprintf(kind, shape.meta(maxMeta)))
				chunk := `{"records":[` + string(r.Canonical()) + `]}`
				_, err := canonical.Parse([]byte(chunk))
				require.NoError(t, err, "a record at the depth limit must fit in a chunk")

				// One more level is a limit error naming meta; such a record
				// could not be carried in a chunk.
				deeper := fmt.Sprintf(kind, shape.meta(maxMeta+1))
				_, err = catalog.Decode([]byte(deeper))
				requireClass(t, err, sourcecatalog.ErrLimitExceeded, "meta")
				_, err = canonical.Parse([]byte(`{"records":[` + deeper + `]}`))
				require.ErrorIs(t, err, canonical.ErrTooDeep, "the limit is exactly the chunk's")

				// Still a limit error at the parser's own maximum...
				_, err = catalog.Decode([]byte(fmt.Sprintf(kind, shape.meta(sourcecatalog.MaxDepth-1))))
				requireClass(t, err, sourcecatalog.ErrLimitExceeded, "meta")
				// ...and malformed beyond it.
				_, err = catalog.Decode([]byte(fmt.Sprintf(kind, shape.meta(sourcecatalog.MaxDepth))))
				requireClass(t, err, sourcecatalog.ErrMalformedJSON, "")
			}

			// The constructors apply the same limit to the meta text.
			_, err := catalog.NewPath(catalog.Path{Path: "a", Meta: []byte(shape.meta(maxMeta))})
			require.NoError(t, err)
			_, err = catalog.NewPath(catalog.Path{Path: "a", Meta: []byte(shape.meta(maxMeta + 1))})
			requireClass(t, err, sourcecatalog.ErrLimitExceeded, "meta")
			_, err = catalog.NewSource(catalog.Source{SourceRef: "s", Meta: []byte(shape.meta(maxMeta + 1))})
			requireClass(t, err, sourcecatalog.ErrLimitExceeded, "meta")
			_, err = catalog.NewPath(catalog.Path{Path: "a", Meta: []byte(shape.meta(sourcecatalog.MaxDepth))})
			requireClass(t, err, sourcecatalog.ErrLimitExceeded, "meta")
			_, err = catalog.NewPath(catalog.Path{Path: "a", Meta: []byte(shape.meta(sourcecatalog.MaxDepth + 1))})
			requireClass(t, err, sourcecatalog.ErrMalformedJSON, "meta")
		})
	}

	// Depth is the deepest branch, not the sum of siblings.
	wide := `{"a":` + nestedObjects(maxMeta-1) + `,"b":` + nestedArrays(maxMeta-1) + `,"c":[{},[]]}`
	_, err := catalog.NewPath(catalog.Path{Path: "a", Meta: []byte(wide)})
	require.NoError(t, err)
}

// ---------------------------------------------------------------------------
// 4. DecodeList

func TestDecodeList(t *testing.T) {
	t.Run("valid", func(t *testing.T) {
		in := ` [ {"value_type":"number","source_ref":"s","path":"a","kind":"observation"},
			{"kind":"path","path":"a","unit":null},
			{"source_ref":"s","kind":"source"} ] `
		rs, err := catalog.DecodeList([]byte(in))
		require.NoError(t, err)
		assert.Equal(t, []string{
			`{"kind":"observation","path":"a","source_ref":"s","value_type":"number"}`,
			`{"kind":"path","path":"a","unit":null}`,
			`{"kind":"source","source_ref":"s"}`,
		}, canonicals(rs), "order of the input is kept")
	})
	t.Run("empty", func(t *testing.T) {
		rs, err := catalog.DecodeList([]byte(`[]`))
		require.NoError(t, err)
		assert.Empty(t, rs)
	})

	good := `{"kind":"path","path":"a"}`
	tests := []struct {
		name   string
		in     string
		class  error
		field  string
		record int
	}{
		{"not an array: object", good, sourcecatalog.ErrInvalidValue, "", sourcecatalog.NoIndex},
		{"not an array: null", `null`, sourcecatalog.ErrInvalidValue, "", sourcecatalog.NoIndex},
		{"not an array: records wrapper", `{"records":[]}`, sourcecatalog.ErrInvalidValue, "", sourcecatalog.NoIndex},
		{"malformed", `[` + good + `,]`, sourcecatalog.ErrMalformedJSON, "", sourcecatalog.NoIndex},
		{"empty input", ``, sourcecatalog.ErrMalformedJSON, "", sourcecatalog.NoIndex},
		{"first element", `[{"kind":"path"},` + good + `]`, sourcecatalog.ErrMissingField, "path", 0},
		{"third element", `[` + good + `,` + good + `,{"kind":"path","path":"a.."}]`, sourcecatalog.ErrInvalidValue, "path", 2},
		{"element not an object", `[` + good + `,"x"]`, sourcecatalog.ErrInvalidValue, "", 1},
		{"element null", `[null]`, sourcecatalog.ErrInvalidValue, "", 0},
		{"unknown member", `[` + good + `,{"kind":"source","source_ref":"s","x":1}]`, sourcecatalog.ErrUnknownField, "x", 1},
		{"limit", `[` + good + `,` + good + `,` + good + `,{"kind":"source","source_ref":"` + strings.Repeat("s", 256) + `"}]`, sourcecatalog.ErrLimitExceeded, "source_ref", 3},
		{"first error wins", `[` + good + `,{"kind":"x"},{"kind":"y"}]`, sourcecatalog.ErrInvalidValue, "kind", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := catalog.DecodeList([]byte(tc.in))
			assert.Nil(t, rs)
			e := requireClass(t, err, tc.class, tc.field)
			assert.Equal(t, tc.record, e.Record, "record index")
			if tc.record != sourcecatalog.NoIndex {
				assert.Contains(t, err.Error(), fmt.Sprintf("record %d", tc.record))
			}
		})
	}
}

func TestFromValue(t *testing.T) {
	v, err := canonical.Parse([]byte(`{"path":"a","kind":"path","unit":"m"}`))
	require.NoError(t, err)
	r, err := catalog.FromValue(&v)
	require.NoError(t, err)
	assert.Equal(t, `{"kind":"path","path":"a","unit":"m"}`, string(r.Canonical()))

	v, err = canonical.Parse([]byte(`true`))
	require.NoError(t, err)
	_, err = catalog.FromValue(&v)
	requireClass(t, err, sourcecatalog.ErrInvalidValue, "")
}

// ---------------------------------------------------------------------------
// 5. Value types

func TestDetectValueType(t *testing.T) {
	tests := []struct {
		sample string
		want   catalog.ValueType
	}{
		{``, catalog.Unknown},
		{`{"latitude":1,"longitude":2}`, catalog.Position},
		{`{"longitude":-122.4,"latitude":37.8}`, catalog.Position},
		{`{"latitude":60.1,"longitude":24.9,"altitude":0}`, catalog.Position},
		{` { "altitude" : -1.5e2 , "longitude" : 0 , "latitude" : -0 } `, catalog.Position},
		{`{"latitude":1,"longitude":"2"}`, catalog.Object},
		{`{"latitude":"1","longitude":2}`, catalog.Object},
		{`{"latitude":1,"longitude":null}`, catalog.Object},
		{`{"latitude":1,"longitude":2,"altitude":"3"}`, catalog.Object},
		{`{"latitude":1,"longitude":2,"altitude":null}`, catalog.Object},
		{`{"latitude":1,"longitude":2,"speed":3}`, catalog.Object},
		{`{"latitude":1,"longitude":2,"altitude":3,"speed":4}`, catalog.Object},
		{`{"latitude":1}`, catalog.Object},
		{`{"longitude":1}`, catalog.Object},
		{`{"latitude":1,"altitude":2}`, catalog.Object},
		{`{"altitude":1,"longitude":2}`, catalog.Object},
		{`{"a":1,"longitude":2}`, catalog.Object},
		{`{"latitude":1,"z":2}`, catalog.Object},
		{`{"a":0,"latitude":1,"longitude":2}`, catalog.Object},
		{`{"altitude":0,"latitude":1,"m":2}`, catalog.Object},
		{`{"Latitude":1,"Longitude":2}`, catalog.Object},
		{`{"lat":1,"lon":2}`, catalog.Object},
		{`{"latitude":[1],"longitude":[2]}`, catalog.Object},
		{`{"latitude":{},"longitude":{}}`, catalog.Object},
		{`{}`, catalog.Object},
		{`{"value":1}`, catalog.Object},
		{`[]`, catalog.Array},
		{`[{"latitude":1,"longitude":2}]`, catalog.Array},
		{`null`, catalog.Null},
		{`true`, catalog.Boolean},
		{`false`, catalog.Boolean},
		{`""`, catalog.String},
		{`"3.5"`, catalog.String},
		{`0`, catalog.Number},
		{`-12.5e3`, catalog.Number},
		{` 42 `, catalog.Number},
	}
	for _, tc := range tests {
		t.Run(tc.sample, func(t *testing.T) {
			got, err := catalog.DetectValueType([]byte(tc.sample))
			require.NoError(t, err)
			assert.Equal(t, tc.want, got, "got %v", got)
			if tc.sample != "" {
				v, err := canonical.Parse([]byte(tc.sample))
				require.NoError(t, err)
				assert.Equal(t, tc.want, catalog.ValueTypeOf(&v))
			}
		})
	}

	for _, bad := range []string{`{`, `nul`, `{"a":1,"a":2}`, `NaN`, `1 2`, ` `, "\"\xff\"", `{"latitude":1e400,"longitude":2}`} {
		t.Run("malformed "+bad, func(t *testing.T) {
			got, err := catalog.DetectValueType([]byte(bad))
			assert.Equal(t, catalog.ValueType(0), got)
			requireClass(t, err, sourcecatalog.ErrMalformedJSON, "")
		})
	}
}

func TestValueTypeNames(t *testing.T) {
	all := catalog.ValueTypes()
	require.Len(t, all, 8)
	names := []string{"number", "string", "boolean", "position", "object", "array", "null", "unknown"}
	for i, vt := range all {
		assert.Equal(t, names[i], vt.String())
		parsed, err := catalog.ParseValueType(vt.String())
		require.NoError(t, err)
		assert.Equal(t, vt, parsed)
	}
	assert.Equal(t, []catalog.ValueType{
		catalog.Number, catalog.String, catalog.Boolean, catalog.Position,
		catalog.Object, catalog.Array, catalog.Null, catalog.Unknown,
	}, all)

	// The result is a fresh slice.
	all[0] = catalog.Unknown
	assert.Equal(t, catalog.Number, catalog.ValueTypes()[0])

	assert.Equal(t, "invalid", catalog.ValueType(0).String())
	assert.Equal(t, "invalid", (catalog.Unknown + 1).String())

	for _, bad := range []string{"", "Number", "NUMBER", "integer", "bool", "invalid", " number", "number ", "1"} {
		vt, err := catalog.ParseValueType(bad)
		assert.Equal(t, catalog.ValueType(0), vt, bad)
		requireClass(t, err, sourcecatalog.ErrInvalidValue, "value_type")
	}
}

func TestKindNames(t *testing.T) {
	assert.Equal(t, "path", catalog.KindPath.String())
	assert.Equal(t, "source", catalog.KindSource.String())
	assert.Equal(t, "observation", catalog.KindObservation.String())
	assert.Equal(t, "invalid", catalog.Kind(0).String())
	assert.Equal(t, "invalid", (catalog.KindObservation + 1).String())
	assert.Less(t, catalog.KindPath, catalog.KindSource)
	assert.Less(t, catalog.KindSource, catalog.KindObservation)
}

// ---------------------------------------------------------------------------
// 6. Order

func TestCompare(t *testing.T) {
	p := func(s string) *catalog.Record { return mustPath(t, s) }
	s := func(ref string) *catalog.Record { return mustSource(t, ref) }
	o := func(path, ref string) *catalog.Record { return mustObs(t, path, ref) }
	vt := func(path, ref string, v catalog.ValueType) *catalog.Record {
		r, err := catalog.NewObservation(catalog.Observation{Path: path, SourceRef: ref, ValueType: v})
		require.NoError(t, err)
		return r
	}
	tests := []struct {
		name string
		a, b *catalog.Record
	}{
		{"upper case before lower case", p("a.B"), p("a.b")},
		{"prefix first", p("a"), p("a.b")},
		{"Z before a", p("Z"), p("a")},
		{"dash before dot", p("a-b"), p("a.b")},
		{"dot before digit", p("a.b"), p("a0")},
		{"ASCII before non-ASCII", p("a.z"), p("a.é")},
		{"bytewise, not UTF-16", p("\uff61"), p("😀")},
		{"path before source", p("zzz"), s("aaa")},
		{"source before observation", s("zzz"), o("aaa", "aaa")},
		{"path before observation", p("zzz"), o("a", "a")},
		{"sources bytewise", s("A"), s("a")},
		{"sources opaque dots", s("can0.x"), s("can0x")},
		{"observation by path first", o("a", "z"), o("b", "a")},
		{"observation path prefix", o("a", "z"), o("a.b", "a")},
		{"observation then source_ref", o("a", "x"), o("a", "y")},
		{"observation source_ref bytewise", o("a", "Y"), o("a", "x")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Negative(t, catalog.Compare(tc.a, tc.b))
			assert.Positive(t, catalog.Compare(tc.b, tc.a))
			assert.Zero(t, catalog.Compare(tc.a, tc.a))
			assert.True(t, catalog.IsSorted([]*catalog.Record{tc.a, tc.b}))
			assert.False(t, catalog.IsSorted([]*catalog.Record{tc.b, tc.a}))
		})
	}

	// Identity, not content: same identity compares equal.
	assert.Zero(t, catalog.Compare(p("a"), mustDecode(t, `{"kind":"path","path":"a","unit":"m","meta":{"x":1}}`)))
	assert.Zero(t, catalog.Compare(s("x"), mustDecode(t, `{"kind":"source","source_ref":"x","label":"l"}`)))
	assert.Zero(t, catalog.Compare(vt("a", "x", catalog.Number), vt("a", "x", catalog.String)))
	assert.False(t, catalog.IsSorted([]*catalog.Record{p("a"), p("a")}), "IsSorted is strict")
}

func TestSortShuffled(t *testing.T) {
	// The expected canonical global order, written out by hand.
	want := []*catalog.Record{
		mustPath(t, "Z"),
		mustPath(t, "a"),
		mustPath(t, "a-b"),
		mustPath(t, "a.B"),
		mustPath(t, "a.b"),
		mustPath(t, "a.b.c"),
		mustPath(t, "a0"),
		mustPath(t, "navigation.speedOverGround"),
		mustPath(t, "é"),
		mustSource(t, "AIS"),
		mustSource(t, "can0.1"),
		mustSource(t, "can0.10"),
		mustSource(t, "can0.2"),
		mustSource(t, "gps"),
		mustObs(t, "Z", "gps"),
		mustObs(t, "a", "AIS"),
		mustObs(t, "a", "can0.1"),
		mustObs(t, "a-b", "gps"),
		mustObs(t, "a.B", "can0.2"),
		mustObs(t, "a.b", "can0.10"),
		mustObs(t, "a.b.c", "AIS"),
		mustObs(t, "a0", "gps"),
		mustObs(t, "navigation.speedOverGround", "can0.1"),
		mustObs(t, "é", "gps"),
	}
	require.True(t, catalog.IsSorted(want))
	wantBytes := canonicals(want)

	for seed := int64(1); seed <= 50; seed++ {
		rng := rand.New(rand.NewSource(seed))
		got := append([]*catalog.Record(nil), want...)
		rng.Shuffle(len(got), func(i, j int) { got[i], got[j] = got[j], got[i] })
		catalog.Sort(got)
		require.Equal(t, wantBytes, canonicals(got), "seed %d", seed)
		require.True(t, catalog.IsSorted(got))
	}

	// A decoded shuffled list sorts the same way.
	rng := rand.New(rand.NewSource(42))
	perm := rng.Perm(len(wantBytes))
	var b strings.Builder
	b.WriteString("[")
	for i, k := range perm {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(wantBytes[k])
	}
	b.WriteString("]")
	decoded, err := catalog.DecodeList([]byte(b.String()))
	require.NoError(t, err)
	assert.False(t, catalog.IsSorted(decoded))
	catalog.Sort(decoded)
	assert.Equal(t, wantBytes, canonicals(decoded))
}

func TestIsSorted(t *testing.T) {
	assert.True(t, catalog.IsSorted(nil))
	assert.True(t, catalog.IsSorted([]*catalog.Record{mustPath(t, "a")}))
	assert.True(t, catalog.IsSorted([]*catalog.Record{mustPath(t, "a"), mustSource(t, "a"), mustObs(t, "a", "a")}))
	assert.False(t, catalog.IsSorted([]*catalog.Record{mustSource(t, "a"), mustPath(t, "a")}))
	assert.False(t, catalog.IsSorted([]*catalog.Record{mustObs(t, "a", "a"), mustSource(t, "a")}))
	assert.False(t, catalog.IsSorted([]*catalog.Record{mustPath(t, "a"), mustPath(t, "c"), mustPath(t, "b")}))
	assert.False(t, catalog.IsSorted([]*catalog.Record{mustObs(t, "a", "a"), mustObs(t, "a", "a")}))
}

// ---------------------------------------------------------------------------
// 7. Check

// spec builds records from a compact notation: "p:a" a path, "s:x" a
// source, "o:a:x" an observation of path a from source x.
func spec(t *testing.T, items ...string) []*catalog.Record {
	t.Helper()
	out := make([]*catalog.Record, len(items))
	for i, it := range items {
		parts := strings.Split(it, ":")
		switch parts[0] {
		case "p":
			out[i] = mustPath(t, parts[1])
		case "s":
			out[i] = mustSource(t, parts[1])
		case "o":
			out[i] = mustObs(t, parts[1], parts[2])
		default:
			t.Fatalf("bad spec %q", it)
		}
	}
	return out
}

func TestCheckValid(t *testing.T) {
	tests := []struct {
		name  string
		items []string
	}{
		{"empty", nil},
		{"one of each", []string{"p:a", "s:x", "o:a:x"}},
		{"one source for many paths", []string{"p:a", "p:a.b", "p:b", "s:x", "o:a:x", "o:a.b:x", "o:b:x"}},
		{"many sources", []string{"p:a", "p:b", "s:x", "s:y", "o:a:y", "o:b:x"}},
		{"dotted source refs", []string{"p:a", "s:can0.1", "s:can0.1.2", "o:a:can0.1.2", "p:b", "o:b:can0.1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs := spec(t, tc.items...)
			catalog.Sort(rs)
			assert.NoError(t, catalog.Check(rs))
			assert.True(t, catalog.IsSorted(rs))
		})
	}

	// A realistic catalog decoded from the wire.
	rs, err := catalog.DecodeList([]byte(`[
		{"kind":"path","path":"navigation.position","unit":null,"meta":{"description":"Position"}},
		{"kind":"path","path":"navigation.speedOverGround","unit":"m/s"},
		{"kind":"source","source_ref":"can0.c0788c00e7e04312","label":"can0","type":"NMEA2000"},
		{"kind":"source","source_ref":"gps.GP","label":"gps","type":"NMEA0183"},
		{"kind":"observation","path":"navigation.position","source_ref":"gps.GP","value_type":"position"},
		{"kind":"observation","path":"navigation.speedOverGround","source_ref":"can0.c0788c00e7e04312","value_type":"number"}
	]`))
	require.NoError(t, err)
	assert.NoError(t, catalog.Check(rs))
}

func TestCheckSingleProblem(t *testing.T) {
	tests := []struct {
		name   string
		items  []string
		record int
		field  string
	}{
		{"duplicate path", []string{"p:a", "p:a", "p:b", "s:x", "s:y", "o:a:x", "o:b:y"}, 1, "path"},
		{"duplicate last path", []string{"p:a", "p:b", "p:b", "s:x", "o:a:x", "o:b:x"}, 2, "path"},
		{"duplicate source_ref", []string{"p:a", "p:b", "s:x", "s:x", "s:y", "o:a:x", "o:b:y"}, 3, "source_ref"},
		{"duplicate last source_ref", []string{"p:a", "p:b", "s:x", "s:y", "s:y", "o:a:x", "o:b:y"}, 4, "source_ref"},
		{"two observations for one path", []string{"p:a", "p:b", "s:x", "s:y", "o:a:x", "o:a:y", "o:b:y"}, 5, "path"},
		{"duplicate observation", []string{"p:a", "p:b", "s:x", "s:y", "o:a:x", "o:a:x", "o:b:y"}, 5, "path"},
		{"path with no observation (first)", []string{"p:0", "p:a", "p:b", "s:x", "s:y", "o:a:x", "o:b:y"}, 0, "path"},
		{"path with no observation (middle)", []string{"p:a", "p:a.b", "p:b", "s:x", "s:y", "o:a:x", "o:b:y"}, 1, "path"},
		{"path with no observation (last)", []string{"p:a", "p:b", "p:c", "s:x", "s:y", "o:a:x", "o:b:y"}, 2, "path"},
		{"path with no observation (no observations at all)", []string{"p:a"}, 0, "path"},
		{"observation with unknown path (first)", []string{"p:a", "p:b", "s:x", "s:y", "o:0:x", "o:a:x", "o:b:y"}, 4, "path"},
		{"observation with unknown path (last)", []string{"p:a", "p:b", "s:x", "s:y", "o:a:x", "o:b:y", "o:c:x"}, 6, "path"},
		{"observation with unknown path (no paths at all)", []string{"s:x", "o:a:x"}, 1, "path"},
		{"observation with unknown source", []string{"p:a", "p:b", "s:x", "o:a:x", "o:b:z"}, 4, "source_ref"},
		{"observation with unknown source (no sources at all)", []string{"p:a", "o:a:x"}, 1, "source_ref"},
		{"unreferenced source (first)", []string{"p:a", "p:b", "s:w", "s:x", "s:y", "o:a:x", "o:b:y"}, 2, "source_ref"},
		{"unreferenced source (last)", []string{"p:a", "p:b", "s:x", "s:y", "s:z", "o:a:x", "o:b:y"}, 4, "source_ref"},
		{"unreferenced source (no observations)", []string{"s:x"}, 0, "source_ref"},
		{"out of order paths", []string{"p:b", "p:a", "s:x", "s:y", "o:a:x", "o:b:y"}, 1, ""},
		{"out of order sources", []string{"p:a", "p:b", "s:y", "s:x", "o:a:x", "o:b:y"}, 3, ""},
		{"out of order observations", []string{"p:a", "p:b", "s:x", "s:y", "o:b:y", "o:a:x"}, 5, ""},
		{"source before path", []string{"s:x", "p:a", "o:a:x"}, 1, ""},
		{"observation before source", []string{"p:a", "o:a:x", "s:x"}, 2, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs := spec(t, tc.items...)
			err := catalog.Check(rs)
			e := requireClass(t, err, sourcecatalog.ErrIntegrity, tc.field)
			ps := problems(err)
			require.Len(t, ps, 1, "exactly one problem: %v", err)
			assert.Equal(t, loc{tc.record, tc.field}, loc{e.Record, e.Field})
			assert.Equal(t, sourcecatalog.NoIndex, e.Chunk)
		})
	}
}

func TestCheckSeveralProblems(t *testing.T) {
	tests := []struct {
		name  string
		items []string
		want  []loc
	}{
		{
			name: "every kind of content problem",
			items: []string{
				"p:a", "p:a", // 0, 1: duplicate path at 1
				"p:b",        // 2: path with no observation
				"p:c",        // 3
				"s:u",        // 4: unreferenced source
				"s:x", "s:x", // 5, 6: duplicate source_ref at 6
				"o:a:x", // 7
				"o:a:y", // 8: second observation of a, and unknown source y
				"o:c:x", // 9
				"o:d:x", // 10: no path record
				"o:e:x", // 11: no path record
				"o:e:x", // 12: duplicate observation
			},
			want: []loc{
				{1, "path"}, {6, "source_ref"}, {8, "path"}, {12, "path"},
				{2, "path"}, {10, "path"}, {11, "path"},
				{8, "source_ref"}, {4, "source_ref"},
			},
		},
		{
			name:  "duplicate source nobody references: reported once each way",
			items: []string{"p:a", "s:x", "s:y", "s:y", "o:a:x"},
			want:  []loc{{3, "source_ref"}, {2, "source_ref"}},
		},
		{
			name:  "duplicate path nobody observes: reported once each way",
			items: []string{"p:a", "p:b", "p:b", "s:x", "o:a:x"},
			want:  []loc{{2, "path"}, {1, "path"}},
		},
		{
			name:  "duplicate observation of an unknown source: reported once each way",
			items: []string{"p:a", "s:x", "o:a:y", "o:a:y"},
			want:  []loc{{3, "path"}, {2, "source_ref"}, {1, "source_ref"}},
		},
		{
			name:  "several out of order: only order is reported",
			items: []string{"o:a:x", "s:x", "p:a", "p:b"},
			want:  []loc{{1, ""}, {2, ""}},
		},
		{
			name:  "out of order and duplicate",
			items: []string{"p:a", "p:a", "s:x", "p:b", "o:a:x", "o:b:x"},
			want:  []loc{{1, "path"}, {3, ""}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := catalog.Check(spec(t, tc.items...))
			require.ErrorIs(t, err, sourcecatalog.ErrIntegrity)
			ps := problems(err)
			require.Len(t, ps, len(tc.want), "%v", err)
			for _, p := range ps {
				assert.ErrorIs(t, p, sourcecatalog.ErrIntegrity)
			}
			assert.ElementsMatch(t, tc.want, locs(ps))
		})
	}
}

func TestCheckMaxProblems(t *testing.T) {
	paths := func(n int) []*catalog.Record {
		rs := make([]*catalog.Record, n)
		for i := range rs {
			rs[i] = mustPath(t, fmt.Sprintf("p%04d", i))
		}
		return rs
	}

	t.Run("exactly the cap", func(t *testing.T) {
		ps := problems(catalog.Check(paths(catalog.MaxProblems)))
		require.Len(t, ps, catalog.MaxProblems)
		for i, p := range ps {
			assert.Equal(t, loc{i, "path"}, loc{p.Record, p.Field})
		}
	})
	t.Run("beyond the cap", func(t *testing.T) {
		err := catalog.Check(paths(3 * catalog.MaxProblems))
		require.ErrorIs(t, err, sourcecatalog.ErrIntegrity)
		ps := problems(err)
		// MaxProblems located problems and one unlocated note that more
		// were dropped.
		require.Len(t, ps, catalog.MaxProblems+1)
		for i, p := range ps[:catalog.MaxProblems] {
			assert.Equal(t, loc{i, "path"}, loc{p.Record, p.Field})
		}
		last := ps[catalog.MaxProblems]
		assert.ErrorIs(t, last, sourcecatalog.ErrIntegrity)
		assert.Equal(t, sourcecatalog.NoIndex, last.Record)
		assert.Equal(t, "", last.Field)
	})
	t.Run("out of order beyond the cap", func(t *testing.T) {
		rs := paths(2 * catalog.MaxProblems)
		for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
			rs[i], rs[j] = rs[j], rs[i]
		}
		ps := problems(catalog.Check(rs))
		require.Len(t, ps, catalog.MaxProblems+1)
		assert.Equal(t, loc{1, ""}, loc{ps[0].Record, ps[0].Field})
	})
}

// Check does not reorder or modify its input.
func TestCheckLeavesInput(t *testing.T) {
	rs := spec(t, "p:b", "p:a", "s:x", "o:a:x", "o:b:x")
	before := canonicals(rs)
	require.Error(t, catalog.Check(rs))
	assert.Equal(t, before, canonicals(rs))
	catalog.Sort(rs)
	assert.NoError(t, catalog.Check(rs))
}
