package finalizetest

import (
	"bytes"
	"encoding/binary"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
)

// epoch is the discovery time of the first snapshot a test builds; each
// further snapshot is discovered a few minutes later. Whole seconds keep the
// times exact in any store.
var epoch = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// idSource hands out deterministic random (version 4) UUIDs, seeded by the
// test's name, so that a run can be repeated and iterations of one test see
// the same identifiers.
type idSource struct{ r *rand.Rand }

func newIDSource(name string) *idSource {
	h := fnv.New64a()
	h.Write([]byte(name))
	return &idSource{rand.New(rand.NewPCG(h.Sum64(), 0x5eed))}
}

func (s *idSource) next() uuid.UUID {
	var u uuid.UUID
	binary.LittleEndian.PutUint64(u[:8], s.r.Uint64())
	binary.LittleEndian.PutUint64(u[8:], s.r.Uint64())
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	return u
}

// Source references of the fixtures; opaque, some with dots.
const (
	srcGPS     = "ttyUSB0.GP"
	srcWind    = "can0.c0788c00e7e04312"
	srcDepth   = "can0.a1b2c3d4e5f60718"
	srcBattery = "can1.victron.0x12"
	srcDerived = "derived-data"
)

// A sel is one selected Signal K path: its path record and the observation
// of its selected source.
type sel struct {
	path   string
	unit   catalog.Unit
	meta   string // JSON object text; "" when absent
	source string
	vt     catalog.ValueType
}

// A src describes a source record; "" fields are absent.
type src struct {
	label, typ, meta string
}

// An inventory is what a discovery cycle selected. Its source records are
// those the selections reference, described by sources (or bare).
type inventory struct {
	sels    []sel
	sources map[string]src
}

func baseInventory() inventory {
	return inventory{
		sels: []sel{
			{path: "navigation.position", source: srcGPS, vt: catalog.Position},
			{path: "navigation.speedOverGround", unit: catalog.UnitOf("m/s"), meta: `{"description":"Vessel speed over ground","displayName":"SOG"}`, source: srcGPS, vt: catalog.Number},
			{path: "navigation.courseOverGroundTrue", unit: catalog.UnitOf("rad"), source: srcGPS, vt: catalog.Number},
			{path: "navigation.state", unit: catalog.NoUnit(), source: srcDerived, vt: catalog.String},
			{path: "environment.depth.belowTransducer", unit: catalog.UnitOf("m"), meta: `{"displayName":"Depth","zones":[{"lower":0,"state":"alarm","upper":2.5}]}`, source: srcDepth, vt: catalog.Number},
			{path: "environment.wind.speedApparent", unit: catalog.UnitOf("m/s"), source: srcWind, vt: catalog.Number},
			{path: "environment.wind.angleApparent", unit: catalog.UnitOf("rad"), source: srcWind, vt: catalog.Number},
			{path: "electrical.batteries.house.voltage", unit: catalog.UnitOf("V"), source: srcBattery, vt: catalog.Number},
			{path: "electrical.batteries.house.name", unit: catalog.NoUnit(), source: srcBattery, vt: catalog.String},
			{path: "design.aisShipType", source: srcDerived, vt: catalog.Object},
			{path: "notifications.mob", source: srcDerived, vt: catalog.Null},
			{path: "steering.autopilot.engaged", source: srcDerived, vt: catalog.Boolean},
		},
		sources: map[string]src{
			srcGPS:     {label: "ttyUSB0", typ: "NMEA0183", meta: `{"talker":"GP"}`},
			srcWind:    {label: "can0", typ: "NMEA2000", meta: `{"manufacturerName":"Garmin","modelId":"GND 10","src":"12"}`},
			srcDepth:   {label: "can0", typ: "NMEA2000", meta: `{"manufacturerName":"Airmar","modelId":"DST810"}`},
			srcBattery: {label: "can1", typ: "NMEA2000"},
			srcDerived: {label: "derived-data"},
		},
	}
}

// withSensors adds n depth sensors of one source, named environment.depth.
// followed by name and a number: on their own, 150 sensors make 301 records
// in 4 chunks.
func (inv inventory) withSensors(name string, n int, unit string) inventory {
	out := inv.clone()
	for i := range n {
		out.sels = append(out.sels, sel{
			path: "environment.depth." + name + pad3(i), unit: catalog.UnitOf(unit),
			source: srcDepth, vt: catalog.Number,
		})
	}
	return out
}

func pad3(i int) string {
	s := strconv.Itoa(i)
	return strings.Repeat("0", max(0, 3-len(s))) + s
}

func (inv inventory) clone() inventory {
	m := maps.Clone(inv.sources)
	if m == nil {
		m = make(map[string]src)
	}
	return inventory{sels: slices.Clone(inv.sels), sources: m}
}

// with returns a copy in which f changed the selection of path.
func (inv inventory) with(t require.TestingT, path string, f func(*sel)) inventory {
	out := inv.clone()
	for i := range out.sels {
		if out.sels[i].path == path {
			f(&out.sels[i])
			return out
		}
	}
	require.Fail(t, "fixture: no such path", path)
	return out
}

// without returns a copy that no longer selects paths.
func (inv inventory) without(paths ...string) inventory {
	out := inv.clone()
	out.sels = slices.DeleteFunc(out.sels, func(s sel) bool { return slices.Contains(paths, s.path) })
	return out
}

// plus returns a copy that also selects sels.
func (inv inventory) plus(sels ...sel) inventory {
	out := inv.clone()
	out.sels = append(out.sels, sels...)
	return out
}

// withSource returns a copy describing source ref as s.
func (inv inventory) withSource(ref string, s src) inventory {
	out := inv.clone()
	out.sources[ref] = s
	return out
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func optionalJSON(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

// records returns the inventory's records, in no particular order.
func (inv inventory) records(t require.TestingT) []*catalog.Record {
	var out []*catalog.Record
	refs := map[string]bool{}
	for _, s := range inv.sels {
		p, err := catalog.NewPath(catalog.Path{Path: s.path, Unit: s.unit, Meta: optionalJSON(s.meta)})
		require.NoError(t, err, "fixture path %s", s.path)
		o, err := catalog.NewObservation(catalog.Observation{Path: s.path, SourceRef: s.source, ValueType: s.vt})
		require.NoError(t, err, "fixture observation %s", s.path)
		out = append(out, o, p)
		refs[s.source] = true
	}
	for _, ref := range slices.Sorted(maps.Keys(refs)) {
		d := inv.sources[ref]
		r, err := catalog.NewSource(catalog.Source{SourceRef: ref, Label: optional(d.label), Type: optional(d.typ), Meta: optionalJSON(d.meta)})
		require.NoError(t, err, "fixture source %s", ref)
		out = append(out, r)
	}
	return out
}

// recordsOf returns a built snapshot's records in canonical order.
func recordsOf(s *envelope.Snapshot) []*catalog.Record {
	var out []*catalog.Record
	for _, c := range s.Chunks {
		out = append(out, c.Records()...)
	}
	return out
}

// A message is one manifest or chunk as it travels, with the receipt its
// first delivery must get.
type message struct {
	name     string
	manifest bool
	ref      bool // a chunk reference (chunkrefcases.go)
	raw      []byte
	want     envelope.Receipt
}

// manifestMessage decodes raw, which must be a valid manifest, to know the
// receipt it earns.
func manifestMessage(t require.TestingT, raw []byte) message {
	m, err := envelope.DecodeManifest(raw)
	require.NoError(t, err, "fixture manifest")
	return message{
		name: "manifest", manifest: true, raw: raw,
		want: envelope.Receipt{
			Status: envelope.Staged, EntityType: sourcecatalog.ManifestEntityType,
			VesselID: m.VesselID, SnapshotID: m.SnapshotID, Revision: m.Revision,
			ChunkIndex: sourcecatalog.NoIndex, Digest: canonical.Sum(m.Canonical()),
		},
	}
}

// chunkMessage decodes raw, which must be a valid chunk.
func chunkMessage(t require.TestingT, raw []byte) message {
	c, err := envelope.DecodeChunk(raw)
	require.NoError(t, err, "fixture chunk")
	return message{
		name: "chunk " + strconv.Itoa(c.Index()), raw: raw,
		want: envelope.Receipt{
			Status: envelope.Staged, EntityType: sourcecatalog.ChunkEntityType,
			VesselID: c.VesselID(), SnapshotID: c.SnapshotID(), Revision: c.Revision(),
			ChunkIndex: c.Index(), Digest: c.PayloadSHA256(),
		},
	}
}

// messagesOf returns the manifest and then every chunk of s.
func messagesOf(t require.TestingT, s *envelope.Snapshot) []message {
	out := []message{manifestMessage(t, s.Manifest.Canonical())}
	for _, c := range s.Chunks {
		out = append(out, chunkMessage(t, c.Canonical()))
	}
	return out
}

func (m message) receipt(status envelope.ReceiptStatus) envelope.Receipt {
	r := m.want
	r.Status = status
	return r
}

// requireReceipt requires rc to be m's receipt with the given status. Its
// Complete is checked where the test knows what was delivered (see
// delivery.requireReceipt).
func requireReceipt(t require.TestingT, m message, status envelope.ReceiptStatus, rc envelope.Receipt, msgAndArgs ...any) {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
	require.Equal(t, m.receipt(status), sansComplete(rc), msgAndArgs...)
}

// sansComplete returns rc with Complete false.
func sansComplete(rc envelope.Receipt) envelope.Receipt {
	rc.Complete = false
	return rc
}

// stagedBytes is what a set of messages stages.
func stagedBytes(msgs []message) int64 {
	var n int64
	for _, m := range msgs {
		n += int64(len(m.raw))
	}
	return n
}

// rawChunk writes a chunk by hand around canonical records, with the
// correct payload hash: the chunk is self-consistent whatever the records
// say about each other.
func rawChunk(vessel, snapshot uuid.UUID, revision int64, index int, records [][]byte) []byte {
	body := rawBody(records)
	var b bytes.Buffer
	b.WriteString(`{"chunk_index":` + strconv.Itoa(index))
	b.WriteString(`,"payload_sha256":"` + canonical.Sum(body).String())
	b.WriteString(`","protocol":"` + sourcecatalog.Protocol + `","records":[`)
	b.Write(bytes.Join(records, []byte(",")))
	b.WriteString(`],"revision":` + strconv.FormatInt(revision, 10))
	b.WriteString(`,"snapshot_id":"` + snapshot.String())
	b.WriteString(`","vessel_id":"` + vessel.String() + `"}`)
	return b.Bytes()
}

// rawBody is the canonical {"records":[...]} of canonical records.
func rawBody(records [][]byte) []byte {
	return slices.Concat([]byte(`{"records":[`), bytes.Join(records, []byte(",")), []byte(`]}`))
}

func canonicalRecords(records []*catalog.Record) [][]byte {
	out := make([][]byte, len(records))
	for i, r := range records {
		out[i] = r.Canonical()
	}
	return out
}

// handSet is a snapshot written by hand: each chunk carries its correct
// payload hash and the manifest the right counts and document hash, so only
// what the records say about each other can be wrong.
type handSet struct {
	manifest envelope.Manifest
	chunks   [][]byte
}

func newHandSet(vessel, snapshot uuid.UUID, revision int64, at time.Time, cuts [][][]byte) handSet {
	var all [][]byte
	var chunks [][]byte
	for i, recs := range cuts {
		all = append(all, recs...)
		chunks = append(chunks, rawChunk(vessel, snapshot, revision, i, recs))
	}
	return handSet{
		manifest: envelope.Manifest{
			VesselID: vessel, SnapshotID: snapshot, Revision: revision, DiscoveredAt: at,
			ChunkCount: len(cuts), RecordCount: len(all), DocumentSHA256: canonical.Sum(rawBody(all)),
		},
		chunks: chunks,
	}
}

func (h handSet) messages(t require.TestingT) []message {
	out := []message{manifestMessage(t, h.manifest.Canonical())}
	for _, c := range h.chunks {
		out = append(out, chunkMessage(t, c))
	}
	return out
}

// replaceOnce replaces the only occurrence of old in b, failing the test
// when there is none or more than one.
func replaceOnce(t require.TestingT, b []byte, old, new string) []byte {
	require.Equal(t, 1, bytes.Count(b, []byte(old)), "fixture: %q must occur exactly once", old)
	return bytes.Replace(b, []byte(old), []byte(new), 1)
}
