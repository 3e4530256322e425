package envelope

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/catalog"
)

// sortInputs returns inputs for the builder's sort, large enough that the
// radix passes, not only the insertion sort, decide their order.
func sortInputs(t *testing.T) map[string][]*catalog.Record {
	t.Helper()
	rng := rand.New(rand.NewPCG(11, 13))
	// Names from a small alphabet with one- to four-byte UTF-8 and the
	// lowest byte an identifier may hold, over prefixes whose lengths
	// straddle the eight-byte words: ties, prefixes of other keys and keys
	// ending exactly at a word boundary are common.
	prefixes := []string{"", "a", "abcdefg", "abcdefgh", "abcdefghi", "electrical.batteries.", "electrical.batteries.house"}
	alphabet := []string{"a", "b", " ", "~", "é", "\u2028", "😀"}
	name := func(long bool) string {
		var b strings.Builder
		if long || rng.IntN(4) > 0 {
			b.WriteString(prefixes[rng.IntN(len(prefixes))])
		}
		for range 1 + rng.IntN(4) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	random := func(n int) []*catalog.Record {
		out := make([]*catalog.Record, 0, n)
		for range n {
			switch rng.IntN(3) {
			case 0:
				out = append(out, mkPath(t, name(true), ""))
			case 1:
				out = append(out, mkSource(t, name(false)))
			default:
				out = append(out, mkObs(t, name(true), name(false)))
			}
		}
		return out
	}
	equal := make([]*catalog.Record, 100)
	for i := range equal {
		equal[i] = mkObs(t, "electrical.batteries.house1.voltage", "can0.1")
	}
	sharedPath := make([]*catalog.Record, 0, 200) // one path, many sources
	for i := range 200 {
		sharedPath = append(sharedPath, mkObs(t, "electrical.batteries.house1.voltage", fmt.Sprintf("n2k.%03d", 199-i)))
	}
	cases := map[string][]*catalog.Record{
		"empty":       nil,
		"one":         {mkSource(t, "a")},
		"all equal":   equal,
		"shared path": shuffled(sharedPath, 1),
		"sorted":      makeCatalog(t, 300, 20, nil),
		"shuffled":    shuffled(makeCatalog(t, 300, 20, nil), 2),
	}
	reversed := makeCatalog(t, 300, 20, nil)
	slices.Reverse(reversed)
	cases["reversed"] = reversed
	for i := range 60 {
		cases[fmt.Sprintf("random %d", i)] = random(rng.IntN(1500))
	}
	// Long enough to split across goroutines (parallelRun).
	cases["random, large"] = random(5*parallelRun + 7)
	cases["scaled, shuffled"] = shuffled(makeCatalog(t, 3*parallelRun, 100, nil), 3)
	return cases
}

// TestSortForBuildMatchesCompare holds the builder's radix sort to
// catalog.Compare with input order as the tie-break, and its gathered
// canonical bytes to the records'.
func TestSortForBuildMatchesCompare(t *testing.T) {
	inputs := sortInputs(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 4} {
		runtime.GOMAXPROCS(procs)
		for name, in := range inputs {
			checkSortForBuild(t, fmt.Sprintf("%s on %d threads", name, procs), in)
		}
	}
}

func checkSortForBuild(t *testing.T, name string, in []*catalog.Record) {
	t.Helper()
	orig := slices.Clone(in)
	s := sortForBuild(in)
	require.Equal(t, orig, in, "%s: input modified", name)
	require.Equal(t, referenceOrder(in), s.order, name)
	require.Len(t, s.records, len(in), name)
	require.Len(t, s.canon, len(in), name)
	require.Len(t, s.keys, len(in), name)
	for k, i := range s.order {
		if s.records[k] != in[i] || &s.canon[k][0] != &in[i].Canonical()[0] || s.keys[k] != in[i].Key() {
			t.Fatalf("%s: position %d does not hold input record %d, its canonical bytes and its key", name, k, i)
		}
	}
	// The next input, of another length, sorts with these arrays again.
	s.release()
}

// TestScratchReleased: arrays handed back to the pool refer to no record,
// so the pool keeps none of a finished Build's records alive.
func TestScratchReleased(t *testing.T) {
	s := sortForBuild(shuffled(makeCatalog(t, 300, 20, nil), 4))
	sc := s.scratch
	s.release()
	require.Nil(t, s.keys)
	for _, keys := range [][]catalog.Key{sc.sorted} {
		for _, k := range keys {
			require.Zero(t, k)
		}
	}
	for _, b := range sc.canon {
		require.Nil(t, b)
	}
}

// referenceOrder and the fixtures of TestSortRecordsMatchesCompare check
// sortRecords on the shapes of real catalogs; this checks that its word
// loader orders like bytes.Compare.
func TestWordOrdersLikeBytes(t *testing.T) {
	keys := []string{"", "\x00", "\x00\x00", "a", "a\x00", "ab", "abcdefg", "abcdefgh", "abcdefgh\x00", "abcdefghi", "abcdefgi", "\xff", "\xff\xff\xff\xff\xff\xff\xff\xff\xff"}
	for _, a := range keys {
		for _, b := range keys {
			wa, na := word(a, 0)
			wb, nb := word(b, 0)
			got := compareWords(sortEntry{w: wa, n: na}, sortEntry{w: wb, n: nb})
			want := strings.Compare(a, b)
			if len(a) > 8 && len(b) > 8 && a[:8] == b[:8] {
				want = 0 // decided by the next word
			}
			require.Equal(t, want, max(-1, min(1, got)), "%q vs %q", a, b)
		}
	}
}

// compareWords orders entries by their words and, for equal words, by the
// bytes left (a component that ends first sorts first). The sort itself
// uses radix passes; the tests use this to state the order of one word.
func compareWords(a, b sortEntry) int {
	if a.w != b.w {
		if a.w < b.w {
			return -1
		}
		return 1
	}
	return int(a.n - b.n)
}

func TestAssembleChunkMatchesNewChunk(t *testing.T) {
	recs := makeCatalog(t, 200, 7, func(i int) string { return metaJSON(strings.Repeat("\"\\x", i%5)) })
	s := sortForBuild(shuffled(recs, 5))
	h := newChunkHeader(testVessel, testSnapshot, 9)
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		start := rng.IntN(len(recs) + 1)
		end := start + rng.IntN(min(len(recs)-start, 100)+1)
		index := rng.IntN(sourcecatalog.MaxChunks)
		got, want := assembleChunk(h, index, &s, start, end), newChunk(h, index, s.records[start:end])
		require.Equal(t, *want, *got, "[%d:%d]", start, end)
		// chunkLen sized the bytes exactly, as the arena of planned chunks needs.
		require.Equal(t, len(got.canon), cap(got.canon), "[%d:%d] chunk %d", start, end, index)
	}
}

// keyWrapper refuses the chunks whose entity key ends in one of refused, and
// measures the rest with DefaultWrapper: the sequential chunker then cuts
// those chunks shorter, or fails.
type keyWrapper struct{ refused []string }

func (w keyWrapper) WrappedSize(typ, key string, payload []byte) int {
	for _, r := range w.refused {
		if strings.HasSuffix(key, r) && len(payload) > 1500 {
			return sourcecatalog.MaxRequest + 1
		}
	}
	return DefaultWrapper{}.WrappedSize(typ, key, payload)
}

// TestCutAndDigestMatchesSequential holds the parallel chunker to the
// sequential one: the same chunks, the same document hash, the same error,
// whether the plan holds, breaks at some chunk, or hits a limit.
func TestCutAndDigestMatchesSequential(t *testing.T) {
	big := makeCatalog(t, 3000, 40, func(i int) string { return metaJSON(strings.Repeat("x\"", i%40)) })
	huge := makeCatalog(t, 12000, 100, nil)
	tooLarge := slices.Clone(big[:10])
	tooLarge[4] = escapeHeavyRecord(t, pathName(4), sourcecatalog.MaxChunkBody)
	cases := []struct {
		name string
		recs []*catalog.Record
		w    Wrapper
	}{
		{"empty", nil, DefaultWrapper{}},
		{"default", big, DefaultWrapper{}},
		{"every chunk wrapped", big, overheadWrapper{overhead: sourcecatalog.MaxRequest - 3000}},
		{"the plan breaks at chunk 3", big, keyWrapper{[]string{"/3"}}},
		{"the plan breaks at chunks 0 and 7", big, keyWrapper{[]string{"/0", "/7"}}},
		{"an empty chunk does not fit", nil, entityWrapper{typ: sourcecatalog.ChunkEntityType, size: sourcecatalog.MaxRequest + 1}},
		{"no chunk fits", big, entityWrapper{typ: sourcecatalog.ChunkEntityType, size: sourcecatalog.MaxRequest + 1}},
		{"more than 256 chunks", huge, overheadWrapper{overhead: sourcecatalog.MaxRequest - 9000}},
		{"24,100 records", huge, DefaultWrapper{}},
		{"a record too large for a body", tooLarge, DefaultWrapper{}},
	}
	h := newChunkHeader(testVessel, testSnapshot, 3)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := sortForBuild(tc.recs)
			want, wantErr := cutFrom(h, &s, tc.w, nil)
			got, doc, err := cutAndDigest(h, &s, tc.w)
			if wantErr != nil {
				require.EqualError(t, err, wantErr.Error())
				require.Nil(t, got)
				return
			}
			require.NoError(t, err)
			require.Equal(t, documentDigest(want), doc)
			require.Equal(t, BodyDigest(s.records), doc)
			require.Len(t, got, len(want))
			for k := range want {
				require.Equal(t, *want[k], *got[k], "chunk %d", k)
				require.Equal(t, len(got[k].canon), cap(got[k].canon), "chunk %d fills its part of the arena", k)
			}
		})
	}
}

// TestBuildSameBytesOnAnyCores builds one snapshot on one to sixteen
// threads: the bytes must not depend on the scheduling.
func TestBuildSameBytesOnAnyCores(t *testing.T) {
	in := input(shuffled(makeCatalog(t, 4000, 60, func(i int) string { return metaJSON(fmt.Sprint(i)) }), 8))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var first *Snapshot
	for _, procs := range []int{1, 2, 3, 16} {
		runtime.GOMAXPROCS(procs)
		for range 3 {
			s := mustBuild(t, in)
			if first == nil {
				first = s
				continue
			}
			require.Equal(t, first.Manifest.Canonical(), s.Manifest.Canonical(), "GOMAXPROCS %d", procs)
			require.Len(t, s.Chunks, len(first.Chunks))
			for k, c := range s.Chunks {
				require.Equal(t, first.Chunks[k].Canonical(), c.Canonical(), "GOMAXPROCS %d, chunk %d", procs, k)
			}
		}
	}
	require.Equal(t, BodyDigest(allRecords(first)), first.Manifest.DocumentSHA256)
}

// TestBuildIntegrityBeforeLimits: the integrity check runs beside the
// chunking, but as before its verdict is the one reported when the records
// also break a chunking limit.
func TestBuildIntegrityBeforeLimits(t *testing.T) {
	big := escapeHeavyRecord(t, pathName(0), sourcecatalog.MaxChunkBody) // too large for a body
	p1 := mkPath(t, pathName(1), "")                                     // has no observation
	in := []*catalog.Record{p1, mkSource(t, sourceRef(0)), big, mkObs(t, pathName(0), sourceRef(0))}
	s, err := Build(input(in))
	require.Nil(t, s)
	requireProblems(t, err, at(sourcecatalog.ErrIntegrity, sourcecatalog.NoIndex, 0, "path"))

	// Without the integrity problem, the limit is reported.
	s, err = Build(input(in[1:]))
	require.Nil(t, s)
	requireOne(t, err, at(sourcecatalog.ErrRecordTooLarge, sourcecatalog.NoIndex, 1, ""))
}

// TestFitsMatchesWrappedSize holds fits, which skips measuring a chunk
// under defaultWrappedBound, to DefaultWrapper's exact WrappedSize, on
// chunks from plain to made almost only of escapes and control characters
// (which canonical strings escape), from a few bytes to the body limit.
func TestFitsMatchesWrappedSize(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	pieces := []string{"x", `"`, `\`, "\x01", "\n", "é", "\u2028", "\x7f"}
	h := newChunkHeader(testVessel, testSnapshot, 1<<40)
	var bounded, measuredFit, refused int
	for n := range 800 {
		heavy := rng.IntN(2) == 0 // records made almost only of escapes
		body := rng.IntN(sourcecatalog.MaxChunkBody)
		if heavy {
			// Full bodies of escapes wrap to about the request limit:
			// the last few dozen bytes of a body decide.
			body = sourcecatalog.MaxChunkBody - rng.IntN(120)
		}
		var recs []*catalog.Record
		for size := len(bodyOpen) + len(bodyClose); ; {
			var r *catalog.Record
			if heavy {
				r = escapeHeavyRecord(t, pathName(len(recs)), max(200, min(200+rng.IntN(6000), body-size-1)))
			} else {
				var b strings.Builder
				for range rng.IntN(400) {
					b.WriteString(pieces[rng.IntN(len(pieces))])
				}
				r = mkPath(t, pathName(len(recs)), metaJSON(b.String()))
			}
			if size+len(r.Canonical())+1 > body && len(recs) > 0 {
				break
			}
			recs, size = append(recs, r), size+len(r.Canonical())+1
		}
		c := newChunk(h, n%sourcecatalog.MaxChunks, recs)
		key := ChunkKey(c.snapshotID, c.index)
		exact := DefaultWrapper{}.WrappedSize(sourcecatalog.ChunkEntityType, key, c.canon)
		bound := defaultWrappedBound(key, c.canon)
		// The bound counts every byte as escaped; exactly the quotation
		// marks and reverse solidi are, the text having no control byte.
		escaped := bytes.Count(c.canon, []byte(`"`)) + bytes.Count(c.canon, []byte(`\`))
		require.Equal(t, len(c.canon)-escaped, bound-exact, "chunk %d", n)
		require.Equal(t, exact <= sourcecatalog.MaxRequest, fits(DefaultWrapper{}, c), "chunk %d: %d bytes wrapped", n, exact)
		switch {
		case bound <= sourcecatalog.MaxRequest:
			bounded++
		case exact <= sourcecatalog.MaxRequest:
			measuredFit++
		default:
			refused++
		}
	}
	t.Logf("%d under the bound, %d measured and fitting, %d refused", bounded, measuredFit, refused)
	// Each way fits can answer must be common.
	require.Greater(t, bounded, 100)
	require.Greater(t, measuredFit, 50)
	require.Greater(t, refused, 50)
}
