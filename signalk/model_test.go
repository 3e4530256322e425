package signalk

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/catalog"
)

// model wraps a self vessel's tree and a sources tree in a full model.
func model(self, sources string) string {
	return `{"self":"vessels.urn:mrn:signalk:uuid:c0d79334-4e25-4245-8892-54e8ccc8021d","version":"1.7.0",` +
		`"vessels":{"urn:mrn:signalk:uuid:c0d79334-4e25-4245-8892-54e8ccc8021d":` + self +
		`,"urn:mrn:imo:mmsi:230035780":{"navigation":{"speedOverGround":{"value":1,"$source":"ais.43","timestamp":"2026-12-01T21:00:00.000Z"}}}}` +
		`,"sources":` + sources + `}`
}

const twoBuses = `{"n2k":{"label":"n2k","type":"NMEA2000",
	"115":{"n2k":{"src":"115","canName":"c07991002fb0c980","manufacturerCode":"Airmar","productName":"DST800","pgns":{"128267":"2026-12-01T21:00:00.000Z"},"unknownPGNs":{}}},
	"160":{"n2k":{"src":"160","pgns":{"129025":"2026-12-01T21:00:00.000Z"}}}},
	"0183":{"label":"0183","type":"NMEA0183","GP":{"talker":"GP","sentences":{"RMC":"2026-12-01T21:00:00.000Z","GLL":"2026-12-01T21:00:01.000Z"}}},
	"defaults":{}}`

func leaf(value, source, extra string) string {
	s := `{"value":` + value + `,"$source":"` + source + `","timestamp":"2026-12-01T21:00:00.000Z"`
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

// canonicalRecords renders records one per line.
func canonicalRecords(rs []*catalog.Record) string {
	var b strings.Builder
	for _, r := range rs {
		b.Write(r.Canonical())
		b.WriteByte('\n')
	}
	return b.String()
}

func TestMap(t *testing.T) {
	depth := leaf("3.2", "n2k.115", `"meta":{"units":"m","description":"Depth","displayUnits":{"symbol":"ft"}},"pgn":128267`)
	sog := leaf("3.64", "n2k.160", `"meta":{"units":"m/s"},"values":{"n2k.160":{"value":3.64,"pgn":129026,"timestamp":"x"},"0183.GP":{"value":3.5,"sentence":"RMC","timestamp":"y"}}`)
	sogFlapped := leaf("3.5", "0183.GP", `"meta":{"units":"m/s"},"values":{"n2k.160":{"value":3.64,"pgn":129026,"timestamp":"x"},"0183.GP":{"value":3.5,"sentence":"RMC","timestamp":"y"}}`)
	tests := []struct {
		name  string
		model string
		sel   Selection
		want  string
	}{{
		name:  "units, meta and the dropped members",
		model: model(`{"uuid":"urn:x","name":"Aava","environment":{"depth":{"belowTransducer":`+depth+`}}}`, twoBuses),
		want: `{"kind":"path","meta":{"description":"Depth"},"path":"environment.depth.belowTransducer","unit":"m"}
{"kind":"source","label":"n2k","meta":{"n2k":{"canName":"c07991002fb0c980","manufacturerCode":"Airmar","productName":"DST800"}},"source_ref":"n2k.115","type":"NMEA2000"}
{"kind":"observation","path":"environment.depth.belowTransducer","source_ref":"n2k.115","value_type":"number"}
`,
	}, {
		name:  "no unit for strings and booleans, unknown for the rest",
		model: model(`{"a":{"s":`+leaf(`"GPS"`, "n2k.160", "")+`,"b":`+leaf("true", "n2k.160", "")+`,"n":`+leaf("10", "n2k.160", `"meta":{"description":"count"}`)+`,"o":`+leaf(`{"x":1}`, "n2k.160", "")+`}}`, twoBuses),
		want: `{"kind":"path","path":"a.b","unit":null}
{"kind":"path","meta":{"description":"count"},"path":"a.n"}
{"kind":"path","path":"a.o"}
{"kind":"path","path":"a.s","unit":null}
{"kind":"source","label":"n2k","source_ref":"n2k.160","type":"NMEA2000"}
{"kind":"observation","path":"a.b","source_ref":"n2k.160","value_type":"boolean"}
{"kind":"observation","path":"a.n","source_ref":"n2k.160","value_type":"number"}
{"kind":"observation","path":"a.o","source_ref":"n2k.160","value_type":"object"}
{"kind":"observation","path":"a.s","source_ref":"n2k.160","value_type":"string"}
`,
	}, {
		name:  "lowest ref among live sources",
		model: model(`{"navigation":{"speedOverGround":`+sog+`}}`, twoBuses),
		want: `{"kind":"path","path":"navigation.speedOverGround","unit":"m/s"}
{"kind":"source","label":"0183","meta":{"sentences":["GLL","RMC"],"talker":"GP"},"source_ref":"0183.GP","type":"NMEA0183"}
{"kind":"observation","path":"navigation.speedOverGround","source_ref":"0183.GP","value_type":"number"}
`,
	}, {
		name:  "lowest ref whichever source wrote last",
		model: model(`{"navigation":{"speedOverGround":`+sogFlapped+`}}`, twoBuses),
		want: `{"kind":"path","path":"navigation.speedOverGround","unit":"m/s"}
{"kind":"source","label":"0183","meta":{"sentences":["GLL","RMC"],"talker":"GP"},"source_ref":"0183.GP","type":"NMEA0183"}
{"kind":"observation","path":"navigation.speedOverGround","source_ref":"0183.GP","value_type":"number"}
`,
	}, {
		name:  "the server's selection",
		sel:   SelectServer,
		model: model(`{"navigation":{"speedOverGround":`+sog+`}}`, twoBuses),
		want: `{"kind":"path","path":"navigation.speedOverGround","unit":"m/s"}
{"kind":"source","label":"n2k","source_ref":"n2k.160","type":"NMEA2000"}
{"kind":"observation","path":"navigation.speedOverGround","source_ref":"n2k.160","value_type":"number"}
`,
	}, {
		name:  "the server's selection while it is not live",
		sel:   SelectServer,
		model: model(`{"p":`+leaf("null", "n2k.160", `"values":{"n2k.160":{"value":null},"n2k.115":{"value":2}}`)+`}`, twoBuses),
		want: `{"kind":"path","path":"p"}
{"kind":"source","label":"n2k","meta":{"n2k":{"canName":"c07991002fb0c980","manufacturerCode":"Airmar","productName":"DST800"}},"source_ref":"n2k.115","type":"NMEA2000"}
{"kind":"observation","path":"p","source_ref":"n2k.115","value_type":"number"}
`,
	}, {
		name:  "a null value is no live source",
		model: model(`{"p":`+leaf("null", "n2k.160", `"state":{"timedOut":true}`)+`,"q":`+leaf("1", "n2k.160", "")+`}`, twoBuses),
		want: `{"kind":"path","path":"q"}
{"kind":"source","label":"n2k","source_ref":"n2k.160","type":"NMEA2000"}
{"kind":"observation","path":"q","source_ref":"n2k.160","value_type":"number"}
`,
	}, {
		name:  "a position with a null altitude",
		model: model(`{"navigation":{"position":`+leaf(`{"latitude":60.1,"longitude":24.9,"altitude":null}`, "0183.GP", "")+`}}`, twoBuses),
		want: `{"kind":"path","path":"navigation.position"}
{"kind":"source","label":"0183","meta":{"sentences":["GLL","RMC"],"talker":"GP"},"source_ref":"0183.GP","type":"NMEA0183"}
{"kind":"observation","path":"navigation.position","source_ref":"0183.GP","value_type":"position"}
`,
	}, {
		name:  "an object of nulls only",
		model: model(`{"p":`+leaf(`{"a":null}`, "n2k.160", "")+`}`, twoBuses),
		want: `{"kind":"path","path":"p"}
{"kind":"source","label":"n2k","source_ref":"n2k.160","type":"NMEA2000"}
{"kind":"observation","path":"p","source_ref":"n2k.160","value_type":"object"}
`,
	}, {
		name:  "a CAN name ref, a label with dots, a provider source",
		model: model(`{"a":`+leaf("1", "n2k.c07991002fb0c980", "")+`,"b":`+leaf("2", "my.bus.II", "")+`,"c":`+leaf("3", "defaults", "")+`,"d":`+leaf("4", "derived-data", "")+`}`, `{"n2k":{"label":"n2k","type":"NMEA2000","115":{"n2k":{"src":"115","canName":"c07991002fb0c980"}}},"my.bus":{"label":"my.bus","type":"NMEA0183","II":{"talker":"II"}},"defaults":{},"derived-data":{"label":"derived-data","type":"plugin","version":"1.2"}}`),
		want: `{"kind":"path","path":"a"}
{"kind":"path","path":"b"}
{"kind":"path","path":"c"}
{"kind":"path","path":"d"}
{"kind":"source","source_ref":"defaults"}
{"kind":"source","label":"derived-data","meta":{"version":"1.2"},"source_ref":"derived-data","type":"plugin"}
{"kind":"source","label":"my.bus","meta":{"talker":"II"},"source_ref":"my.bus.II","type":"NMEA0183"}
{"kind":"source","label":"n2k","meta":{"n2k":{"canName":"c07991002fb0c980"}},"source_ref":"n2k.c07991002fb0c980","type":"NMEA2000"}
{"kind":"observation","path":"a","source_ref":"n2k.c07991002fb0c980","value_type":"number"}
{"kind":"observation","path":"b","source_ref":"my.bus.II","value_type":"number"}
{"kind":"observation","path":"c","source_ref":"defaults","value_type":"number"}
{"kind":"observation","path":"d","source_ref":"derived-data","value_type":"number"}
`,
	}, {
		name:  "nothing selected",
		model: model(`{"uuid":"urn:x","design":{"length":{"meta":{"units":"m"}}}}`, `{}`),
		want:  ``,
	}, {
		name:  "self as a bare key",
		model: strings.Replace(model(`{"p":`+leaf("1", "defaults", "")+`}`, twoBuses), `"self":"vessels.`, `"self":"`, 1),
		want: `{"kind":"path","path":"p"}
{"kind":"source","source_ref":"defaults"}
{"kind":"observation","path":"p","source_ref":"defaults","value_type":"number"}
`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := Map([]byte(tt.model), tt.sel)
			require.NoError(t, err)
			require.Equal(t, tt.want, canonicalRecords(rs))
			require.True(t, catalog.IsSorted(rs))
			if len(rs) > 0 {
				require.NoError(t, catalog.Check(rs))
			}
		})
	}
}

func TestMapRefuses(t *testing.T) {
	ok := leaf("1", "n2k.160", "")
	tests := []struct {
		name   string
		model  string
		reason Reason
		class  error // when not a ScanError
		where  string
	}{
		{"not JSON", `{"self":`, ReasonJSON, nil, ""},
		{"duplicate names", `{"self":"a","self":"b"}`, ReasonJSON, nil, ""},
		{"too deep", strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000), ReasonJSON, nil, ""},
		{"not an object", `[1]`, ReasonModel, nil, ""},
		{"no self", `{"vessels":{}}`, ReasonSelf, nil, "self"},
		{"self not a string", `{"self":1,"vessels":{}}`, ReasonSelf, nil, "self"},
		{"self names nothing", strings.Replace(model(`{}`, twoBuses), `"self":"vessels.urn`, `"self":"vessels.urn:other`, 1), ReasonSelf, nil, "self"},
		{"self not an object", strings.Replace(model(`{}`, twoBuses), `"urn:mrn:signalk:uuid:c0d79334-4e25-4245-8892-54e8ccc8021d":{}`, `"urn:mrn:signalk:uuid:c0d79334-4e25-4245-8892-54e8ccc8021d":[]`, 1), ReasonSelf, nil, "self"},
		{"vessels not an object", `{"self":"vessels.a","vessels":[]}`, ReasonSelf, nil, "vessels"},
		{"sources not an object", model(`{"p":`+ok+`}`, `[]`), ReasonModel, nil, "sources"},
		{"no sources tree", `{"self":"a","vessels":{"a":{"p":` + ok + `}}}`, ReasonSource, nil, "source n2k.160"},
		{"a $source naming nothing", model(`{"p":`+leaf("1", "n2k.99", "")+`}`, twoBuses), ReasonSource, nil, "source n2k.99"},
		{"an ambiguous ref", model(`{"p":`+leaf("1", "a.b.c", "")+`}`, `{"a":{"b.c":{}},"a.b":{"c":{}}}`), ReasonSource, nil, "source a.b.c"},
		{"two devices with one CAN name", model(`{"p":`+leaf("1", "n.c0", "")+`}`, `{"n":{"1":{"n2k":{"canName":"c0"}},"2":{"n2k":{"canName":"c0"}}}}`), ReasonSource, nil, "source n.c0"},
		{"no $source", model(`{"p":{"value":1}}`, twoBuses), ReasonModel, nil, "p"},
		{"$source not a string", model(`{"p":{"value":1,"$source":7}}`, twoBuses), ReasonModel, nil, "p"},
		{"empty $source", model(`{"p":{"value":1,"$source":""}}`, twoBuses), ReasonModel, nil, "p"},
		{"values not an object", model(`{"p":`+leaf("1", "n2k.160", `"values":[]`)+`}`, twoBuses), ReasonModel, nil, "p"},
		{"a values entry without value", model(`{"p":`+leaf("1", "n2k.160", `"values":{"n2k.160":{}}`)+`}`, twoBuses), ReasonModel, nil, "p"},
		{"meta not an object", model(`{"p":`+leaf("1", "n2k.160", `"meta":"m"`)+`}`, twoBuses), ReasonModel, nil, "p"},
		{"units not a string", model(`{"p":`+leaf("1", "n2k.160", `"meta":{"units":1}`)+`}`, twoBuses), ReasonModel, nil, "p"},
		{"empty units", model(`{"p":`+leaf("1", "n2k.160", `"meta":{"units":""}`)+`}`, twoBuses), ReasonModel, nil, "p"},
		{"a member name with a dot", model(`{"a.b":`+ok+`}`, twoBuses), ReasonModel, nil, "a.b"},
		{"a label not a string", model(`{"p":`+ok+`}`, `{"n2k":{"label":1,"160":{}}}`), ReasonModel, nil, "source n2k.160"},
		{"a type not a string", model(`{"p":`+ok+`}`, `{"n2k":{"type":[],"160":{}}}`), ReasonModel, nil, "source n2k.160"},
		{"sentences not an object", model(`{"p":`+leaf("1", "b.GP", "")+`}`, `{"b":{"GP":{"sentences":[]}}}`), ReasonModel, nil, "source b.GP"},
		{"an empty member name", model(`{"a":{"":`+ok+`}}`, twoBuses), "", sourcecatalog.ErrInvalidValue, ""},
		{"a path too long", model(`{"`+strings.Repeat("a", 513)+`":`+ok+`}`, twoBuses), "", sourcecatalog.ErrLimitExceeded, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := Map([]byte(tt.model), SelectLowestRef)
			require.Error(t, err)
			require.Nil(t, rs)
			if tt.class != nil {
				require.ErrorIs(t, err, tt.class)
				require.Equal(t, tt.class, sourcecatalog.Class(err), "exactly one class: %v", err)
				return
			}
			var se *ScanError
			require.ErrorAs(t, err, &se)
			require.Equal(t, tt.reason, se.Reason, "%v", err)
			require.Equal(t, tt.where, se.Where)
			require.Equal(t, sourcecatalog.ErrIncompleteScan, sourcecatalog.Class(err), "exactly one class: %v", err)
		})
	}
}

// TestMapLimit: more records than a snapshot holds is the library's limit
// error, never a truncated list.
func TestMapLimit(t *testing.T) {
	for _, n := range []int{sourcecatalog.MaxRecords/2 - 1, sourcecatalog.MaxRecords / 2} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			rs, err := Map(syntheticModel(n), SelectLowestRef)
			if n == sourcecatalog.MaxRecords/2 { // n paths, n observations and a source
				require.ErrorIs(t, err, sourcecatalog.ErrLimitExceeded)
				require.Equal(t, sourcecatalog.ErrLimitExceeded, sourcecatalog.Class(err))
				require.Nil(t, rs)
				return
			}
			require.NoError(t, err)
			require.Len(t, rs, 2*n+1)
		})
	}
}

// syntheticModel is a full model whose self has n number paths from one
// N2K device, each with Signal K's usual meta: the cells of battery banks,
// 128 to a bank, keyed as a server writes them (in numeric order, which is
// not canonical order).
func syntheticModel(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"self":"vessels.urn:mrn:signalk:uuid:c0d79334-4e25-4245-8892-54e8ccc8021d","version":"1.7.0","vessels":{"urn:mrn:signalk:uuid:c0d79334-4e25-4245-8892-54e8ccc8021d":{"uuid":"urn:mrn:signalk:uuid:c0d79334-4e25-4245-8892-54e8ccc8021d","electrical":{"batteries":{`)
	const perBank = 128
	for i := range n {
		switch {
		case i == 0:
			b.WriteString(`"0":{"cells":{`)
		case i%perBank == 0:
			fmt.Fprintf(&b, `}},"%d":{"cells":{`, i/perBank)
		default:
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%d":{"voltage":{"meta":{"units":"V","description":"Voltage measured at or as close as possible to the device","displayUnits":{"category":"voltage","targetUnit":"V","formula":"value","inverseFormula":"value","symbol":"V","displayFormat":"0.00"}},"value":%d.25,"$source":"can0.c07991002fb0c980","timestamp":"2026-12-01T21:09:31.087Z","pgn":127508}}`, i%perBank, 3+i%2)
	}
	if n > 0 {
		b.WriteString(`}}`)
	}
	b.WriteString(`}}}},"sources":{"can0":{"label":"can0","type":"NMEA2000","35":{"n2k":{"src":"35","canName":"c07991002fb0c980","manufacturerCode":"Victron","productName":"BMV-712","pgns":{"127508":"2026-12-01T21:09:31.087Z"}}}}}}`)
	return []byte(b.String())
}

func TestParseSelection(t *testing.T) {
	for _, s := range []Selection{SelectLowestRef, SelectServer} {
		got, err := ParseSelection(s.String())
		require.NoError(t, err)
		require.Equal(t, s, got)
	}
	_, err := ParseSelection("newest")
	require.ErrorIs(t, err, sourcecatalog.ErrInvalidValue)
	require.Equal(t, "Selection(7)", Selection(7).String())
}

func TestScanErrorText(t *testing.T) {
	e := &ScanError{Reason: ReasonSource, Where: "source n2k.9", Detail: "the sources tree does not list it", Err: errors.New("cause")}
	require.Equal(t, "signalk: incomplete scan at source n2k.9: the sources tree does not list it: cause", e.Error())
	require.ErrorIs(t, e, sourcecatalog.ErrIncompleteScan)
	long := strings.Repeat("é", 300)
	require.LessOrEqual(t, len(truncate(long)), 203)
	require.True(t, strings.HasSuffix(truncate(long), "…"))
}

// TestMapWithinAgeBound: under an age bound a value older than the bound
// is not live whatever its type, each candidate by its own timestamp,
// except on event-driven paths; a live value needs an RFC 3339 timestamp.
func TestMapWithinAgeBound(t *testing.T) {
	ref := time.Date(2026, 12, 1, 21, 5, 0, 0, time.UTC)
	age := AgeBound{Now: ref, MaxAge: 5 * time.Minute}
	stamped := func(value, source, clock, extra string) string {
		return strings.Replace(leaf(value, source, extra), "21:00:00.000Z", clock+".000Z", 1)
	}
	observed := func(rs []*catalog.Record) map[string]string {
		got := map[string]string{}
		for _, r := range rs {
			if o, ok := r.AsObservation(); ok {
				got[o.Path] = o.SourceRef
			}
		}
		return got
	}
	m := model(`{"design":{"length":`+stamped(`{"overall":11.3}`, "defaults", "20:00:00", "")+`},`+
		`"gnss":{"type":`+stamped(`"GPS"`, "n2k.115", "20:59:59", "")+`,"fixed":`+stamped("true", "n2k.115", "20:59:59", "")+`},`+
		`"depth":`+stamped("4.2", "n2k.160", "21:00:00", "")+`,`+
		`"sog":`+stamped("3.6", "n2k.160", "21:04:00", `"values":{"n2k.160":{"value":3.6,"timestamp":"2026-12-01T21:04:00.000Z"},"0183.GP":{"value":3.5,"timestamp":"2026-12-01T20:59:00.000Z"}}`)+`}`, twoBuses)
	rs, err := MapWithin([]byte(m), SelectLowestRef, age)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"design.length": "defaults", "depth": "n2k.160", "sog": "n2k.160"}, observed(rs),
		"the silent n2k.115's string and boolean and the stale 0183.GP leave; design is event-driven; at the bound is live")

	rs, err = Map([]byte(m), SelectLowestRef)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"design.length": "defaults", "gnss.type": "n2k.115", "gnss.fixed": "n2k.115", "depth": "n2k.160", "sog": "0183.GP"}, observed(rs),
		"without a bound every value that is not null is live")

	// The server rule reads every candidate's timestamp, also those after
	// $source (n2k.99 sorts after n2k.160).
	for name, tt := range map[string]struct {
		leaf string
		sel  Selection
	}{
		"no timestamp":             {`{"value":1,"$source":"n2k.160"}`, SelectLowestRef},
		"a timestamp not a string": {`{"value":1,"$source":"n2k.160","timestamp":1}`, SelectLowestRef},
		"not RFC 3339":             {`{"value":1,"$source":"n2k.160","timestamp":"2026-12-01 21:00:00"}`, SelectLowestRef},
		"an entry without one":     {stamped("1", "n2k.160", "21:04:00", `"values":{"n2k.160":{"value":1,"timestamp":"2026-12-01T21:04:00.000Z"},"n2k.99":{"value":2}}`), SelectServer},
	} {
		t.Run(name, func(t *testing.T) {
			rs, err := MapWithin([]byte(model(`{"p":`+tt.leaf+`}`, twoBuses)), tt.sel, age)
			require.Nil(t, rs)
			var se *ScanError
			require.ErrorAs(t, err, &se)
			require.Equal(t, ReasonModel, se.Reason, "%v", err)
			require.Equal(t, "p", se.Where)
			_, err = MapWithin([]byte(model(`{"p":`+tt.leaf+`}`, twoBuses)), tt.sel, AgeBound{})
			require.NoError(t, err, "without a bound the timestamp is not read")
		})
	}
	_, err = MapWithin([]byte(m), SelectLowestRef, AgeBound{Now: ref, MaxAge: -1})
	require.ErrorIs(t, err, sourcecatalog.ErrInvalidValue)
}

// TestEventDriven: the event-driven prefixes match whole path segments.
func TestEventDriven(t *testing.T) {
	for path, want := range map[string]bool{"design": true, "design.length": true, "designer": false,
		"navigation.course.nextPoint": true, "navigation.courseOverGroundTrue": false, "notifications.mob": true, "environment.depth": false} {
		require.Equal(t, want, eventDriven([]byte(path)), path)
	}
}
