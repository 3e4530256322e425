package vectors

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/yachtmemory/sourcecatalog/envelope"
)

// firstContentDefined is the number of the first vector of the
// content-defined cut (SPEC.md §7.2): 500 on are theirs.
const firstContentDefined = 500

// cutContentDefined is the value of the build input cut that names the
// content-defined rule; a build vector without it is cut greedily.
const cutContentDefined = "content-defined"

func init() {
	specSections["7.2"] = append(specSections["7.2"],
		"build/content-defined-small", "build/content-defined-unit-changed", "build/content-defined-path-added",
		"build/content-defined-path-removed", "build/content-defined-record-limit", "build/content-defined-body-limit",
		"build/content-defined-wrapper-limit", "build/content-defined-empty", "build/content-defined-record-too-large")
}

// buildOptions returns the envelope.Build options a build vector's header
// names.
func buildOptions(fields []field) []envelope.Option {
	for _, f := range fields {
		if f.key == "cut" && f.value == cutContentDefined {
			return []envelope.Option{envelope.WithContentDefinedCuts()}
		}
	}
	return nil
}

// expectedRun and opensRun restate the rule of SPEC.md §7.2 for records
// written by hand here: run is the expected run for the snapshot's record
// count, keyText the record's key text.
func expectedRun(records int) uint64 {
	switch {
	case records <= 1536:
		return 8
	case records <= 3072:
		return 16
	case records <= 6144:
		return 32
	case records <= 9216:
		return 64
	}
	return 128
}

func hashOpens(keyText string, records int) bool {
	s := sha256.Sum256([]byte(keyText))
	return uint64(binary.BigEndian.Uint32(s[:4])) < (1<<32)/expectedRun(records)
}

// quietPaths returns n path names, fmt.Sprintf(format, i) for increasing i,
// such that neither the path record nor its observation from source opens
// a run by its hash in a snapshot of the given record count: runs of them
// end only at a kind boundary or a limit.
func quietPaths(format, source string, n, records int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		p := fmt.Sprintf(format, i)
		if hashOpens(`["path",`+quote(p)+`]`, records) || hashOpens(`["observation",`+quote(p)+`,`+quote(source)+`]`, records) {
			continue
		}
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

func okCDC(name string, records []string) vector {
	return okB(name, records).withInput("cut", cutContentDefined)
}

// sharesChunks checks that a content-defined build keeps all but at most
// changed of base's chunks, and has at most changed chunks base has not.
func sharesChunks(base []string, changed int) func(*envelope.Snapshot) error {
	return func(s *envelope.Snapshot) error {
		b, err := buildVector(okCDC("base", base))
		if err != nil {
			return err
		}
		count := func(a, b *envelope.Snapshot) int {
			held := map[string]bool{}
			for _, c := range a.Chunks {
				held[c.PayloadSHA256().String()] = true
			}
			n := 0
			for _, c := range b.Chunks {
				if !held[c.PayloadSHA256().String()] {
					n++
				}
			}
			return n
		}
		if n, m := count(b, s), count(s, b); n == 0 || n > changed || m > changed {
			return fmt.Errorf("%d new chunks and %d gone, want 1 to %d", n, m, changed)
		}
		return nil
	}
}

// hashCut checks that some chunk of a content-defined build ends where
// neither a kind boundary nor a limit ends it: a cut the hash made.
func hashCut(s *envelope.Snapshot) error {
	for i, c := range s.Chunks[:len(s.Chunks)-1] {
		next := s.Chunks[i+1].Records()[0]
		if next.Kind() == c.Records()[len(c.Records())-1].Kind() && len(c.Records()) < 10 {
			return nil
		}
	}
	return fmt.Errorf("no chunk was cut by a key hash")
}

// contentDefinedVectors cut by the content-defined rule (SPEC.md §7.2).
func contentDefinedVectors() ([]vector, error) {
	small := sensorRecords(20, 3)
	changed := slices.Clone(small)
	changed[7] = strings.Replace(changed[7], `"unit":"K"`, `"unit":"Cel"`, 1)
	if changed[7] == small[7] {
		return nil, fmt.Errorf("content-defined-unit-changed changes nothing")
	}
	added := append(slices.Clone(small),
		`{"kind":"path","path":"sensors.s0105.temperature","unit":"K"}`,
		`{"kind":"observation","path":"sensors.s0105.temperature","source_ref":"n2k.01","value_type":"number"}`)
	var removed []string
	for _, r := range small {
		if !strings.Contains(r, `"sensors.s012.temperature"`) {
			removed = append(removed, r)
		}
	}

	// 101 paths whose records open no run by their hash: the record limit
	// cuts the paths, and the observations, at 100.
	var limited []string
	var obs []string
	for _, p := range quietPaths("sensors.q%04d.temperature", "n2k.00", 101, 203) {
		limited = append(limited, `{"kind":"path","path":`+quote(p)+`,"unit":"K"}`)
		obs = append(obs, `{"kind":"observation","path":`+quote(p)+`,"source_ref":"n2k.00","value_type":"number"}`)
	}
	limited = append(append(limited, `{"kind":"source","label":"n2k","source_ref":"n2k.00","type":"NMEA2000"}`), obs...)

	var big [][2]string
	for i, p := range quietPaths("environment.inside.zone%d.temperature", "n2k.1", 6, 13) {
		big = append(big, [2]string{p, fmt.Sprintf(`{"description":"Temperature sensor %d","notes":"%s"}`, i, strings.Repeat("lorem ipsum dolor sit amet ", 110))})
	}
	var escaped [][2]string
	for _, p := range quietPaths("w.%d", `s"\`, 10, 21) {
		escaped = append(escaped, [2]string{p, `{"e":"` + strings.Repeat(`\\\"`, 500) + `"}`})
	}

	return []vector{
		okCDC("content-defined-small", small).
			note("43 records, an expected run of 8: the kinds and the key hashes cut the chunks, far below every limit").
			checked(hashCut),
		okCDC("content-defined-unit-changed", changed).
			note("content-defined-small with the unit of sensors.s007.temperature changed from K to Cel:",
				"the cuts stay where they were and one chunk changes").
			checked(sharesChunks(small, 1)),
		okCDC("content-defined-path-added", added).
			note("content-defined-small with the path sensors.s0105.temperature and its observation added:",
				"only the chunks beside the two new records change").
			checked(sharesChunks(small, 4)),
		okCDC("content-defined-path-removed", removed).
			note("content-defined-small without sensors.s012.temperature and its observation:",
				"only the chunks beside the two records change").
			checked(sharesChunks(small, 4)),
		okCDC("content-defined-record-limit", limited).
			note("203 records whose key hashes open no run: the kinds and the 100-record limit cut them").
			checked(func(s *envelope.Snapshot) error {
				if got := chunkRecords(s); got != "100,1,1,100,1" {
					return fmt.Errorf("chunk-records %s", got)
				}
				return nil
			}),
		okCDC("content-defined-body-limit", withObservations(big, "n2k.1", "number")).
			note("paths with large meta whose key hashes open no run: the 16,384-byte body limit cuts the paths"),
		okCDC("content-defined-wrapper-limit", withObservations(escaped, `s"\`, "string")).
			note("escape-heavy meta whose key hashes open no run: DefaultWrapper's request limit cuts the paths"),
		okCDC("content-defined-empty", nil).
			note("an empty snapshot is one chunk with no records, under either rule"),
		failB("content-defined-record-too-large", []string{
			`{"kind":"source","source_ref":"s"}`,
			`{"kind":"observation","path":"big","source_ref":"s","value_type":"string"}`,
			`{"kind":"path","path":"big","meta":{"text":"` + strings.Repeat("x", 16400) + `"}}`,
		}, "record-too-large", "record=2").withInput("cut", cutContentDefined).
			note("the content-defined rule falls back to the greedy rule, and fails only as it fails"),
	}, nil
}

func chunkRecords(s *envelope.Snapshot) string {
	var out []string
	for _, c := range s.Chunks {
		out = append(out, fmt.Sprint(len(c.Records())))
	}
	return strings.Join(out, ",")
}
