package envelope

import (
	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/catalog"
)

// Internals that BenchmarkBuildStages times stage by stage.

var SortRecords = sortRecords

// KeySort returns a function that sorts the keys of in again, with its
// entries back in input order: the radix sort alone.
func KeySort(in []*catalog.Record) func() {
	s := newKeySorter(in, getScratch(len(in)))
	return func() {
		for i := range s.entries {
			s.entries[i].i = int32(i)
		}
		s.sort(s.entries, s.scratch, 0, 0)
	}
}

// KeyArena returns a function that loads the first words of the sort
// entries of in.
func KeyArena(in []*catalog.Record) func() {
	return func() {
		sc := getScratch(len(in))
		newKeySorter(in, sc)
		sc.put()
	}
}

// CutAndDigest returns a function that cuts and hashes in, sorted once.
func CutAndDigest(in []*catalog.Record) func() {
	s := sortForBuild(in)
	h := newChunkHeader(uuid.New(), uuid.New(), 1)
	return func() { cutAndDigest(h, &s, DefaultWrapper{}) }
}

// CutSequential returns CutAndDigest's function done sequentially, as
// Build did before.
func CutSequential(in []*catalog.Record) func() {
	s := sortForBuild(in)
	h := newChunkHeader(uuid.New(), uuid.New(), 1)
	return func() {
		c, _ := cutFrom(h, &s, DefaultWrapper{}, nil)
		documentDigest(c)
	}
}
