package canonical

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIntegerLiteralAfterReorder checks that IsIntegerLiteral describes the
// literal as it was written, also when sorting the members of an object
// moves the number to another place in the canonical text. Protocol
// integers must be digits only, so a "1.0" that passed as an integer
// literal would let a decoder accept what the protocol refuses.
func TestIntegerLiteralAfterReorder(t *testing.T) {
	cases := []struct {
		in   string
		path []string // member names and element indexes ("#0") down to the number
		want bool
	}{
		{`{"b":0,"a":1.0}`, []string{"a"}, false},
		{`{"b":0,"a":1.0}`, []string{"b"}, true},
		{`{"b":1.0,"a":0}`, []string{"a"}, true},
		{`{"b":1.0,"a":0}`, []string{"b"}, false},
		{`{"b":0,"a":1e2}`, []string{"a"}, false},
		{`{"b":1e21,"a":1000000000000000000000}`, []string{"a"}, true},
		{`{"b":1e21,"a":1000000000000000000000}`, []string{"b"}, false},
		{`[{"z":2.0,"y":[3,4.0],"x":{"d":5,"c":6e0}}]`, []string{"#0", "x", "c"}, false},
		{`[{"z":2.0,"y":[3,4.0],"x":{"d":5,"c":6e0}}]`, []string{"#0", "x", "d"}, true},
		{`[{"z":2.0,"y":[3,4.0],"x":{"d":5,"c":6e0}}]`, []string{"#0", "y", "#0"}, true},
		{`[{"z":2.0,"y":[3,4.0],"x":{"d":5,"c":6e0}}]`, []string{"#0", "y", "#1"}, false},
		{`[{"z":2.0,"y":[3,4.0],"x":{"d":5,"c":6e0}}]`, []string{"#0", "z"}, false},
	}
	for _, tc := range cases {
		v, err := Parse([]byte(tc.in))
		require.NoError(t, err, tc.in)
		n := &v
		for _, step := range tc.path {
			if step[0] == '#' {
				n = &n.Elems()[int(step[1]-'0')]
				continue
			}
			var next *Value
			for i, m := range n.Members() {
				if m.Name == step {
					next = &n.Members()[i].Value
				}
			}
			require.NotNil(t, next, "%s: no member %q", tc.in, step)
			n = next
		}
		require.Equal(t, KindNumber, n.Kind(), "%s %v", tc.in, tc.path)
		assert.Equal(t, tc.want, n.IsIntegerLiteral(), "%s %v (%s)", tc.in, tc.path, n.NumberText())
	}
}
