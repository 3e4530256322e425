package envelope

import (
	"bytes"
	"crypto/sha256"

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

// window returns the radius of the window in which a record's key digest
// must be the least to open a run, for a snapshot of n records (SPEC.md
// §7.2): 6 up to 2,048 records, 12 up to 4,096, 24 up to 8,192 and 48
// above. Runs then average about 2·window+1 records, which keeps the
// expected chunk count under about 160 in every bucket below the last.
func window(n int) int {
	for _, b := range windowBuckets {
		if n <= b.records {
			return b.window
		}
	}
	return 48
}

// windowBuckets are window's buckets, in increasing order.
var windowBuckets = []struct{ records, window int }{{2048, 6}, {4096, 12}, {8192, 24}}

// boundaries returns the positions, in 1 to len(keys)-1 and increasing, of
// the records that open a run under the content-defined rule (SPEC.md
// §7.2): a record whose kind differs from the record before it, or whose
// key digest is less than that of every other record of its kind within
// window(len(keys)) positions. The keys are hashed on up to GOMAXPROCS
// goroutines.
func boundaries(keys []catalog.Key) []int {
	digests := make([][sha256.Size]byte, len(keys))
	inParallel(len(keys), partsFor(len(keys)), func(_, lo, hi int) {
		var buf []byte
		for k := lo; k < hi; k++ {
			buf = appendKeyText(buf[:0], keys[k])
			digests[k] = sha256.Sum256(buf)
		}
	})
	w := window(len(keys))
	var out []int
	first := 0 // the first record of the kind of record k
	for k := 1; k < len(keys); k++ {
		if keys[k].Kind != keys[k-1].Kind {
			first = k
			out = append(out, k)
			continue
		}
		if leastInWindow(digests, keys, k, first, w) {
			out = append(out, k)
		}
	}
	return out
}

// leastInWindow reports whether digests[k] is less than the digest of every
// other record of its kind within w positions, the first of that kind
// being at first.
func leastInWindow(digests [][sha256.Size]byte, keys []catalog.Key, k, first, w int) bool {
	for j := k - 1; j >= max(first, k-w); j-- {
		if bytes.Compare(digests[j][:], digests[k][:]) <= 0 {
			return false
		}
	}
	for j := k + 1; j <= k+w && j < len(keys) && keys[j].Kind == keys[k].Kind; j++ {
		if bytes.Compare(digests[j][:], digests[k][:]) <= 0 {
			return false
		}
	}
	return true
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
