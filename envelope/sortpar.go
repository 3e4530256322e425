package envelope

import (
	"runtime"
	"sync"

	"github.com/yachtmemory/sourcecatalog/catalog"
)

// parallelRun is the run length from which a radix pass hands its buckets
// to other goroutines, and a loop over records splits across them.
const parallelRun = 4096

// partsFor returns how many parts a loop over n records splits into: one
// per GOMAXPROCS, each at least parallelRun long.
func partsFor(n int) int {
	return max(1, min(runtime.GOMAXPROCS(0), n/parallelRun))
}

// inParallel calls f(p, lo, hi) for each part p of [0, n) split into parts,
// each on a goroutine of its own, and returns when every call has.
func inParallel(n, parts int, f func(p, lo, hi int)) {
	var wg sync.WaitGroup
	wg.Add(parts - 1)
	for p := 1; p < parts; p++ {
		go func() {
			defer wg.Done()
			f(p, p*n/parts, (p+1)*n/parts)
		}()
	}
	f(0, 0, n/parts)
	wg.Wait()
}

// newKeySorter returns the sorter of records, its entries in input order
// with their first words loaded. It reads the records on up to GOMAXPROCS
// goroutines.
func newKeySorter(in []*catalog.Record, sc *buildScratch) *keySorter {
	s := &keySorter{
		in:      in,
		entries: sc.entries,
		scratch: sc.tmp,
		workers: make(chan struct{}, runtime.GOMAXPROCS(0)-1),
	}
	inParallel(len(in), partsFor(len(in)), func(_, lo, hi int) { s.loadKeys(in, lo, hi) })
	return s
}

// loadKeys loads the first words of the entries of in[lo:hi].
func (s *keySorter) loadKeys(in []*catalog.Record, lo, hi int) {
	for i := lo; i < hi; i++ {
		w, n := s.word(int32(i), 0, 0)
		s.entries[i] = sortEntry{w: w, n: n, i: int32(i)}
	}
}

// radixParallel is radix for a long run: its buckets are sorted on other
// goroutines while workers are free.
func (s *keySorter) radixParallel(es, tmp []sortEntry, comp, depth int) {
	count, ok := s.scatter(es, tmp)
	if !ok {
		s.ends(es, tmp, comp, depth)
		return
	}
	var wg sync.WaitGroup
	for start, b := int32(0), 0; b < 256; b++ {
		end := start + count[b]
		bucket, btmp := es[start:end], tmp[start:end]
		switch {
		case len(bucket) < 2:
		case len(bucket) >= parallelRun && s.acquire():
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer s.release()
				s.radix(bucket, btmp, comp, depth)
			}()
		default:
			s.radix(bucket, btmp, comp, depth)
		}
		start = end
	}
	wg.Wait()
}

// acquire takes a worker token if one is free.
func (s *keySorter) acquire() bool {
	select {
	case s.workers <- struct{}{}:
		return true
	default:
		return false
	}
}

func (s *keySorter) release() { <-s.workers }
