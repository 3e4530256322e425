package envelope

import (
	"errors"
	"strings"
	"testing"

	"github.com/yachtmemory/sourcecatalog"
)

// TestIntegerLiterals checks that protocol integers must be written as
// digits only (SPEC.md §6.2, §6.3), although canonical text spells 42.0
// and 4.2e1 as 42: the decoders learn the input's spelling from
// canonical.TransformNumbers. -0 is read as 0.
func TestIntegerLiterals(t *testing.T) {
	snap := fuzzSnapshot(t)
	manifest, chunk := string(snap.Manifest.Canonical()), string(snap.Chunks[0].Canonical())
	cases := []struct {
		in    string
		field string // "": accepted
	}{
		{strings.Replace(chunk, `"chunk_index":0`, `"chunk_index":-0`, 1), ""},
		{strings.Replace(chunk, `"chunk_index":0`, `"chunk_index" : 0`, 1), ""},
		{strings.Replace(chunk, `"chunk_index":0`, `"chunk_index":0.0`, 1), "chunk_index"},
		{strings.Replace(chunk, `"chunk_index":0`, `"chunk_index":-0.0`, 1), "chunk_index"},
		{strings.Replace(chunk, `"chunk_index":0`, `"chunk_index":0e5`, 1), "chunk_index"},
		{strings.Replace(chunk, `"revision":7`, `"revision":7.0`, 1), "revision"},
		{strings.Replace(chunk, `"revision":7`, `"revision":0.7e1`, 1), "revision"},
		{strings.Replace(manifest, `"revision":7`, `"revision":70e-1`, 1), "revision"},
		{strings.Replace(manifest, `"record_count":3`, `"record_count":3.00`, 1), "record_count"},
		// Members out of order: sorting moves the numbers.
		{strings.Replace(manifest, `"chunk_count":1,`, ``, 1)[:len(manifest)-len(`"chunk_count":1,`)-1] + `,"chunk_count":1.0}`, "chunk_count"},
		{strings.Replace(manifest, `"chunk_count":1,`, ``, 1)[:len(manifest)-len(`"chunk_count":1,`)-1] + `,"chunk_count":1}`, ""},
	}
	for _, tc := range cases {
		var err error
		if strings.Contains(tc.in, "records") {
			_, err = DecodeChunk([]byte(tc.in))
		} else {
			_, err = DecodeManifest([]byte(tc.in))
		}
		if tc.field == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.in, err)
			}
			continue
		}
		var e *sourcecatalog.Error
		if !errors.As(err, &e) || e.Class != sourcecatalog.ErrInvalidValue || e.Field != tc.field || !strings.Contains(e.Detail, "digits only") {
			t.Errorf("%s: %v, want invalid_value at %s", tc.in, err, tc.field)
		}
	}
}
