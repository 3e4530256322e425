package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/internal/files"
)

// ---------------------------------------------------------------------------
// Helpers

type result struct {
	code           int
	stdout, stderr string
}

// cli runs the command in-process with stdin as its standard input.
func cli(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, strings.NewReader(stdin), &stdout, &stderr)
	return result{code, stdout.String(), stderr.String()}
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, data, 0o644))
	return p
}

var (
	vesselFlag = examples.VesselID.String()
	snapFlag   = examples.SnapshotID.String()
	atFlag     = "2026-05-01T12:00:00Z"
)

func buildArgs(out string, extra ...string) []string {
	return append([]string{"build", "--vessel", vesselFlag, "--revision", "7", "--discovered-at", atFlag, "--snapshot", snapFlag, "--out", out}, extra...)
}

// snapshotOf builds records the way the build command is expected to.
func snapshotOf(t *testing.T, records []*catalog.Record) *envelope.Snapshot {
	t.Helper()
	at, err := envelope.ParseTime(atFlag)
	require.NoError(t, err)
	s, err := envelope.Build(envelope.Input{
		VesselID: examples.VesselID, SnapshotID: examples.SnapshotID, Revision: 7,
		DiscoveredAt: at, Records: records,
	})
	require.NoError(t, err)
	return s
}

// chunkMessages returns the chunks file's elements: the canonical chunks.
func chunkMessages(t *testing.T, s *envelope.Snapshot) [][]byte {
	t.Helper()
	out := make([][]byte, len(s.Chunks))
	for i, c := range s.Chunks {
		out[i] = c.Canonical()
	}
	return out
}

// jsonArray renders elements as a JSON array, one per line.
func jsonArray(elems [][]byte) []byte {
	return append(append([]byte("[\n"), bytes.Join(elems, []byte(",\n"))...), "\n]\n"...)
}

// reversed writes v as JSON with every object's members in reverse
// canonical order.
func reversed(b *bytes.Buffer, v *canonical.Value) {
	switch v.Kind() {
	case canonical.KindObject:
		b.WriteByte('{')
		mems := v.Members()
		for i := len(mems) - 1; i >= 0; i-- {
			if i < len(mems)-1 {
				b.WriteByte(',')
			}
			name, _ := canonical.AppendString(nil, mems[i].Name)
			b.Write(name)
			b.WriteByte(':')
			reversed(b, &mems[i].Value)
		}
		b.WriteByte('}')
	case canonical.KindArray:
		b.WriteByte('[')
		for i := range v.Elems() {
			if i > 0 {
				b.WriteByte(',')
			}
			reversed(b, &v.Elems()[i])
		}
		b.WriteByte(']')
	default:
		b.Write(v.AppendCanonical(nil))
	}
}

// reshape returns msg with its members reversed and pretty-printed.
func reshape(t *testing.T, msg []byte) []byte {
	t.Helper()
	v, err := canonical.Parse(msg)
	require.NoError(t, err)
	var flat, pretty bytes.Buffer
	reversed(&flat, &v)
	require.NoError(t, json.Indent(&pretty, flat.Bytes(), "  ", "\t"))
	return pretty.Bytes()
}

func exampleFiles(t *testing.T) (header, chunks string) {
	t.Helper()
	return filepath.Join("..", "..", "examples", examples.HeaderFile), filepath.Join("..", "..", "examples", examples.ChunksFile)
}

func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// ---------------------------------------------------------------------------
// canon

func TestCanon(t *testing.T) {
	const in = "{ \"b\" : 1,\n \"a\": [1.0, 2E2, \"\\u00e9\\/\", -0, 1e21, true, null] }\n"
	const want = `{"a":[1,200,"é/",0,1e+21,true,null],"b":1}`
	dir := t.TempDir()
	file := writeFile(t, dir, "in.json", []byte(in))
	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
	}{
		{"file", "", []string{"canon", file}},
		{"stdin", in, []string{"canon"}},
		{"dash", in, []string{"canon", "-"}},
		{"already canonical", want, []string{"canon"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cli(t, tc.stdin, tc.args...)
			require.Equal(t, exitOK, r.code, r.stderr)
			assert.Equal(t, want, r.stdout, "exact canonical bytes, no trailing newline")
			assert.Empty(t, r.stderr)
		})
	}
}

func TestCanonInvalid(t *testing.T) {
	for _, tc := range []struct {
		name, stdin, want string
	}{
		{"duplicate name", `{"a":1,"a":2}`, "duplicate object member name"},
		{"escaped duplicate", `{"a":1,"\u0061":2}`, "duplicate object member name"},
		{"trailing comma", `[1,]`, "offset 3"},
		{"empty", ``, "unexpected end"},
		{"overflow", `1e400`, "would change its value"},
		{"lossy integer", `9007199254740993`, "would change its value"},
		{"trailing data", `{} {}`, "trailing data"},
		{"lone surrogate", `"\ud800"`, "surrogate"},
		{"byte-order mark", "\xEF\xBB\xBF{}", "byte-order mark"},
		{"NaN", `NaN`, "invalid number"},
		// The first problem in text order (SPEC.md §3.4, §10.3).
		{"duplicate before a later problem", `{"a":1,"a":2,"b":1e400}`, "duplicate object member name at offset 7"},
		{"minus at the end", `[-`, "invalid number syntax at offset 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cli(t, tc.stdin, "canon")
			assert.Equal(t, exitInvalid, r.code)
			assert.Empty(t, r.stdout)
			assert.Contains(t, r.stderr, "sourcecatalog canon: standard input: ")
			assert.Contains(t, r.stderr, tc.want)
		})
	}
	t.Run("missing file", func(t *testing.T) {
		r := cli(t, "", "canon", filepath.Join(t.TempDir(), "absent.json"))
		assert.Equal(t, exitInvalid, r.code)
		assert.Contains(t, r.stderr, "absent.json")
	})
	t.Run("two files", func(t *testing.T) {
		r := cli(t, "", "canon", "a", "b")
		assert.Equal(t, exitUsage, r.code)
	})
}

// ---------------------------------------------------------------------------
// build

func TestBuild(t *testing.T) {
	for _, tc := range []struct {
		name    string
		records []*catalog.Record
	}{
		{"boat", examples.Boat()},
		{"scaled 1500", examples.Scaled(1500)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			in := writeFile(t, dir, "records.json", catalog.EncodeList(tc.records))
			out := filepath.Join(dir, "out", "nested") // created on demand
			r := cli(t, "", buildArgs(out, in)...)
			require.Equal(t, exitOK, r.code, r.stderr)
			assert.Empty(t, r.stderr)

			s := snapshotOf(t, tc.records)
			assert.Equal(t, "built: "+summary(s)+"\n", r.stdout)
			header, err := os.ReadFile(filepath.Join(out, files.HeaderName))
			require.NoError(t, err)
			chunks, err := os.ReadFile(filepath.Join(out, files.ChunksName))
			require.NoError(t, err)
			assert.Equal(t, string(files.Header(s)), string(header))
			assert.Equal(t, string(files.Chunks(s)), string(chunks))
			assert.ElementsMatch(t, []string{files.HeaderName, files.ChunksName}, dirEntries(t, out), "no temporary files left")

			v := cli(t, "", "verify", filepath.Join(out, files.HeaderName), filepath.Join(out, files.ChunksName))
			require.Equal(t, exitOK, v.code, v.stderr)
			assert.Equal(t, "ok: "+summary(s)+"\n", v.stdout)
		})
	}
}

func TestBuildWriteFailure(t *testing.T) {
	dir := t.TempDir()
	out := writeFile(t, dir, "taken", nil) // a file where the directory should be
	r := cli(t, string(catalog.EncodeList(examples.Boat())), buildArgs(out)...)
	assert.Equal(t, exitInvalid, r.code)
	assert.Contains(t, r.stderr, "sourcecatalog build: ")
	assert.Contains(t, r.stderr, "taken")
	assert.Empty(t, r.stdout)
}

// With the example identity, build reproduces the committed example files.
func TestBuildReproducesExamples(t *testing.T) {
	dir := t.TempDir()
	args := []string{"build", "--out", dir, "--vessel", examples.VesselID.String(), "--snapshot", examples.SnapshotID.String(),
		"--revision", fmt.Sprint(examples.Revision), "--discovered-at", envelope.FormatTime(examples.DiscoveredAt)}
	r := cli(t, string(catalog.EncodeList(examples.Boat())), args...)
	require.Equal(t, exitOK, r.code, r.stderr)
	wantHeader, wantChunks := exampleFiles(t)
	for got, want := range map[string]string{files.HeaderName: wantHeader, files.ChunksName: wantChunks} {
		a, err := os.ReadFile(filepath.Join(dir, got))
		require.NoError(t, err)
		b, err := os.ReadFile(want)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(a, b), "%s differs from %s", got, want)
	}
}

func TestBuildStdinRandomSnapshot(t *testing.T) {
	dir := t.TempDir()
	records := examples.Boat()
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(records), func(i, j int) { records[i], records[j] = records[j], records[i] })
	// Flags after the operand, the operand "-" for standard input.
	r := cli(t, string(catalog.EncodeList(records)), "build", "-", "--out", dir, "--vessel", vesselFlag, "--revision", "9007199254740991", "--discovered-at", "2026-05-01T12:00:00.25Z")
	require.Equal(t, exitOK, r.code, r.stderr)
	header, err := os.ReadFile(filepath.Join(dir, files.HeaderName))
	require.NoError(t, err)
	m, err := envelope.DecodeManifest(header)
	require.NoError(t, err)
	assert.NotEqual(t, examples.SnapshotID, m.SnapshotID)
	assert.Equal(t, uuid.Version(4), m.SnapshotID.Version())
	assert.Equal(t, int64(sourcecatalog.MaxRevision), m.Revision)
	v := cli(t, "", "verify", filepath.Join(dir, files.HeaderName), filepath.Join(dir, files.ChunksName))
	assert.Equal(t, exitOK, v.code, v.stderr)
}

// A record may nest as deep as a chunk allows; the chunks file's array adds
// a level that the reader must not count against the chunk.
func TestBuildVerifyDeepestMeta(t *testing.T) {
	meta := strings.Repeat(`{"a":`, catalog.MaxRecordDepth-1) + "1" + strings.Repeat("}", catalog.MaxRecordDepth-1)
	p, err := catalog.NewPath(catalog.Path{Path: "x.deep", Meta: []byte(meta)})
	require.NoError(t, err)
	src, err := catalog.NewSource(catalog.Source{SourceRef: "s"})
	require.NoError(t, err)
	obs, err := catalog.NewObservation(catalog.Observation{Path: "x.deep", SourceRef: "s", ValueType: catalog.Unknown})
	require.NoError(t, err)
	dir := t.TempDir()
	r := cli(t, string(catalog.EncodeList([]*catalog.Record{p, src, obs})), buildArgs(dir)...)
	require.Equal(t, exitOK, r.code, r.stderr)
	v := cli(t, "", "verify", filepath.Join(dir, files.HeaderName), filepath.Join(dir, files.ChunksName))
	assert.Equal(t, exitOK, v.code, v.stderr)
}

func TestBuildFailsWritingNothing(t *testing.T) {
	boat := catalog.EncodeList(examples.Boat())
	boatWith := func(extra ...string) string {
		s := strings.TrimSuffix(string(boat), "\n]\n")
		for _, e := range extra {
			s += ",\n" + e
		}
		return s + "\n]\n"
	}
	n := len(examples.Boat())
	for _, tc := range []struct {
		name  string
		input string
		want  []string // substrings of stderr, one located problem each
	}{
		{"malformed JSON", `[{"kind":"path",}]`, []string{"malformed JSON", "offset 16"}},
		{"not an array", `{"kind":"path","path":"a"}`, []string{"must be a JSON array"}},
		{"invalid records", `[{"kind":"path","path":"a..b"},{"kind":"source","source_ref":"s","colour":"red"},{"kind":"observation","path":"a","source_ref":"s"}]`,
			[]string{
				`record 0 field "path": invalid value: empty path segment`,
				`record 1 field "colour": unknown field`,
				`record 2 field "value_type": missing field`,
				"3 problems",
			}},
		{"duplicate path", boatWith(`{"kind":"path","path":"navigation.position"}`),
			[]string{`field "path": integrity violation: duplicate path`}},
		{"unreferenced source", boatWith(`{"kind":"source","source_ref":"ttyUSB9.XX"}`),
			[]string{fmt.Sprintf(`record %d field "source_ref": integrity violation: source not referenced`, n)}},
		{"observation of an unknown path", boatWith(`{"kind":"observation","path":"a.b","source_ref":"defaults","value_type":"number"}`),
			[]string{fmt.Sprintf(`record %d field "path": integrity violation: observation of a path with no path record`, n)}},
		{"too many records", string(catalog.EncodeList(examples.Scaled(sourcecatalog.MaxRecords + 1))),
			[]string{`field "records": limit exceeded: more than 25600 records`}},
		{"record too large", `[{"kind":"path","path":"p","meta":{"description":"` + strings.Repeat("x", sourcecatalog.MaxChunkBody) + `"}},{"kind":"source","source_ref":"s"},{"kind":"observation","path":"p","source_ref":"s","value_type":"number"}]`,
			[]string{"record 0: record too large"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			for _, out := range []string{base, filepath.Join(base, "missing")} {
				r := cli(t, tc.input, buildArgs(out)...)
				require.Equal(t, exitInvalid, r.code, r.stderr)
				assert.Empty(t, r.stdout)
				for _, w := range tc.want {
					assert.Contains(t, r.stderr, w)
				}
				assert.Contains(t, r.stderr, "nothing written")
				for _, line := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
					assert.True(t, strings.HasPrefix(line, "sourcecatalog build: "), "one problem per line: %q", line)
				}
				assert.Empty(t, dirEntries(t, out), "no files written to %s", out)
			}
			_, err := os.Stat(filepath.Join(base, "missing"))
			assert.True(t, os.IsNotExist(err), "the output directory is not created")
		})
	}
}

func TestBuildUsage(t *testing.T) {
	dir := t.TempDir()
	const omit = "\x00"
	// args returns valid build arguments with the given flags replaced
	// (omit drops one) and extra arguments appended.
	args := func(set map[string]string, extra ...string) []string {
		out := []string{"build"}
		for _, kv := range [][2]string{{"--vessel", vesselFlag}, {"--revision", "1"}, {"--discovered-at", atFlag}, {"--out", dir}} {
			v, ok := set[kv[0]]
			if !ok {
				v = kv[1]
			}
			if v != omit {
				out = append(out, kv[0], v)
			}
		}
		return append(out, extra...)
	}
	for _, tc := range []struct {
		name  string
		set   map[string]string
		extra []string
		want  string
	}{
		{"no vessel", map[string]string{"--vessel": omit}, nil, "--vessel is required"},
		{"no revision", map[string]string{"--revision": omit}, nil, "--revision is required"},
		{"no time", map[string]string{"--discovered-at": omit}, nil, "--discovered-at is required"},
		{"no out", map[string]string{"--out": omit}, nil, "--out is required"},
		{"empty out", map[string]string{"--out": ""}, nil, "must not be empty"},
		{"upper-case vessel", map[string]string{"--vessel": strings.ToUpper(vesselFlag)}, nil, "lowercase"},
		{"nil vessel", map[string]string{"--vessel": uuid.Nil.String()}, nil, "lowercase"},
		{"braced vessel", map[string]string{"--vessel": "{" + vesselFlag + "}"}, nil, "lowercase"},
		{"revision 0", map[string]string{"--revision": "0"}, nil, "digits"},
		{"revision leading zero", map[string]string{"--revision": "01"}, nil, "digits"},
		{"revision float", map[string]string{"--revision": "1.0"}, nil, "digits"},
		{"revision sign", map[string]string{"--revision": "+1"}, nil, "digits"},
		{"revision negative", map[string]string{"--revision": "-1"}, nil, "digits"},
		{"revision 2^53", map[string]string{"--revision": "9007199254740992"}, nil, "digits"},
		{"revision huge", map[string]string{"--revision": "99999999999999999999"}, nil, "digits"},
		{"time with offset", map[string]string{"--discovered-at": "2026-05-01T14:00:00+02:00"}, nil, "RFC 3339"},
		{"time +00:00", map[string]string{"--discovered-at": "2026-05-01T12:00:00+00:00"}, nil, "RFC 3339"},
		{"time trailing zero", map[string]string{"--discovered-at": "2026-05-01T12:00:00.50Z"}, nil, "RFC 3339"},
		{"time lower-case z", map[string]string{"--discovered-at": "2026-05-01t12:00:00z"}, nil, "RFC 3339"},
		{"time date only", map[string]string{"--discovered-at": "2026-05-01"}, nil, "RFC 3339"},
		{"version 1 snapshot", nil, []string{"--snapshot", "6ba7b810-9dad-11d1-80b4-00c04fd430c8"}, "version 4"},
		{"repeated flag", nil, []string{"--vessel=" + vesselFlag}, "given more than once"},
		{"unknown flag", nil, []string{"--colour", "red"}, `unknown flag "--colour"`},
		{"unknown flag with value", nil, []string{"--colour=red"}, `unknown flag "--colour"`},
		{"flag without value", nil, []string{"--snapshot"}, "--snapshot needs a value"},
		{"two operands", nil, []string{"a.json", "b.json"}, `unexpected argument "b.json": at most one RECORDS_FILE`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := args(tc.set, tc.extra...)
			r := cli(t, `[]`, a...)
			assert.Equal(t, exitUsage, r.code, "%q: %s", a, r.stderr)
			assert.Contains(t, r.stderr, tc.want)
			assert.Contains(t, r.stderr, "Usage: sourcecatalog build")
			assert.Empty(t, r.stdout)
			assert.Empty(t, dirEntries(t, dir))
		})
	}
	t.Run("empty snapshot", func(t *testing.T) {
		r := cli(t, `[]`, args(nil)...)
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Contains(t, r.stdout, "1 chunk, 0 records")
	})
}

// ---------------------------------------------------------------------------
// verify

// A snapshot as build writes it, in files under a temporary directory.
type fixture struct {
	dir    string
	s      *envelope.Snapshot
	msgs   [][]byte
	header []byte
}

func newFixture(t *testing.T) *fixture {
	s := snapshotOf(t, examples.Scaled(1500))
	require.Greater(t, len(s.Chunks), 3)
	return &fixture{dir: t.TempDir(), s: s, msgs: chunkMessages(t, s), header: files.Header(s)}
}

// run writes header and chunks to files and runs cmd on them.
func (f *fixture) run(t *testing.T, cmd string, header []byte, chunks []byte) result {
	t.Helper()
	h := writeFile(t, f.dir, "h.json", header)
	c := writeFile(t, f.dir, "c.json", chunks)
	return cli(t, "", cmd, h, c)
}

func TestVerifyAcceptsAnyLayout(t *testing.T) {
	f := newFixture(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		name   string
		header []byte
		chunks func() [][]byte
		indent bool
	}{
		{"as written", f.header, func() [][]byte { return f.msgs }, false},
		{"shuffled", f.header, func() [][]byte {
			m := append([][]byte(nil), f.msgs...)
			rng.Shuffle(len(m), func(i, j int) { m[i], m[j] = m[j], m[i] })
			return m
		}, false},
		{"shuffled, pretty-printed, members reversed", reshape(t, bytes.TrimSpace(f.header)), func() [][]byte {
			m := make([][]byte, len(f.msgs))
			for i, msg := range f.msgs {
				m[i] = reshape(t, msg)
			}
			rng.Shuffle(len(m), func(i, j int) { m[i], m[j] = m[j], m[i] })
			return m
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chunks := jsonArray(tc.chunks())
			if tc.indent {
				var b bytes.Buffer
				require.NoError(t, json.Indent(&b, chunks, "", "    "))
				chunks = append([]byte(" \r\n\t"), b.Bytes()...)
				assert.NotContains(t, string(chunks), `{"chunk_index"`, "the layout really changed")
			}
			r := f.run(t, "verify", tc.header, chunks)
			require.Equal(t, exitOK, r.code, r.stderr)
			assert.Equal(t, "ok: "+summary(f.s)+"\n", r.stdout)
			assert.Empty(t, r.stderr)
		})
	}
}

func TestVerifyReportsProblems(t *testing.T) {
	f := newFixture(t)
	other, err := envelope.Build(envelope.Input{
		VesselID: examples.VesselID, SnapshotID: uuid.New(), Revision: 7,
		DiscoveredAt: examples.DiscoveredAt, Records: examples.Scaled(1500),
	})
	require.NoError(t, err)
	without := func(i int) [][]byte {
		return append(append([][]byte(nil), f.msgs[:i]...), f.msgs[i+1:]...)
	}
	replaced := func(i int, msg []byte) [][]byte {
		m := append([][]byte(nil), f.msgs...)
		m[i] = msg
		return m
	}
	tamper := func(i int) []byte {
		// Another valid record, with the chunk's payload hash unchanged.
		msg := bytes.Replace(f.msgs[i], []byte(`"description":"`), []byte(`"description":"Tampered: `), 1)
		require.NotEqual(t, f.msgs[i], msg)
		return msg
	}
	twoTampered := replaced(1, tamper(1))
	twoTampered[3] = tamper(3)
	wrongDoc := bytes.Replace(f.header, []byte(f.s.Manifest.DocumentSHA256.String()), []byte(canonical.Sum([]byte("x")).String()), 1)
	for _, tc := range []struct {
		name   string
		header []byte
		chunks []byte
		want   []string // each a located problem on its own line
	}{
		{"tampered record", f.header, jsonArray(replaced(1, tamper(1))),
			[]string{`chunk 1 field "payload_sha256": hash mismatch: chunks[1]: payload_sha256 does not match the canonical body`}},
		{"two tampered records", f.header, jsonArray(twoTampered),
			[]string{`chunk 1 field "payload_sha256": hash mismatch`, `chunk 3 field "payload_sha256": hash mismatch`, "2 problems"}},
		{"missing chunk", f.header, jsonArray(without(2)),
			[]string{`chunk 2 field "chunk_index": integrity violation: chunk missing`}},
		{"no chunks", f.header, []byte("[]"),
			[]string{`chunk 0 field "chunk_index": integrity violation: chunk missing`}},
		{"wrong document hash", wrongDoc, jsonArray(f.msgs),
			[]string{`field "document_sha256": hash mismatch`}},
		{"duplicate chunk", f.header, jsonArray(append(append([][]byte(nil), f.msgs...), f.msgs[0])),
			[]string{`chunk 0 field "chunk_index": integrity violation: more than one chunk with this chunk_index`}},
		{"chunk of another snapshot", f.header, jsonArray(replaced(4, other.Chunks[4].Canonical())),
			[]string{`chunk 4 field "snapshot_id": integrity violation: snapshot_id differs from the manifest`, `chunk 4 field "chunk_index": integrity violation: chunk missing`}},
		{"malformed chunk", f.header, jsonArray(replaced(0, []byte(`{"chunk_index":0,}`))),
			[]string{`malformed JSON: chunks[0]`}},
		{"duplicate name before a later problem", f.header, jsonArray(replaced(0, []byte(`{"chunk_index":0,"chunk_index":0,"x":1e400}`))),
			[]string{`malformed JSON: chunks[0]: canonical: duplicate object member name at offset 17`}},
		{"canonical text over the request cap", f.header, jsonArray(replaced(0, []byte(`{"x":[`+strings.Repeat("1e20,", 1500)+`0]}`))),
			[]string{`limit exceeded: chunks[0]: canonical message larger than 32768 bytes`}},
		{"chunk not an object", f.header, jsonArray(replaced(0, []byte(`[]`))),
			[]string{`invalid value: chunks[0]: must be a JSON object`}},
		{"chunks file not an array", f.header, []byte(`{"chunk_index":0}`),
			[]string{`field "chunks": malformed JSON: the chunks file must hold a JSON array`}},
		{"chunks file truncated", f.header, jsonArray(f.msgs)[:100],
			[]string{`field "chunks": malformed JSON`}},
		{"chunks file with trailing data", f.header, append(jsonArray(f.msgs), "[]"...),
			[]string{`trailing data`}},
		{"more than 256 chunks", f.header, []byte("[" + strings.Repeat("{},", sourcecatalog.MaxChunks) + "{}]"),
			[]string{`field "chunks": limit exceeded: more than 256 elements`}},
		{"header incomplete", bytes.Replace(f.header, []byte(`"transport_complete":true`), []byte(`"transport_complete":false`), 1), jsonArray(f.msgs),
			[]string{`field "transport_complete": incomplete scan`}},
		{"header with unknown field", bytes.Replace(f.header, []byte(`{`), []byte(`{"x":1,`), 1), jsonArray(f.msgs),
			[]string{`field "x": unknown field`}},
		{"header and chunks both broken", []byte(`{}`), []byte(`{}`),
			[]string{`field "chunks": malformed JSON`, `field "chunk_count": missing field`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, cmd := range []string{"verify", "inspect"} {
				r := f.run(t, cmd, tc.header, tc.chunks)
				require.Equal(t, exitInvalid, r.code, "%s: %s", cmd, r.stderr)
				assert.Empty(t, r.stdout)
				lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
				for _, w := range tc.want {
					found := false
					for _, line := range lines {
						found = found || strings.Contains(line, w)
					}
					assert.True(t, found, "%s: no line contains %q in\n%s", cmd, w, r.stderr)
				}
				assert.Regexp(t, `sourcecatalog `+cmd+`: \d+ problems?: the snapshot does not verify\n$`, r.stderr)
			}
		})
	}
}

func TestVerifyUsageAndFiles(t *testing.T) {
	h, c := exampleFiles(t)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no files", []string{"verify"}, exitUsage, "missing HEADER_FILE and CHUNKS_FILE"},
		{"one file", []string{"verify", h}, exitUsage, "missing CHUNKS_FILE"},
		{"three files", []string{"verify", h, c, "third"}, exitUsage, `unexpected argument "third": want HEADER_FILE and CHUNKS_FILE`},
		{"inspect three files", []string{"inspect", h, c, "third"}, exitUsage, `unexpected argument "third": want HEADER_FILE and CHUNKS_FILE`},
		{"missing header", []string{"verify", filepath.Join(t.TempDir(), "nope.json"), c}, exitInvalid, "nope.json"},
		{"inspect missing chunks", []string{"inspect", h, filepath.Join(t.TempDir(), "nope.json")}, exitInvalid, "nope.json"},
		{"files swapped", []string{"verify", c, h}, exitInvalid, "problem"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cli(t, "", tc.args...)
			assert.Equal(t, tc.code, r.code, r.stderr)
			assert.Contains(t, r.stderr, tc.want)
			assert.Empty(t, r.stdout)
		})
	}
}

func TestVerifyExamples(t *testing.T) {
	h, c := exampleFiles(t)
	s, err := examples.BoatSnapshot()
	require.NoError(t, err)
	r := cli(t, "", "verify", h, c)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, "ok: "+summary(s)+"\n", r.stdout)
	assert.Equal(t, fmt.Sprintf("ok: vessel %s snapshot %s revision 1: 2 chunks, 129 records, document sha256 %s\n",
		examples.VesselID, examples.SnapshotID, s.Manifest.DocumentSHA256), r.stdout)
}

// ---------------------------------------------------------------------------
// inspect

func TestInspectExamples(t *testing.T) {
	h, c := exampleFiles(t)
	r := cli(t, "", "inspect", h, c)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Empty(t, r.stderr)
	out := r.stdout

	// The expected counts, from the records themselves.
	kinds := map[catalog.Kind]int{}
	valueTypes := map[catalog.ValueType]int{}
	var null, absent int
	for _, rec := range examples.Boat() {
		kinds[rec.Kind()]++
		if o, ok := rec.AsObservation(); ok {
			valueTypes[o.ValueType]++
		}
		if p, ok := rec.AsPath(); ok {
			null += b2i(p.Unit.IsNone())
			absent += b2i(p.Unit.IsUnknown())
		}
	}
	line := func(label string, n int) string {
		return `(?m)^\s*` + regexp.QuoteMeta(label) + `\s+` + fmt.Sprint(n) + `(\s|$)`
	}
	want := []string{
		`(?m)^snapshot\s+` + examples.SnapshotID.String() + `$`,
		`(?m)^\s+vessel\s+` + examples.VesselID.String() + `$`,
		`(?m)^\s+revision\s+1$`,
		`(?m)^\s+discovered at\s+2026-05-01T12:00:00Z$`,
		line("records", 129),
		line("path", kinds[catalog.KindPath]),
		line("source", kinds[catalog.KindSource]),
		line("observation", kinds[catalog.KindObservation]),
		line("SI symbol", kinds[catalog.KindPath]-null-absent),
		line("null", null),
		line("absent", absent),
		line("NMEA2000", 10),
		line("NMEA0183", 2),
		line("Plugin", 2),
		line("(no type)", 1),
		`(?m)^chunks\s+2 of 256$`,
		`(?m)^\s+0\s+100/100 \(100\.0%\)\s+16277/16384 \(99\.3%\)\s+\d+/32768 \(\d+\.\d%\)$`,
		`(?m)^\s+1\s+29/100 \(29\.0%\)\s+3391/16384 \(20\.7%\)\s+\d+/32768`,
		`(?m)^\s+min\s+29/100 \(29\.0%\)\s+3391/16384`,
		`(?m)^\s+avg\s+64\.5/100 \(64\.5%\)\s+9834/16384 \(60\.0%\)`,
		`(?m)^\s+max\s+100/100 \(100\.0%\)\s+16277/16384`,
		`(?m)^\s+SI symbol\s+\d+\s+rad 9, K 5, m/s 5,`,
	}
	for _, vt := range catalog.ValueTypes() {
		require.Positive(t, valueTypes[vt])
		want = append(want, line(vt.String(), valueTypes[vt]))
	}
	assert.Equal(t, 40, valueTypes[catalog.Number])
	for _, re := range want {
		assert.Regexp(t, re, out)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ---------------------------------------------------------------------------
// usage

func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		stdout     string
		stderr     string
		stdoutOnly bool
	}{
		{"no arguments", nil, exitUsage, "", "Usage:\n  sourcecatalog canon [FILE]", false},
		{"-h", []string{"-h"}, exitOK, "Commands:\n  canon", "", true},
		{"--help", []string{"--help"}, exitOK, "sourcecatalog verify HEADER_FILE CHUNKS_FILE", "", true},
		{"help", []string{"help"}, exitOK, "sourcecatalog inspect HEADER_FILE CHUNKS_FILE", "", true},
		{"help build", []string{"help", "build"}, exitOK, "Usage: sourcecatalog build --vessel UUID", "", true},
		{"build -h", []string{"build", "-h"}, exitOK, "--discovered-at TIME", "", true},
		{"canon --help", []string{"canon", "--help"}, exitOK, "no trailing newline", "", true},
		{"verify -h", []string{"verify", "-h"}, exitOK, "chunks[i]", "", true},
		{"help unknown", []string{"help", "nosuch"}, exitUsage, "", `unknown command "nosuch"`, false},
		{"help extra", []string{"help", "canon", "extra"}, exitUsage, "", `sourcecatalog help: unexpected argument "extra"`, false},
		{"-h extra", []string{"-h", "verify", "a", "b"}, exitUsage, "", `sourcecatalog help: unexpected argument "a"`, false},
		{"help unknown extra", []string{"help", "nosuch", "extra"}, exitUsage, "", `unknown command "nosuch"`, false},
		{"help demo", []string{"help", "demo"}, exitOK, "Usage: sourcecatalog demo [--seed N] [--sqlite FILE] [--mysql DSN]", "", true},
		{"demo listed", []string{"help"}, exitOK, "  demo       run the protocol end to end", "", true},
		{"unknown command", []string{"frobnicate"}, exitUsage, "", `sourcecatalog: unknown command "frobnicate"`, false},
		{"unknown flag", []string{"verify", "-x", "a", "b"}, exitUsage, "", `sourcecatalog verify: unknown flag "-x"`, false},
		{"unknown double-dash flag", []string{"canon", "--x=1"}, exitUsage, "", `sourcecatalog canon: unknown flag "--x"`, false},
		{"triple dash", []string{"build", "---out", "d"}, exitUsage, "", `sourcecatalog build: unknown flag "---out"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cli(t, "", tc.args...)
			assert.Equal(t, tc.code, r.code)
			assert.Contains(t, r.stdout, tc.stdout)
			assert.Contains(t, r.stderr, tc.stderr)
			if tc.stdoutOnly {
				assert.Empty(t, r.stderr)
			} else {
				assert.Empty(t, r.stdout)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// the real binary

func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool in PATH")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "sourcecatalog")
	build := exec.Command(goTool, "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	exe := func(stdin string, args ...string) result {
		cmd := exec.Command(bin, args...)
		cmd.Stdin = strings.NewReader(stdin)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		return result{code, stdout.String(), stderr.String()}
	}

	r := exe(`{"b":[1.50,"x"],"a":null}`, "canon")
	assert.Equal(t, result{0, `{"a":null,"b":[1.5,"x"]}`, ""}, r)
	r = exe(`{"a":1,"a":1}`, "canon")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "duplicate")

	outDir := filepath.Join(dir, "snapshot")
	records := writeFile(t, dir, "records.json", catalog.EncodeList(examples.Boat()))
	r = exe("", buildArgs(outDir, records)...)
	require.Equal(t, 0, r.code, r.stderr)
	h, c := filepath.Join(outDir, files.HeaderName), filepath.Join(outDir, files.ChunksName)
	r = exe("", "verify", h, c)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.True(t, strings.HasPrefix(r.stdout, "ok: vessel "+vesselFlag), r.stdout)
	r = exe("", "inspect", h, c)
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "chunks")

	bad := writeFile(t, dir, "bad.json", []byte(`[{"kind":"path","path":"."}]`))
	r = exe("", buildArgs(filepath.Join(dir, "never"), bad)...)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, `record 0 field "path"`)
	assert.NoDirExists(t, filepath.Join(dir, "never"))

	r = exe("", "demo", "--seed", "7")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "\nverified: active revision 2")

	r = exe("")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "Usage:")

	// Every command that writes to standard output fails when it cannot.
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full")
	}
	defer full.Close()
	for _, args := range [][]string{
		{"canon", records},
		buildArgs(filepath.Join(dir, "full"), records),
		{"verify", h, c},
		{"inspect", h, c},
		{"demo"},
		{"help"},
		{"help", "canon"},
		{"inspect", "-h"},
	} {
		cmd := exec.Command(bin, args...)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = full, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%q", args)
		assert.Equal(t, 1, ee.ExitCode(), "%q", args)
		assert.Regexp(t, `^sourcecatalog( \w+)?: writing standard output: write /dev/stdout: no space left on device\n$`, stderr.String(), "%q", args)
	}
}
