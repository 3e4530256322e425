package vectors

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
)

// smallRecords is a realistic snapshot of nine records in canonical order.
var smallRecords = []string{
	`{"kind":"path","meta":{"description":"The position of the vessel in 2 or 3 dimensions (WGS84 datum)"},"path":"navigation.position"}`,
	`{"kind":"path","meta":{"description":"Vessel speed over ground","displayName":"SOG"},"path":"navigation.speedOverGround","unit":"m/s"}`,
	`{"kind":"path","path":"navigation.state","unit":null}`,
	`{"kind":"source","label":"can0","meta":{"manufacturer":{"code":229,"name":"Garmin"},"src":"3"},"source_ref":"can0.c0788c00e7e04312","type":"NMEA2000"}`,
	`{"kind":"source","label":"derived-data","source_ref":"derived-data","type":"plugin"}`,
	`{"kind":"source","label":"gps","source_ref":"gps.GP","type":"NMEA0183"}`,
	`{"kind":"observation","path":"navigation.position","source_ref":"gps.GP","value_type":"position"}`,
	`{"kind":"observation","path":"navigation.speedOverGround","source_ref":"can0.c0788c00e7e04312","value_type":"number"}`,
	`{"kind":"observation","path":"navigation.state","source_ref":"derived-data","value_type":"string"}`,
}

// smallShuffled holds the same nine records in another order, with free
// member order, whitespace and non-canonical spellings.
var smallShuffled = []string{
	`{"value_type":"string","source_ref":"derived-data","path":"navigation.state","kind":"observation"}`,
	`{ "kind" : "source", "source_ref" : "gps.GP", "type" : "NMEA0183", "label" : "gps" }`,
	`{"kind":"path","unit":"m\/s","path":"navigation.speedOverGround","meta":{"displayName":"SOG","description":"Vessel speed over ground"}}`,
	`{"kind":"observation","path":"navigation.position","source_ref":"gps.GP","value_type":"position"}`,
	`{"kind":"source","source_ref":"\u0063an0.c0788c00e7e04312","label":"can0","type":"NMEA2000","meta":{"src":"3","manufacturer":{"name":"Garmin","code":229.0}}}`,
	`{"path":"navigation.state","unit":null,"kind":"path"}`,
	`{"kind":"observation","path":"navigation.speedOverGround","source_ref":"can0.c0788c00e7e04312","value_type":"number"}`,
	`{"kind":"path","path":"navigation.position","meta":{"description":"The position of the vessel in 2 or 3 dimensions (WGS84 datum)"}}`,
	`{"kind":"source","label":"derived-data","source_ref":"derived-data","type":"plugin"}`,
}

// sensorRecords returns n temperature paths, their observations and the
// given number of sources, in canonical order.
func sensorRecords(n, sources int) []string {
	var paths, srcs, obs []string
	for i := 0; i < n; i++ {
		p := fmt.Sprintf("sensors.s%03d.temperature", i)
		paths = append(paths, `{"kind":"path","path":"`+p+`","unit":"K"}`)
		obs = append(obs, fmt.Sprintf(`{"kind":"observation","path":"%s","source_ref":"n2k.%02d","value_type":"number"}`, p, i%sources))
	}
	for k := 0; k < sources; k++ {
		srcs = append(srcs, fmt.Sprintf(`{"kind":"source","label":"n2k","source_ref":"n2k.%02d","type":"NMEA2000"}`, k))
	}
	return append(append(paths, srcs...), obs...)
}

// shuffle returns records in a fixed pseudo-random order: position i takes
// record (i*step) mod n, a permutation when step and n are coprime.
func shuffle(records []string, step int) []string {
	n := len(records)
	out := make([]string, n)
	seen := make(map[int]bool, n)
	for i := range out {
		k := i * step % n
		if seen[k] {
			panic("shuffle: step and length are not coprime")
		}
		seen[k] = true
		out[i] = records[k]
	}
	return out
}

// withObservations adds, to path records given as (path, meta) pairs, one
// source and an observation of each path, in canonical order.
func withObservations(paths [][2]string, source, valueType string) []string {
	var out, obs []string
	for _, p := range paths {
		out = append(out, `{"kind":"path","meta":`+p[1]+`,"path":`+quote(p[0])+`}`)
		obs = append(obs, `{"kind":"observation","path":`+quote(p[0])+`,"source_ref":`+quote(source)+`,"value_type":"`+valueType+`"}`)
	}
	out = append(out, `{"kind":"source","source_ref":`+quote(source)+`}`)
	return append(out, obs...)
}

func stdInput(extra ...field) []field {
	return append([]field{
		{"vessel", Vessel}, {"snapshot", Snapshot}, {"revision", strconv.Itoa(Revision)}, {"discovered-at", DiscoveredAt},
	}, extra...)
}

func okB(name string, records []string) vector {
	v := ok(apiBuild, name, list(records))
	v.input = stdInput()
	return v
}

func failB(name string, records []string, class string, where ...string) vector {
	v := fail(apiBuild, name, list(records), class).at(where...)
	v.input = stdInput()
	return v
}

func (v vector) withInput(key, value string) vector {
	in := append([]field(nil), v.input...)
	for i := range in {
		if in[i].key == key {
			in[i].value = value
			v.input = in
			return v
		}
	}
	v.input = append(in, field{key, value})
	return v
}

// buildInput turns the header of a build vector into an envelope.Input.
func buildInput(fields []field, payload []byte) (envelope.Input, error) {
	var in envelope.Input
	var err error
	for _, f := range fields {
		switch f.key {
		case "vessel":
			in.VesselID, err = uuid.Parse(f.value)
		case "snapshot":
			in.SnapshotID, err = uuid.Parse(f.value)
		case "revision":
			in.Revision, err = strconv.ParseInt(f.value, 10, 64)
		case "discovered-at":
			in.DiscoveredAt, err = time.Parse(time.RFC3339Nano, f.value)
		case "truncated":
			in.Truncated = f.value == "true"
		case "pagination-uncertain":
			in.PaginationUncertain = f.value == "true"
		case "cut":
			if f.value != cutContentDefined && f.value != "greedy" {
				err = fmt.Errorf("unknown cut %q", f.value)
			}
		default:
			err = fmt.Errorf("unknown build input %q", f.key)
		}
		if err != nil {
			return in, err
		}
	}
	in.Records, err = catalog.DecodeList(payload)
	return in, err
}

func buildVector(v vector) (*envelope.Snapshot, error) {
	in, err := buildInput(v.input, v.payload)
	if err != nil {
		return nil, err
	}
	s, err := envelope.Build(in, buildOptions(v.input)...)
	if err != nil {
		return nil, fmt.Errorf("the library rejects a valid vector: %w", err)
	}
	if v.check != nil {
		if err := v.check(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// build builds records (canonical JSON texts) with the standard header.
func build(records []string) (*envelope.Snapshot, error) {
	return buildVector(okB("base", records))
}

// closedBy checks that every chunk but the last was closed by the given
// limit: "records", "body" or "wrapper" (DefaultWrapper).
func closedBy(limit string) func(*envelope.Snapshot) error {
	return func(s *envelope.Snapshot) error {
		if len(s.Chunks) < 2 {
			return fmt.Errorf("want several chunks, got %d", len(s.Chunks))
		}
		for i, c := range s.Chunks[:len(s.Chunks)-1] {
			next := s.Chunks[i+1].Records()[0]
			n := len(c.Records())
			body := c.BodyLen() + 1 + len(next.Canonical())
			var got string
			switch {
			case n == sourcecatalog.MaxRecordsPerChunk:
				got = "records"
			case body > sourcecatalog.MaxChunkBody:
				got = "body"
			default:
				got = "wrapper"
			}
			if got != limit {
				return fmt.Errorf("chunk %d was closed by the %s limit, want %s", i, got, limit)
			}
		}
		return nil
	}
}

// escapeRecords returns path records whose meta is made of quotes and
// backslashes, which canonical JSON escapes once and DefaultWrapper escapes
// again: their wrapped size is about twice their body size.
func escapeRecords(n, pairs int) []string {
	var paths [][2]string
	for i := 0; i < n; i++ {
		paths = append(paths, [2]string{fmt.Sprintf("w.%d", i), `{"e":"` + strings.Repeat(`\\\"`, pairs) + `"}`})
	}
	return withObservations(paths, `s"\\`, "string")
}

func buildVectors() ([]vector, error) {
	body := func(i int) string {
		return fmt.Sprintf(`{"description":"Temperature sensor %d","notes":"%s"}`, i, strings.Repeat("lorem ipsum dolor sit amet ", 110))
	}
	var bigPaths [][2]string
	for i := 0; i < 6; i++ {
		bigPaths = append(bigPaths, [2]string{fmt.Sprintf("environment.inside.zone%d.temperature", i), body(i)})
	}

	// One record that fits a chunk body alone but not its wrapped request:
	// 8150 backslashes are 16300 canonical bytes and 32600 wrapped.
	wrapOnly := `{"kind":"path","path":"a","meta":{"s":"` + strings.Repeat(`\\`, 8150) + `"}}`
	if r, err := catalog.Decode([]byte(wrapOnly)); err != nil || len(r.Canonical())+len(`{"records":[]}`) > sourcecatalog.MaxChunkBody {
		return nil, fmt.Errorf("record-too-large-wrapped: the record must fit the body limit alone")
	}

	unicode := []string{
		`{"kind":"path","path":"environment.water.\ud83c\udf0a.temperature","unit":"K","meta":{"displayName":"Wasser \ud83c\udf0a","description":"line\u2028separator, paragraph\u2029separator","bell":"\u0007","nul":"\u0000","quotes":"\"q\" \\ \/","A\u030a":"decomposed","\u00c5":"precomposed"}}`,
		`{"kind":"path","path":"\u00e9t\u00e9.\u2028.\"quoted\".\\","unit":null}`,
		`{"kind":"source","source_ref":"ttyUSB0.\ud83d\udef0\ufe0f \"GPS\"","label":"\u0000\u001f\u007f\u0085","type":"NMEA0183","meta":{"\ud83d\ude00":"grin","\ue000":"private use"}}`,
		`{"kind":"observation","path":"environment.water.\ud83c\udf0a.temperature","source_ref":"ttyUSB0.\ud83d\udef0\ufe0f \"GPS\"","value_type":"number"}`,
		`{"kind":"observation","path":"\u00e9t\u00e9.\u2028.\"quoted\".\\","source_ref":"ttyUSB0.\ud83d\udef0\ufe0f \"GPS\"","value_type":"object"}`,
	}

	return []vector{
		okB("empty-snapshot", nil).
			note("an empty snapshot is one chunk with no records"),
		okB("single-chunk", smallRecords),
		okB("single-chunk-shuffled", smallShuffled).
			note("the records of single-chunk in another order and spelling: every hash is the same"),
		okB("unicode-and-escapes", unicode).
			note("non-BMP characters, U+2028, control characters, quotes and backslashes in identifiers and meta"),
		okB("exactly-100-records", sensorRecords(49, 2)).
			note("100 records fit one chunk"),
		okB("101-records", sensorRecords(50, 1)).
			note("the 101st record opens a second chunk").checked(closedBy("records")),
		okB("multi-chunk-record-limit", shuffle(sensorRecords(120, 12), 101)).
			note("252 records in shuffled order, cut by the 100-record limit").checked(closedBy("records")),
		okB("multi-chunk-body-limit", withObservations(bigPaths, "n2k.1", "number")).
			note("records with large meta, cut by the 16,384-byte body limit").checked(closedBy("body")),
		okB("multi-chunk-wrapper-limit", escapeRecords(10, 500)).
			note("escape-heavy meta: DefaultWrapper's second escaping, not the body limit, closes the chunks").
			checked(closedBy("wrapper")),
		okB("record-order-bytewise", []string{
			`{"kind":"observation","path":"x.\ue000","source_ref":"s","value_type":"string"}`,
			`{"kind":"path","path":"x.\ud800\udc00"}`,
			`{"kind":"path","path":"x.Z"}`,
			`{"kind":"observation","path":"x.\ud800\udc00","source_ref":"s","value_type":"string"}`,
			`{"kind":"path","path":"x.\ue000"}`,
			`{"kind":"source","source_ref":"s"}`,
			`{"kind":"observation","path":"x.Z","source_ref":"s","value_type":"string"}`,
			`{"kind":"observation","path":"x.a","source_ref":"s","value_type":"string"}`,
			`{"kind":"path","path":"x.a"}`,
		}).note("records sort by the bytes of path and source_ref: x.Z, x.a, x.U+E000, x.U+10000",
			"(JSON member names sort by UTF-16 instead, which would put U+10000 before U+E000)"),
		okB("revision-max-fractional-time", smallRecords).
			withInput("revision", "9007199254740991").withInput("discovered-at", "2026-05-01T12:00:00.125Z").
			note("revision 2^53-1; the timestamp keeps its fraction of a second"),

		// The scan.
		failB("truncated-scan", smallRecords, "incomplete-scan", "none").withInput("truncated", "true"),
		failB("pagination-uncertain", smallRecords, "incomplete-scan", "none").withInput("pagination-uncertain", "true"),

		// The header.
		failB("revision-zero", smallRecords, "invalid-value", "field=revision").withInput("revision", "0"),
		failB("revision-2p53", smallRecords, "invalid-value", "field=revision").withInput("revision", "9007199254740992"),
		failB("snapshot-not-v4", smallRecords, "invalid-value", "field=snapshot_id").
			withInput("snapshot", "8d3f2a61-4b7c-1e9d-a1f0-2c6b5e7d9a38").note("snapshot_id must be a random (version 4) UUID"),
		failB("vessel-nil", smallRecords, "invalid-value", "field=vessel_id").
			withInput("vessel", "00000000-0000-0000-0000-000000000000"),

		// Integrity. Record indexes are positions in the payload array.
		failB("duplicate-path", []string{
			`{"kind":"observation","path":"a","source_ref":"s","value_type":"number"}`,
			`{"kind":"path","path":"a","unit":"m"}`,
			`{"kind":"source","source_ref":"s"}`,
			`{"kind":"path","path":"a","unit":null}`,
		}, "integrity", "record=3 field=path").note("the later of the two duplicates in input order is reported"),
		failB("duplicate-source", []string{
			`{"kind":"path","path":"a"}`,
			`{"kind":"source","source_ref":"s","label":"x"}`,
			`{"kind":"source","source_ref":"s","label":"y"}`,
			`{"kind":"observation","path":"a","source_ref":"s","value_type":"number"}`,
		}, "integrity", "record=2 field=source_ref"),
		failB("two-observations-one-path", []string{
			`{"kind":"observation","path":"a","source_ref":"s2","value_type":"number"}`,
			`{"kind":"path","path":"a"}`,
			`{"kind":"source","source_ref":"s2"}`,
			`{"kind":"observation","path":"a","source_ref":"s1","value_type":"number"}`,
			`{"kind":"source","source_ref":"s1"}`,
		}, "integrity", "record=0 field=path").
			note("selected-only: one observation per path; the one whose source_ref sorts later is reported"),
		failB("observation-of-unknown-path", []string{
			`{"kind":"path","path":"a"}`,
			`{"kind":"source","source_ref":"s"}`,
			`{"kind":"observation","path":"a","source_ref":"s","value_type":"number"}`,
			`{"kind":"observation","path":"b","source_ref":"s","value_type":"number"}`,
		}, "integrity", "record=3 field=path"),
		failB("observation-of-unknown-source", []string{
			`{"kind":"path","path":"a"}`,
			`{"kind":"source","source_ref":"s"}`,
			`{"kind":"observation","path":"a","source_ref":"t","value_type":"number"}`,
		}, "integrity", "record=2 field=source_ref", "record=1 field=source_ref").
			note("two problems: the observation does not resolve and the source is not referenced"),
		failB("unreferenced-source", append(append(append([]string(nil), smallShuffled[:4]...),
			`{"kind":"source","source_ref":"spare.0","label":"spare"}`), smallShuffled[4:]...),
			"integrity", "record=4 field=source_ref"),
		failB("path-without-observation", []string{
			`{"kind":"path","path":"a"}`,
			`{"kind":"path","path":"b"}`,
			`{"kind":"source","source_ref":"s"}`,
			`{"kind":"observation","path":"a","source_ref":"s","value_type":"number"}`,
		}, "integrity", "record=1 field=path"),

		// A record that cannot fit alone in a chunk.
		failB("record-too-large-body", []string{
			`{"kind":"source","source_ref":"s"}`,
			`{"kind":"observation","path":"big","source_ref":"s","value_type":"string"}`,
			`{"kind":"path","path":"big","meta":{"text":"` + strings.Repeat("x", 16400) + `"}}`,
		}, "record-too-large", "record=2").note("the record alone exceeds the 16,384-byte body limit"),
		failB("record-too-large-wrapped", []string{
			`{"kind":"observation","path":"a","source_ref":"s","value_type":"string"}`,
			wrapOnly,
			`{"kind":"source","source_ref":"s"}`,
		}, "record-too-large", "record=1").
			note("the record fits the body limit but its DefaultWrapper request exceeds 32,768 bytes"),
	}, nil
}
