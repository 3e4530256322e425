package envelope

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
)

// The content-defined rule of SPEC.md §7.2, written again from its text:
// refWindow is the window's radius, refKeyText the key text,
// refBoundaries the records that open a run.

func refWindow(n int) int {
	switch {
	case n <= 2048:
		return 6
	case n <= 4096:
		return 12
	case n <= 8192:
		return 24
	}
	return 48
}

func refKeyText(t testing.TB, r *catalog.Record) []byte {
	var parts []string
	switch r.Kind() {
	case catalog.KindPath:
		parts = []string{"path", r.Key().Path}
	case catalog.KindSource:
		parts = []string{"source", r.Key().SourceRef}
	default:
		parts = []string{"observation", r.Key().Path, r.Key().SourceRef}
	}
	j, err := json.Marshal(parts)
	require.NoError(t, err)
	c, err := canonical.Transform(j)
	require.NoError(t, err)
	return c
}

// refBoundaries returns, for records in canonical order, whether each
// opens a run: it is the first, or its kind differs from the record
// before it, or the SHA-256 of its key text, as a big-endian integer, is
// less than that of every other record of its kind at most refWindow
// positions away.
func refBoundaries(t testing.TB, records []*catalog.Record) []bool {
	out := make([]bool, len(records))
	w := refWindow(len(records))
	digest := make([]*big.Int, len(records))
	for i, r := range records {
		sum := sha256.Sum256(refKeyText(t, r))
		digest[i] = new(big.Int).SetBytes(sum[:])
	}
	for i := 1; i < len(records); i++ {
		if records[i].Kind() != records[i-1].Kind() {
			out[i] = true
			continue
		}
		least := true
		for j := i - w; j <= i+w; j++ {
			if j != i && j >= 0 && j < len(records) && records[j].Kind() == records[i].Kind() && digest[j].Cmp(digest[i]) <= 0 {
				least = false
			}
		}
		out[i] = least
	}
	return out
}

// checkContentDefined asserts that s, built from records, is cut by the
// content-defined rule: no chunk holds a record that opens a run but as
// its first, and every chunk that the next record does not open a run
// after was closed by a limit. It returns the number of chunks closed by a
// limit.
func checkContentDefined(t testing.TB, s *Snapshot, records []*catalog.Record) int {
	t.Helper()
	want := slices.Clone(records)
	catalog.Sort(want)
	checkSnapshotCuts(t, s, want)
	open := refBoundaries(t, want)
	forced, at := 0, 0
	for i, c := range s.Chunks {
		for k := range c.Records() {
			if k > 0 {
				require.False(t, open[at+k], "chunk %d record %d opens a run but is not first", i, k)
			}
		}
		at += len(c.Records())
		if i+1 < len(s.Chunks) && !open[at] {
			require.NotEmpty(t, closedBy(t, DefaultWrapper{}, c, want[at]), "chunk %d ends inside a run, not at a limit", i)
			forced++
		}
	}
	return forced
}

// checkSnapshotCuts is checkSnapshot without its greedy expectation that
// every chunk is maximal.
func checkSnapshotCuts(t testing.TB, s *Snapshot, want []*catalog.Record) {
	t.Helper()
	require.Equal(t, sha(bodyText(want)), s.Manifest.DocumentSHA256.String())
	require.Equal(t, len(s.Chunks), s.Manifest.ChunkCount)
	require.Equal(t, len(want), len(allRecords(s)))
	for i, c := range s.Chunks {
		require.Equal(t, i, c.Index())
		require.NotEmpty(t, c.Records())
		require.LessOrEqual(t, len(c.Records()), sourcecatalog.MaxRecordsPerChunk)
		require.LessOrEqual(t, c.BodyLen(), sourcecatalog.MaxChunkBody)
		require.LessOrEqual(t, wrappedLen(t, DefaultWrapper{}, c), sourcecatalog.MaxRequest)
		require.Equal(t, sha(bodyText(c.Records())), c.PayloadSHA256().String())
	}
	require.NoError(t, Verify(&s.Manifest, s.Chunks))
}

// randomCatalog returns a valid catalog of n paths with random names,
// their observations and k sources, in random order; path metas are up to
// maxMeta bytes.
func randomCatalog(t testing.TB, rng *rand.Rand, n, k, maxMeta int) []*catalog.Record {
	t.Helper()
	seen := map[string]bool{}
	var recs []*catalog.Record
	for j := range k {
		recs = append(recs, mkSource(t, fmt.Sprintf("n2k.%d.%x", j, rng.Uint32())))
	}
	for len(seen) < n {
		p := fmt.Sprintf("%s.%x.%s", []string{"navigation", "electrical", "environment", "propulsion"}[rng.IntN(4)], rng.Uint32(), "value")
		if seen[p] {
			continue
		}
		seen[p] = true
		meta := ""
		if maxMeta > 0 {
			meta = metaJSON(strings.Repeat("m", rng.IntN(maxMeta)))
		}
		recs = append(recs, mkPath(t, p, meta), mkObs(t, p, recs[rng.IntN(k)].Key().SourceRef))
	}
	rng.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
	return recs
}

func buildCDC(t testing.TB, recs []*catalog.Record) *Snapshot {
	t.Helper()
	return mustBuild(t, input(recs), WithContentDefinedCuts())
}

func digests(s *Snapshot) map[canonical.Digest]bool {
	out := map[canonical.Digest]bool{}
	for _, c := range s.Chunks {
		out[c.PayloadSHA256()] = true
	}
	return out
}

// newDigests returns how many chunks of b have a payload no chunk of a has.
func newDigests(a, b *Snapshot) int {
	held, n := digests(a), 0
	for _, c := range b.Chunks {
		if !held[c.PayloadSHA256()] {
			n++
		}
	}
	return n
}

func TestContentDefinedMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 1))
	for _, tc := range []struct{ paths, sources, maxMeta int }{
		{1, 1, 0}, {20, 2, 200}, {300, 5, 300}, {760, 16, 100}, {761, 15, 100}, {768, 1, 0}, {1600, 12, 50}, {200, 4, 3000},
	} {
		t.Run(fmt.Sprintf("%d paths", tc.paths), func(t *testing.T) {
			recs := randomCatalog(t, rng, tc.paths, tc.sources, tc.maxMeta)
			s := buildCDC(t, recs)
			forced := checkContentDefined(t, s, recs)
			t.Logf("%d records, %d chunks, %d closed by a limit", len(recs), len(s.Chunks), forced)
			if tc.maxMeta == 3000 {
				assert.Positive(t, forced, "large records must make a limit close some chunks")
			}
		})
	}
	t.Run("empty", func(t *testing.T) {
		s := buildCDC(t, nil)
		require.Len(t, s.Chunks, 1)
		require.Empty(t, s.Chunks[0].Records())
	})
	t.Run("the record limit", func(t *testing.T) {
		// 1,700 paths: 3,400 records and more, a run of 16 expected; some
		// runs of observations of one source are long, but only the
		// record limit may close a chunk inside a run.
		recs := randomCatalog(t, rng, 1700, 3, 0)
		checkContentDefined(t, buildCDC(t, recs), recs)
	})
}

// TestContentDefinedUnitChange changes the unit of k random paths of
// random catalogs: at most k chunks may get new payloads, when no limit
// closed a chunk inside a run.
func TestContentDefinedUnitChange(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 2))
	tested := 0
	for range 20 {
		recs := randomCatalog(t, rng, 50+rng.IntN(700), 1+rng.IntN(10), 400)
		before := buildCDC(t, recs)
		if checkContentDefined(t, before, recs) > 0 {
			continue
		}
		tested++
		k := 1 + rng.IntN(8)
		after := slices.Clone(recs)
		for changed := 0; changed < k; {
			i := rng.IntN(len(after))
			p, ok := after[i].AsPath()
			if !ok || p.Unit.Symbol() == "changed" {
				continue
			}
			p.Unit = catalog.UnitOf("changed")
			r, err := catalog.NewPath(p)
			require.NoError(t, err)
			after[i] = r
			changed++
		}
		s := buildCDC(t, after)
		checkContentDefined(t, s, after)
		require.LessOrEqual(t, newDigests(before, s), k, "%d units changed", k)
		require.Equal(t, len(before.Chunks), len(s.Chunks), "a changed unit moves no cut")
	}
	require.GreaterOrEqual(t, tested, 15, "catalogs without a chunk closed by a limit")
}

// TestContentDefinedInsertRemove adds or removes one record: at most three
// chunks change, each way — the record moves at most the cuts within the
// window of it, one on either side, since two cuts are more than a
// window apart. The cutter runs alone, without the integrity
// check, so that one record can go.
func TestContentDefinedInsertRemove(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 3))
	h := newChunkHeader(testVessel, testSnapshot, 3)
	cut := func(recs []*catalog.Record) *Snapshot {
		s := sortForBuild(recs)
		chunks, _, err := cutContentDefined(h, &s, DefaultWrapper{})
		require.NoError(t, err)
		return &Snapshot{Chunks: chunks}
	}
	for n := range 300 {
		// Small catalogs too, whose kind boundaries are near the change.
		recs := randomCatalog(t, rng, 2+rng.IntN([]int{30, 700}[n%2]), 1+rng.IntN(10), 200)
		catalog.Sort(recs)
		i := rng.IntN(len(recs))
		removed := slices.Delete(slices.Clone(recs), i, i+1)
		a, b := cut(recs), cut(removed)
		require.LessOrEqual(t, newDigests(a, b), 3, "remove record %d", i)
		require.LessOrEqual(t, newDigests(b, a), 3, "insert record %d", i)
	}
	// Through Build: a path and its observation come and go together.
	for range 10 {
		recs := randomCatalog(t, rng, 20+rng.IntN(700), 1+rng.IntN(10), 200)
		source := ""
		for _, r := range recs {
			if r.Kind() == catalog.KindSource {
				source = r.Key().SourceRef
			}
		}
		path := fmt.Sprintf("navigation.added.%x", rng.Uint32())
		more := []*catalog.Record{mkPath(t, path, ""), mkObs(t, path, source)}
		a, b := buildCDC(t, recs), buildCDC(t, append(slices.Clone(recs), more...))
		require.LessOrEqual(t, newDigests(a, b), 6)
		require.LessOrEqual(t, newDigests(b, a), 6)
	}
}

// TestContentDefinedDeterministic builds the same records in other
// orders, on one core and on every core, and cuts them sequentially: the
// bytes must be the same.
func TestContentDefinedDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 4))
	recs := randomCatalog(t, rng, 900, 7, 2500)
	want := buildCDC(t, recs)
	checkContentDefined(t, want, recs)
	same := func(s *Snapshot) {
		require.Equal(t, want.Manifest.Canonical(), s.Manifest.Canonical())
		require.Len(t, s.Chunks, len(want.Chunks))
		for k := range s.Chunks {
			require.Equal(t, want.Chunks[k].Canonical(), s.Chunks[k].Canonical())
		}
	}
	same(buildCDC(t, shuffled(recs, 1)))
	prev := runtime.GOMAXPROCS(1)
	same(buildCDC(t, shuffled(recs, 2)))
	runtime.GOMAXPROCS(prev)

	s := sortForBuild(recs)
	s.bounds = boundaries(s.keys)
	h := newChunkHeader(testVessel, testSnapshot, 7)
	seq, err := cutFrom(h, &s, DefaultWrapper{}, nil)
	require.NoError(t, err)
	same(&Snapshot{Manifest: want.Manifest, Chunks: seq})
}

// TestContentDefinedFallsBack holds the content-defined rule to the
// greedy rule's limits: where the records need more than 256 chunks
// under the content-defined rule, the cut is the greedy one, and where the
// greedy rule fails, so does Build, the same way.
func TestContentDefinedFallsBack(t *testing.T) {
	same := func(t *testing.T, recs []*catalog.Record, opts ...Option) {
		g, gErr := Build(input(recs), opts...)
		c, cErr := Build(input(recs), append(opts, WithContentDefinedCuts())...)
		if gErr != nil {
			require.EqualError(t, cErr, gErr.Error())
			require.Nil(t, c)
			return
		}
		require.NoError(t, cErr)
		require.Equal(t, string(g.Manifest.Canonical()), string(c.Manifest.Canonical()))
	}
	t.Run("25600 records", func(t *testing.T) {
		recs := makeCatalog(t, 12799, 2, nil)
		same(t, recs)
		s := mustBuild(t, input(recs), WithContentDefinedCuts())
		require.Len(t, s.Chunks, sourcecatalog.MaxChunks)
	})
	t.Run("257 chunks", func(t *testing.T) {
		meta := metaJSON(strings.Repeat("z", 9000))
		same(t, makeCatalog(t, 257, 1, func(int) string { return meta }))
	})
	t.Run("limits push the content-defined cut past 256 chunks", func(t *testing.T) {
		// Paths of about 5.4 KB, three to a body: the greedy rule fills
		// 255 chunks, while every run of paths ends in a chunk of fewer.
		meta := metaJSON(strings.Repeat("z", 5300))
		recs := makeCatalog(t, 740, 1, func(int) string { return meta })
		s := sortForBuild(recs)
		s.bounds = boundaries(s.keys)
		require.False(t, tooManyRuns(s.bounds, len(recs)), "the runs alone must fit, for the cut to be tried")
		_, _, err := cutAndDigest(newChunkHeader(testVessel, testSnapshot, 7), &s, DefaultWrapper{})
		requireOne(t, err, at(sourcecatalog.ErrLimitExceeded, sourcecatalog.NoIndex, sourcecatalog.NoIndex, ""))
		g := mustBuild(t, input(recs))
		require.LessOrEqual(t, len(g.Chunks), sourcecatalog.MaxChunks)
		same(t, recs)
	})
	t.Run("a record too large", func(t *testing.T) {
		meta := metaJSON(strings.Repeat("z", 17000))
		same(t, makeCatalog(t, 3, 1, func(i int) string { return map[bool]string{true: meta}[i == 1] }))
	})
	t.Run("one record a request", func(t *testing.T) {
		h := newChunkHeader(testVessel, testSnapshot, 7)
		for _, n := range []int{127, 128} { // 2n+1 records, one chunk each
			want := makeCatalog(t, n, 1, nil)
			capacity := 0
			for _, r := range want {
				capacity = max(capacity, len(newChunk(h, 255, []*catalog.Record{r}).Canonical()))
			}
			w := overheadWrapper{overhead: sourcecatalog.MaxRequest - capacity, chunksOnly: true}
			same(t, want, WithWrapper(w))
		}
	})
	t.Run("bounds", func(t *testing.T) {
		for _, n := range []int{1, 2048, 2049, 4096, 4097, 8192, 8193, 25600} {
			assert.Equal(t, refWindow(n), window(n), "%d records", n)
		}
	})
}
