package catalog

import (
	"bytes"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/yachtmemory/sourcecatalog/canonical"
)

// The fast path of Decode and DecodeList, for canonical text, must return
// exactly what the Value-tree path returns; and it must not refuse the
// records this package encodes (but for the documented escapes).

func slowDecode(raw []byte) (*Record, error) {
	v, err := canonical.Parse(raw)
	if err != nil {
		return nil, err
	}
	return FromValue(&v)
}

func slowDecodeList(raw []byte) ([]*Record, error) {
	v, err := canonical.Parse(raw)
	if err != nil || v.Kind() != canonical.Array {
		return nil, err
	}
	out := make([]*Record, 0, len(v.Elems()))
	for i := range v.Elems() {
		r, err := FromValue(&v.Elems()[i])
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// checkFast fails t when the fast path accepts in and the slow path does
// not agree exactly.
func checkFast(t *testing.T, in []byte) (accepted bool) {
	t.Helper()
	var r Record
	end, ok := decodeCanonical(in, 0, &r, nil)
	if ok && end == len(in) {
		accepted = true
		want, err := slowDecode(in)
		if err != nil {
			t.Fatalf("fast path accepts %q, FromValue refuses it: %v", in, err)
		}
		if !reflect.DeepEqual(&r, want) {
			t.Fatalf("fast path decodes %q to %+v, FromValue to %+v", in, r, *want)
		}
		if !bytes.Equal(r.canon, in) || cap(r.canon) != len(in) {
			t.Fatalf("fast path canonical bytes %q, cap %d", r.canon, cap(r.canon))
		}
		if r.meta != nil && cap(r.meta) != len(r.meta) {
			t.Fatalf("meta capacity %d", cap(r.meta))
		}
		got, err := Decode(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("Decode(%q) = %+v, %v", in, got, err)
		}
		if len(in) > 0 && &got.canon[0] == &in[0] {
			t.Fatal("Decode keeps the caller's bytes")
		}
	}
	list := append(append([]byte("["), in...), ']')
	if out, ok := DecodeCanonicalList(list); ok {
		want, err := slowDecodeList(list)
		if err != nil || !reflect.DeepEqual(out, want) {
			t.Fatalf("DecodeCanonicalList(%q) = %v, slow path %v, %v", list, out, want, err)
		}
		got, err := DecodeList(list)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("DecodeList(%q) = %v, %v", list, got, err)
		}
	}
	return accepted
}

// escaped reports whether a record's canonical text has an escape, which
// the fast path may refuse.
func escaped(canon []byte) bool { return bytes.IndexByte(canon, '\\') >= 0 }

func fastSeeds() []string {
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
		// Refused by the fast path, for the slow path to judge.
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

func TestDecodeFastPath(t *testing.T) {
	accepted := 0
	for _, s := range fastSeeds() {
		if checkFast(t, []byte(s)) {
			accepted++
		}
		// Whatever decodes, the fast path must take in canonical form.
		if r, err := Decode([]byte(s)); err == nil && !escaped(r.Canonical()) {
			if !checkFast(t, r.Canonical()) {
				t.Errorf("fast path refuses the canonical %q", r.Canonical())
			}
		}
	}
	if accepted != 11 {
		t.Errorf("fast path accepts %d seeds, want 11", accepted)
	}
	var list []byte
	for i := range 50 {
		r, err := NewObservation(Observation{Path: "a.p" + strconv.Itoa(i), SourceRef: "s", ValueType: Number})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			list = append(list, '[')
		} else {
			list = append(list, ',')
		}
		list = append(list, r.Canonical()...)
	}
	list = append(list, ']')
	out, ok := DecodeCanonicalList(list)
	if !ok || len(out) != 50 {
		t.Fatalf("DecodeCanonicalList: %d records, %v", len(out), ok)
	}
	if got, ok := DecodeCanonicalList([]byte(`[]`)); !ok || got == nil || len(got) != 0 {
		t.Fatalf("DecodeCanonicalList([]) = %v, %v", got, ok)
	}
	for _, bad := range []string{``, `[`, `[]]`, `[,]`, `[{"kind":"path","path":"a"},]`, `[{"kind":"path","path":"a"}] `, `{}`} {
		if _, ok := DecodeCanonicalList([]byte(bad)); ok {
			t.Errorf("DecodeCanonicalList(%q) accepted", bad)
		}
	}
}

// FuzzDecodeFastPath checks the fast path against FromValue on any input,
// and that it accepts the canonical form of every record that decodes.
func FuzzDecodeFastPath(f *testing.F) {
	for _, s := range fastSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkFast(t, in)
		if r, err := Decode(in); err == nil && !escaped(r.Canonical()) && !checkFast(t, r.Canonical()) {
			t.Fatalf("fast path refuses the canonical %q", r.Canonical())
		}
	})
}
