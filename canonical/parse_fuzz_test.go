package canonical

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
)

// FuzzParse checks the tree Parse builds against encoding/json, which reads
// the same text in input order: whatever Parse accepts, encoding/json reads
// to the same values, and every Number says truly whether its literal was
// written with digits only (IsIntegerLiteral), wherever sorting the members
// of objects moved it. Object members must come in canonical order.
func FuzzParse(f *testing.F) {
	seedTransform(f)
	for _, s := range []string{
		`{"b":0,"a":1.0}`,
		`{"b":1e21,"a":1000000000000000000000}`,
		`[{"z":2.0,"y":[3,4.0],"x":{"d":5,"c":6e0}}]`,
		`{"\u0062":{"d":-0,"c":1E2},"a":[1.5,"\/"]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		v, err := Parse(in)
		if err != nil {
			return
		}
		d := json.NewDecoder(bytes.NewReader(in))
		d.UseNumber()
		var ref any
		if err := d.Decode(&ref); err != nil {
			t.Fatalf("Parse accepts %q, encoding/json refuses it: %v", in, err)
		}
		checkTree(t, in, &v, ref)
	})
}

// checkTree fails t unless v holds the value ref that encoding/json read.
func checkTree(t *testing.T, in []byte, v *Value, ref any) {
	t.Helper()
	switch r := ref.(type) {
	case nil:
		if v.Kind() != KindNull {
			t.Fatalf("%q: %v, want null", in, v.Kind())
		}
	case bool:
		if v.Kind() != KindBool || v.Bool() != r {
			t.Fatalf("%q: %v %v, want %v", in, v.Kind(), v.Bool(), r)
		}
	case string:
		if v.Kind() != KindString || v.Str() != r {
			t.Fatalf("%q: %v %q, want %q", in, v.Kind(), v.Str(), r)
		}
	case json.Number:
		lit := string(r)
		f, _ := strconv.ParseFloat(lit, 64)
		if v.Kind() != KindNumber || v.Float() != f && !(math.IsNaN(f) || f == 0) {
			t.Fatalf("%q: %v %v, want %s", in, v.Kind(), v.Float(), lit)
		}
		if want := !strings.ContainsAny(lit, ".eE"); v.IsIntegerLiteral() != want {
			t.Fatalf("%q: %s (%s) IsIntegerLiteral = %v, want %v", in, lit, v.NumberText(), v.IsIntegerLiteral(), want)
		}
	case []any:
		elems := v.Elems()
		if v.Kind() != KindArray || len(elems) != len(r) {
			t.Fatalf("%q: %v of %d, want an array of %d", in, v.Kind(), len(elems), len(r))
		}
		for i := range elems {
			checkTree(t, in, &elems[i], r[i])
		}
	case map[string]any:
		mems := v.Members()
		if v.Kind() != KindObject || len(mems) != len(r) {
			t.Fatalf("%q: %v of %d, want an object of %d", in, v.Kind(), len(mems), len(r))
		}
		for i := range mems {
			if i > 0 && compareUTF16(mems[i-1].Name, mems[i].Name) >= 0 {
				t.Fatalf("%q: member %q after %q", in, mems[i].Name, mems[i-1].Name)
			}
			want, ok := r[mems[i].Name]
			if !ok {
				t.Fatalf("%q: member %q unknown to encoding/json", in, mems[i].Name)
			}
			checkTree(t, in, &mems[i].Value, want)
		}
	default:
		t.Fatalf("%q: encoding/json read %T", in, ref)
	}
}
