package examples

import (
	"bytes"
	"testing"

	"github.com/yachtmemory/sourcecatalog/catalog"
)

func TestWithChangedUnits(t *testing.T) {
	records := Scaled(1500)
	out := WithChangedUnits(records, 15)
	if len(out) != len(records) {
		t.Fatalf("len %d, want %d", len(out), len(records))
	}
	changed := 0
	for i := range out {
		if bytes.Equal(out[i].Canonical(), records[i].Canonical()) {
			continue
		}
		p, ok := out[i].AsPath()
		if !ok || p.Unit.Symbol() != "changed" || catalog.Compare(out[i], records[i]) != 0 {
			t.Fatalf("record %d changed unexpectedly: %s", i, out[i].Canonical())
		}
		changed++
	}
	if changed != 15 {
		t.Fatalf("%d records changed, want 15", changed)
	}
}
