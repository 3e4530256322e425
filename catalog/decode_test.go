package catalog

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
)

// Properties of the one record decoder, decodeRecord, which Decode,
// DecodeList and DecodeCanonicalList share.

func decodeSeeds() []string {
	return []string{
		`{"kind":"path","meta":{"description":"SOG"},"path":"navigation.speedOverGround","unit":"m/s"}`,
		`{"kind":"path","path":"navigation.state","unit":null}`,
		`{"kind":"path","path":"navigation.state"}`,
		`{"kind":"path","meta":{},"path":"a"}`,
		`{"kind":"path","meta":{"a":[1,2.5,{"b":null}],"z":"é"},"path":"ä.b","unit":"°"}`,
		`{"kind":"source","label":"can0","meta":{"n":[1,2.5,"x"]},"source_ref":"can0.c0788c00e7e04312","type":"NMEA2000"}`,
		`{"kind":"source","source_ref":"s"}`,
		`{"kind":"source","label":"","source_ref":"s","type":""}`,
		`{"kind":"observation","path":"a.b","source_ref":"s","value_type":"position"}`,
		`{"kind":"observation","path":"a.b","source_ref":"s","value_type":"unknown"}`,
		// Refused.
		`{"kind":"path","path":"a..b"}`,
		`{"kind":"path","path":"a","unit":""}`,
		`{"kind":"path","path":"a","unit":1}`,
		`{"kind":"path","meta":[],"path":"a"}`,
		`{"kind":"path","path":"a","meta":{}}`,
		`{"kind":"path","path":"a\u0000"}`,
		`{"kind":"path","path":"a\"b"}`,
		`{"kind":"source","label":"a\nb","source_ref":"s"}`,
		`{"kind":"observation","path":"a.b","source_ref":"s","value_type":"integer"}`,
		`{"kind":"observation","path":"a.b","source_ref":"s"}`,
		`{"kind":"path","path":"a","x":1}`,
		`{"kind":"nope"}`,
		`{"kind":"path" ,"path":"a"}`,
		"{\"kind\":\"path\",\"path\":\"a\x80\"}",
		"{\"kind\":\"path\",\"path\":\"a\u0085\"}",
		`{"kind":"path","meta":{"b":1,"a":2},"path":"a"}`,
		`{"kind":"path","meta":{"a":1.0},"path":"a"}`,
		`{"kind":"path","path":"` + strings.Repeat("a", MaxPathLen+1) + `"}`,
		`{"kind":"path","meta":` + strings.Repeat(`{"a":`, MaxRecordDepth-1) + `{}` + strings.Repeat("}", MaxRecordDepth-1) + `,"path":"a"}`,
		`{"kind":"path","meta":` + strings.Repeat(`{"a":`, MaxRecordDepth-2) + `{}` + strings.Repeat("}", MaxRecordDepth-2) + `,"path":"a"}`,
		`[]`,
	}
}

// checkDecode checks the decoder's properties on in: it decides as it does
// on the canonical form of in, errors are classified and bounded, and what
// decodes keeps views of one canonical copy that decode again to itself.
func checkDecode(t *testing.T, in []byte) {
	t.Helper()
	r, err := Decode(in)
	if canon, cerr := canonical.Transform(in); cerr == nil {
		again, aerr := Decode(canon)
		if !reflect.DeepEqual(r, again) || !reflect.DeepEqual(err, aerr) {
			t.Fatalf("Decode(%q) = %+v, %v; of its canonical form %+v, %v", in, r, err, again, aerr)
		}
	}
	if err != nil {
		checkError(t, in, err)
		return
	}
	c := r.Canonical()
	if cap(c) != len(c) || r.meta != nil && cap(r.meta) != len(r.meta) {
		t.Fatalf("Decode(%q): capacity beyond the record's bytes", in)
	}
	if len(in) > 0 && &c[0] == &in[0] {
		t.Fatal("Decode keeps the caller's bytes")
	}
	again, err := Decode(c)
	if err != nil || !reflect.DeepEqual(r, again) {
		t.Fatalf("canonical %q decodes to %+v, %v", c, again, err)
	}
	list := []byte("[" + string(c) + "," + string(c) + "]")
	out, err := DecodeList(list)
	if err != nil || len(out) != 2 || !reflect.DeepEqual(out[0], r) || !reflect.DeepEqual(out[1], r) {
		t.Fatalf("DecodeList(%q) = %v, %v", list, out, err)
	}
}

// checkError fails t unless err is one classified, bounded
// *sourcecatalog.Error.
func checkError(t *testing.T, in []byte, err error) {
	t.Helper()
	var e *sourcecatalog.Error
	if !errors.As(err, &e) || e.Class == nil || sourcecatalog.WireName(e.Class) == "" {
		t.Fatalf("Decode(%q): unclassified error %v", in, err)
	}
	if len(e.Detail) > 128 || len(e.Field) > 67 || !utf8.ValidString(e.Detail) {
		t.Fatalf("Decode(%q): unbounded error %q at %q", in, e.Detail, e.Field)
	}
}

func TestDecodeProperties(t *testing.T) {
	accepted := 0
	for _, s := range decodeSeeds() {
		checkDecode(t, []byte(s))
		if _, err := Decode([]byte(s)); err == nil {
			accepted++
		}
	}
	if accepted != 17 {
		t.Errorf("%d seeds decode, want 17", accepted)
	}
}

func at(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// FuzzDecodeProperties checks the properties of checkDecode on any input.
func FuzzDecodeProperties(f *testing.F) {
	seeds := decodeSeeds()
	if len(seeds) < 30 {
		f.Fatalf("%d seeds", len(seeds))
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkDecode(t, in) })
}

// TestDecodeListViews checks that DecodeList keeps one canonical copy, of
// which every record and its strings are views, also with escapes.
func TestDecodeListViews(t *testing.T) {
	in := []byte(` [ {"path":"a.b","kind":"path","meta":{"\n":1}}, {"kind":"source","label":"a\tb","source_ref":"s\"1"} ] `)
	out, err := DecodeList(in)
	if err != nil || len(out) != 2 {
		t.Fatalf("DecodeList = %v, %v", out, err)
	}
	// The canonical text is [r0,r1]: r1 starts one byte after r0 ends.
	if at(out[1].canon) != at(out[0].canon)+uintptr(len(out[0].canon))+1 {
		t.Error("the records are not views of one copy")
	}
	if p := uintptr(unsafe.Pointer(unsafe.StringData(out[0].path))); p < at(out[0].canon) || p > at(out[0].canon)+uintptr(len(out[0].canon)) {
		t.Error("a string without escapes is not a view of the record")
	}
	for _, r := range out {
		if cap(r.canon) != len(r.canon) {
			t.Errorf("record %q has capacity %d", r.canon, cap(r.canon))
		}
	}
	if *out[1].label != "a\tb" || out[1].sourceRef != "s\"1" {
		t.Errorf("escapes decoded to %q, %q", *out[1].label, out[1].sourceRef)
	}
}

// TestDecodeCanonicalListLimit checks that more than max records are
// refused before any record is looked at, with no record index.
func TestDecodeCanonicalListLimit(t *testing.T) {
	good, bad := `{"kind":"path","path":"a"}`, `{"kind":"path","path":"a..b"}`
	list := func(first string, n int) []byte {
		return []byte("[" + first + strings.Repeat(","+good, n-1) + "]")
	}
	cases := []struct {
		in     []byte
		max    int
		record int // sourcecatalog.NoIndex: the limit
		class  error
	}{
		{list(bad, 4), 3, sourcecatalog.NoIndex, sourcecatalog.ErrLimitExceeded},
		{list(good, 4), 3, sourcecatalog.NoIndex, sourcecatalog.ErrLimitExceeded},
		{list(bad, 3), 3, 0, sourcecatalog.ErrInvalidValue},
		{[]byte("[" + good + "," + bad + "]"), -1, 1, sourcecatalog.ErrInvalidValue},
		{[]byte("[" + good + ",1]"), 2, 1, sourcecatalog.ErrInvalidValue},
	}
	for _, tc := range cases {
		_, err := DecodeCanonicalList(tc.in, tc.max)
		var e *sourcecatalog.Error
		if !errors.As(err, &e) || !errors.Is(err, tc.class) || e.Record != tc.record {
			t.Errorf("DecodeCanonicalList(%s, %d) = %v, want %v at record %d", tc.in, tc.max, err, tc.class, tc.record)
		}
	}
	if out, err := DecodeCanonicalList(list(good, 3), 3); err != nil || len(out) != 3 {
		t.Errorf("3 records, max 3: %v, %v", out, err)
	}
	if out, err := DecodeCanonicalList([]byte("[]"), 0); err != nil || out == nil || len(out) != 0 {
		t.Errorf("[]: %v, %v", out, err)
	}
}
