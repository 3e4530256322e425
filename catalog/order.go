package catalog

import (
	"errors"
	"slices"
	"strings"

	"github.com/yachtmemory/sourcecatalog"
)

// A Key is the identity of a record: its kind, and its path, source_ref or
// both. Two records of a snapshot must not share a key.
type Key struct {
	Kind      Kind
	Path      string // path and observation records
	SourceRef string // source and observation records
}

// Key returns the record's identity.
func (r *Record) Key() Key { return Key{Kind: r.kind, Path: r.path, SourceRef: r.sourceRef} }

// Compare orders keys canonically (SPEC.md §5.1): paths by path, then
// sources by source_ref, then observations by path and source_ref, all
// bytewise. It returns 0 exactly when the keys are equal.
func (k Key) Compare(o Key) int {
	if k.Kind != o.Kind {
		return int(k.Kind) - int(o.Kind)
	}
	if c := strings.Compare(k.Path, o.Path); c != 0 {
		return c
	}
	return strings.Compare(k.SourceRef, o.SourceRef)
}

// Compare orders records canonically by their keys (see Key.Compare). It
// returns 0 exactly when the two records have the same identity.
func Compare(a, b *Record) int { return a.Key().Compare(b.Key()) }

// Sort puts records in canonical global order, in place.
func Sort(records []*Record) { slices.SortFunc(records, Compare) }

// IsSorted reports whether records are in strictly increasing canonical
// order (sorted, no two with the same identity).
func IsSorted(records []*Record) bool {
	for i := 1; i < len(records); i++ {
		if Compare(records[i-1], records[i]) >= 0 {
			return false
		}
	}
	return true
}

// MaxProblems bounds how many problems Check reports.
const MaxProblems = 100

// Check verifies that records are in canonical global order and satisfy
// every integrity rule: unique paths and source_refs, exactly one
// observation per path, every observation resolves to a path and a source
// record, and every source is referenced by an observation.
//
// It returns nil or an error wrapping sourcecatalog.ErrIntegrity that joins
// one *sourcecatalog.Error per problem (at most MaxProblems), each with the
// index of the record in records. Check runs in linear time plus a binary
// search per observation.
func Check(records []*Record) error {
	keys := make([]Key, len(records))
	for i, r := range records {
		keys[i] = r.Key()
	}
	return CheckKeys(keys)
}

// CheckKeys is Check for records known by their keys alone: the integrity
// rules read nothing else of a record.
func CheckKeys(keys []Key) error {
	c := checker{keys: keys}
	c.run()
	return c.err()
}

type checker struct {
	keys     []Key
	problems []error
	dropped  int
}

func (c *checker) add(i int, field, detail string) {
	if len(c.problems) >= MaxProblems {
		c.dropped++
		return
	}
	c.problems = append(c.problems, sourcecatalog.Errorf(sourcecatalog.ErrIntegrity, detail).AtRecord(i).AtField(field))
}

func (c *checker) err() error {
	if len(c.problems) == 0 {
		return nil
	}
	if c.dropped > 0 {
		c.problems = append(c.problems, sourcecatalog.Errorf(sourcecatalog.ErrIntegrity, "further problems not reported"))
	}
	if len(c.problems) == 1 {
		return c.problems[0]
	}
	return errors.Join(c.problems...)
}

func (c *checker) run() {
	// Order and uniqueness; the order also splits the three sections.
	keys := c.keys
	for i := 1; i < len(keys); i++ {
		a, b := &keys[i-1], &keys[i]
		switch d := a.Compare(*b); {
		case d == 0 && b.Kind == KindPath:
			c.add(i, "path", "duplicate path")
		case d == 0 && b.Kind == KindSource:
			c.add(i, "source_ref", "duplicate source_ref")
		case d == 0:
			c.add(i, "path", "duplicate observation")
		case d < 0 && a.Kind == KindObservation && a.Path == b.Path:
			c.add(i, "path", "more than one observation for the path")
		case d > 0:
			c.add(i, "", "record out of canonical order")
		}
	}
	if len(c.problems) > 0 && !c.sortedLoose() {
		return // the sections cannot be told apart; the order problems say enough
	}
	paths := c.runEnd(0, KindPath)
	sources := c.runEnd(paths, KindSource) // observations follow

	// Every path has an observation and every observation a path: a merge of
	// two sorted runs. Duplicates were reported above and are skipped here.
	p, o := 0, sources
	for p < paths || o < len(keys) {
		switch {
		case o >= len(keys) || p < paths && keys[p].Path < keys[o].Path:
			c.add(p, "path", "path has no observation")
		case p >= paths || keys[o].Path < keys[p].Path:
			c.add(o, "path", "observation of a path with no path record")
			for o++; o < len(keys) && keys[o].Path == keys[o-1].Path; o++ {
			}
			continue
		default:
			for o < len(keys) && keys[o].Path == keys[p].Path {
				o++
			}
		}
		for p++; p < paths && keys[p].Path == keys[p-1].Path; p++ {
		}
	}

	// Every observation's source exists; every source is referenced.
	// Neighbouring observations often share a source: the last one found
	// is tried before a search.
	srcs := keys[paths:sources]
	referenced := make([]bool, len(srcs))
	last := -1
	for i := sources; i < len(keys); i++ {
		if i > sources && keys[i] == keys[i-1] {
			continue // a duplicate observation, reported above, counts once (SPEC.md §5.2)
		}
		ref := keys[i].SourceRef
		if last < 0 || srcs[last].SourceRef != ref {
			k, found := slices.BinarySearchFunc(srcs, ref, func(s Key, ref string) int {
				return strings.Compare(s.SourceRef, ref)
			})
			if !found {
				c.add(i, "source_ref", "observation of an unknown source")
				continue
			}
			last = k
		}
		referenced[last] = true
	}
	for k, ok := range referenced {
		// A duplicate source_ref was reported above; the search only ever
		// marks the first of equal neighbours, so skip the rest.
		if !ok && (k == 0 || srcs[k].SourceRef != srcs[k-1].SourceRef) {
			c.add(paths+k, "source_ref", "source not referenced by any observation")
		}
	}
}

// sortedLoose reports whether the records are sorted allowing equal
// neighbours, which is enough to split them into the three kind sections.
func (c *checker) sortedLoose() bool {
	for i := 1; i < len(c.keys); i++ {
		if c.keys[i-1].Compare(c.keys[i]) > 0 {
			return false
		}
	}
	return true
}

// runEnd returns the end of the run of kind records starting at from.
func (c *checker) runEnd(from int, kind Kind) int {
	end := from
	for end < len(c.keys) && c.keys[end].Kind == kind {
		end++
	}
	return end
}
