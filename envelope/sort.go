package envelope

import (
	"cmp"
	"math/bits"
	"slices"
	"strings"

	"github.com/yachtmemory/sourcecatalog/catalog"
)

// sortRecords returns the records in canonical order (catalog.Compare) and,
// for each, its position in the input. Records with the same identity keep
// their input order, so the later of two duplicates is the one reported.
func sortRecords(in []*catalog.Record) ([]*catalog.Record, []int32) {
	s := sortForBuild(in)
	return s.records, s.order
}

// sortedRecords are a Build's records in canonical order.
type sortedRecords struct {
	records []*catalog.Record
	order   []int32  // order[k] is the input position of records[k]
	canon   [][]byte // canon[k] is records[k].Canonical()
	// keys[k] is the key of records[k]: one contiguous array the
	// integrity check reads instead of the records.
	keys []catalog.Key
	// bounds, when not empty, are the positions of the records that open
	// a run under the content-defined rule (boundaries): no chunk spans
	// one. With none, the chunks are cut greedily over all the records.
	bounds []int

	// canon and keys belong to scratch until release.
	scratch *buildScratch
}

// check checks the records' integrity over their keys (catalog.CheckKeys),
// reporting records by sorted position.
func (s *sortedRecords) check() error { return catalog.CheckKeys(s.keys) }

// release hands canon and keys back for another Build to reuse, and
// forgets them. The caller must not use them afterwards, nor any other
// reference to them.
func (s *sortedRecords) release() {
	if s.scratch != nil {
		s.scratch.put()
	}
	s.canon, s.keys, s.scratch = nil, nil, nil
}

// sortForBuild sorts records as sortRecords does and gathers their
// canonical bytes and keys, so that cutting and assembling chunks, and the
// integrity check, read contiguous arrays instead of every record. Those
// two arrays come from the scratch pool: the caller hands them back with
// release once done, or leaves them to the garbage collector.
//
// The sort reads the records' keys where they are: each record's identity
// sits in its first cache line (catalog.Record), and the strings' bytes
// where the record keeps them. It sorts 16-byte entries holding eight key
// bytes at a time (a multikey MSD radix sort), so records whose paths share
// long prefixes cost a few passes over contiguous memory instead of a
// comparison per pair that chases two scattered records; a record is read
// again only for the next eight bytes of a run that ties on a word. (A
// copy of every key would be read no faster, and writing it costs as much
// as the reads it saves.) Loading the first words and the radix buckets of
// long runs are split across up to GOMAXPROCS goroutines; the result does
// not depend on how. The gather that follows copies each key in canonical
// order for the integrity check (check) from the cache line it reads the
// canonical bytes from.
func sortForBuild(in []*catalog.Record) sortedRecords {
	sc := getScratch(len(in))
	out := sortedRecords{
		records: make([]*catalog.Record, len(in)),
		order:   make([]int32, len(in)),
		canon:   sc.canon,
		keys:    sc.sorted,
		scratch: sc,
	}
	if catalog.IsSorted(in) {
		copy(out.records, in)
		for k, r := range in {
			out.order[k], out.canon[k], out.keys[k] = int32(k), r.Canonical(), r.Key()
		}
		return out
	}
	s := newKeySorter(in, sc)
	s.radix(s.entries, s.scratch, 0, 0)
	inParallel(len(in), partsFor(len(in)), func(_, lo, hi int) {
		for k := lo; k < hi; k++ {
			i := s.entries[k].i
			out.records[k], out.order[k], out.canon[k], out.keys[k] = in[i], i, in[i].Canonical(), in[i].Key()
		}
	})
	return out
}

// A keySorter sorts records by their keys, read from the records: in[i] is
// record i. A key has two components: its kind byte followed by its path,
// and its source_ref. Comparing the components in turn, bytewise, then the
// input position, is exactly catalog.Compare with input order as the
// tie-break: the kind byte orders the kinds as catalog.Kind does, and a
// fixed-length prefix keeps bytewise order. The kind byte is not stored:
// word and compareFrom read it from the record.
type keySorter struct {
	in      []*catalog.Record
	entries []sortEntry
	scratch []sortEntry   // as long as entries, for the radix passes
	workers chan struct{} // a token for each goroutine radixParallel may add
}

// A sortEntry is one record during the sort: eight bytes of one key
// component from some depth on, big-endian and zero-padded, so that
// comparing w compares those bytes.
type sortEntry struct {
	w uint64
	n int32 // the component's bytes left from the depth, capped at 9 ("more than eight")
	i int32 // input position
}

const more = 9 // sortEntry.n of a component that goes on past the word

// word returns word(component comp of record i's key, depth).
func (s *keySorter) word(i int32, comp, depth int) (uint64, int32) {
	r := s.in[i]
	switch {
	case comp == 1:
		return word(r.SourceRef(), depth)
	case depth > 0:
		return word(r.PathName(), depth-1)
	}
	w, n := word(r.PathName(), 0)
	return uint64(r.Kind())<<56 | w>>8, min(n+1, more)
}

// compareFrom compares component comp of records a and b from depth on.
func (s *keySorter) compareFrom(a, b int32, comp, depth int) int {
	ra, rb := s.in[a], s.in[b]
	if comp == 1 {
		return strings.Compare(ra.SourceRef()[depth:], rb.SourceRef()[depth:])
	}
	if depth == 0 {
		if ra.Kind() != rb.Kind() {
			return cmp.Compare(ra.Kind(), rb.Kind())
		}
		depth = 1
	}
	return strings.Compare(ra.PathName()[depth-1:], rb.PathName()[depth-1:])
}

// smallRun is the run length below which entries are sorted by insertion
// instead of by another radix pass.
const smallRun = 16

// sort orders es, whose keys agree on every component before comp and on
// the first depth bytes of component comp. tmp is scratch space as long as
// es.
func (s *keySorter) sort(es, tmp []sortEntry, comp, depth int) {
	for k := range es {
		es[k].w, es[k].n = s.word(es[k].i, comp, depth)
	}
	s.radix(es, tmp, comp, depth)
}

// radix orders es, whose words at depth are loaded, by an MSD radix sort on
// the words' bytes. It skips the bytes that every entry shares, so a long
// common prefix costs one pass per word, not one per byte. Entries with
// equal words go on to the next word or, when their component ended within
// this one, to the next component.
func (s *keySorter) radix(es, tmp []sortEntry, comp, depth int) {
	switch {
	case len(es) < smallRun:
		s.insertion(es, comp, depth)
		return
	case len(es) >= parallelRun:
		s.radixParallel(es, tmp, comp, depth)
		return
	}
	count, ok := s.scatter(es, tmp)
	if !ok {
		s.ends(es, tmp, comp, depth)
		return
	}
	for start, b := int32(0), 0; b < 256; b++ {
		end := start + count[b]
		if end-start > 1 {
			s.radix(es[start:end], tmp[start:end], comp, depth)
		}
		start = end
	}
}

// scatter orders es by the first byte in which their words differ, through
// tmp, and returns how many entries have each value of that byte. It
// returns false, leaving es alone, when every word is the same.
func (s *keySorter) scatter(es, tmp []sortEntry) (count [256]int32, ok bool) {
	var diff uint64
	for _, e := range es {
		diff |= e.w ^ es[0].w
	}
	if diff == 0 {
		return count, false
	}
	shift := (63 - bits.LeadingZeros64(diff)) &^ 7
	for _, e := range es {
		count[byte(e.w>>shift)]++
	}
	var at [256]int32
	for b, sum := 0, int32(0); b < 256; b++ {
		at[b], sum = sum, sum+count[b]
	}
	for _, e := range es {
		b := byte(e.w >> shift)
		tmp[at[b]] = e
		at[b]++
	}
	copy(es, tmp)
	return count, true
}

// ends orders es, whose words are equal, by how many bytes their component
// has left: one that ended within the word comes first, and entries ending
// together have equal components.
func (s *keySorter) ends(es, tmp []sortEntry, comp, depth int) {
	if !sameEnds(es) {
		slices.SortFunc(es, func(a, b sortEntry) int { return int(a.n - b.n) })
	}
	for start := 0; start < len(es); {
		end := start + 1
		for end < len(es) && es[end].n == es[start].n {
			end++
		}
		if end-start > 1 {
			if es[start].n == more {
				s.sort(es[start:end], tmp[start:end], comp, depth+8)
			} else {
				s.tie(es[start:end], tmp[start:end], comp)
			}
		}
		start = end
	}
}

// sameEnds reports whether the components of es have equally many bytes
// left, as those sharing a long prefix do.
func sameEnds(es []sortEntry) bool {
	for _, e := range es {
		if e.n != es[0].n {
			return false
		}
	}
	return true
}

// insertion orders a short es, whose words are loaded at depth, by
// insertion: words first, the keys' strings only for entries whose words
// tie.
func (s *keySorter) insertion(es []sortEntry, comp, depth int) {
	for k := 1; k < len(es); k++ {
		for j := k; j > 0 && s.less(es[j], es[j-1], comp, depth); j-- {
			es[j], es[j-1] = es[j-1], es[j]
		}
	}
}

// less reports whether a sorts before b, whose words are loaded at depth:
// by their words, then as compare does.
func (s *keySorter) less(a, b sortEntry, comp, depth int) bool {
	if a.w != b.w {
		return a.w < b.w
	}
	if a.n != b.n {
		return a.n < b.n
	}
	if a.n == more {
		return s.compare(a.i, b.i, comp, depth+8) < 0
	}
	return s.compare(a.i, b.i, comp+1, 0) < 0
}

// tie orders es, whose keys agree on every component up to comp.
func (s *keySorter) tie(es, tmp []sortEntry, comp int) {
	if comp == 0 {
		s.sort(es, tmp, 1, 0)
		return
	}
	slices.SortFunc(es, func(a, b sortEntry) int { return cmp.Compare(a.i, b.i) })
}

// compare compares records a and b, whose keys agree on every component
// before comp and on the first depth bytes of component comp.
func (s *keySorter) compare(a, b int32, comp, depth int) int {
	for ; comp < 2; comp, depth = comp+1, 0 {
		if c := s.compareFrom(a, b, comp, depth); c != 0 {
			return c
		}
	}
	return cmp.Compare(a, b)
}

// word returns the eight bytes of k from depth on, big-endian and padded
// with zeros, and how many bytes k has from depth on, capped at more.
func word(k string, depth int) (uint64, int32) {
	rest := k[min(depth, len(k)):]
	if len(rest) >= 8 {
		n := int32(more)
		if len(rest) == 8 {
			n = 8
		}
		return uint64(rest[0])<<56 | uint64(rest[1])<<48 | uint64(rest[2])<<40 | uint64(rest[3])<<32 |
			uint64(rest[4])<<24 | uint64(rest[5])<<16 | uint64(rest[6])<<8 | uint64(rest[7]), n
	}
	var w uint64
	for k, c := range []byte(rest) {
		w |= uint64(c) << (56 - 8*k)
	}
	return w, int32(len(rest))
}
