package vectors

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/yachtmemory/sourcecatalog/signalk"
)

// skFixture reads a capture of a real signalk-server from signalk/testdata.
func skFixture(name string) (string, error) {
	_, here, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "..", "..", "signalk", "testdata", name))
	return string(b), err
}

// The Signal K vectors map a full model (GET /signalk/v1/api/) to records
// (SPEC.md §12). Their payloads are small models in signalk-server's
// shape: the self vessel, one AIS target the mapping must ignore, and a
// sources tree.

const skSelf = "urn:mrn:signalk:uuid:c0d79334-4e25-4245-8892-54e8ccc8021d"

// skModel returns a full model with self's tree and the sources tree.
func skModel(self, sources string) string {
	return `{"self":"vessels.` + skSelf + `","version":"2.32.0","vessels":{"` + skSelf + `":` + self +
		`,"urn:mrn:imo:mmsi:230035780":{"mmsi":"230035780","navigation":{"speedOverGround":{"value":5.1,"$source":"n2k.43","timestamp":"2026-12-01T21:00:00.000Z","pgn":129039}}}}` +
		`,"sources":` + sources + `}`
}

// skLeaf returns a value object of source with extra members.
func skLeaf(value, source string, extra ...string) string {
	s := `{"value":` + value + `,"$source":"` + source + `","timestamp":"2026-12-01T21:00:00.000Z"`
	for _, e := range extra {
		s += "," + e
	}
	return s + "}"
}

// skSources is a sources tree with an NMEA 2000 bus of two devices and an
// NMEA 0183 talker.
const skSources = `{"n2k":{"label":"n2k","type":"NMEA2000",` +
	`"115":{"n2k":{"src":"115","canName":"c07991002fb0c980","uniqueNumber":1015831,"manufacturerCode":"Airmar","deviceFunction":130,"deviceClass":"External Environment","deviceInstance":0,"industryGroup":"Marine","productCode":1919,"modelId":"DST800","softwareVersionCode":"2.7","modelVersion":"","modelSerialCode":"258811","certificationLevel":1,"loadEquivalency":1,"pgns":{"128259":"2026-12-01T21:00:00.101Z","128267":"2026-12-01T21:00:00.202Z"},"unknownPGNs":{"130823":{"pgn":130823,"timestamp":"2026-12-01T21:00:00.303Z"}}}},` +
	`"160":{"n2k":{"src":"160","pgns":{"129025":"2026-12-01T21:00:00.404Z"}}}},` +
	`"0183":{"label":"0183","type":"NMEA0183","GP":{"talker":"GP","sentences":{"RMC":"2026-12-01T21:00:00.505Z","GLL":"2026-12-01T21:00:00.606Z","GSV":"2026-12-01T21:00:00.707Z"}}},` +
	`"defaults":{}}`

// signalkVectors map a Signal K full model to records (signalk.Map).
func signalkVectors() ([]vector, error) {
	okS := func(name, selection, payload string) vector {
		v := ok(apiSignalK, name, payload)
		v.input = []field{{"selection", selection}}
		return v
	}
	badS := func(name, reason, payload string) vector {
		v := fail(apiSignalK, name, payload, "incomplete-scan")
		v.input = []field{{"selection", "lowest-ref"}, {"reason", reason}}
		return v
	}
	sog := func(server string) string {
		return skLeaf("3.64", server, `"meta":{"units":"m/s","description":"Speed over ground"}`,
			`"values":{"n2k.160":{"value":3.64,"pgn":129026,"timestamp":"2026-12-01T21:00:00.100Z"},"0183.GP":{"value":3.5,"sentence":"RMC","timestamp":"2026-12-01T21:00:00.200Z"}}`)
	}
	sample, err := skFixture("full-both-nopriority-1.json")
	if err != nil {
		return nil, err
	}
	canName, err := skFixture("full-usecanname.json")
	if err != nil {
		return nil, err
	}
	return []vector{
		// §12.1 The sample boat, as a real server serves it.
		okS("sample-boat", "lowest-ref", sample).
			note("signalk-server 2.32.0 playing its bundled NMEA 2000 and NMEA 0183 samples, no source priorities (signalk/testdata)"),
		okS("sample-boat-server-selection", "server", sample),
		okS("sample-boat-can-names", "lowest-ref", canName).
			note("the same with useCanName on the NMEA 2000 provider"),

		// §12.3 Paths.
		okS("units-and-meta", "lowest-ref", skModel(`{"uuid":"`+skSelf+`","name":"Aava","mmsi":"230099999",`+
			`"environment":{"depth":{"belowTransducer":`+skLeaf("4.2", "n2k.115", `"meta":{"units":"m","description":"Depth below Transducer","displayUnits":{"category":"depth","targetUnit":"ft","formula":"value * 3.28084","symbol":"ft"}}`, `"pgn":128267`)+`}},`+
			`"navigation":{"gnss":{"type":`+skLeaf(`"GPS"`, "n2k.160", `"meta":{"description":"Fix type"}`)+`,"satellites":`+skLeaf("10", "n2k.160", `"meta":{"description":"Number of satellites"}`)+`},`+
			`"anchor":{"maxRadius":{"meta":{"units":"m"}}}},`+
			`"electrical":{"switches":{"anchorLight":{"state":`+skLeaf("true", "n2k.160", `"meta":{"units":"bool"}`)+`}}}}`, skSources)).
			note("meta.units becomes the unit and leaves meta with displayUnits; without units a string or boolean has no unit (null), a number an unknown one (absent)",
				"uuid, name and mmsi are static properties, not paths; a meta-only node (anchor.maxRadius) has no value and is no path"),
		okS("self-bare-key", "lowest-ref", strings.Replace(skModel(`{"p":`+skLeaf("1", "defaults")+`}`, skSources), `"self":"vessels.`, `"self":"`, 1)).
			note("self may name the vessel's key without the vessels. prefix"),
		badS("self-names-nothing", "self", strings.Replace(skModel(`{}`, skSources), `"self":"vessels.urn`, `"self":"vessels.urn:other`, 1)).
			note("self must name an object of vessels"),
		badS("self-missing", "self", `{"vessels":{},"sources":{}}`),
		badS("member-name-with-dot", "model", skModel(`{"environment":{"wind.speed":`+skLeaf("1", "n2k.115")+`}}`, skSources)).
			note("a member name with a dot would make the path ambiguous"),
		badS("units-not-a-string", "model", skModel(`{"p":`+skLeaf("1", "n2k.115", `"meta":{"units":1}`)+`}`, skSources)),

		// §12.4 Live sources and the selected source.
		okS("null-is-not-live", "lowest-ref", skModel(`{"environment":{"depth":{"belowKeel":`+skLeaf("null", "n2k.115", `"state":{"timedOut":true,"lastValue":{"value":3.1,"timestamp":"2026-12-01T20:58:00.000Z"}}`)+`,"belowTransducer":`+skLeaf("4.2", "n2k.115")+`}}}`, skSources)).
			note("a value of null is no live source: belowKeel, timed out, is not currently observed"),
		okS("lowest-ref", "lowest-ref", skModel(`{"navigation":{"speedOverGround":`+sog("n2k.160")+`}}`, skSources)).
			note("two live sources: the bytewise smallest ref is selected, not the server's $source"),
		okS("lowest-ref-after-flap", "lowest-ref", skModel(`{"navigation":{"speedOverGround":`+sog("0183.GP")+`}}`, skSources)).
			note("the same path after the other source wrote last: the same records"),
		okS("server-selection", "server", skModel(`{"navigation":{"speedOverGround":`+sog("n2k.160")+`}}`, skSources)).
			note("the server rule reports $source while it is live"),
		okS("server-selection-not-live", "server", skModel(`{"navigation":{"speedOverGround":`+skLeaf("null", "n2k.160",
			`"values":{"n2k.160":{"value":null,"timestamp":"2026-12-01T21:00:00.100Z"},"0183.GP":{"value":3.5,"timestamp":"2026-12-01T21:00:00.200Z"}}`)+`}}`, skSources)).
			note("the server rule takes the smallest live ref when $source is not live"),
		okS("position-null-altitude", "lowest-ref", skModel(`{"navigation":{"position":`+skLeaf(`{"longitude":24.9384,"latitude":60.1699,"altitude":null}`, "0183.GP", `"meta":{"description":"The position of the vessel"}`)+`}}`, skSources)).
			note("null members of an object value are read as absent: the position stays a position"),
		badS("no-source", "model", skModel(`{"p":{"value":1,"timestamp":"2026-12-01T21:00:00.000Z"}}`, skSources)),
		badS("values-not-an-object", "model", skModel(`{"p":`+skLeaf("1", "n2k.115", `"values":["n2k.115"]`)+`}`, skSources)),

		// §12.5 Sources.
		okS("nmea2000-identity", "lowest-ref", skModel(`{"environment":{"water":{"temperature":`+skLeaf("285.3", "n2k.115", `"meta":{"units":"K"}`, `"pgn":130311`)+`}}}`, skSources)).
			note("an NMEA 2000 device keeps its identity, without pgns, unknownPGNs and src"),
		okS("nmea0183-talker", "lowest-ref", skModel(`{"navigation":{"courseOverGroundTrue":`+skLeaf("1.2", "0183.GP", `"meta":{"units":"rad"}`, `"sentence":"RMC"`)+`}}`, skSources)).
			note("an NMEA 0183 talker keeps its talker and its sentence names, without their times"),
		okS("can-name-ref", "lowest-ref", skModel(`{"environment":{"depth":{"belowTransducer":`+skLeaf("4.2", "n2k.c07991002fb0c980")+`}}}`, skSources)).
			note("with useCanName the ref carries the CAN name while the tree is keyed by address"),
		okS("dotted-label-and-providers", "lowest-ref", skModel(`{"a":`+skLeaf("1", "my.bus.II")+`,"b":`+skLeaf("2", "derived-data")+`,"c":`+skLeaf("3", "defaults")+`}`,
			`{"my.bus":{"label":"my.bus","type":"NMEA0183","II":{"talker":"II","sentences":{"DBT":"2026-12-01T21:00:00.000Z"}}},"derived-data":{"label":"derived-data","type":"plugin","version":"1.4.0"},"defaults":{}}`)).
			note("labels may contain dots; a ref may name a provider entry itself"),
		badS("source-not-listed", "source", skModel(`{"p":`+skLeaf("1", "n2k.99")+`}`, skSources)).
			note("an observation whose source the tree does not list"),
		badS("source-ambiguous", "source", skModel(`{"p":`+skLeaf("1", "a.b.c")+`}`, `{"a":{"b.c":{}},"a.b":{"c":{}}}`)).
			note("a ref that two splits resolve"),

		// §12.6 Failing closed.
		badS("not-strict-json", "json", `{"self":"vessels.a","vessels":{"a":{}},"self":"vessels.a"}`).
			note("the model must be strict JSON: here a duplicate name"),
	}, nil
}

// firstSignalKSettled is the first number of the Signal K vectors that
// settle what SPEC.md §12 left open; they start at a number of their own,
// after the chunk reference groups.
const firstSignalKSettled = 400

func init() {
	specSections["12.2"] = append(specSections["12.2"],
		"signalk/self-not-a-string", "signalk/vessels-not-an-object", "signalk/sources-not-an-object",
		"signalk/no-sources-tree", "signalk/no-sources-nothing-live")
	specSections["12.3"] = append(specSections["12.3"],
		"signalk/dotted-names-outside-paths", "signalk/dotted-name-without-record", "signalk/not-live-leaf-unread")
	specSections["12.4"] = append(specSections["12.4"], "signalk/not-live-leaf-without-source",
		"signalk/age-silent-device-leaves", "signalk/age-stale-candidate-not-selected", "signalk/age-at-the-bound-is-live",
		"signalk/age-stale-leaf-unread", "signalk/age-no-timestamp", "signalk/age-timestamp-not-rfc3339")
	specSections["12.5"] = append(specSections["12.5"],
		"signalk/n2k-not-an-object", "signalk/sentences-not-an-object", "signalk/can-name-not-a-string")
	specSections["12.6"] = append(specSections["12.6"],
		"signalk/first-problem-in-member-order", "signalk/walk-before-sources", "signalk/self-before-sources")
}

// signalkSettledVectors pin what SPEC.md §12 left to the Go code: where a
// dotted member name is refused, what of a leaf without a live value is
// read, the members of an unexpected type, a model without sources, and
// which problem a model that breaks several rules is refused for.
func signalkSettledVectors() ([]vector, error) {
	okS := func(name, payload string) vector {
		v := ok(apiSignalK, name, payload)
		v.input = []field{{"selection", "lowest-ref"}}
		return v
	}
	badS := func(name, reason, payload string) vector {
		v := fail(apiSignalK, name, payload, "incomplete-scan")
		v.input = []field{{"selection", "lowest-ref"}, {"reason", reason}}
		return v
	}
	badRecord := func(name, class, payload string) vector {
		v := fail(apiSignalK, name, payload, class)
		v.input = []field{{"selection", "lowest-ref"}}
		return v
	}
	// noSources is a model of self's tree without a sources member.
	noSources := func(self string) string {
		return `{"self":"vessels.` + skSelf + `","version":"2.32.0","vessels":{"` + skSelf + `":` + self + `}}`
	}
	depth := skLeaf("4.2", "n2k.115", `"meta":{"units":"m"}`)
	return append([]vector{
		// §12.3 Dotted names.
		okS("dotted-names-outside-paths", skModel(`{"design.note":"refit 2025","environment":{"depth":{"belowTransducer":`+
			skLeaf("4.2", "n2k.115", `"meta":{"units":"m","zones.alarm":[{"lower":0,"upper":2,"state":"alarm"}]}`)+`}}}`, skSources)).
			note("a dot is refused only in the name of an object the walk enters or takes as a leaf: a static property (design.note) and a member inside a leaf (meta's zones.alarm) may have one"),
		badS("dotted-name-without-record", "model", skModel(`{"environment":{"old.sensor":{"depth":`+skLeaf("null", "n2k.115")+`}}}`, skSources)).
			note("an object with a dotted name is refused even when no record would come from under it"),
		okS("not-live-leaf-unread", skModel(`{"a":`+skLeaf("null", "n2k.99", `"meta":{"units":1}`)+`,"b\u0007c":`+skLeaf("null", "n2k.115")+
			`,"depth":`+depth+`}`, skSources)).
			note("a leaf without a live candidate is not read past its $source and values: neither its meta, nor its path's record rules, nor its sources"),

		// §12.4 A leaf without a live value.
		badS("not-live-leaf-without-source", "model", skModel(`{"a":{"value":null,"timestamp":"2026-12-01T21:00:00.000Z"},"depth":`+depth+`}`, skSources)).
			note("$source and values are checked on every leaf, live or not"),

		// §12.5 Device members of an unexpected type.
		okS("n2k-not-an-object", skModel(`{"depth":`+skLeaf("4.2", "n2k.7")+`,"heading":`+skLeaf("1.1", "0183.HC")+`}`,
			`{"n2k":{"label":"n2k","type":"NMEA2000","7":{"n2k":"offline","manufacturerCode":"Airmar"}},"0183":{"label":"0183","type":"NMEA0183","HC":{"talker":"HC","sentences":{}}}}`)).
			note("an n2k member that is not an object is kept as it is, and gives no CAN name; an empty sentences object becomes an empty array"),
		badS("sentences-not-an-object", "model", skModel(`{"heading":`+skLeaf("1.1", "0183.HC")+`}`,
			`{"0183":{"label":"0183","type":"NMEA0183","HC":{"talker":"HC","sentences":["HDG"]}}}`)).
			note("sentences must be an object, the map of sentence to time last seen"),
		badS("can-name-not-a-string", "source", skModel(`{"depth":`+skLeaf("4.2", "n2k.1234")+`}`,
			`{"n2k":{"label":"n2k","type":"NMEA2000","7":{"n2k":{"canName":1234}}}}`)).
			note("a canName that is not a string is no CAN name: the ref matches no entry"),

		// §12.2 The members a model must have.
		badS("self-not-a-string", "self", strings.Replace(skModel(`{}`, skSources), `"self":"vessels.`+skSelf+`"`, `"self":7`, 1)),
		badS("vessels-not-an-object", "self", `{"self":"vessels.`+skSelf+`","vessels":[],"sources":{}}`),
		badS("sources-not-an-object", "model", strings.Replace(skModel(`{"depth":`+skLeaf("null", "n2k.115")+`}`, skSources), `"sources":`+skSources, `"sources":[]`, 1)).
			note("sources must be an object even when no observation needs it"),
		badS("no-sources-tree", "source", noSources(`{"depth":`+depth+`}`)).
			note("a model without sources resolves no source ref"),
		okS("no-sources-nothing-live", noSources(`{"depth":`+skLeaf("null", "n2k.115")+`}`)).
			note("a model without sources and without a live leaf has no records"),

		// §12.6 Which problem comes first.
		badRecord("first-problem-in-member-order", "invalid-value", skModel(`{"b":{"value":1,"timestamp":"2026-12-01T21:00:00.000Z"},"a\u0007":`+skLeaf("1", "n2k.115")+`}`, skSources)).
			note("the walk is in member order (3.1), not text order: the path a<BEL> breaks a record rule (4.5) before member b, which has no $source, is read"),
		badS("walk-before-sources", "model", skModel(`{"a":`+skLeaf("1", "n2k.99")+`,"b":`+skLeaf("1", "n2k.115", `"meta":{"units":1}`)+`}`, skSources)).
			note("sources are resolved after the whole walk: b's units are refused before a's source, which the tree does not list"),
		badS("self-before-sources", "self", strings.Replace(strings.Replace(skModel(`{}`, skSources), `"sources":`+skSources, `"sources":[]`, 1),
			`"self":"vessels.urn`, `"self":"vessels.urn:other`, 1)).
			note("self is read before the sources member"),
	}, signalkAgeVectors()...), nil
}

// signalkAgeBound reads a vector's reference-time and max-age inputs: no
// bound when it has neither.
func signalkAgeBound(input []field) (signalk.AgeBound, error) {
	var age signalk.AgeBound
	n := 0
	for _, f := range input {
		switch f.key {
		case "reference-time":
			t, err := time.Parse(time.RFC3339Nano, f.value)
			if err != nil {
				return age, err
			}
			age.Now, n = t, n+1
		case "max-age":
			s, err := strconv.Atoi(f.value)
			if err != nil || s < 1 {
				return age, fmt.Errorf("max-age %q is not a positive number of seconds", f.value)
			}
			age.MaxAge, n = time.Duration(s)*time.Second, n+1
		}
	}
	if n == 1 {
		return age, fmt.Errorf("reference-time and max-age go together")
	}
	return age, nil
}

// signalkAgeVectors pin the age bound of SPEC.md §12.4: a value older
// than max-age seconds before reference-time is not live.
func signalkAgeVectors() []vector {
	aged := func(v vector) vector {
		v.input = append(v.input, field{"reference-time", "2026-12-01T21:05:00Z"}, field{"max-age", "300"})
		return v
	}
	okA := func(name, payload string) vector {
		v := ok(apiSignalK, name, payload)
		v.input = []field{{"selection", "lowest-ref"}}
		return aged(v)
	}
	badA := func(name, reason, payload string) vector {
		v := fail(apiSignalK, name, payload, "incomplete-scan")
		v.input = []field{{"selection", "lowest-ref"}}
		v = aged(v)
		v.input = append(v.input, field{"reason", reason})
		return v
	}
	// at returns a value object of source stamped at hh:mm:ss on the
	// vectors' day.
	at := func(value, source, clock string, extra ...string) string {
		return strings.Replace(skLeaf(value, source, extra...), "21:00:00.000Z", clock+".000Z", 1)
	}
	return []vector{
		okA("age-silent-device-leaves", skModel(`{"design":{"length":`+at(`{"overall":11.3}`, "defaults", "20:00:00")+`},`+
			`"electrical":{"switches":{"anchorLight":{"state":`+at("true", "n2k.115", "20:59:59")+`}}},`+
			`"environment":{"depth":{"belowTransducer":`+at("4.2", "n2k.160", "21:04:58")+`}},`+
			`"navigation":{"gnss":{"type":`+at(`"GPS"`, "n2k.115", "20:59:59")+`}}}`, skSources)).
			note("n2k.115 wrote nothing for more than 300 s before the reference time: its string and its boolean are not live, although no server nulls them",
				"design is written only when it changes (signalk-server's event-driven paths): its age is not read"),
		okA("age-stale-candidate-not-selected", skModel(`{"navigation":{"speedOverGround":`+at("3.64", "0183.GP", "21:04:59",
			`"values":{"n2k.160":{"value":3.64,"timestamp":"2026-12-01T21:04:59.000Z"},"0183.GP":{"value":3.5,"timestamp":"2026-12-01T20:59:00.000Z"}}`)+`}}`, skSources)).
			note("each candidate's age is its own entry's timestamp: the stale 0183.GP, the smallest ref, is not live, so n2k.160 is selected"),
		okA("age-at-the-bound-is-live", skModel(`{"environment":{"depth":{"belowTransducer":`+at("4.2", "n2k.115", "21:00:00")+`}}}`, skSources)).
			note("a value exactly max-age old is live"),
		okA("age-stale-leaf-unread", skModel(`{"a":`+at("1", "n2k.99", "20:00:00", `"meta":{"units":1}`)+`,"b":`+at("2", "n2k.160", "21:05:30")+`}`, skSources)).
			note("a leaf without a live candidate is not read further, whatever made it so: a's meta and source are not checked; b, newer than the reference time, is live"),
		badA("age-no-timestamp", "model", skModel(`{"a":{"value":1,"$source":"n2k.160"}}`, skSources)).
			note("under an age bound, a value that is not null needs a timestamp"),
		badA("age-timestamp-not-rfc3339", "model", skModel(`{"a":`+strings.Replace(skLeaf("1", "n2k.160"), "2026-12-01T21:00:00.000Z", "2026-12-01 21:00:00", 1)+`}`, skSources)).
			note("a timestamp is an RFC 3339 date-time with its offset"),
	}
}
