package finalizetest

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

// A catalogView is a finalize.Catalog in a form that compares exactly
// whatever time zone or slice identity a store returns: times as protocol
// timestamps, bytes as text.
type catalogView struct {
	Vessel       string
	Snapshot     string
	Revision     int64
	DiscoveredAt string
	Items        []itemView
}

type itemView struct {
	Kind      string
	Path      string
	SourceRef string
	Record    string
	FirstSeen string
	LastSeen  string
	Current   bool
}

func seenView(s finalize.Seen) string {
	if s.Revision == 0 && s.At.IsZero() {
		return "never"
	}
	return "r" + strconv.FormatInt(s.Revision, 10) + "@" + timeView(s)
}

func timeView(s finalize.Seen) string {
	if s.At.IsZero() {
		return ""
	}
	return envelope.FormatTime(s.At)
}

// viewOf keeps the order of c.Items, so a catalog out of canonical order
// differs from the model.
func viewOf(c finalize.Catalog) catalogView {
	v := catalogView{
		Vessel: c.VesselID.String(), Snapshot: c.SnapshotID.String(), Revision: c.Revision,
		DiscoveredAt: timeView(finalize.Seen{At: c.DiscoveredAt}),
		Items:        make([]itemView, 0, len(c.Items)),
	}
	for _, it := range c.Items {
		v.Items = append(v.Items, itemView{
			Kind: it.Key.Kind.String(), Path: it.Key.Path, SourceRef: it.Key.SourceRef, Record: string(it.Record),
			FirstSeen: seenView(it.FirstSeen), LastSeen: seenView(it.LastSeen), Current: it.CurrentlyObserved,
		})
	}
	return v
}

// item returns the view of one item, or false.
func (v catalogView) item(kind, path, sourceRef string) (itemView, bool) {
	for _, it := range v.Items {
		if it.Kind == kind && it.Path == path && it.SourceRef == sourceRef {
			return it, true
		}
	}
	return itemView{}, false
}

// expect is the model of the receiver: the active catalog of vessel after
// the snapshots were activated in the given order, written from the rules
// and not from the implementation.
//
// Every record any of them selected is an item, never deleted. Its first
// sighting is the first snapshot that selected it and its record the latest
// one. An item the last snapshot selects is currently observed, last seen
// in that snapshot; any other item is not, last seen in the snapshot that
// was active when it left the selection: the last one that selected it.
func expect(vessel uuid.UUID, snaps ...*envelope.Snapshot) catalogView {
	type key struct{ kind, path, ref string }
	items := map[key]*itemView{}
	var prev finalize.Seen
	for _, s := range snaps {
		seen := finalize.Seen{Revision: s.Manifest.Revision, At: s.Manifest.DiscoveredAt}
		present := map[key]bool{}
		for _, r := range recordsOf(s) {
			k := key{r.Kind().String(), r.PathName(), r.SourceRef()}
			present[k] = true
			it := items[k]
			if it == nil {
				it = &itemView{Kind: k.kind, Path: k.path, SourceRef: k.ref, FirstSeen: seenView(seen)}
				items[k] = it
			}
			it.Record, it.Current = string(r.Canonical()), true
		}
		for k, it := range items {
			if !present[k] && it.Current {
				it.Current, it.LastSeen = false, seenView(prev)
			}
		}
		prev = seen
	}
	v := catalogView{Vessel: vessel.String(), Snapshot: uuid.Nil.String(), Items: []itemView{}}
	if len(snaps) > 0 {
		last := snaps[len(snaps)-1].Manifest
		v.Snapshot, v.Revision, v.DiscoveredAt = last.SnapshotID.String(), last.Revision, timeView(prev)
	}
	for _, it := range items {
		if it.Current {
			it.LastSeen = seenView(prev)
		}
		v.Items = append(v.Items, *it)
	}
	slices.SortFunc(v.Items, compareItems)
	return v
}

// compareItems is the canonical order of items: by kind, path, source_ref.
func compareItems(a, b itemView) int {
	return cmp.Or(cmp.Compare(kindOrder[a.Kind], kindOrder[b.Kind]), cmp.Compare(a.Path, b.Path), cmp.Compare(a.SourceRef, b.SourceRef))
}

// kindOrder is the canonical order of the record kinds.
var kindOrder = map[string]int{"path": 0, "source": 1, "observation": 2}
