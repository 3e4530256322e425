package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/examples"
)

// fileBytes returns path's bytes, or nil when it does not exist.
func fileBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	return b
}

// cut truncates path by n bytes.
func cut(t *testing.T, path string, n int64) {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(path, fi.Size()-n))
}

// TestStatusReadsOnly: status opens an SQLite file read-only: a missing
// or empty file is an error that leaves it missing or empty, and a
// store's bytes are the same after status as before.
func TestStatusReadsOnly(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	r := cli(t, "", "status", "--store", "sqlite:"+missing)
	assert.Equal(t, exitInvalid, r.code)
	assert.Contains(t, r.stderr, "no such file (a read-only open creates nothing)")
	assert.True(t, fileBytes(t, missing) == nil, "status created the file")

	empty := filepath.Join(dir, "empty.db")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	r = cli(t, "", "status", "--store", "sqlite:"+empty)
	assert.Equal(t, exitInvalid, r.code)
	assert.Contains(t, r.stderr, "an empty file, with no schema")
	assert.Zero(t, len(fileBytes(t, empty)), "status wrote the empty file")

	shore := filepath.Join(dir, "shore.db")
	require.Equal(t, exitOK, cli(t, "", "demo", "--sqlite", shore).code)
	before := fileBytes(t, shore)
	r = cli(t, "", "status", "--store", "sqlite:"+shore)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, examples.VesselID.String())
	assert.True(t, bytes.Equal(before, fileBytes(t, shore)), "status wrote the file")
}

// TestCutFileRefused: status on a shore file and commit on a board file,
// each cut short, exit 1 with a message naming the damage and leave the
// file as it was.
func TestCutFileRefused(t *testing.T) {
	dir := t.TempDir()
	shore := filepath.Join(dir, "shore.db")
	require.Equal(t, exitOK, cli(t, "", "demo", "--sqlite", shore).code)
	cut(t, shore, 1)
	board := filepath.Join(dir, "board.db")
	records := recordsFile(t, dir, "boat.json", examples.Boat())
	commitJSONOf(t, "--store", "sqlite:"+board, "--vessel", vesselFlag, records)
	cut(t, board, 1000)
	for _, tc := range []struct {
		name, path string
		args       []string
	}{
		{"status", shore, []string{"status", "--store", "sqlite:" + shore}},
		{"commit", board, []string{"commit", "--store", "sqlite:" + board, "--vessel", vesselFlag, records}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := fileBytes(t, tc.path)
			r := cli(t, "", tc.args...)
			assert.Equal(t, exitInvalid, r.code)
			assert.Contains(t, r.stderr, "sourcecatalog "+tc.name+": ")
			assert.Contains(t, r.stderr, "not a whole number of 4096-byte pages: the file is cut or damaged")
			assert.Contains(t, r.stderr, "not a source catalog database")
			assert.Empty(t, r.stdout)
			assert.True(t, bytes.Equal(before, fileBytes(t, tc.path)), "the cut file was written")
		})
	}
}
