package canontext

import (
	"testing"

	"github.com/yachtmemory/sourcecatalog/canonical"
)

func TestRead(t *testing.T) {
	src := `{"\n":[1,{"b":"x\"y"}],"a":"\u0001\\","b":-1.5e-7,"c":[[[]]],"d":{},"e":null,"f":true}`
	b, err := canonical.Transform([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	type member struct {
		name  string
		kind  canonical.Kind
		depth int
		str   string
	}
	want := []member{
		{"\n", canonical.KindArray, 2, ""},
		{"a", canonical.KindString, 0, "\x01\\"},
		{"b", canonical.KindNumber, 0, ""},
		{"c", canonical.KindArray, 3, ""},
		{"d", canonical.KindObject, 1, ""},
		{"e", canonical.KindNull, 0, ""},
		{"f", canonical.KindBool, 0, ""},
	}
	var got []member
	o := ObjectAt(b, 0)
	for o.More() {
		name, v := o.Member()
		end, depth := End(b, v)
		m := member{name: name, kind: KindAt(b, v), depth: depth}
		if m.kind == canonical.KindString {
			var send int
			m.str, send = String(b, v)
			if send != end {
				t.Errorf("%q: String ends at %d, End at %d", name, send, end)
			}
		}
		got = append(got, m)
		o.Next(end)
	}
	if o.End() != len(b) {
		t.Errorf("object ends at %d of %d", o.End(), len(b))
	}
	if len(got) != len(want) {
		t.Fatalf("%d members %v, want %v", len(got), got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("member %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if end, depth := End(b, 0); end != len(b) || depth != 4 {
		t.Errorf("End of the whole = %d, %d; want %d, 4", end, depth, len(b))
	}
}
