// Package vectors builds the language-neutral golden vectors of
// testdata/vectors from the tables in this package.
//
// Inputs and expectations (error class, detail, offset, location, and the
// canonical text of every transform vector) are written by hand in the
// tables. Hashes and canonical bytes of the other valid vectors are computed
// with the library; [Files] refuses to produce anything when the library
// disagrees with a hand-written canonical text or fails on a vector expected
// to be valid. Error expectations are not checked here: the harness in the
// module root (vectors_test.go) does that, so a library bug shows up as a
// failing vector instead of a silently adjusted one.
//
// testdata/vectors/README.md describes the file format.
package vectors

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/signalk"
)

// The fixed identities every vector uses.
const (
	Vessel        = "5b0c7f6e-2d1a-4c3b-9e8f-0a1b2c3d4e5f"
	Snapshot      = "8d3f2a61-4b7c-4e9d-a1f0-2c6b5e7d9a38" // version 4
	OtherVessel   = "c9e1d2f3-a4b5-4c6d-8e7f-901a2b3c4d5e"
	OtherSnapshot = "1f2e3d4c-5b6a-4978-8695-a4b3c2d1e0f9" // version 4
	DiscoveredAt  = "2026-05-01T12:00:00Z"
	Revision      = 7
)

// The APIs a vector can name.
const (
	apiTransform   = "transform"
	apiRecord      = "record"
	apiRecords     = "records"
	apiBuild       = "build"
	apiManifest    = "manifest"
	apiChunk       = "chunk"
	apiSnapshot    = "snapshot"
	apiReceipt     = "receipt"
	apiRefusal     = "refusal"
	apiSignalK     = "signalk"
	apiDeclaration = "declaration"
)

// A vector is one case of a table: its input and what is expected of it.
type vector struct {
	name    string   // short kebab-case name; the file name adds a number and the api
	api     string   // one of the api constants
	spec    string   // the SPEC.md section the vector exercises, from specSections
	notes   []string // comment lines
	input   []field  // build inputs (vessel, snapshot, ...)
	payload []byte

	class  string   // expected error class; "" for a valid input
	detail string   // canonical detail sentinel name, or ""
	offset int      // byte offset of a syntax error, or -1
	where  []string // expected locations

	want    string // hand-written canonical text (transform, record, records, receipt, refusal)
	hasWant bool

	// check, when set, is an extra assertion on a valid build or snapshot,
	// for example that the wrapper and not the body limit closed a chunk.
	check func(*envelope.Snapshot) error
}

type field struct{ key, value string }

func (v vector) note(lines ...string) vector {
	v.notes = append(append([]string(nil), v.notes...), lines...)
	return v
}

func (v vector) at(where ...string) vector {
	v.where = append(append([]string(nil), v.where...), where...)
	return v
}

func (v vector) syntax(detail string, offset int) vector {
	v.detail, v.offset = detail, offset
	return v
}

func (v vector) checked(f func(*envelope.Snapshot) error) vector {
	v.check = f
	return v
}

func ok(api, name, payload string) vector {
	return vector{api: api, name: name, payload: []byte(payload), offset: -1}
}

func fail(api, name, payload, class string) vector {
	v := ok(api, name, payload)
	v.class = class
	return v
}

// Files returns every vector file, keyed by file name.
func Files() (map[string][]byte, error) {
	// Each group follows the one before, or starts at its own first number
	// when one is given, leaving the numbers between free.
	groups := []struct {
		first int
		make  func() ([]vector, error)
	}{
		{0, transformVectors}, {0, recordVectors}, {0, recordsVectors}, {0, buildVectors},
		{0, manifestVectors}, {0, chunkVectors}, {0, snapshotVectors}, {0, settledVectors},
		{0, receiptVectors}, {0, refusalVectors}, {0, readingVectors}, {0, signalkVectors},
		{firstDeclaration, declarationVectors},
		{firstChunkRef, chunkRefVectors}, {firstResolve, resolveVectors}, {firstRefusal, refRefusalVectors},
		{firstSignalKSettled, signalkSettledVectors},
		{firstContentDefined, contentDefinedVectors},
		{firstIndex, indexVectors}, {firstIndexReceipt, indexReceiptVectors},
	}
	var all []vector
	var numbers []int
	for _, g := range groups {
		vs, err := g.make()
		if err != nil {
			return nil, err
		}
		next := len(numbers) + 1
		if len(numbers) > 0 {
			next = numbers[len(numbers)-1] + 1
		}
		if g.first > 0 {
			if g.first < next {
				return nil, fmt.Errorf("a group starting at %d overlaps the vectors before it, which end at %d", g.first, next-1)
			}
			next = g.first
		}
		for i := range vs {
			numbers = append(numbers, next+i)
		}
		all = append(all, vs...)
	}
	if err := assignSections(all); err != nil {
		return nil, err
	}
	files := make(map[string][]byte, len(all))
	for i, v := range all {
		name := fmt.Sprintf("%03d-%s-%s.txt", numbers[i], v.api, v.name)
		data, err := render(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		files[name] = data
	}
	return files, nil
}

var (
	shortName  = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	headerText = regexp.MustCompile(`^[\x20-\x7e]+$`)
)

// render writes the header and the payload of one vector.
func render(v vector) ([]byte, error) {
	if !shortName.MatchString(v.name) {
		return nil, fmt.Errorf("bad short name %q", v.name)
	}
	h := []field{{"api", v.api}, {"spec", v.spec}}
	for _, n := range v.notes {
		h = append(h, field{"comment", n})
	}
	h = append(h, v.input...)
	if v.class == "" {
		if v.detail != "" || v.offset >= 0 || len(v.where) > 0 {
			return nil, fmt.Errorf("a valid vector has an error expectation")
		}
		out, err := outputs(v)
		if err != nil {
			return nil, err
		}
		h = append(h, field{"expect", "ok"})
		h = append(h, out...)
	} else {
		if v.hasWant {
			return nil, fmt.Errorf("an error vector has a canonical text")
		}
		h = append(h, field{"expect", "error"}, field{"error", v.class})
		if v.detail != "" {
			h = append(h, field{"detail", v.detail})
		}
		if v.offset >= 0 {
			h = append(h, field{"offset", strconv.Itoa(v.offset)})
		}
		for _, w := range v.where {
			h = append(h, field{"where", w})
		}
	}
	var b strings.Builder
	for _, f := range h {
		if !headerText.MatchString(f.value) {
			return nil, fmt.Errorf("header %s: value must be printable ASCII: %q", f.key, f.value)
		}
		b.WriteString(f.key + ": " + f.value + "\n")
	}
	b.WriteString("\n")
	b.Write(v.payload)
	return []byte(b.String()), nil
}

// outputs computes the expected outputs of a valid vector with the library.
func outputs(v vector) ([]field, error) {
	switch v.api {
	case apiTransform:
		if !v.hasWant {
			return nil, fmt.Errorf("a valid transform vector needs a hand-written canonical text")
		}
		got, err := canonical.Transform(v.payload)
		if err != nil {
			return nil, fmt.Errorf("the library rejects a valid vector: %w", err)
		}
		if string(got) != v.want {
			return nil, fmt.Errorf("the library disagrees:\n got %q\nwant %q", got, v.want)
		}
		return canonicalFields(got), nil
	case apiRecord:
		r, err := catalog.Decode(v.payload)
		if err != nil {
			return nil, fmt.Errorf("the library rejects a valid vector: %w", err)
		}
		if v.hasWant && string(r.Canonical()) != v.want {
			return nil, fmt.Errorf("the library disagrees:\n got %q\nwant %q", r.Canonical(), v.want)
		}
		return canonicalFields(r.Canonical()), nil
	case apiRecords:
		rs, err := catalog.DecodeList(v.payload)
		if err != nil {
			return nil, fmt.Errorf("the library rejects a valid vector: %w", err)
		}
		list := joinRecords("[", rs, "]")
		if v.hasWant && string(list) != v.want {
			return nil, fmt.Errorf("the library disagrees:\n got %q\nwant %q", list, v.want)
		}
		return append([]field{{"record-count", strconv.Itoa(len(rs))}}, canonicalFields(list)...), nil
	case apiSignalK:
		sel, err := signalk.ParseSelection(v.input[0].value)
		if err != nil {
			return nil, err
		}
		age, err := signalkAgeBound(v.input)
		if err != nil {
			return nil, err
		}
		rs, err := signalk.MapWithin(v.payload, sel, age)
		if err != nil {
			return nil, fmt.Errorf("the library rejects a valid vector: %w", err)
		}
		return append([]field{{"record-count", strconv.Itoa(len(rs))}, {"document-sha256", sum(joinRecords(`{"records":[`, rs, "]}"))}},
			canonicalFields(joinRecords("[", rs, "]"))...), nil
	case apiBuild:
		s, err := buildVector(v)
		if err != nil {
			return nil, err
		}
		return snapshotFields(s), nil
	case apiManifest:
		m, err := envelope.DecodeManifest(v.payload)
		if err != nil {
			return nil, fmt.Errorf("the library rejects a valid vector: %w", err)
		}
		return []field{
			{"canonical-sha256", sum(m.Canonical())},
			{"chunk-count", strconv.Itoa(m.ChunkCount)},
			{"record-count", strconv.Itoa(m.RecordCount)},
			{"document-sha256", m.DocumentSHA256.String()},
		}, nil
	case apiChunk:
		c, err := envelope.DecodeChunk(v.payload)
		if err != nil {
			return nil, fmt.Errorf("the library rejects a valid vector: %w", err)
		}
		return []field{
			{"canonical-sha256", sum(c.Canonical())},
			{"record-count", strconv.Itoa(len(c.Records()))},
			{"payload-sha256", c.PayloadSHA256().String()},
		}, nil
	case apiSnapshot:
		m, chunks, err := splitSnapshot(v.payload)
		if err != nil {
			return nil, err
		}
		s, err := envelope.DecodeSnapshot(m, chunks)
		if err != nil {
			return nil, fmt.Errorf("the library rejects a valid vector: %w", err)
		}
		if v.check != nil {
			if err := v.check(s); err != nil {
				return nil, err
			}
		}
		return snapshotFields(s), nil
	case apiChunkRef:
		return chunkRefOutputs(v)
	case apiResolve:
		return resolveOutputs(v)
	case apiIndex:
		return indexOutputs(v)
	case apiReceipt:
		r, err := envelope.DecodeReceipt(v.payload)
		if err != nil {
			return nil, fmt.Errorf("the library rejects a valid vector: %w", err)
		}
		if v.hasWant && string(r.Canonical()) != v.want {
			return nil, fmt.Errorf("the library disagrees:\n got %q\nwant %q", r.Canonical(), v.want)
		}
		out := append(canonicalFields(r.Canonical()),
			field{"entity-type", r.EntityType},
			field{"chunk-index", index(r.ChunkIndex)},
			field{"status", string(r.Status)},
			field{"complete", strconv.FormatBool(r.Complete)},
		)
		if r.EntityType == sourcecatalog.ManifestIndexEntityType {
			out = append(out, field{"missing-chunks", indexList(r.Missing.Indices())})
		}
		return out, nil
	case apiRefusal:
		f, err := envelope.DecodeRefusal(v.payload)
		if err != nil {
			return nil, fmt.Errorf("the library rejects a valid vector: %w", err)
		}
		if v.hasWant && string(f.Canonical()) != v.want {
			return nil, fmt.Errorf("the library disagrees:\n got %q\nwant %q", f.Canonical(), v.want)
		}
		fieldName := f.Field
		if fieldName == "" {
			fieldName = "-"
		}
		return append(canonicalFields(f.Canonical()),
			field{"class", strings.ReplaceAll(sourcecatalog.WireName(f.Class), "_", "-")},
			field{"chunk-index", index(f.Chunk)},
			field{"record-index", index(f.Record)},
			field{"field", fieldName},
		), nil
	case apiDeclaration:
		d, err := httpbinding.DecodeDeclaration(v.payload)
		if err != nil {
			return nil, fmt.Errorf("the library rejects a valid vector: %w", err)
		}
		if v.hasWant && string(d.Canonical()) != v.want {
			return nil, fmt.Errorf("the library disagrees:\n got %q\nwant %q", d.Canonical(), v.want)
		}
		return append(canonicalFields(d.Canonical()),
			field{"v2", strconv.FormatBool(d.V2())},
			field{"capabilities", nameList(d.Capabilities)},
			field{"unknown-capabilities", nameList(d.Unknown)},
		), nil
	}
	return nil, fmt.Errorf("unknown api %q", v.api)
}

// nameList writes declared names separated by commas, or "-" for none.
func nameList(names []string) string {
	if len(names) == 0 {
		return "-"
	}
	return strings.Join(names, ",")
}

// index writes a chunk or record index, or "-" when it is absent.
func index(i int) string {
	if i == sourcecatalog.NoIndex {
		return "-"
	}
	return strconv.Itoa(i)
}

func canonicalFields(b []byte) []field {
	return []field{{"canonical-hex", hex.EncodeToString(b)}, {"canonical-sha256", sum(b)}}
}

func snapshotFields(s *envelope.Snapshot) []field {
	var counts, payloads, chunks []string
	for _, c := range s.Chunks {
		counts = append(counts, strconv.Itoa(len(c.Records())))
		payloads = append(payloads, c.PayloadSHA256().String())
		chunks = append(chunks, sum(c.Canonical()))
	}
	return []field{
		{"chunk-count", strconv.Itoa(s.Manifest.ChunkCount)},
		{"record-count", strconv.Itoa(s.Manifest.RecordCount)},
		{"chunk-records", strings.Join(counts, ",")},
		{"document-sha256", s.Manifest.DocumentSHA256.String()},
		{"payload-sha256", strings.Join(payloads, ",")},
		{"manifest-sha256", sum(s.Manifest.Canonical())},
		{"chunks-sha256", strings.Join(chunks, ",")},
	}
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func joinRecords(open string, rs []*catalog.Record, close string) []byte {
	b := []byte(open)
	for i, r := range rs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, r.Canonical()...)
	}
	return append(b, close...)
}

// splitSnapshot returns the canonical bytes of the manifest and chunks of a
// snapshot vector's payload, as the harness does.
func splitSnapshot(payload []byte) ([]byte, [][]byte, error) {
	v, err := canonical.Parse(payload)
	if err != nil {
		return nil, nil, err
	}
	mems := v.Members()
	if v.Kind() != canonical.KindObject || len(mems) != 2 || mems[0].Name != "chunks" || mems[1].Name != "manifest" ||
		mems[0].Value.Kind() != canonical.KindArray {
		return nil, nil, fmt.Errorf(`a snapshot payload is {"manifest":{...},"chunks":[...]}`)
	}
	m := mems[1].Value.AppendCanonical(nil)
	var chunks [][]byte
	for i := range mems[0].Value.Elems() {
		chunks = append(chunks, mems[0].Value.Elems()[i].AppendCanonical(nil))
	}
	return m, chunks, nil
}

// ---------------------------------------------------------------------------
// JSON text helpers: an object with ordered members whose values are JSON
// text, so that vectors can reorder, drop, add and respell members.

type member struct{ name, raw string }

type object []member

// parseObject reads a canonical JSON object; its members come out in
// canonical order.
func parseObject(b []byte) (object, error) {
	v, err := canonical.Parse(b)
	if err != nil {
		return nil, err
	}
	if v.Kind() != canonical.KindObject {
		return nil, fmt.Errorf("not an object")
	}
	var o object
	for _, m := range v.Members() {
		o = append(o, member{m.Name, string(m.Value.AppendCanonical(nil))})
	}
	return o, nil
}

func (o object) get(name string) string {
	for _, m := range o {
		if m.name == name {
			return m.raw
		}
	}
	return ""
}

// with replaces the value of name, or appends the member when it is absent.
func (o object) with(name, raw string) object {
	out := append(object(nil), o...)
	for i := range out {
		if out[i].name == name {
			out[i].raw = raw
			return out
		}
	}
	return append(out, member{name, raw})
}

func (o object) without(name string) object {
	var out object
	for _, m := range o {
		if m.name != name {
			out = append(out, m)
		}
	}
	return out
}

func (o object) reversed() object {
	out := make(object, len(o))
	for i, m := range o {
		out[len(o)-1-i] = m
	}
	return out
}

func (o object) compact() string {
	var b strings.Builder
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(quote(m.name) + ":" + m.raw)
	}
	b.WriteByte('}')
	return b.String()
}

// indent writes one member per line, indented by prefix plus two spaces.
func (o object) indent(prefix string) string {
	var b strings.Builder
	b.WriteString("{\n")
	for i, m := range o {
		b.WriteString(prefix + "  " + quote(m.name) + " : " + m.raw)
		if i < len(o)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString(prefix + "}")
	return b.String()
}

func quote(s string) string {
	b, err := canonical.AppendString(nil, s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// list writes a JSON array with one element per line.
func list(elems []string) string {
	if len(elems) == 0 {
		return "[]\n"
	}
	return "[\n" + strings.Join(elems, ",\n") + "\n]\n"
}

// bodyHash returns the payload_sha256 the records (JSON texts) would have:
// the SHA-256 of the canonical {"records":[...]}.
func bodyHash(records []string) string {
	c, err := canonical.Transform([]byte(`{"records":[` + strings.Join(records, ",") + `]}`))
	if err != nil {
		panic(err)
	}
	return sum(c)
}
