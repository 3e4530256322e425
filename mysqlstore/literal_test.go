package mysqlstore_test

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/mysqlstore"
)

// TestInlineLiterals writes values as literals and reads them back bound:
// each arrives exactly, whatever it holds, and text a utf8mb4 column
// cannot hold is refused, as a bound argument is.
func TestInlineLiterals(t *testing.T) {
	db := migrated(t)
	ctx := context.Background()
	_, err := db.ExecContext(ctx, `CREATE TABLE literals (id INT PRIMARY KEY, n BIGINT, b BLOB,
		s VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin, f TINYINT(1))`)
	require.NoError(t, err)
	texts := []string{"", "'", `\`, "a'); DROP TABLE literals; --", "\x00", "é", "🛥", "?"}
	blobs := [][]byte{{}, {0}, []byte(`'\"`), {0xff, 0x27, 0x5c}}
	ints := []int64{0, -1, math.MinInt64, math.MaxInt64}
	for i := range texts {
		id := int64(i)
		n, b := ints[i%len(ints)], blobs[i%len(blobs)]
		_, err := db.ExecContext(ctx, mysqlstore.Inline("INSERT INTO literals VALUES (?, ?, ?, ?, ?)", id, n, b, texts[i], i%2 == 0))
		require.NoError(t, err, "text %q", texts[i])
		var gotN int64
		var gotB []byte
		var gotS string
		var gotF bool
		require.NoError(t, db.QueryRowContext(ctx, "SELECT n, b, s, f FROM literals WHERE id = ?", id).Scan(&gotN, &gotB, &gotS, &gotF))
		assert.Equal(t, n, gotN)
		assert.Equal(t, b, append([]byte{}, gotB...))
		assert.Equal(t, texts[i], gotS)
		assert.Equal(t, i%2 == 0, gotF)
	}
	_, err = db.ExecContext(ctx, mysqlstore.Inline("INSERT INTO literals (id, s) VALUES (?, ?)", 100, "\xff"))
	assert.Error(t, err, "invalid UTF-8 is refused")
	var null []byte
	_, err = db.ExecContext(ctx, mysqlstore.Inline("INSERT INTO literals (id, b) VALUES (?, ?)", 101, null))
	require.NoError(t, err)
	var isNull bool
	require.NoError(t, db.QueryRowContext(ctx, "SELECT b IS NULL FROM literals WHERE id = 101").Scan(&isNull))
	assert.True(t, isNull, "a nil []byte is NULL, as the driver binds it")
	assert.Panics(t, func() { mysqlstore.Inline("SELECT ?, ?", 1) })
	assert.Panics(t, func() { mysqlstore.Inline("SELECT ?", 1, 2) })
	assert.Panics(t, func() { mysqlstore.Inline("SELECT ?", 1.5) })
}
