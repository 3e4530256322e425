package finalize_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
)

// hostileBudget is what refusing one hostile message of MaxMessageSize
// bytes may allocate: eight times its size.
const hostileBudget = 1 << 20

// hostileMessages are messages of about MaxMessageSize bytes, each built to
// cost a decoder as much as its shape allows, with the class it must be
// refused with.
func hostileMessages() []struct {
	name string
	raw  []byte
	want error
} {
	const size = envelope.MaxMessageSize
	fill := func(head, unit, tail string) []byte {
		n := (size - len(head) - len(tail)) / len(unit)
		return []byte(head + strings.Repeat(unit, n) + tail)
	}
	// Distinct names, short and out of order, to be sorted.
	members := func(pad string) []byte {
		var b strings.Builder
		b.WriteString("{")
		for i := 0; ; i++ {
			m := fmt.Sprintf(`"%x":0`, 1<<20-i) + pad
			if b.Len()+len(m)+2 > size {
				break
			}
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(m)
		}
		b.WriteString("}")
		return []byte(b.String())
	}
	// Canonically just under MaxRequest bytes, padded with spaces: the
	// largest tree a message can make the decoder build.
	underBound := []byte(`{"records":[` + strings.Repeat("0,", sourcecatalog.MaxRequest/2-12) + `0]}`)
	underBound = append(underBound, strings.Repeat(" ", size-len(underBound))...)
	return []struct {
		name string
		raw  []byte
		want error
	}{
		{"array of zeros", fill("[", "0,", "0]"), sourcecatalog.ErrInvalidValue},
		{"array of empty objects", fill("[", "{},", "{}]"), sourcecatalog.ErrInvalidValue},
		{"deep arrays", fill(`{"records":`, "[", ""), sourcecatalog.ErrMalformedJSON},
		{"records of zeros", fill(`{"records":[`, "0,", "0]}"), sourcecatalog.ErrLimitExceeded},
		{"records of empty objects", fill(`{"records":[`, "{},", "{}]}"), sourcecatalog.ErrLimitExceeded},
		{"records of zeros, indented", fill(`{"records":[`, "0,\n  ", "0]}"), sourcecatalog.ErrLimitExceeded},
		{"members out of order", members(""), sourcecatalog.ErrLimitExceeded},
		{"members out of order, indented", members("\n "), sourcecatalog.ErrLimitExceeded},
		{"largest tree", underBound, sourcecatalog.ErrMissingField},
		{"too large", append(fill(`{"records":[`, "0,", "0]}"), strings.Repeat(" ", 9)...), sourcecatalog.ErrLimitExceeded},
	}
}

// TestHostileMessageMemory sends each hostile message to ReceiveChunk and
// ReceiveManifest and checks that refusing it allocates at most
// hostileBudget bytes.
func TestHostileMessageMemory(t *testing.T) {
	ctx := context.Background()
	r := finalize.NewReceiver(memstore.New())
	origin := finalize.Origin{VesselID: benchVessel}
	receivers := map[string]func([]byte) error{
		"ReceiveChunk": func(raw []byte) error {
			_, err := r.ReceiveChunk(ctx, origin, raw)
			return err
		},
		"ReceiveManifest": func(raw []byte) error {
			_, err := r.ReceiveManifest(ctx, origin, raw)
			return err
		},
	}
	for _, m := range hostileMessages() {
		for name, receive := range receivers {
			t.Run(m.name+"/"+name, func(t *testing.T) {
				var err error
				allocated := allocatedBy(func() { err = receive(m.raw) })
				if !errors.Is(err, m.want) {
					t.Fatalf("error %v, want %v", err, m.want)
				}
				t.Logf("%d bytes: %d allocated", len(m.raw), allocated)
				if allocated > hostileBudget {
					t.Errorf("refusing %d bytes allocated %d, more than %d", len(m.raw), allocated, hostileBudget)
				}
			})
		}
	}
}

// allocatedBy returns the bytes allocated while f runs.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
