package catalog

import (
	"bytes"
	"errors"
	"testing"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
)

// FuzzDecode checks that Decode either refuses input with a classified
// *sourcecatalog.Error or returns a record whose canonical bytes decode
// again to the same bytes.
func FuzzDecode(f *testing.F) {
	seeds := []string{
		`{"kind":"path","path":"navigation.speedOverGround","unit":"m/s","meta":{"description":"SOG"}}`,
		`{"kind":"path","path":"navigation.state","unit":null}`,
		`{"kind":"source","source_ref":"can0.c0788c00e7e04312","label":"can0","type":"NMEA2000","meta":{"n":[1,2.5,"x"]}}`,
		`{"kind":"observation","path":"a.b","source_ref":"s","value_type":"position"}`,
		`{"kind":"path","path":"a..b"}`,
		`{"kind":"nope"}`,
		`[]`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := Decode(in)
		if err != nil {
			var e *sourcecatalog.Error
			if !errors.As(err, &e) || e.Class == nil {
				t.Fatalf("Decode(%q): unclassified error %v", in, err)
			}
			return
		}
		// The record's encoder writes RFC 8785 bytes: Transform keeps them.
		if out, err := canonical.Transform(r.Canonical()); err != nil || !bytes.Equal(out, r.Canonical()) {
			t.Fatalf("the encoder's %q is not a Transform fixed point: %q, %v", r.Canonical(), out, err)
		}
		again, err := Decode(r.Canonical())
		if err != nil {
			t.Fatalf("canonical %q does not decode: %v", r.Canonical(), err)
		}
		if !bytes.Equal(again.Canonical(), r.Canonical()) || Compare(r, again) != 0 {
			t.Fatalf("round trip changed %q to %q", r.Canonical(), again.Canonical())
		}
	})
}
