package files_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/internal/files"
)

func TestSplitArray(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{`[]`, []string{}},
		{" \r\n\t[ \n] \n", []string{}},
		{`[1]`, []string{`1`}},
		{`[ {"a":"],[,\"}"} , [1,[2]] ,"x\\",null ]`, []string{`{"a":"],[,\"}"}`, `[1,[2]]`, `"x\\"`, `null`}},
		{"[\n{\"k\":1},\n{\"k\":2}\n]\n", []string{`{"k":1}`, `{"k":2}`}},
		// Element syntax is not the splitter's business: the decoder
		// rejects these.
		{`[1 2]`, []string{`1 2`}},
		{`[{]}]`, nil},
	} {
		got, err := files.SplitArray([]byte(tc.in), 10)
		if tc.want == nil {
			assert.Error(t, err, "%q", tc.in)
			continue
		}
		require.NoError(t, err, "%q", tc.in)
		strs := make([]string, len(got))
		for i, g := range got {
			strs[i] = string(g)
		}
		assert.Equal(t, tc.want, strs, "%q", tc.in)
	}
}

func TestSplitArrayRejects(t *testing.T) {
	for _, in := range []string{
		``, ` `, `{}`, `1`, `[`, `[1`, `[1,`, `[,1]`, `[1,]`, `[1,,2]`, `[}`, `[1]]`, `[1] x`, `[1][2]`,
		`["abc]`, `["abc\"]`, "\xEF\xBB\xBF[]", `[{"a":1}}]`,
	} {
		_, err := files.SplitArray([]byte(in), 10)
		require.Error(t, err, "%q", in)
		assert.ErrorIs(t, err, sourcecatalog.ErrMalformedJSON, "%q", in)
		var se *canonical.SyntaxError
		assert.ErrorAs(t, err, &se, "%q", in)
	}
}

func TestSplitArrayLimit(t *testing.T) {
	got, err := files.SplitArray([]byte(`[1,2,3]`), 3)
	require.NoError(t, err)
	assert.Len(t, got, 3)
	_, err = files.SplitArray([]byte(`[1,2,3,4]`), 3)
	assert.ErrorIs(t, err, sourcecatalog.ErrLimitExceeded)
}

func TestWriteAndDecode(t *testing.T) {
	s, err := examples.BoatSnapshot()
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "a", "b")
	require.NoError(t, files.Write(dir, s, "h.json", "c.json"))
	h, err := files.ReadFile(filepath.Join(dir, "h.json"))
	require.NoError(t, err)
	c, err := files.ReadFile(filepath.Join(dir, "c.json"))
	require.NoError(t, err)
	assert.Equal(t, files.Header(s), h)
	assert.Equal(t, files.Chunks(s), c)
	got, err := files.Decode(h, c)
	require.NoError(t, err)
	assert.Equal(t, s.Manifest, got.Manifest)
	require.Len(t, got.Chunks, len(s.Chunks))
	for i := range s.Chunks {
		assert.Equal(t, s.Chunks[i].Canonical(), got.Chunks[i].Canonical())
	}
	info, err := os.Stat(filepath.Join(dir, "h.json"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), info.Mode().Perm())
}

func TestWriteFailureLeavesNoTemporaries(t *testing.T) {
	s, err := examples.BoatSnapshot()
	require.NoError(t, err)
	dir := t.TempDir()
	// The header's name is taken by a non-empty directory: its rename fails.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "h.json", "x"), 0o755))
	require.Error(t, files.Write(dir, s, "h.json", "c.json"))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		assert.False(t, strings.HasSuffix(e.Name(), ".tmp"), "temporary %s left behind", e.Name())
	}

	// dir is a regular file.
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	require.Error(t, files.Write(file, s, "h.json", "c.json"))
}

func TestReadAllBound(t *testing.T) {
	const limit = 1000
	b, err := files.ReadAllLimit(bytes.NewReader(make([]byte, limit)), limit)
	require.NoError(t, err)
	assert.Len(t, b, limit)
	_, err = files.ReadAllLimit(bytes.NewReader(make([]byte, limit+1)), limit)
	assert.ErrorIs(t, err, files.ErrTooLarge)
	assert.ErrorIs(t, err, sourcecatalog.ErrLimitExceeded)
}
