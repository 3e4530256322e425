package canonical

import (
	"bytes"
	"testing"
)

// TestTransformNumbers checks that Numbers tells integer literals as the
// input wrote them, also where sorting moved the number or its canonical
// text reads otherwise, and that the text is Transform's.
func TestTransformNumbers(t *testing.T) {
	cases := []struct {
		in   string
		at   string // the canonical text up to the number
		want bool
	}{
		{`4`, ``, true},
		{`4.0`, ``, false},
		{`4e1`, ``, false},
		{`-0`, ``, true},
		{`-0.0`, ``, false},
		{`1000000000000000000000`, ``, true},
		{`1e21`, ``, false},
		{`{"b":4.0,"a":4}`, `{"a":`, true},
		{`{"b":4.0,"a":4}`, `{"a":4,"b":`, false},
		{`{"b":4,"a":4.0}`, `{"a":`, false},
		{`{"b":4,"a":4.0}`, `{"a":4,"b":`, true},
		{`[{"z":[4.2e1],"y":42}]`, `[{"y":`, true},
		{`[{"z":[4.2e1],"y":42}]`, `[{"y":42,"z":[`, false},
		{`{"a":"4"}`, `{"a":`, false}, // a string, not a number
		{`{"a":true}`, `{"a":`, false},
	}
	for _, tc := range cases {
		canon, nums, err := TransformNumbers([]byte(tc.in))
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if want, _ := Transform([]byte(tc.in)); !bytes.Equal(canon, want) {
			t.Errorf("%s: TransformNumbers gives %s, Transform %s", tc.in, canon, want)
		}
		if !bytes.HasPrefix(canon, []byte(tc.at)) {
			t.Fatalf("%s: canonical %s does not start with %s", tc.in, canon, tc.at)
		}
		if got := nums.IsIntegerLiteral(canon, len(tc.at)); got != tc.want {
			t.Errorf("%s at %d of %s: IsIntegerLiteral = %v, want %v", tc.in, len(tc.at), canon, got, tc.want)
		}
	}
}
