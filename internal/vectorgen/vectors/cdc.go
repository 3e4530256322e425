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
		"build/content-defined-wrapper-limit", "build/content-defined-empty", "build/content-defined-record-too-large",
		"build/content-defined-window-within-kind")
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

// quietPaths returns n path names, fmt.Sprintf(format, i) for increasing
// i, in canonical order, whose key digests (SPEC.md §7.2) increase from one
// to the next, both as path records and as observations from source. In a
// run of them no record but the first has the least digest of its window,
// so that only a kind boundary or a limit cuts them: the k-th name is the
// next whose two digests, as fractions of 2^64 read from their first eight
// bytes, both fall in [k/n, (k+1)/n).
func quietPaths(format, source string, n int) []string {
	var out []string
	band := func(key string) uint64 {
		s := sha256.Sum256([]byte(key))
		return binary.BigEndian.Uint64(s[:8]) / (^uint64(0)/uint64(n) + 1)
	}
	for i := 0; len(out) < n; i++ {
		p := fmt.Sprintf(format, i)
		k := uint64(len(out))
		if band(`["path",`+quote(p)+`]`) == k && band(`["observation",`+quote(p)+`,`+quote(source)+`]`) == k {
			out = append(out, p)
		}
	}
	if !slices.IsSorted(out) {
		panic("quietPaths: the format does not sort as its numbers do")
	}
	return out
}

// kindEdges returns a catalog of 8 paths, 3 sources and 8 observations,
// in canonical order, whose windows (SPEC.md §7.2, W = 6) tell the kinds
// apart: the last path has the least key digest of the paths in its window
// but not of the sources after it, and the second observation the least of
// the observations but not of the records just before it. A window that
// took in records of another kind would open a run at neither.
func kindEdges() []string {
	digest := func(key string) string {
		s := sha256.Sum256([]byte(key))
		return string(s[:])
	}
	for t := 0; ; t++ {
		var paths, sources []string
		var pd, sd []string
		for i := range 8 {
			p := fmt.Sprintf("sensors.t%d.p%d", t, i)
			paths = append(paths, p)
			pd = append(pd, digest(`["path",`+quote(p)+`]`))
		}
		for i := range 3 {
			src := fmt.Sprintf("n2k.t%d.s%d", t, i)
			sources = append(sources, src)
			sd = append(sd, digest(`["source",`+quote(src)+`]`))
		}
		var od []string
		for i, p := range paths {
			od = append(od, digest(`["observation",`+quote(p)+`,`+quote(sources[i%3])+`]`))
		}
		lastLeast := slices.Min(pd[1:7]) > pd[7] && slices.Min(sd) < pd[7]
		secondLeast := od[1] < od[0] && slices.Min(od[2:]) > od[1] && min(slices.Min(sd), pd[7], pd[6]) < od[1]
		if !lastLeast || !secondLeast {
			continue
		}
		var out, obs []string
		for i, p := range paths {
			out = append(out, `{"kind":"path","path":`+quote(p)+`,"unit":"K"}`)
			obs = append(obs, `{"kind":"observation","path":`+quote(p)+`,"source_ref":`+quote(sources[i%3])+`,"value_type":"number"}`)
		}
		for _, src := range sources {
			out = append(out, `{"kind":"source","source_ref":`+quote(src)+`}`)
		}
		return append(out, obs...)
	}
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
// neither a kind boundary nor a limit ends it: a cut a key digest made.
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
	for _, p := range quietPaths("sensors.q%07d.temperature", "n2k.00", 101) {
		limited = append(limited, `{"kind":"path","path":`+quote(p)+`,"unit":"K"}`)
		obs = append(obs, `{"kind":"observation","path":`+quote(p)+`,"source_ref":"n2k.00","value_type":"number"}`)
	}
	limited = append(append(limited, `{"kind":"source","label":"n2k","source_ref":"n2k.00","type":"NMEA2000"}`), obs...)

	var big [][2]string
	for i, p := range quietPaths("environment.inside.zone%03d.temperature", "n2k.1", 6) {
		big = append(big, [2]string{p, fmt.Sprintf(`{"description":"Temperature sensor %d","notes":"%s"}`, i, strings.Repeat("lorem ipsum dolor sit amet ", 110))})
	}
	var escaped [][2]string
	for _, p := range quietPaths("w.%05d", `s"\`, 10) {
		escaped = append(escaped, [2]string{p, `{"e":"` + strings.Repeat(`\\\"`, 500) + `"}`})
	}

	return []vector{
		okCDC("content-defined-small", small).
			note("43 records, a window of 6: the kinds and the key digests cut the chunks, far below every limit").
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
			note("203 records whose key digests increase along each kind: the kinds and the 100-record limit cut them").
			checked(func(s *envelope.Snapshot) error {
				if got := chunkRecords(s); got != "100,1,1,100,1" {
					return fmt.Errorf("chunk-records %s", got)
				}
				return nil
			}),
		okCDC("content-defined-body-limit", withObservations(big, "n2k.1", "number")).
			note("paths with large meta whose key digests increase: the 16,384-byte body limit cuts the paths"),
		okCDC("content-defined-wrapper-limit", withObservations(escaped, `s"\`, "string")).
			note("escape-heavy meta whose key digests increase: DefaultWrapper's request limit cuts the paths"),
		okCDC("content-defined-empty", nil).
			note("an empty snapshot is one chunk with no records, under either rule"),
		failB("content-defined-record-too-large", []string{
			`{"kind":"source","source_ref":"s"}`,
			`{"kind":"observation","path":"big","source_ref":"s","value_type":"string"}`,
			`{"kind":"path","path":"big","meta":{"text":"` + strings.Repeat("x", 16400) + `"}}`,
		}, "record-too-large", "record=2").withInput("cut", cutContentDefined).
			note("the content-defined rule falls back to the greedy rule, and fails only as it fails"),
		okCDC("content-defined-window-within-kind", kindEdges()).
			note("the last path and the second observation each have the least key digest of their kind within 6 positions,",
				"but not of every record within 6 positions: a window holds the records of one kind only"),
	}, nil
}

func chunkRecords(s *envelope.Snapshot) string {
	var out []string
	for _, c := range s.Chunks {
		out = append(out, fmt.Sprint(len(c.Records())))
	}
	return strings.Join(out, ",")
}
