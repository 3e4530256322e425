package signalk

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
)

// A Selection decides which source a path is reported with when several
// sources currently deliver a value for it (SPEC.md §12.4). Signal K's v1
// model lists every source of such a path under values, and names in
// $source the one that wrote last — or, on a server with source
// priorities configured for the path, the one the priorities prefer. The
// model does not say which of the two it is.
type Selection uint8

const (
	// SelectLowestRef reports the live source whose ref is bytewise
	// smallest. It depends only on which sources are live, so a server
	// without source priorities, whose $source changes with every update,
	// gives the same records on every read. This is the default.
	SelectLowestRef Selection = iota
	// SelectServer reports the server's $source while it is live, and
	// otherwise the smallest live ref. Use it when the server has source
	// priorities for every path that several sources feed: it then reports
	// the sources the boat actually uses. Without priorities it reports
	// whichever source wrote last, and the records change on every read.
	SelectServer
)

// String returns "lowest-ref" or "server".
func (s Selection) String() string {
	switch s {
	case SelectLowestRef:
		return "lowest-ref"
	case SelectServer:
		return "server"
	}
	return "Selection(" + strconv.Itoa(int(s)) + ")"
}

// ParseSelection returns the Selection named s, "lowest-ref" or "server",
// or an error wrapping sourcecatalog.ErrInvalidValue.
func ParseSelection(s string) (Selection, error) {
	switch s {
	case "lowest-ref":
		return SelectLowestRef, nil
	case "server":
		return SelectServer, nil
	}
	return 0, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "selection "+strconv.Quote(truncate(s))+" is neither lowest-ref nor server")
}

// Path meta members that are not measurement metadata of the boat: units
// becomes the record's unit, and displayUnits is the server's rendering
// for one user's unit preferences (SPEC.md §12.3).
var droppedPathMeta = []string{"displayUnits", "units"}

// NMEA 2000 device members that change without a change on board: the
// time each PGN was last seen, undecoded PGNs with their timestamps, and
// the bus address, which address claiming may change at any power-up
// (SPEC.md §12.5).
var droppedN2K = []string{"pgns", "src", "unknownPGNs"}

// Map returns the records of what the vessel named by a Signal K v1 full
// model's self currently selects, in canonical order (SPEC.md §12). model
// is the body of GET /signalk/v1/api/. Map applies no age bound: see
// MapWithin.
//
// Every value object of the self vessel with a live source — one whose
// value is not null — becomes a path record and an observation; every
// source an observation names becomes a source record, resolved against
// the model's sources tree. sel picks the source of a path that several
// live sources feed.
//
// A model Map cannot read in full is a *ScanError (class
// sourcecatalog.ErrIncompleteScan): not strict JSON, a member of the
// wrong type, a self that names no vessel, a $source the sources tree
// does not list. A Signal K path or source that breaks a record rule is
// that rule's error from package catalog, with the path in its detail;
// more than sourcecatalog.MaxRecords records is
// sourcecatalog.ErrLimitExceeded. Map costs time and memory linear in
// len(model); it never returns a partial list.
func Map(model []byte, sel Selection) ([]*catalog.Record, error) {
	records, _, err := mapModel(model, sel, AgeBound{})
	return records, err
}

// An AgeBound makes a value that no source has refreshed for longer than
// MaxAge before Now not live, whatever its type (SPEC.md §12.4): a device
// that fell silent leaves the selection although the server keeps its
// last string or boolean, which signalk-server's data timeouts never
// null. A zero MaxAge is no bound.
type AgeBound struct {
	// Now is the reference time the ages are measured from. A Client
	// takes the timestamp of the server's hello read after the model: the
	// server's own clock, which stamped the values.
	Now time.Time
	// MaxAge is the age past which a value is not live.
	MaxAge time.Duration
}

// MapWithin is Map with an age bound: a candidate whose timestamp is
// older than age.MaxAge before age.Now is not live, except on the paths
// signalk-server writes only when they change (eventPaths). With a bound,
// a live candidate without a timestamp as SPEC.md §12.4 defines it is a
// *ScanError (ReasonModel).
func MapWithin(model []byte, sel Selection, age AgeBound) ([]*catalog.Record, error) {
	if age.MaxAge < 0 {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "signalk: a negative maximum age")
	}
	records, _, err := mapModel(model, sel, age)
	return records, err
}

// eventPaths are the paths, with the paths under them, that
// signalk-server's update contracts (src/defaults/updateContracts.json)
// declare event-driven — written when they change, not periodically — and
// that its staleness enforcer therefore never times out: a value's age
// there says nothing about whether its source is silent (SPEC.md §12.4).
var eventPaths = []string{"communication", "design", "flag", "mmsi", "name", "navigation.anchor",
	"navigation.course", "navigation.home", "notifications", "port", "registrations", "url", "uuid"}

// eventDriven reports whether path is one of eventPaths or under one.
func eventDriven(path []byte) bool {
	for _, p := range eventPaths {
		if len(path) >= len(p) && string(path[:len(p)]) == p && (len(path) == len(p) || path[len(p)] == '.') {
			return true
		}
	}
	return false
}

// mapModel is Map, also returning the key of the self vessel.
func mapModel(model []byte, sel Selection, age AgeBound) ([]*catalog.Record, string, error) {
	root, err := canonical.Parse(model)
	if err != nil {
		return nil, "", scanErr(ReasonJSON, "", "the model is not strict JSON", flatten(err))
	}
	if root.Kind() != canonical.KindObject {
		return nil, "", scanErr(ReasonModel, "", "the model is not a JSON object", nil)
	}
	key, vessel, err := self(&root)
	if err != nil {
		return nil, "", err
	}
	records, err := mapVessel(&root, vessel, sel, age)
	return records, key, err
}

func mapVessel(root, vessel *canonical.Value, sel Selection, age AgeBound) ([]*catalog.Record, error) {
	m := &mapper{sel: sel, age: age, selected: map[string]bool{}}
	if s := member(root, "sources"); s != nil {
		if s.Kind() != canonical.KindObject {
			return nil, scanErr(ReasonModel, "sources", "is not an object", nil)
		}
		m.sources = s
	}
	if err := m.walk(vessel, true); err != nil {
		return nil, err
	}
	refs := make([]string, 0, len(m.selected))
	for ref := range m.selected {
		refs = append(refs, ref)
	}
	slices.Sort(refs)
	if len(m.records)+len(refs) > sourcecatalog.MaxRecords {
		return nil, tooMany()
	}
	for _, ref := range refs {
		r, err := m.source(ref)
		if err != nil {
			return nil, err
		}
		m.records = append(m.records, r)
	}
	catalog.Sort(m.records)
	return m.records, nil
}

// self returns the key and the vessel the model's self names:
// "vessels.<key>" as v1 servers write it, or the bare key.
func self(root *canonical.Value) (string, *canonical.Value, error) {
	s := member(root, "self")
	if s == nil || s.Kind() != canonical.KindString {
		return "", nil, scanErr(ReasonSelf, "self", "is missing or not a string", nil)
	}
	vessels := member(root, "vessels")
	if vessels == nil || vessels.Kind() != canonical.KindObject {
		return "", nil, scanErr(ReasonSelf, "vessels", "is missing or not an object", nil)
	}
	key := vesselKey(s.Str())
	v := member(vessels, key)
	if v == nil || v.Kind() != canonical.KindObject {
		return "", nil, scanErr(ReasonSelf, "self", "names no vessel of the model: "+truncate(s.Str()), nil)
	}
	return key, v, nil
}

// vesselKey returns the key of vessels that a self names.
func vesselKey(self string) string {
	key, _ := strings.CutPrefix(self, "vessels.")
	return key
}

type mapper struct {
	sel      Selection
	age      AgeBound
	sources  *canonical.Value // the sources tree, or nil when the model has none
	records  []*catalog.Record
	selected map[string]bool // source refs named by an observation
	path     []byte          // the path of the object walk is in

	providers map[string]*canonical.Value // the sources tree's objects, by name, once resolve needs them
	buses     map[*canonical.Value]*busIndex
}

// walk maps every value object under node, whose Signal K path is
// m.path, or under the vessel itself when top. Members that are not objects are static properties without a
// source (uuid, name, mmsi, …) and are not paths. The walk extends m.path
// and cuts it back, so that a member costs the length of its own name, not
// of its path: a path becomes a string only for a leaf with a live source.
func (m *mapper) walk(node *canonical.Value, top bool) error {
	n := len(m.path)
	defer func() { m.path = m.path[:n] }()
	for i := range node.Members() {
		mem := &node.Members()[i]
		v := &mem.Value
		if v.Kind() != canonical.KindObject {
			continue
		}
		m.path = m.path[:n]
		if !top {
			m.path = append(m.path, '.')
		}
		m.path = append(m.path, mem.Name...)
		if strings.Contains(mem.Name, ".") {
			return scanErr(ReasonModel, truncateBytes(m.path), "a member name contains a dot, so its path is ambiguous", nil)
		}
		if value := member(v, "value"); value != nil {
			if err := m.leaf(v, value, m.path); err != nil {
				return err
			}
			continue
		}
		if err := m.walk(v, false); err != nil {
			return err
		}
	}
	return nil
}

// A candidate is one source's current value of a path, with the object
// holding its timestamp.
type candidate struct {
	ref    string
	value  *canonical.Value
	holder *canonical.Value
}

// leaf maps the value object node at path, whose member value is value,
// to a path record and an observation, or to nothing when no source of it
// is live.
func (m *mapper) leaf(node, value *canonical.Value, pathBytes []byte) error {
	where := truncateBytes(pathBytes)
	src := member(node, "$source")
	if src == nil || src.Kind() != canonical.KindString || src.Str() == "" {
		return scanErr(ReasonModel, where, "the value has no $source", nil)
	}
	cands := []candidate{{src.Str(), value, node}}
	if values := member(node, "values"); values != nil {
		if values.Kind() != canonical.KindObject {
			return scanErr(ReasonModel, where, "values is not an object", nil)
		}
		cands = cands[:0]
		inValues := false
		for _, e := range values.Members() {
			if e.Value.Kind() != canonical.KindObject || member(&e.Value, "value") == nil {
				return scanErr(ReasonModel, where, "an entry of values has no value", nil)
			}
			if e.Name == "" { // as $source, a non-empty string (SPEC.md §12.4)
				return scanErr(ReasonModel, where, "an entry of values has no source ref", nil)
			}
			cands = append(cands, candidate{e.Name, member(&e.Value, "value"), &e.Value})
			inValues = inValues || e.Name == src.Str()
		}
		if !inValues {
			cands = append(cands, candidate{src.Str(), value, node})
		}
	}
	chosen, ok, err := m.choose(cands, src.Str(), pathBytes)
	if err != nil || !ok {
		return err
	}
	path := string(pathBytes)
	vt := valueType(chosen.value)
	p := catalog.Path{Path: path}
	meta := member(node, "meta")
	if meta != nil {
		if meta.Kind() != canonical.KindObject {
			return scanErr(ReasonModel, where, "meta is not an object", nil)
		}
		units := member(meta, "units")
		if units != nil {
			if units.Kind() != canonical.KindString || units.Str() == "" {
				return scanErr(ReasonModel, where, "meta.units is not a unit symbol", nil)
			}
			p.Unit = catalog.UnitOf(units.Str())
		}
		p.Meta = objectWithout(meta, func(name string, _ *canonical.Value) bool {
			return slices.Contains(droppedPathMeta, name)
		})
	}
	if p.Unit.IsUnknown() && (vt == catalog.String || vt == catalog.Boolean) {
		p.Unit = catalog.NoUnit()
	}
	if len(m.records)+2 > sourcecatalog.MaxRecords {
		return tooMany()
	}
	pr, err := catalog.NewPath(p)
	if err != nil {
		return located(err, "path "+where)
	}
	or, err := catalog.NewObservation(catalog.Observation{Path: path, SourceRef: chosen.ref, ValueType: vt})
	if err != nil {
		return located(err, "path "+where)
	}
	m.records = append(m.records, pr, or)
	m.selected[chosen.ref] = true
	return nil
}

// choose returns the candidate sel picks among the live ones, or false
// when none is live: a path whose every source's value is null — Signal K's
// "no current value", which servers also write when a source times out —
// or, under an age bound, older than the bound is not currently observed.
func (m *mapper) choose(cands []candidate, server string, path []byte) (candidate, bool, error) {
	var best, picked candidate
	found, serverLive := false, false
	aged := m.age.MaxAge > 0 && !eventDriven(path)
	for _, c := range cands { // every candidate's timestamp is read, even past the server's pick
		if c.value.Kind() == canonical.KindNull {
			continue
		}
		if aged {
			stale, err := m.stale(c, path)
			if err != nil {
				return candidate{}, false, err
			}
			if stale {
				continue
			}
		}
		if m.sel == SelectServer && c.ref == server {
			picked, serverLive = c, true
		}
		if !found || c.ref < best.ref {
			best, found = c, true
		}
	}
	if serverLive {
		return picked, true, nil
	}
	return best, found, nil
}

// stale reports whether c's timestamp is older than the age bound allows.
// A timestamp must be a string of an RFC 3339 date-time with its offset,
// as signalk-server writes "2026-12-01T21:00:00.000Z" (SPEC.md §12.4).
func (m *mapper) stale(c candidate, path []byte) (bool, error) {
	ts := member(c.holder, "timestamp")
	if ts == nil || ts.Kind() != canonical.KindString {
		return false, scanErr(ReasonModel, truncateBytes(path), "the value of "+truncate(c.ref)+" has no timestamp, so its age cannot be told", nil)
	}
	t, err := time.Parse(time.RFC3339Nano, ts.Str())
	if err != nil {
		return false, scanErr(ReasonModel, truncateBytes(path), "the timestamp of "+truncate(c.ref)+" is not an RFC 3339 date-time: "+strconv.Quote(truncate(ts.Str())), nil)
	}
	return m.age.Now.Sub(t) > m.age.MaxAge, nil
}

// valueType detects the type of a value by catalog's rules, reading an
// object's null members as absent: Signal K writes null for a member
// that has no current value, such as a position's altitude.
func valueType(v *canonical.Value) catalog.ValueType {
	if v.Kind() == canonical.KindObject && slices.ContainsFunc(v.Members(), func(m canonical.Member) bool {
		return m.Value.Kind() == canonical.KindNull
	}) {
		b := objectWithout(v, func(_ string, v *canonical.Value) bool { return v.Kind() == canonical.KindNull })
		if b == nil {
			b = []byte("{}")
		}
		t, err := catalog.DetectValueType(b)
		if err == nil {
			return t
		}
	}
	return catalog.ValueTypeOf(v)
}

// source returns the source record of ref, resolved against the sources
// tree (SPEC.md §12.5).
func (m *mapper) source(ref string) (*catalog.Record, error) {
	where := "source " + truncate(ref)
	bus, device, err := m.resolve(ref, where)
	if err != nil {
		return nil, err
	}
	s := catalog.Source{SourceRef: ref}
	var attrs [2]*canonical.Value // label and type
	if device != nil {            // a bus many refs share, indexed once
		x := m.buses[bus]
		attrs = [2]*canonical.Value{x.label, x.typ}
	} else {
		attrs = [2]*canonical.Value{member(bus, "label"), member(bus, "type")}
	}
	for i, f := range []struct {
		name string
		dst  **string
	}{{"label", &s.Label}, {"type", &s.Type}} {
		v := attrs[i]
		if v == nil {
			continue
		}
		if v.Kind() != canonical.KindString {
			return nil, scanErr(ReasonModel, where, f.name+" is not a string", nil)
		}
		str := v.Str()
		*f.dst = &str
	}
	if device != nil {
		s.Meta, err = deviceMeta(device)
		if err != nil {
			return nil, scanErr(ReasonModel, where, err.Error(), nil)
		}
	} else {
		s.Meta = objectWithout(bus, func(name string, v *canonical.Value) bool {
			return name == "label" || name == "type" || v.Kind() == canonical.KindObject
		})
	}
	r, err := catalog.NewSource(s)
	if err != nil {
		return nil, located(err, where)
	}
	return r, nil
}

// resolve finds ref in the sources tree: a bus (provider) entry named ref
// itself, or a device entry of the bus named by a prefix of ref, keyed by
// the rest — its address or talker — or carrying the rest as its NMEA 2000
// CAN name. Labels may contain dots, so every split is tried; a ref that
// matches no entry, or more than one, cannot be resolved. Each split is a
// lookup in an index built once, so resolving every ref costs time linear
// in the sources tree and the refs, not their product. where locates ref
// in an error.
func (m *mapper) resolve(ref, where string) (bus, device *canonical.Value, err error) {
	if m.sources == nil {
		return nil, nil, scanErr(ReasonSource, where, "the model has no sources tree", nil)
	}
	if m.providers == nil {
		m.providers = objectsByName(m.sources)
		m.buses = map[*canonical.Value]*busIndex{}
	}
	matches := 0
	if b := m.providers[ref]; b != nil {
		bus, matches = b, 1
	}
	for i := strings.IndexByte(ref, '.'); i >= 0; i = nextDot(ref, i) {
		b := m.providers[ref[:i]]
		if b == nil {
			continue
		}
		x := m.buses[b]
		if x == nil {
			x = newBusIndex(b)
			m.buses[b] = x
		}
		key := ref[i+1:]
		if d := x.byName[key]; d != nil {
			if c, ok := canName(d); !ok || c != key { // else it is among byCAN[key]
				bus, device = b, d
				matches++
			}
		}
		for _, d := range x.byCAN[key] {
			bus, device = b, d
			matches++
		}
	}
	switch {
	case matches == 0:
		return nil, nil, scanErr(ReasonSource, where, "the sources tree does not list it", nil)
	case matches > 1:
		return nil, nil, scanErr(ReasonSource, where, "it matches more than one entry of the sources tree", nil)
	}
	return bus, device, nil
}

// A busIndex finds the device entries of a bus by name and by CAN name,
// and holds its label and type.
type busIndex struct {
	byName     map[string]*canonical.Value
	byCAN      map[string][]*canonical.Value
	label, typ *canonical.Value // the bus's members label and type, or nil
}

func newBusIndex(bus *canonical.Value) *busIndex {
	x := &busIndex{byName: objectsByName(bus), byCAN: map[string][]*canonical.Value{},
		label: member(bus, "label"), typ: member(bus, "type")}
	for _, d := range x.byName {
		if c, ok := canName(d); ok {
			x.byCAN[c] = append(x.byCAN[c], d)
		}
	}
	return x
}

// objectsByName returns the members of o whose values are objects, by name.
func objectsByName(o *canonical.Value) map[string]*canonical.Value {
	ms := o.Members()
	byName := make(map[string]*canonical.Value, len(ms))
	for i := range ms {
		if ms[i].Value.Kind() == canonical.KindObject {
			byName[ms[i].Name] = &ms[i].Value
		}
	}
	return byName
}

func nextDot(s string, i int) int {
	j := strings.IndexByte(s[i+1:], '.')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

// canName returns the NMEA 2000 CAN name of a device entry, and whether it
// has one.
func canName(device *canonical.Value) (string, bool) {
	n2k := member(device, "n2k")
	if n2k == nil || n2k.Kind() != canonical.KindObject {
		return "", false
	}
	if c := member(n2k, "canName"); c != nil && c.Kind() == canonical.KindString {
		return c.Str(), true
	}
	return "", false
}

// deviceMeta returns a device entry without what changes with no change
// on board: from n2k, the members droppedN2K names; sentences, an NMEA
// 0183 talker's sentence → last-seen map, becomes the sorted list of
// sentence names.
func deviceMeta(device *canonical.Value) ([]byte, error) {
	b := []byte{'{'}
	n := 0
	for _, mem := range device.Members() {
		v := &mem.Value
		switch {
		case mem.Name == "n2k" && v.Kind() == canonical.KindObject:
			inner := objectWithout(v, func(name string, _ *canonical.Value) bool { return slices.Contains(droppedN2K, name) })
			if inner == nil {
				continue
			}
			b = appendName(b, n, mem.Name)
			b = append(b, inner...)
		case mem.Name == "sentences":
			if v.Kind() != canonical.KindObject {
				return nil, errors.New("sentences is not an object")
			}
			b = appendName(b, n, mem.Name)
			b = append(b, '[')
			for i, s := range v.Members() {
				if i > 0 {
					b = append(b, ',')
				}
				b, _ = canonical.AppendString(b, s.Name) // a parsed name is valid UTF-8
			}
			b = append(b, ']')
		default:
			b = appendName(b, n, mem.Name)
			b = v.AppendCanonical(b)
		}
		n++
	}
	if n == 0 {
		return nil, nil
	}
	return append(b, '}'), nil
}

// objectWithout returns the canonical text of object v without the
// members drop reports, or nil when no member is left. The members of a
// parsed object are in canonical order already, so dropping some keeps
// the text canonical.
func objectWithout(v *canonical.Value, drop func(name string, v *canonical.Value) bool) []byte {
	b := []byte{'{'}
	n := 0
	for _, mem := range v.Members() {
		if drop(mem.Name, &mem.Value) {
			continue
		}
		b = appendName(b, n, mem.Name)
		b = mem.Value.AppendCanonical(b)
		n++
	}
	if n == 0 {
		return nil
	}
	return append(b, '}')
}

// appendName appends a member's name and colon, after a comma unless it is
// the first (n == 0). A parsed name is valid UTF-8, so encoding it cannot
// fail.
func appendName(b []byte, n int, name string) []byte {
	if n > 0 {
		b = append(b, ',')
	}
	b, _ = canonical.AppendString(b, name)
	return append(b, ':')
}

// member returns the value of o's member name, or nil.
func member(o *canonical.Value, name string) *canonical.Value {
	ms := o.Members()
	for i := range ms {
		if ms[i].Name == name {
			return &ms[i].Value
		}
	}
	return nil
}

func tooMany() error {
	return sourcecatalog.Errorf(sourcecatalog.ErrLimitExceeded, "the vessel selects paths and sources for more than "+strconv.Itoa(sourcecatalog.MaxRecords)+" records")
}

// located adds where to a record error's detail, keeping its class.
func located(err error, where string) error {
	var e *sourcecatalog.Error
	if errors.As(err, &e) {
		c := *e
		if c.Detail == "" {
			c.Detail = where
		} else {
			c.Detail = where + ": " + c.Detail
		}
		return &c
	}
	return err
}

// flatten keeps a cause's text, bounded as truncate bounds it (it may quote
// a URL of the server's discovery document), but not its class, so that a
// ScanError wraps exactly one class.
func flatten(err error) error {
	if sourcecatalog.Class(err) == nil {
		return boundedErr{err}
	}
	return errors.New(truncate(err.Error()))
}

// A boundedErr is an error whose text is bounded; it unwraps to the error.
type boundedErr struct{ err error }

func (e boundedErr) Error() string { return truncate(e.err.Error()) }
func (e boundedErr) Unwrap() error { return e.err }

// maxQuoted bounds, in bytes, a string of the server's answer that an
// error text quotes.
const maxQuoted = 200

// truncate bounds a string taken from the server's answer for an error text.
func truncate(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// truncateBytes is truncate of string(b), at the cost of its bound rather
// than of b.
func truncateBytes(b []byte) string {
	return truncate(string(b[:min(len(b), maxQuoted+1)]))
}
