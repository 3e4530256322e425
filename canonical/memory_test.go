package canonical_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/yachtmemory/sourcecatalog/canonical"
)

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestMemoryBound holds Transform and Parse to a bound on the bytes they
// allocate per byte of input, on the shapes that cost a parser the most:
// many tiny values. Transform writes the canonical text and little else;
// a Parse tree costs 16 bytes a value and one copy of the canonical text,
// so at most 9 bytes a byte of "[0,0,…]", the densest shape.
func TestMemoryBound(t *testing.T) {
	const n = 100_000
	shapes := map[string]string{
		"zeros":         "[" + strings.Repeat("0,", n) + "0]",
		"empty objects": "[" + strings.Repeat("{},", n) + "{}]",
		"empty arrays":  "[" + strings.Repeat("[],", n) + "[]]",
		"spaced zeros":  "[" + strings.Repeat("0 , ", n) + "0]",
		"members":       `{"r":[` + strings.Repeat(`{"b":0,"a":1},`, n) + `{}]}`,
		// Every level out of order, around numbers whose canonical text
		// hides how they were written: each level moves them all.
		"nested reordered floats": strings.Repeat(`{"z":0,"a":`, 62) + "[" + strings.Repeat("1.0,", n/4) + "1.0]" + strings.Repeat("}", 62),
	}
	for name, in := range shapes {
		src := []byte(in)
		for _, f := range []struct {
			name  string
			bound float64
			run   func([]byte) error
		}{
			{"Transform", 2, func(b []byte) error { _, err := canonical.Transform(b); return err }},
			{"TransformNumbers", 2, func(b []byte) error { _, _, err := canonical.TransformNumbers(b); return err }},
			{"Parse", 9.5, func(b []byte) error { _, err := canonical.Parse(b); return err }},
		} {
			var err error
			got := float64(allocated(func() { err = f.run(src) })) / float64(len(src))
			if err != nil {
				t.Fatalf("%s(%s): %v", f.name, name, err)
			}
			bound := f.bound
			if name == "nested reordered floats" && f.name == "Transform" {
				bound = 3 // the sort's scratch, once
			} else if name == "nested reordered floats" {
				// A number written 1.0 whose canonical text is 1 costs an
				// int of bookkeeping, and another while its object is
				// sorted, 4 bytes a byte of input here with slices grown
				// by append: linear still, however deep the nesting (it
				// was 135 before the sort's scratch was reused); Parse adds
				// its tree.
				bound = 16
				if f.name == "Parse" {
					bound = 20
				}
			}
			if got > bound {
				t.Errorf("%s(%s) allocates %.1f bytes a byte of input, want at most %.1f", f.name, name, got, bound)
			}
		}
	}
}
