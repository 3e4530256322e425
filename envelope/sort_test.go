package envelope

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/catalog"
)

// referenceOrder is the order sortRecords must produce: catalog.Compare,
// then input position.
func referenceOrder(in []*catalog.Record) []int32 {
	order := make([]int32, len(in))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := catalog.Compare(in[a], in[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return order
}

func TestSortRecordsMatchesCompare(t *testing.T) {
	mustPath := func(path string) *catalog.Record {
		r, err := catalog.NewPath(catalog.Path{Path: path})
		require.NoError(t, err)
		return r
	}
	mustObs := func(path, ref string) *catalog.Record {
		r, err := catalog.NewObservation(catalog.Observation{Path: path, SourceRef: ref, ValueType: catalog.Number})
		require.NoError(t, err)
		return r
	}
	mustSource := func(ref string) *catalog.Record {
		r, err := catalog.NewSource(catalog.Source{SourceRef: ref})
		require.NoError(t, err)
		return r
	}
	// Names drawn from a small alphabet so that prefixes, duplicates and
	// keys that are prefixes of others are common.
	name := func(rng *rand.Rand) string {
		alphabet := []rune("abZ~é\u2028😀")
		b := []rune("x")
		for range rng.IntN(6) {
			b = append(b, alphabet[rng.IntN(len(alphabet))])
		}
		return string(b)
	}
	path := func(rng *rand.Rand) string {
		p := name(rng)
		for range rng.IntN(3) {
			p += "." + name(rng)
		}
		return p
	}
	randomInput := func(rng *rand.Rand, n int) []*catalog.Record {
		var in []*catalog.Record
		for range n {
			switch rng.IntN(3) {
			case 0:
				in = append(in, mustPath(path(rng)))
			case 1:
				in = append(in, mustSource(name(rng)))
			default:
				in = append(in, mustObs(path(rng), name(rng)))
			}
		}
		return in
	}
	scaled := makeCatalog(t, 12000, 100, nil)
	for i := range 300 { // dotted paths that share long prefixes
		for _, leaf := range []string{"voltage", "current", "temperature", "stateOfCharge"} {
			path := fmt.Sprintf("electrical.batteries.house%d.%s", i, leaf)
			scaled = append(scaled, mustPath(path), mustObs(path, sourceRef(i%100)))
		}
	}
	reversed := slices.Clone(scaled)
	slices.Reverse(reversed)
	shuffled := slices.Clone(scaled)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	same := make([]*catalog.Record, 500) // every key equal: input order decides
	for i := range same {
		same[i] = mustPath("environment.depth")
	}
	cases := map[string][]*catalog.Record{
		"empty": nil, "scaled": scaled, "reversed": reversed, "shuffled": shuffled, "all equal": same,
		"observations of one path": {mustObs("a", "s2"), mustObs("a", "s1"), mustObs("a.b", "s"), mustObs("a", "s")},
		"path a prefix of another": {mustObs("ab", "s"), mustObs("a", "t"), mustPath("ab"), mustPath("a"), mustSource("ab"), mustSource("a")},
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range 200 {
		cases[fmt.Sprintf("random %d", i)] = randomInput(rng, rng.IntN(300))
	}
	for name, in := range cases {
		want := referenceOrder(in)
		records, order := sortRecords(in)
		require.Equal(t, want, order, name)
		for k, i := range order {
			require.Same(t, in[i], records[k], name)
		}
	}
}
