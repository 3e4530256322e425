package demo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

// printReport writes the report's summary.
func (d *run) printReport() {
	r, p := &d.report, d.out
	s := r.Stats
	p.printf("report\n")
	if r.HTTP != nil {
		p.printf("  link:       %s sent over HTTPS; the proxy reset %s after the server answered, cut %d midway, delayed %d\n",
			plural(s.Sent, "request"), plural(s.Resets, "connection"), s.Cuts, s.Delays)
	} else {
		p.printf("  link:       %s sent, %s dropped, %s dropped, %d duplicated, %d reordered (%d delivered after publishing ended)\n",
			plural(s.Sent, "request"), plural(s.DroppedRequests, "request"), plural(s.DroppedReceipts, "receipt"), s.Duplicated, s.Reordered, s.Late)
	}
	p.printf("  receiver:   %s: %d staged, %d already_received\n", plural(s.Deliveries, "delivery"), s.Staged, s.AlreadyReceived)
	for i, c := range r.Cycles {
		p.printf("  snapshot %d: revision %d %s: %s, %s; now %s\n",
			i+1, c.Revision, c.SnapshotID, plural(c.Passes, "pass"), outcomes(c.Outcomes), c.Final)
	}
	p.printf("  active:     revision %d, snapshot %s\n", r.ActiveRevision, r.ActiveSnapshot)
	p.printf("  inventory:  %s: %d currently observed, %d not currently observed\n",
		plural(len(r.Inventory), "item"), r.Current, r.NotCurrent)
	if len(r.Cycles) == 2 {
		p.printf("  changes from revision %d to revision %d:\n", r.Cycles[0].Revision, r.Cycles[1].Revision)
	}
	if len(r.Changes) == 0 {
		p.printf("    none\n")
	}
	for _, c := range r.Changes {
		it := c.After
		line := fmt.Sprintf("    %-8s %-11s %s", c.What, it.Key.Kind, identity(it))
		if c.What == "changed" && c.Before != nil {
			line += ": " + difference(c.Before.Record, it.Record)
		}
		observed := "currently observed"
		if !it.CurrentlyObserved {
			observed = "not currently observed"
		}
		p.printf("%s; %s, first seen %d, last seen %d\n", line, observed, it.FirstSeen.Revision, it.LastSeen.Revision)
	}
}

// outcomes renders the Finalize outcomes of a cycle's passes, collapsing
// repeats: "staging ×2 → activated".
func outcomes(list []finalize.OutcomeStatus) string {
	var parts []string
	for i := 0; i < len(list); {
		j := i
		for j < len(list) && list[j] == list[i] {
			j++
		}
		part := string(list[i])
		if j-i > 1 {
			part += fmt.Sprintf(" ×%d", j-i)
		}
		parts = append(parts, part)
		i = j
	}
	return strings.Join(parts, " → ")
}

// identity renders an item's key.
func identity(it finalize.Item) string { return keyString(key(it)) }

func keyString(k catalog.Key) string {
	switch k.Kind {
	case catalog.KindPath:
		return k.Path
	case catalog.KindSource:
		return k.SourceRef
	}
	return k.Path + " ← " + k.SourceRef
}

func key(it finalize.Item) catalog.Key { return it.Key }

// changes lists the items that differ between two inventories, in the
// order of after.
func changes(before, after []finalize.Item) []Change {
	old := make(map[catalog.Key]*finalize.Item, len(before))
	for i := range before {
		old[key(before[i])] = &before[i]
	}
	var out []Change
	for _, it := range after {
		b := old[key(it)]
		what := ""
		switch {
		case b == nil:
			what = "appeared"
		case b.CurrentlyObserved && !it.CurrentlyObserved:
			what = "left"
		case !b.CurrentlyObserved && it.CurrentlyObserved:
			what = "returned"
		case !bytes.Equal(b.Record, it.Record):
			what = "changed"
		default:
			continue
		}
		out = append(out, Change{What: what, Before: b, After: it})
	}
	return out
}

// difference says which members of a record changed, one level into meta:
// `meta.softwareVersion "3.11" → "3.12"`.
func difference(before, after []byte) string {
	var parts []string
	var walk func(prefix string, a, b []byte, depth int)
	walk = func(prefix string, a, b []byte, depth int) {
		var ma, mb map[string]json.RawMessage
		if depth > 1 || json.Unmarshal(a, &ma) != nil || json.Unmarshal(b, &mb) != nil {
			parts = append(parts, fmt.Sprintf("%s %s → %s", strings.TrimSuffix(prefix, "."), clip(a), clip(b)))
			return
		}
		names := slices.Sorted(maps.Keys(ma))
		for n := range mb {
			if _, ok := ma[n]; !ok {
				names = append(names, n)
			}
		}
		slices.Sort(names)
		for _, n := range names {
			va, vb := ma[n], mb[n]
			switch {
			case bytes.Equal(va, vb):
			case va == nil || vb == nil:
				parts = append(parts, fmt.Sprintf("%s%s %s → %s", prefix, n, clip(va), clip(vb)))
			default:
				walk(prefix+n+".", va, vb, depth+1)
			}
		}
	}
	walk("", before, after, 0)
	return strings.Join(parts, ", ")
}

// clip renders a JSON value for a line: at most 40 bytes, "(absent)" for
// none.
func clip(v []byte) string {
	switch {
	case v == nil:
		return "(absent)"
	case len(v) > 40:
		return string(v[:37]) + "…"
	}
	return string(v)
}

// An activation is one snapshot the receiver activated: its records and
// when it saw them.
type activation struct {
	records []*catalog.Record
	seen    finalize.Seen
}

// expectedInventory derives the inventory that a sequence of activations
// must leave on top of an earlier inventory, independently of package
// finalize: every record of the last activation currently observed,
// everything an earlier activation or the earlier inventory holds kept and
// not currently observed with its last sighting; first-seen never changes
// once set, and the record is always the latest one seen.
func expectedInventory(earlier []finalize.Item, acts []activation) map[catalog.Key]finalize.Item {
	inv := make(map[catalog.Key]finalize.Item, len(earlier))
	for _, it := range earlier {
		inv[key(it)] = it
	}
	for _, a := range acts {
		selected := make(map[catalog.Key]bool, len(a.records))
		for _, r := range a.records {
			k := r.Key()
			selected[k] = true
			it, ok := inv[k]
			if !ok {
				it = finalize.Item{Key: k, FirstSeen: a.seen}
			}
			it.Record, it.LastSeen, it.CurrentlyObserved = r.Canonical(), a.seen, true
			inv[k] = it
		}
		for k, it := range inv {
			if !selected[k] {
				it.CurrentlyObserved = false
				inv[k] = it
			}
		}
	}
	return inv
}

// checkInventory compares an active catalog's items with the expected
// inventory and reports every difference (the first few).
func checkInventory(items []finalize.Item, want map[catalog.Key]finalize.Item) error {
	var errs []error
	add := func(format string, args ...any) {
		if len(errs) < 8 {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	seen := make(map[catalog.Key]bool, len(items))
	for _, got := range items {
		k := key(got)
		if seen[k] {
			add("%s %s appears twice in the inventory", got.Key.Kind, identity(got))
			continue
		}
		seen[k] = true
		w, ok := want[k]
		switch {
		case !ok:
			add("unexpected %s %s in the inventory", got.Key.Kind, identity(got))
		case got.CurrentlyObserved != w.CurrentlyObserved:
			add("%s %s: currently observed %t, want %t", got.Key.Kind, identity(got), got.CurrentlyObserved, w.CurrentlyObserved)
		case !sameSeen(got.FirstSeen, w.FirstSeen):
			add("%s %s: first seen %s, want %s", got.Key.Kind, identity(got), seenString(got.FirstSeen), seenString(w.FirstSeen))
		case !sameSeen(got.LastSeen, w.LastSeen):
			add("%s %s: last seen %s, want %s", got.Key.Kind, identity(got), seenString(got.LastSeen), seenString(w.LastSeen))
		case !bytes.Equal(got.Record, w.Record):
			add("%s %s: the record is not the latest one selected", got.Key.Kind, identity(got))
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(want), catalog.Key.Compare) {
		if !seen[k] {
			w := want[k]
			add("%s %s is missing from the inventory", w.Key.Kind, identity(w))
		}
	}
	return errors.Join(errs...)
}

func sameSeen(a, b finalize.Seen) bool { return a.Revision == b.Revision && a.At.Equal(b.At) }

func seenString(s finalize.Seen) string {
	return fmt.Sprintf("revision %d at %s", s.Revision, envelopeTime(s.At))
}

// checkActive checks an active catalog after the activations acts on top
// of the earlier inventory; the last activation is cycle c.
func checkActive(cat finalize.Catalog, c CycleReport, earlier []finalize.Item, acts []activation) error {
	var errs []error
	if cat.SnapshotID != c.SnapshotID || cat.Revision != c.Revision {
		errs = append(errs, fmt.Errorf("active snapshot %s revision %d, want %s revision %d", cat.SnapshotID, cat.Revision, c.SnapshotID, c.Revision))
	}
	if !cat.DiscoveredAt.Equal(c.DiscoveredAt) {
		errs = append(errs, fmt.Errorf("active discovered at %s, want %s", envelopeTime(cat.DiscoveredAt), envelopeTime(c.DiscoveredAt)))
	}
	if err := checkInventory(cat.Items, expectedInventory(earlier, acts)); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// verify checks the final state: the cycles took the two revisions after
// the outbox's last one before the run, the second cycle's snapshot is
// active, the inventory is the earlier one (what earlier runs left active)
// updated by the two cycles' activations, the cycles' snapshots are finally
// superseded and already_active, every entry of the cycles is delivered and
// none of any run is pending, and the difference between the two
// activations is what the records imply.
func (d *run) verify(cat finalize.Catalog, first, second []*catalog.Record) error {
	r := &d.report
	if len(r.Cycles) != 2 {
		return fmt.Errorf("demo: %d cycles ran, want 2", len(r.Cycles))
	}
	c1, c2 := r.Cycles[0], r.Cycles[1]
	var errs []error
	if want := r.LastRevision + 1; c1.Revision != want || c2.Revision != want+1 {
		errs = append(errs, fmt.Errorf("the cycles got revisions %d and %d, want %d and %d", c1.Revision, c2.Revision, want, want+1))
	}
	acts := []activation{
		{first, finalize.Seen{Revision: c1.Revision, At: c1.DiscoveredAt}},
		{second, finalize.Seen{Revision: c2.Revision, At: c2.DiscoveredAt}},
	}
	if err := checkActive(cat, c2, r.Earlier, acts); err != nil {
		errs = append(errs, err)
	}
	if c1.Final != finalize.Superseded {
		errs = append(errs, fmt.Errorf("snapshot 1 is finally %s, want %s", c1.Final, finalize.Superseded))
	}
	if c2.Final != finalize.AlreadyActive {
		errs = append(errs, fmt.Errorf("snapshot 2 is finally %s, want %s", c2.Final, finalize.AlreadyActive))
	}
	if want := c1.Entries + c2.Entries; r.Entries != want || r.Delivered != want {
		errs = append(errs, fmt.Errorf("%d of %d outbox entries delivered, want all %d", r.Delivered, r.Entries, want))
	}
	if r.Pending != 0 {
		errs = append(errs, fmt.Errorf("%s still pending in the outbox, want none", plural(r.Pending, "entry")))
	}
	if err := checkChanges(r.Changes, first, second); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("demo: wrong final state: %w", errors.Join(errs...))
	}
	return nil
}

// checkChanges checks the difference between the activations against the
// records: the records of both cycles whose bytes differ are "changed", and
// the records of cycle 1 that cycle 2 lacks "left"; nothing else.
func checkChanges(got []Change, first, second []*catalog.Record) error {
	want := map[catalog.Key]string{}
	next := map[catalog.Key][]byte{}
	for _, r := range second {
		next[r.Key()] = r.Canonical()
	}
	had := map[catalog.Key]bool{}
	for _, r := range first {
		k := r.Key()
		had[k] = true
		switch b, ok := next[k]; {
		case !ok:
			want[k] = "left"
		case !bytes.Equal(b, r.Canonical()):
			want[k] = "changed"
		}
	}
	for k := range next {
		if !had[k] {
			want[k] = "appeared"
		}
	}
	var errs []error
	for _, c := range got {
		k := key(c.After)
		if want[k] != c.What {
			errs = append(errs, fmt.Errorf("%s %s %s between the activations, want %q", c.After.Key.Kind, identity(c.After), c.What, want[k]))
		}
		delete(want, k)
	}
	for _, k := range slices.SortedFunc(maps.Keys(want), catalog.Key.Compare) {
		errs = append(errs, fmt.Errorf("%s %s did not show as %s between the activations", k.Kind, keyString(k), want[k]))
	}
	return errors.Join(errs...)
}
