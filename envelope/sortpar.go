package envelope

import (
	"runtime"
	"strings"
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
// with their first words loaded, and each record's canonical bytes. It
// reads the records on up to GOMAXPROCS goroutines.
func newKeySorter(in []*catalog.Record) (*keySorter, [][]byte) {
	s := &keySorter{
		in:      in,
		offs:    make([]uint32, len(in)+1),
		entries: make([]sortEntry, len(in)),
		scratch: make([]sortEntry, len(in)),
		workers: make(chan struct{}, runtime.GOMAXPROCS(0)-1),
	}
	canon := make([][]byte, len(in))
	arenas := make([]string, partsFor(len(in)))
	inParallel(len(in), len(arenas), func(p, lo, hi int) { arenas[p] = s.loadKeys(lo, hi, canon) })
	s.joinArenas(arenas)
	return s, canon
}

// loadKeys copies the keys of in[lo:hi] into an arena of their own, sets
// offs[lo+1:hi+1] relative to it, loads the entries' first words and
// gathers the records' canonical bytes.
func (s *keySorter) loadKeys(lo, hi int, canon [][]byte) string {
	var arena strings.Builder
	arena.Grow(48 * (hi - lo))
	for i := lo; i < hi; i++ {
		r := s.in[i]
		arena.WriteByte(byte(r.Kind()))
		arena.WriteString(r.PathName())
		s.offs[i+1] = uint32(arena.Len())
		canon[i] = r.Canonical()
	}
	keys := arena.String()
	start := 0
	for i := lo; i < hi; i++ {
		end := int(s.offs[i+1])
		w, n := word(keys[start:end], 0)
		s.entries[i] = sortEntry{w: w, n: n, i: int32(i)}
		start = end
	}
	return keys
}

// joinArenas makes the arenas of the parts of inParallel(len(s.in),
// len(arenas), ...) one, rebasing each part's offsets onto it.
func (s *keySorter) joinArenas(arenas []string) {
	if len(arenas) == 1 {
		s.arena = arenas[0]
		return
	}
	size := 0
	for _, a := range arenas {
		size += len(a)
	}
	var all strings.Builder
	all.Grow(size)
	n, parts := len(s.in), len(arenas)
	for p, a := range arenas {
		base := uint32(all.Len())
		for i := p*n/parts + 1; i <= (p+1)*n/parts; i++ {
			s.offs[i] += base
		}
		all.WriteString(a)
	}
	s.arena = all.String()
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
