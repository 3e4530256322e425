package envelope

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
)

// WithContentDefinedCuts makes Build cut chunks by the content-defined rule
// of SPEC.md §7.2 instead of the greedy one: chunk boundaries fall where
// the records' keys say, so that a record whose content changes changes
// only the chunk that holds it, and a record added or removed only the
// chunks beside it. A sender that sends unchanged chunks by reference
// (§6.6) then resends a few chunks of a changed snapshot instead of most
// of them. Receivers verify any cut; a snapshot the greedy rule fits in 256
// chunks still fits, since Build falls back to the greedy rule when the
// content-defined one cannot cut the records within the limits.
func WithContentDefinedCuts() Option { return func(c *config) { c.contentDefined = true } }

// expectedRun returns the expected number of records between two hash
// boundaries for a snapshot of n records (SPEC.md §7.2): 8 up to 1,536
// records, 16 up to 3,072, 32 up to 6,144, 64 up to 9,216 and 128 above,
// so that the expected chunk count stays under about 200 in every bucket.
func expectedRun(n int) int {
	for _, b := range runBuckets {
		if n <= b.records {
			return b.run
		}
	}
	return 128
}

// runBuckets are expectedRun's buckets, in increasing order.
var runBuckets = []struct{ records, run int }{{1536, 8}, {3072, 16}, {6144, 32}, {9216, 64}}

// boundaries returns the positions, in 1 to len(keys)-1 and increasing, of
// the records that open a run under the content-defined rule (SPEC.md
// §7.2): a record whose kind differs from the record before it, or whose
// key hash has its first log2(expectedRun) bits zero. The keys are hashed
// on up to GOMAXPROCS goroutines.
func boundaries(keys []catalog.Key) []int {
	e := uint32(expectedRun(len(keys)))
	threshold := uint32(1<<32/uint64(e) - 1) // hash < 2^32/e
	opens := make([]bool, len(keys))
	inParallel(len(keys), partsFor(len(keys)), func(_, lo, hi int) {
		var buf []byte
		for k := max(lo, 1); k < hi; k++ {
			if keys[k].Kind != keys[k-1].Kind {
				opens[k] = true
				continue
			}
			buf = appendKeyText(buf[:0], keys[k])
			sum := sha256.Sum256(buf)
			opens[k] = binary.BigEndian.Uint32(sum[:4]) <= threshold
		}
	})
	var out []int
	for k, o := range opens {
		if o {
			out = append(out, k)
		}
	}
	return out
}

// tooManyRuns reports whether the runs that bounds make of n records need
// more than sourcecatalog.MaxChunks chunks by the record limit alone, so
// that the content-defined cut cannot fit and need not be tried.
func tooManyRuns(bounds []int, n int) bool {
	chunks, start := 0, 0
	for _, b := range append(bounds, n) {
		chunks += (b - start + sourcecatalog.MaxRecordsPerChunk - 1) / sourcecatalog.MaxRecordsPerChunk
		start = b
	}
	return chunks > sourcecatalog.MaxChunks
}

// appendKeyText appends the key text of a record (SPEC.md §7.2): the
// canonical JSON array of its kind and its identifiers,
// ["path",P], ["source",S] or ["observation",P,S].
func appendKeyText(dst []byte, k catalog.Key) []byte {
	dst = append(dst, `["`...)
	dst = append(dst, k.Kind.String()...)
	dst = append(dst, '"')
	if k.Kind != catalog.KindSource {
		dst = append(dst, ',')
		dst, _ = canonical.AppendString(dst, k.Path)
	}
	if k.Kind != catalog.KindPath {
		dst = append(dst, ',')
		dst, _ = canonical.AppendString(dst, k.SourceRef)
	}
	return append(dst, ']')
}

// nextBoundary returns the first of s.bounds above start, or the number of
// records when none is: where the run that holds record start ends.
func (s *sortedRecords) nextBoundary(start int) int {
	lo, hi := 0, len(s.bounds)
	for lo < hi {
		mid := (lo + hi) / 2
		if s.bounds[mid] <= start {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(s.bounds) {
		return s.bounds[lo]
	}
	return len(s.records)
}

// cutContentDefined cuts and hashes the records by the content-defined
// rule, and by the greedy rule when that one fails (SPEC.md §7.2): the
// records need more than sourcecatalog.MaxChunks chunks, or one cannot
// fit alone at the index it would get.
func cutContentDefined(h *chunkHeader, s *sortedRecords, w Wrapper) ([]*Chunk, canonical.Digest, error) {
	if bounds := boundaries(s.keys); !tooManyRuns(bounds, len(s.records)) {
		s.bounds = bounds
		chunks, doc, err := cutAndDigest(h, s, w)
		s.bounds = nil
		if err == nil {
			return chunks, doc, nil
		}
	}
	return cutAndDigest(h, s, w)
}
