package mysqlstore

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWriteBatches: rows are written in order, in pieces of at most batch
// rows whose statement stays within statementBytes; a row larger than that
// alone is a piece of its own.
func TestWriteBatches(t *testing.T) {
	const fixed = 100
	cases := []struct {
		name  string
		sizes []int // bytes of each row's literal
		batch int
		want  []int // rows of each piece
	}{
		{"none", nil, 10, nil},
		{"by rows", []int{10, 10, 10, 10, 10}, 2, []int{2, 2, 1}},
		{"by bytes", []int{statementBytes / 2, statementBytes / 2, 10}, 500, []int{1, 2}},
		{"exactly the bound", []int{statementBytes - fixed - 2 - 10, 10}, 500, []int{2}},
		{"one byte over", []int{statementBytes - fixed - 2 - 9, 10}, 500, []int{1, 1}},
		{"an oversized row alone", []int{10, statementBytes + 1, 10}, 500, []int{1, 1, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rows := make([]int, len(tc.sizes))
			for i := range rows {
				rows[i] = i
			}
			var pieces []int
			var seen []string
			err := writeBatches(rows, tc.batch, fixed, func(b *strings.Builder, i int) {
				b.WriteString(strings.Repeat(string(rune('a'+i%26)), tc.sizes[i]))
			}, func(values string) error {
				parts := strings.Split(values, ", ")
				pieces = append(pieces, len(parts))
				if len(parts) > 1 {
					assert.LessOrEqual(t, fixed+len(values), statementBytes, "a piece of several rows stays within the bound")
				}
				seen = append(seen, parts...)
				return nil
			})
			require.NoError(t, err)
			assert.Equal(t, tc.want, pieces)
			require.Len(t, seen, len(rows))
			for i, s := range seen {
				assert.Len(t, s, tc.sizes[i], "row %d in order", i)
			}
		})
	}
}
