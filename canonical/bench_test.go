package canonical_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/gowebpki/jcs"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/internal/bench"
)

// BenchmarkCanonical measures canonical.Transform beside its peers on the
// document of a maximum snapshot (25,600 records) written canonically,
// indented and with the members of every object shuffled, and on the two
// shapes that cost a parser the most memory per byte. Each reports MB/s and
// alloc/byte, the bytes allocated per byte of input. The peers are
// gowebpki/jcs, json.Compact (the floor: it only removes whitespace) and,
// built with GOEXPERIMENT=jsonv2, Go's own canonicalizer
// (jsontext.Value.Canonicalize). Transform then also reports, measured in
// the same run, x_jsontext_speed (its speed over jsontext's; target ≥ 1.5 on
// the canonical and indented document) and x_jsontext_alloc (its
// allocation over jsontext's; target ≤ 1 everywhere).
func BenchmarkCanonical(b *testing.B) {
	for _, in := range benchInputs() {
		for _, c := range canonicalizers() {
			b.Run(in.name+"/"+c.name, func(b *testing.B) {
				if _, err := c.run(in.text); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(in.text)))
				b.ReportAllocs()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				b.ResetTimer()
				for range b.N {
					c.run(in.text)
				}
				b.StopTimer()
				runtime.ReadMemStats(&after)
				alloc := perByte(after.TotalAlloc-before.TotalAlloc, b.N, in.text)
				b.ReportMetric(alloc, "alloc/byte")
				if c.name != "Transform" || jsontextCanonicalize == nil {
					return
				}
				n := max(3, b.N/4)
				ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
				runtime.ReadMemStats(&before)
				refNs := bench.NsPerOp(n, func() { jsontextCanonicalize(in.text) })
				runtime.ReadMemStats(&after)
				b.ReportMetric(refNs/ns, "x_jsontext_speed")
				b.ReportMetric(alloc/perByte(after.TotalAlloc-before.TotalAlloc, n+1, in.text), "x_jsontext_alloc")
			})
		}
	}
}

func perByte(bytes uint64, n int, in []byte) float64 {
	return float64(bytes) / float64(n) / float64(len(in))
}

// jsontextCanonicalize is Go's own canonicalizer, set by bench_jsonv2_test.go when the
// experiment is on.
var jsontextCanonicalize func([]byte) ([]byte, error)

type canonicalizer struct {
	name string
	run  func([]byte) ([]byte, error)
}

func canonicalizers() []canonicalizer {
	cs := []canonicalizer{
		{"Transform", canonical.Transform},
		{"jcs", jcs.Transform},
		{"Compact", func(in []byte) ([]byte, error) {
			var out bytes.Buffer
			out.Grow(len(in))
			err := json.Compact(&out, in)
			return out.Bytes(), err
		}},
	}
	if jsontextCanonicalize != nil {
		cs = append(cs, canonicalizer{"jsontext", jsontextCanonicalize})
	}
	return cs
}

type benchInput struct {
	name string
	text []byte
}

var benchInputs = sync.OnceValue(func() []benchInput {
	records := examples.Scaled(25600)
	catalog.Sort(records)
	doc := []byte(`{"records":[`)
	for i, r := range records {
		if i > 0 {
			doc = append(doc, ',')
		}
		doc = append(doc, r.Canonical()...)
	}
	doc = append(doc, "]}"...)
	var indented bytes.Buffer
	if err := json.Indent(&indented, doc, "", "  "); err != nil {
		panic(err)
	}
	v, err := canonical.Parse(doc)
	if err != nil {
		panic(err)
	}
	return []benchInput{
		{"canonical", doc},
		{"indented", indented.Bytes()},
		{"shuffled", appendShuffled(nil, &v, rand.New(rand.NewPCG(7, 7)))},
		{"zeros", []byte("[" + strings.Repeat("0,", 4_200_000) + "0]")},
		{"empty-objects", []byte("[" + strings.Repeat("{},", 2_100_000) + "{}]")},
	}
})

// appendShuffled appends v as JSON with the members of every object in
// random order.
func appendShuffled(dst []byte, v *canonical.Value, rng *rand.Rand) []byte {
	switch v.Kind() {
	case canonical.KindArray:
		dst = append(dst, '[')
		for i := range v.Elems() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendShuffled(dst, &v.Elems()[i], rng)
		}
		return append(dst, ']')
	case canonical.KindObject:
		mems := v.Members()
		dst = append(dst, '{')
		for k, i := range rng.Perm(len(mems)) {
			if k > 0 {
				dst = append(dst, ',')
			}
			dst, _ = canonical.AppendString(dst, mems[i].Name)
			dst = append(dst, ':')
			dst = appendShuffled(dst, &mems[i].Value, rng)
		}
		return append(dst, '}')
	}
	return v.AppendCanonical(dst)
}
