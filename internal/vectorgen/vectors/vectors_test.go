package vectors

import (
	"bytes"
	"fmt"
	"testing"
)

// Files is deterministic, numbers the vectors without gaps and ends every
// header with an empty line.
func TestFilesDeterministic(t *testing.T) {
	a, err := Files()
	if err != nil {
		t.Fatal(err)
	}
	b, err := Files()
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != len(b) {
		t.Fatalf("%d files, then %d", len(a), len(b))
	}
	numbers := map[string]bool{}
	for name, data := range a {
		if !bytes.Equal(data, b[name]) {
			t.Errorf("%s differs between two runs", name)
		}
		if !bytes.Contains(data, []byte("\n\n")) {
			t.Errorf("%s: no empty line after the header", name)
		}
		numbers[name[:3]] = true
	}
	// Without gaps, but before a group that owns a range of numbers
	// (firstDeclaration, firstChunkRef...), which starts at its range's first.
	starts := map[int]bool{firstDeclaration: true, firstChunkRef: true, firstResolve: true, firstRefusal: true, firstSignalKSettled: true, firstContentDefined: true, firstIndex: true, firstIndexReceipt: true}
	prev := 0
	for i := 1; i <= 999; i++ {
		if !numbers[fmt.Sprintf("%03d", i)] {
			continue
		}
		if i != prev+1 && !starts[i] {
			t.Errorf("no vector numbered %03d", prev+1)
		}
		prev = i
	}
}
