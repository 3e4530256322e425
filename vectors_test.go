package sourcecatalog_test

// The golden vectors of testdata/vectors (format: testdata/vectors/README.md)
// run through every API that applies to them. The vectors are written by
// internal/vectorgen; TestVectorsUpToDate checks that they still are what it
// writes.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/internal/vectorgen/vectors"
	"github.com/yachtmemory/sourcecatalog/signalk"
)

const (
	vectorDir  = "testdata/vectors"
	minVectors = 40
)

// errorClasses maps the error names of the vectors to the class sentinels.
var errorClasses = map[string]error{
	"malformed-json":   sourcecatalog.ErrMalformedJSON,
	"unknown-field":    sourcecatalog.ErrUnknownField,
	"missing-field":    sourcecatalog.ErrMissingField,
	"invalid-value":    sourcecatalog.ErrInvalidValue,
	"limit-exceeded":   sourcecatalog.ErrLimitExceeded,
	"record-too-large": sourcecatalog.ErrRecordTooLarge,
	"hash-mismatch":    sourcecatalog.ErrHashMismatch,
	"integrity":        sourcecatalog.ErrIntegrity,
	"unsupported":      sourcecatalog.ErrUnsupported,
	"incomplete-scan":  sourcecatalog.ErrIncompleteScan,
	// A resolve vector's (SPEC.md §6.6).
	"reference-unavailable": sourcecatalog.ErrReferenceUnavailable,
}

// allClasses are every class sentinel: an error wraps exactly one.
var allClasses = sourcecatalog.Classes()

// syntaxDetails maps the detail names to package canonical's sentinels.
var syntaxDetails = map[string]error{
	"duplicate-name":    canonical.ErrDuplicateName,
	"invalid-utf8":      canonical.ErrInvalidUTF8,
	"invalid-surrogate": canonical.ErrInvalidSurrogate,
	"invalid-number":    canonical.ErrInvalidNumber,
	"lossy-number":      canonical.ErrLossyNumber,
	"too-deep":          canonical.ErrTooDeep,
	"trailing-data":     canonical.ErrTrailingData,
	"byte-order-mark":   canonical.ErrByteOrderMark,
	"syntax":            canonical.ErrSyntax,
	"unexpected-end":    canonical.ErrUnexpectedEnd,
}

// classNames maps the vectors' spelling of every class of SPEC.md §10.1
// (the wire name with - for _) to its sentinel: the class: output of a
// refusal vector may name any of them.
var classNames = func() map[string]error {
	m := map[string]error{}
	for _, c := range sourcecatalog.Classes() {
		m[strings.ReplaceAll(sourcecatalog.WireName(c), "_", "-")] = c
	}
	return m
}()

var apis = []string{"transform", "record", "records", "build", "manifest", "chunk", "snapshot", "receipt", "refusal", "signalk", "declaration", "chunkref", "resolve", "index"}

// ---------------------------------------------------------------------------
// The vector format

// A golden is one parsed vector file.
type golden struct {
	file      string
	api       string
	spec      string // the SPEC.md section the vector exercises, such as "6.2"
	ok        bool
	class     string // error name, when !ok
	detail    string
	offset    int64
	hasOffset bool
	where     []location
	comments  []string
	fields    map[string]string // inputs and outputs
	payload   []byte
}

// A location is one where: line; unchecked components are not compared.
type location struct {
	chunk, record                     int // sourcecatalog.NoIndex for "-"
	field                             string
	checkChunk, checkRecord, checkFld bool
	text                              string
}

func (l location) matches(e *sourcecatalog.Error) bool {
	return (!l.checkChunk || l.chunk == e.Chunk) &&
		(!l.checkRecord || l.record == e.Record) &&
		(!l.checkFld || l.field == e.Field)
}

var (
	fileName   = regexp.MustCompile(`^[0-9]{3}-[a-z0-9]+(-[a-z0-9]+)*\.txt$`)
	headerKey  = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	fieldValue = regexp.MustCompile(`^[A-Za-z0-9_.]+$`)
	hexDigest  = regexp.MustCompile(`^[0-9a-f]{64}$`)
	lowerHex   = regexp.MustCompile(`^([0-9a-f]{2})*$`)
	count      = regexp.MustCompile(`^(0|[1-9][0-9]*)$`)
	specRef    = regexp.MustCompile(`^[1-9][0-9]*(\.[1-9][0-9]*)?$`)
	// declaredNames is a comma list of declared names (SPEC.md §11.7).
	declaredNames = regexp.MustCompile(`^[a-z0-9_.-]{1,64}(,[a-z0-9_.-]{1,64})*$`)
)

// Header keys: whether they may repeat.
var headerKeys = map[string]bool{
	"api": false, "spec": false, "expect": false, "error": false, "detail": false, "offset": false,
	"where": true, "comment": true,
	"vessel": false, "snapshot": false, "revision": false, "discovered-at": false,
	"truncated": false, "pagination-uncertain": false, "cut": false,
	"canonical-hex": false, "canonical-sha256": false, "record-count": false, "chunk-count": false,
	"chunk-records": false, "payload-sha256": false, "document-sha256": false,
	"manifest-sha256": false, "chunks-sha256": false,
	"entity-type": false, "chunk-index": false, "status": false, "complete": false,
	"class": false, "record-index": false, "field": false,
	"selection": false, "reason": false, "reference-time": false, "max-age": false,
	"v2": false, "capabilities": false, "unknown-capabilities": false,
	"missing-chunks": false,
}

var snapshotOutputs = []string{
	"chunk-count", "record-count", "chunk-records", "document-sha256",
	"payload-sha256", "manifest-sha256", "chunks-sha256",
}

// okOutputs lists, per api, the output keys a valid vector has: all of them.
var okOutputs = map[string][]string{
	"transform":   {"canonical-hex", "canonical-sha256"},
	"record":      {"canonical-hex", "canonical-sha256"},
	"records":     {"record-count", "canonical-hex", "canonical-sha256"},
	"build":       snapshotOutputs,
	"manifest":    {"canonical-sha256", "chunk-count", "record-count", "document-sha256"},
	"chunk":       {"canonical-sha256", "record-count", "payload-sha256"},
	"snapshot":    snapshotOutputs,
	"receipt":     {"canonical-hex", "canonical-sha256", "entity-type", "chunk-index", "status", "complete"},
	"refusal":     {"canonical-hex", "canonical-sha256", "class", "chunk-index", "record-index", "field"},
	"signalk":     {"record-count", "document-sha256", "canonical-hex", "canonical-sha256"},
	"declaration": {"canonical-hex", "canonical-sha256", "v2", "capabilities", "unknown-capabilities"},
	"chunkref":    {"canonical-hex", "canonical-sha256", "chunk-index", "payload-sha256"},
	"resolve":     {"canonical-hex", "canonical-sha256", "record-count", "payload-sha256"},
	"index":       {"canonical-hex", "canonical-sha256", "chunk-count", "record-count", "document-sha256", "payload-sha256", "manifest-sha256"},
}

var (
	buildInputs    = []string{"vessel", "snapshot", "revision", "discovered-at"}
	buildFlags     = []string{"truncated", "pagination-uncertain"}
	syntaxAPIs     = map[string]bool{"transform": true, "record": true, "records": true, "manifest": true, "chunk": true, "receipt": true, "refusal": true, "declaration": true, "chunkref": true, "index": true}
	outputKeyNames = func() map[string]bool {
		m := map[string]bool{}
		for _, keys := range okOutputs {
			for _, k := range keys {
				m[k] = true
			}
		}
		return m
	}()
)

// parseGolden parses a vector file strictly: every rule of the README is
// enforced, and anything else is an error.
func parseGolden(file string, data []byte) (*golden, error) {
	if !fileName.MatchString(file) {
		return nil, fmt.Errorf("file name %q is not NNN-short-name.txt", file)
	}
	g := &golden{file: file, fields: map[string]string{}}
	single := map[string]string{}
	rest := data
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			return nil, errors.New("no empty line ends the header")
		}
		line := string(rest[:i])
		rest = rest[i+1:]
		if line == "" {
			break
		}
		key, value, found := strings.Cut(line, ": ")
		if !found {
			return nil, fmt.Errorf("header line %q is not `key: value`", line)
		}
		if !headerKey.MatchString(key) {
			return nil, fmt.Errorf("bad header key %q", key)
		}
		repeat, known := headerKeys[key]
		if !known {
			return nil, fmt.Errorf("unknown header key %q", key)
		}
		for _, c := range []byte(value) {
			if c < 0x20 || c > 0x7e {
				return nil, fmt.Errorf("header %s: value is not printable ASCII", key)
			}
		}
		if value == "" || strings.TrimSpace(value) != value {
			return nil, fmt.Errorf("header %s: empty value or surrounding space", key)
		}
		switch {
		case key == "comment":
			g.comments = append(g.comments, value)
		case key == "where":
			loc, err := parseLocation(value)
			if err != nil {
				return nil, err
			}
			g.where = append(g.where, loc)
		case repeat:
			panic("unhandled repeatable key " + key)
		default:
			if _, dup := single[key]; dup {
				return nil, fmt.Errorf("header key %q repeats", key)
			}
			single[key] = value
		}
	}
	g.payload = rest
	return g, g.interpret(single)
}

func (g *golden) interpret(h map[string]string) error {
	take := func(key string) (string, bool) {
		v, ok := h[key]
		delete(h, key)
		return v, ok
	}
	var ok bool
	if g.api, ok = take("api"); !ok {
		return errors.New("missing api")
	}
	if _, known := okOutputs[g.api]; !known {
		return fmt.Errorf("unknown api %q", g.api)
	}
	if g.spec, ok = take("spec"); !ok {
		return errors.New("missing spec")
	}
	if !specRef.MatchString(g.spec) {
		return fmt.Errorf("spec %q is not a SPEC.md section number such as 6.2", g.spec)
	}
	switch expect, _ := take("expect"); expect {
	case "ok":
		g.ok = true
	case "error":
	default:
		return fmt.Errorf("expect must be ok or error, not %q", expect)
	}

	if g.api == "build" {
		for _, k := range buildInputs {
			v, ok := take(k)
			if !ok {
				return fmt.Errorf("a build vector needs %s", k)
			}
			g.fields[k] = v
		}
		if v, ok := take("cut"); ok {
			if v != "greedy" && v != "content-defined" {
				return fmt.Errorf("cut must be greedy or content-defined, not %q", v)
			}
			g.fields["cut"] = v
		}
		for _, k := range buildFlags {
			if v, ok := take(k); ok {
				if v != "true" {
					return fmt.Errorf("%s must be true when present", k)
				}
				g.fields[k] = v
			}
		}
	}

	if g.api == "signalk" {
		v, ok := take("selection")
		if !ok || (v != "lowest-ref" && v != "server") {
			return errors.New("a signalk vector needs selection: lowest-ref or server")
		}
		g.fields["selection"] = v
		ref, hasRef := take("reference-time")
		age, hasAge := take("max-age")
		if hasRef != hasAge {
			return errors.New("a signalk vector has reference-time and max-age together or neither")
		}
		if hasRef {
			if _, err := time.Parse(time.RFC3339, ref); err != nil {
				return fmt.Errorf("reference-time %q is not an RFC 3339 date-time", ref)
			}
			if n, err := strconv.Atoi(age); err != nil || n < 1 || strconv.Itoa(n) != age {
				return fmt.Errorf("max-age %q is not a positive number of seconds", age)
			}
			g.fields["reference-time"], g.fields["max-age"] = ref, age
		}
		if r, ok := take("reason"); ok {
			if g.ok || !signalkReasons[r] {
				return fmt.Errorf("reason %q: an incomplete-scan error of a signalk vector has json, model, self or source", r)
			}
			g.fields["reason"] = r
		}
	}

	if g.ok {
		for _, k := range okOutputs[g.api] {
			v, ok := take(k)
			if !ok {
				return fmt.Errorf("a valid %s vector needs %s", g.api, k)
			}
			if err := checkOutput(k, v); err != nil {
				return err
			}
			g.fields[k] = v
		}
		if g.api == "receipt" && g.fields["entity-type"] == sourcecatalog.ManifestIndexEntityType {
			v, ok := take("missing-chunks")
			if !ok {
				return errors.New("a valid receipt vector of a manifest index needs missing-chunks")
			}
			if err := checkOutput("missing-chunks", v); err != nil {
				return err
			}
			g.fields["missing-chunks"] = v
		}
		if len(g.where) > 0 {
			return errors.New("a valid vector has no where")
		}
	} else {
		var ok bool
		if g.class, ok = take("error"); !ok {
			return errors.New("an error vector needs error")
		}
		if _, known := errorClasses[g.class]; !known {
			return fmt.Errorf("unknown error class %q", g.class)
		}
		if g.detail, ok = take("detail"); ok {
			if _, known := syntaxDetails[g.detail]; !known {
				return fmt.Errorf("unknown detail %q", g.detail)
			}
		}
		if off, ok := take("offset"); ok {
			n, err := strconv.ParseInt(off, 10, 64)
			if err != nil || !count.MatchString(off) {
				return fmt.Errorf("bad offset %q", off)
			}
			g.offset, g.hasOffset = n, true
		}
		if (g.detail != "" || g.hasOffset) && (!syntaxAPIs[g.api] || g.class != "malformed-json") {
			return errors.New("detail and offset belong to malformed-json errors of transform, record, records, manifest, chunk, chunkref, receipt, refusal and declaration")
		}
		if g.api == "transform" {
			if g.detail == "" || !g.hasOffset {
				return errors.New("a transform error needs detail and offset")
			}
			if len(g.where) > 0 {
				return errors.New("a transform error has no where")
			}
		}
	}
	for k := range h {
		return fmt.Errorf("header key %q does not apply to this vector", k)
	}
	return nil
}

func checkOutput(key, v string) error {
	var ok bool
	switch key {
	case "canonical-hex":
		ok = lowerHex.MatchString(v)
	case "canonical-sha256", "document-sha256", "manifest-sha256":
		ok = hexDigest.MatchString(v)
	case "payload-sha256", "chunks-sha256":
		ok = true
		for _, d := range strings.Split(v, ",") {
			ok = ok && hexDigest.MatchString(d)
		}
	case "record-count", "chunk-count":
		ok = count.MatchString(v)
	case "chunk-records":
		ok = true
		for _, d := range strings.Split(v, ",") {
			ok = ok && count.MatchString(d)
		}
	case "entity-type":
		ok = v == sourcecatalog.ManifestEntityType || v == sourcecatalog.ChunkEntityType || v == sourcecatalog.ManifestIndexEntityType
	case "missing-chunks":
		ok = v == "-" || declaredNames.MatchString(v) && !strings.ContainsAny(v, "abcdefghijklmnopqrstuvwxyz_.-")
	case "status":
		ok = v == string(envelope.Staged) || v == string(envelope.AlreadyReceived)
	case "complete":
		ok = v == "true" || v == "false"
	case "chunk-index", "record-index":
		ok = v == "-" || count.MatchString(v)
	case "field":
		ok = v == "-" || fieldValue.MatchString(v)
	case "class":
		ok = classNames[v] != nil
	case "v2":
		ok = v == "true" || v == "false"
	case "capabilities", "unknown-capabilities":
		ok = v == "-" || declaredNames.MatchString(v)
	}
	if !ok {
		return fmt.Errorf("bad %s %q", key, v)
	}
	return nil
}

// parseLocation parses a where: value: "none", or space-separated
// chunk=N|-, record=N|-, field=NAME|-.
func parseLocation(s string) (location, error) {
	loc := location{text: s, chunk: sourcecatalog.NoIndex, record: sourcecatalog.NoIndex}
	if s == "none" {
		loc.checkChunk, loc.checkRecord, loc.checkFld = true, true, true
		return loc, nil
	}
	for _, tok := range strings.Split(s, " ") {
		k, v, found := strings.Cut(tok, "=")
		if !found || v == "" {
			return loc, fmt.Errorf("where %q: %q is not key=value", s, tok)
		}
		index := func(seen *bool, dst *int) error {
			if *seen {
				return fmt.Errorf("where %q: %s repeats", s, k)
			}
			*seen = true
			if v == "-" {
				return nil
			}
			n, err := strconv.Atoi(v)
			if err != nil || !count.MatchString(v) {
				return fmt.Errorf("where %q: bad %s", s, k)
			}
			*dst = n
			return nil
		}
		var err error
		switch k {
		case "chunk":
			err = index(&loc.checkChunk, &loc.chunk)
		case "record":
			err = index(&loc.checkRecord, &loc.record)
		case "field":
			if loc.checkFld {
				return loc, fmt.Errorf("where %q: field repeats", s)
			}
			loc.checkFld = true
			if v != "-" {
				if !fieldValue.MatchString(v) {
					return loc, fmt.Errorf("where %q: bad field", s)
				}
				loc.field = v
			}
		default:
			err = fmt.Errorf("where %q: unknown component %q", s, k)
		}
		if err != nil {
			return loc, err
		}
	}
	return loc, nil
}

func loadGoldens(t *testing.T) []*golden {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(vectorDir, "*.txt"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), minVectors, "too few vectors in %s", vectorDir)
	var out []*golden
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		g, err := parseGolden(filepath.Base(f), data)
		require.NoError(t, err, "%s", f)
		out = append(out, g)
	}
	return out
}

// ---------------------------------------------------------------------------
// Tests

func TestVectors(t *testing.T) {
	for _, g := range loadGoldens(t) {
		t.Run(strings.TrimSuffix(g.file, ".txt"), func(t *testing.T) {
			t.Cleanup(func() {
				if t.Failed() {
					for _, c := range g.comments {
						t.Logf("comment: %s", c)
					}
				}
			})
			switch g.api {
			case "transform":
				runTransform(t, g)
			case "record":
				runRecord(t, g)
			case "records":
				runRecords(t, g)
			case "build":
				runBuild(t, g)
			case "manifest":
				runManifest(t, g)
			case "chunk":
				runChunk(t, g)
			case "snapshot":
				runSnapshot(t, g)
			case "receipt":
				runReceipt(t, g)
			case "refusal":
				runRefusal(t, g)
			case "signalk":
				runSignalK(t, g)
			case "declaration":
				runDeclaration(t, g)
			case "chunkref":
				runChunkRef(t, g)
			case "resolve":
				runResolve(t, g)
			case "index":
				runIndex(t, g)
			}
		})
	}
}

// TestVectorCoverage checks that the vectors exercise every api, every
// error class of SPEC.md §10.1 that a decoder or Build can return, every
// detail of a canonical syntax error, and every class in a valid refusal.
func TestVectorCoverage(t *testing.T) {
	perAPI := map[string]int{}
	perClass := map[string]int{}
	perDetail := map[string]int{}
	refused := map[string]int{}
	for _, g := range loadGoldens(t) {
		perAPI[g.api]++
		if g.ok && g.api == "refusal" {
			refused[g.fields["class"]]++
		}
		if !g.ok {
			perClass[g.class]++
			if g.detail != "" {
				perDetail[g.detail]++
			}
		}
	}
	for _, a := range apis {
		assert.Positive(t, perAPI[a], "no %s vector", a)
	}
	for c := range errorClasses {
		assert.Positive(t, perClass[c], "no vector of class %s", c)
	}
	for d := range syntaxDetails {
		assert.Positive(t, perDetail[d], "no vector with detail %s", d)
	}
	for c := range classNames {
		assert.Positive(t, refused[c], "no valid refusal vector of class %s", c)
	}
	t.Logf("vectors by api: %v", perAPI)
	t.Logf("error vectors by class: %v", perClass)
}

// TestVectorsUpToDate checks that testdata/vectors holds exactly what
// internal/vectorgen writes.
func TestVectorsUpToDate(t *testing.T) {
	want, err := vectors.Files()
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(vectorDir, "*.txt"))
	require.NoError(t, err)
	got := map[string]bool{}
	for _, f := range files {
		name := filepath.Base(f)
		got[name] = true
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		w, ok := want[name]
		switch {
		case !ok:
			t.Errorf("%s: not written by internal/vectorgen; run go run ./internal/vectorgen", name)
		case !bytes.Equal(data, w):
			t.Errorf("%s: differs from what internal/vectorgen writes; run go run ./internal/vectorgen", name)
		}
	}
	for name := range want {
		if !got[name] {
			t.Errorf("%s: missing; run go run ./internal/vectorgen", name)
		}
	}
}

func TestVectorParserIsStrict(t *testing.T) {
	body := []byte("{}")
	sum := sha256.Sum256(body)
	valid := "api: transform\nspec: 3.1\nexpect: ok\ncanonical-hex: 7b7d\ncanonical-sha256: " + hex.EncodeToString(sum[:]) + "\n\n{}"
	_, err := parseGolden("001-valid.txt", []byte(valid))
	require.NoError(t, err)

	insert := func(line string) string { return strings.Replace(valid, "expect: ok\n", "expect: ok\n"+line+"\n", 1) }
	refusal := func(class string) string {
		return "api: refusal\nspec: 9.4\nexpect: ok\ncanonical-hex: 7b7d\ncanonical-sha256: " + hex.EncodeToString(sum[:]) +
			"\n" + class + "\nchunk-index: -\nrecord-index: -\nfield: -\n\n{}"
	}
	_, err = parseGolden("001-valid.txt", []byte(refusal("class: store-unavailable")))
	require.NoError(t, err)
	bad := map[string]struct{ file, text string }{
		"no empty line":           {"001-x.txt", "api: transform\nexpect: ok\n"},
		"no newline at all":       {"001-x.txt", "api: transform"},
		"unknown key":             {"001-x.txt", insert("colour: red")},
		"repeated key":            {"001-x.txt", insert("api: transform")},
		"missing api":             {"001-x.txt", strings.Replace(valid, "api: transform\n", "", 1)},
		"unknown api":             {"001-x.txt", strings.Replace(valid, "api: transform", "api: verify", 1)},
		"missing spec":            {"001-x.txt", strings.Replace(valid, "spec: 3.1\n", "", 1)},
		"spec with section":       {"001-x.txt", strings.Replace(valid, "spec: 3.1", "spec: S3.1", 1)},
		"spec with two levels":    {"001-x.txt", strings.Replace(valid, "spec: 3.1", "spec: 3.1.2", 1)},
		"spec repeats":            {"001-x.txt", insert("spec: 3.2")},
		"missing expect":          {"001-x.txt", strings.Replace(valid, "expect: ok\n", "", 1)},
		"missing output":          {"001-x.txt", strings.Replace(valid, "canonical-hex: 7b7d\n", "", 1)},
		"output not hex":          {"001-x.txt", strings.Replace(valid, "7b7d", "7B7D", 1)},
		"where on ok":             {"001-x.txt", insert("where: none")},
		"input on transform":      {"001-x.txt", insert("revision: 1")},
		"carriage return":         {"001-x.txt", strings.Replace(valid, "expect: ok\n", "expect: ok\r\n", 1)},
		"no space after colon":    {"001-x.txt", strings.Replace(valid, "expect: ok", "expect:ok", 1)},
		"empty value":             {"001-x.txt", insert("comment: ")},
		"non-ASCII comment":       {"001-x.txt", insert("comment: caf\u00e9")},
		"bad file name":           {"1-x.txt", valid},
		"error without class":     {"001-x.txt", "api: record\nspec: 4.1\nexpect: error\n\n{}"},
		"unknown class":           {"001-x.txt", "api: record\nspec: 4.1\nexpect: error\nerror: oops\n\n{}"},
		"output on error":         {"001-x.txt", "api: record\nspec: 4.1\nexpect: error\nerror: integrity\ncanonical-sha256: " + hex.EncodeToString(sum[:]) + "\n\n{}"},
		"transform sans offset":   {"001-x.txt", "api: transform\nspec: 4.1\nexpect: error\nerror: malformed-json\ndetail: syntax\n\n{"},
		"detail on integrity":     {"001-x.txt", "api: record\nspec: 4.1\nexpect: error\nerror: integrity\ndetail: syntax\n\n{}"},
		"bad where":               {"001-x.txt", "api: record\nspec: 4.1\nexpect: error\nerror: integrity\nwhere: chunk=x\n\n{}"},
		"where repeats part":      {"001-x.txt", "api: record\nspec: 4.1\nexpect: error\nerror: integrity\nwhere: chunk=1 chunk=2\n\n{}"},
		"build without input":     {"001-x.txt", "api: build\nspec: 4.1\nexpect: error\nerror: integrity\n\n[]"},
		"receipt output on chunk": {"001-x.txt", "api: chunk\nspec: 6.3\nexpect: error\nerror: integrity\nstatus: staged\n\n{}"},
		"refusal class unknown":   {"001-x.txt", refusal("class: oops")},
		"refusal field missing":   {"001-x.txt", strings.Replace(refusal("class: conflict"), "field: -\n", "", 1)},
		"refusal chunk not index": {"001-x.txt", strings.Replace(refusal("class: conflict"), "chunk-index: -", "chunk-index: x", 1)},
	}
	for name, tc := range bad {
		_, err := parseGolden(tc.file, []byte(tc.text))
		assert.Error(t, err, name)
	}
}

// ---------------------------------------------------------------------------
// Runners, one per api

func runTransform(t *testing.T, g *golden) {
	out, err := canonical.Transform(g.payload)
	if g.ok {
		require.NoError(t, err)
		checkCanonical(t, g, out)
		again, err := canonical.Transform(out)
		require.NoError(t, err)
		assert.Equal(t, out, again, "canonical output must transform to itself")
		return
	}
	checkSyntaxError(t, g, err)
	// Every decoder refuses the same bytes, at the same place.
	_, err = catalog.Decode(g.payload)
	checkError(t, g, err)
	_, err = catalog.DecodeList(g.payload)
	checkError(t, g, err)
	_, err = envelope.DecodeManifest(g.payload)
	checkError(t, g, err)
	_, err = envelope.DecodeChunk(g.payload)
	checkError(t, g, err)
	if len(g.payload) <= envelope.MaxAnswerSize {
		_, err = envelope.DecodeReceipt(g.payload)
		checkError(t, g, err)
		_, err = envelope.DecodeRefusal(g.payload)
		checkError(t, g, err)
		_, err = httpbinding.DecodeDeclaration(g.payload)
		checkError(t, g, err)
	}
}

func runRecord(t *testing.T, g *golden) {
	r, err := catalog.Decode(g.payload)
	inList := append(append([]byte("["), g.payload...), ']')
	rs, listErr := catalog.DecodeList(inList)
	if !g.ok {
		checkError(t, g, err)
		checkTransformAgrees(t, g)
		if g.class != "malformed-json" {
			// In a list, the same error gains the record index 0.
			require.ErrorIs(t, listErr, errorClasses[g.class])
			p, q := sourcecatalog.Problems(listErr)[0], sourcecatalog.Problems(err)[0]
			assert.Equal(t, 0, p.Record, "record index in a list")
			assert.Equal(t, q.Field, p.Field, "field in a list")
		}
		return
	}
	require.NoError(t, err)
	checkCanonical(t, g, r.Canonical())
	checkRecord(t, r)
	require.NoError(t, listErr)
	require.Len(t, rs, 1)
	assert.Equal(t, r.Canonical(), rs[0].Canonical())
	// A record's canonical bytes are the RFC 8785 form of its JSON text.
	out, err := canonical.Transform(g.payload)
	require.NoError(t, err)
	assert.Equal(t, out, r.Canonical())
}

func runRecords(t *testing.T, g *golden) {
	rs, err := catalog.DecodeList(g.payload)
	if !g.ok {
		checkError(t, g, err)
		checkTransformAgrees(t, g)
		return
	}
	require.NoError(t, err)
	assert.Equal(t, g.fields["record-count"], strconv.Itoa(len(rs)), "record-count")
	list := []byte("[")
	for i, r := range rs {
		if i > 0 {
			list = append(list, ',')
		}
		list = append(list, r.Canonical()...)
		checkRecord(t, r)
	}
	list = append(list, ']')
	checkCanonical(t, g, list)
	out, err := canonical.Transform(g.payload)
	require.NoError(t, err)
	assert.Equal(t, out, list, "the records' canonical bytes are the RFC 8785 form of the list")
}

func runBuild(t *testing.T, g *golden) {
	in := buildInput(t, g)
	var opts []envelope.Option
	contentDefined := g.fields["cut"] == "content-defined"
	if contentDefined {
		opts = append(opts, envelope.WithContentDefinedCuts())
	}
	s, err := envelope.Build(in, opts...)
	if !g.ok {
		checkError(t, g, err)
		return
	}
	require.NoError(t, err)
	checkSnapshotOutputs(t, g, s)
	checkWire(t, s, contentDefined)

	// The manifest says what the header said.
	assert.Equal(t, in.VesselID, s.Manifest.VesselID)
	assert.Equal(t, in.SnapshotID, s.Manifest.SnapshotID)
	assert.Equal(t, in.Revision, s.Manifest.Revision)
	assert.True(t, in.DiscoveredAt.Equal(s.Manifest.DiscoveredAt))

	// The input order does not matter.
	rev := append([]*catalog.Record(nil), in.Records...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	in.Records = rev
	again, err := envelope.Build(in, opts...)
	require.NoError(t, err)
	assert.Equal(t, s.Manifest.Canonical(), again.Manifest.Canonical())
	require.Len(t, again.Chunks, len(s.Chunks))
	for i := range s.Chunks {
		assert.Equal(t, s.Chunks[i].Canonical(), again.Chunks[i].Canonical())
	}

	// What Build emits, the receiver accepts: decoded alone, and as a set
	// in any order, to the same bytes.
	m, err := envelope.DecodeManifest(s.Manifest.Canonical())
	require.NoError(t, err)
	assert.Equal(t, s.Manifest.Canonical(), m.Canonical())
	var raw [][]byte
	for i := len(s.Chunks) - 1; i >= 0; i-- {
		c, err := envelope.DecodeChunk(s.Chunks[i].Canonical())
		require.NoError(t, err)
		assert.Equal(t, s.Chunks[i].Canonical(), c.Canonical())
		raw = append(raw, s.Chunks[i].Canonical())
	}
	require.NoError(t, envelope.Verify(&s.Manifest, s.Chunks))
	decoded, err := envelope.DecodeSnapshot(s.Manifest.Canonical(), raw)
	require.NoError(t, err)
	checkSnapshotOutputs(t, g, decoded)
}

func runManifest(t *testing.T, g *golden) {
	m, err := envelope.DecodeManifest(g.payload)
	if !g.ok {
		checkError(t, g, err)
		checkTransformAgrees(t, g)
		return
	}
	require.NoError(t, err)
	assert.Equal(t, g.fields["canonical-sha256"], sum(m.Canonical()), "canonical-sha256")
	assert.Equal(t, g.fields["chunk-count"], strconv.Itoa(m.ChunkCount), "chunk-count")
	assert.Equal(t, g.fields["record-count"], strconv.Itoa(m.RecordCount), "record-count")
	assert.Equal(t, g.fields["document-sha256"], m.DocumentSHA256.String(), "document-sha256")
	assert.Equal(t, manifestText(&m), string(m.Canonical()), "manifest wire format")
	again := checkReencodes(t, g, "manifest", m.Canonical(), envelope.DecodeManifest)
	assert.Equal(t, m.Canonical(), again.Canonical())
}

func runChunk(t *testing.T, g *golden) {
	c, err := envelope.DecodeChunk(g.payload)
	if !g.ok {
		checkError(t, g, err)
		checkTransformAgrees(t, g)
		return
	}
	require.NoError(t, err)
	assert.Equal(t, g.fields["canonical-sha256"], sum(c.Canonical()), "canonical-sha256")
	assert.Equal(t, g.fields["record-count"], strconv.Itoa(len(c.Records())), "record-count")
	assert.Equal(t, g.fields["payload-sha256"], c.PayloadSHA256().String(), "payload-sha256")
	assert.Equal(t, g.fields["payload-sha256"], sum(body(c.Records())), "payload-sha256 is the hash of the canonical body")
	assert.Equal(t, chunkText(c, c.Records()), string(c.Canonical()), "chunk wire format")
	again := checkReencodes(t, g, "chunk", c.Canonical(), envelope.DecodeChunk)
	assert.Equal(t, c.Canonical(), again.Canonical())
	for _, r := range c.Records() {
		checkRecord(t, r)
	}
}

func runSnapshot(t *testing.T, g *golden) {
	// The messages re-serialised canonically, as the README says, and, to
	// show that decoders do not care, as they are written in the payload.
	m, chunks := splitSnapshot(t, g.payload)
	s, err := envelope.DecodeSnapshot(m, chunks)
	rawM, rawChunks := rawSnapshot(t, g.payload)
	rawS, rawErr := envelope.DecodeSnapshot(rawM, rawChunks)
	if !g.ok {
		checkError(t, g, err)
		checkError(t, g, rawErr)
		return
	}
	require.NoError(t, err)
	require.NoError(t, rawErr)
	checkSnapshotOutputs(t, g, s)
	checkSnapshotOutputs(t, g, rawS)
	checkWire(t, s, false)
}

func runReceipt(t *testing.T, g *golden) {
	r, err := envelope.DecodeReceipt(g.payload)
	if !g.ok {
		checkError(t, g, err)
		checkTransformAgrees(t, g)
		return
	}
	require.NoError(t, err)
	require.NoError(t, r.Check(), "a decoded receipt passes Check")
	checkCanonical(t, g, r.Canonical())
	assert.Equal(t, g.fields["entity-type"], r.EntityType, "entity-type")
	assert.Equal(t, g.fields["chunk-index"], indexText(r.ChunkIndex), "chunk-index")
	assert.Equal(t, g.fields["status"], string(r.Status), "status")
	assert.Equal(t, g.fields["complete"], strconv.FormatBool(r.Complete), "complete")
	assert.Equal(t, r.EntityType == sourcecatalog.ChunkEntityType, r.ChunkIndex != sourcecatalog.NoIndex,
		"a chunk index exactly on a chunk's receipt")
	if r.EntityType == sourcecatalog.ManifestIndexEntityType {
		assert.Equal(t, g.fields["missing-chunks"], missingText(r.Missing), "missing-chunks")
	}
	assert.Equal(t, receiptText(r), string(r.Canonical()), "receipt wire format")
	again := checkReencodes(t, g, "receipt", r.Canonical(), envelope.DecodeReceipt)
	assert.Equal(t, r, again)
	assert.True(t, r.Matches(again))
}

func runRefusal(t *testing.T, g *golden) {
	f, err := envelope.DecodeRefusal(g.payload)
	if !g.ok {
		checkError(t, g, err)
		checkTransformAgrees(t, g)
		return
	}
	require.NoError(t, err)
	require.NoError(t, f.Check(), "a decoded refusal passes Check")
	checkCanonical(t, g, f.Canonical())
	assert.Equal(t, classNames[g.fields["class"]], f.Class, "class")
	assert.Equal(t, g.fields["chunk-index"], indexText(f.Chunk), "chunk-index")
	assert.Equal(t, g.fields["record-index"], indexText(f.Record), "record-index")
	field := g.fields["field"]
	if field == "-" {
		field = ""
	}
	assert.Equal(t, field, f.Field, "field")
	again := checkReencodes(t, g, "refusal", f.Canonical(), envelope.DecodeRefusal)
	assert.Equal(t, f, again)

	// As an error, the refusal has its class and location.
	e := f.Err()
	require.ErrorIs(t, e, f.Class)
	p := sourcecatalog.Problems(e)
	require.Len(t, p, 1)
	assert.Equal(t, f.Class, p[0].Class)
	assert.Equal(t, []int{f.Chunk, f.Record}, []int{p[0].Chunk, p[0].Record}, "chunk and record of Err")
	assert.Equal(t, f.Field, p[0].Field, "field of Err")
}

func runDeclaration(t *testing.T, g *golden) {
	d, err := httpbinding.DecodeDeclaration(g.payload)
	if !g.ok {
		checkError(t, g, err)
		checkTransformAgrees(t, g)
		return
	}
	require.NoError(t, err)
	checkCanonical(t, g, d.Canonical())
	assert.Equal(t, g.fields["v2"], strconv.FormatBool(d.V2()), "v2")
	names := func(list []string) string {
		if len(list) == 0 {
			return "-"
		}
		return strings.Join(list, ",")
	}
	assert.Equal(t, g.fields["capabilities"], names(d.Capabilities), "capabilities")
	assert.Equal(t, g.fields["unknown-capabilities"], names(d.Unknown), "unknown-capabilities")
	for _, c := range d.Capabilities {
		assert.True(t, d.Has(c), "a known capability declared is supported: %s", c)
	}
	for _, c := range d.Unknown {
		assert.False(t, d.Has(c), "an unknown capability is never supported: %s", c)
	}
	again := checkReencodes(t, g, "declaration", d.Canonical(), httpbinding.DecodeDeclaration)
	assert.Equal(t, d, again)
}

func indexText(i int) string {
	if i == sourcecatalog.NoIndex {
		return "-"
	}
	return strconv.Itoa(i)
}

// receiptText writes a receipt the way SPEC.md §9.1 says.
func receiptText(r envelope.Receipt) string {
	chunk := ""
	if r.ChunkIndex != sourcecatalog.NoIndex {
		chunk = fmt.Sprintf(`"chunk_index":%d,`, r.ChunkIndex)
	}
	missing := ""
	if r.EntityType == sourcecatalog.ManifestIndexEntityType {
		missing = `,"missing_chunks":[` + strings.Trim(missingText(r.Missing), "-") + `]`
	}
	return fmt.Sprintf(`{%s"complete":%t,"entity_type":"%s"%s,"protocol":"%s","revision":%d,"sha256":"%s","snapshot_id":"%s","status":"%s","vessel_id":"%s"}`,
		chunk, r.Complete, r.EntityType, missing, sourcecatalog.Protocol, r.Revision, r.Digest, r.SnapshotID, r.Status, r.VesselID)
}

// missingText writes a receipt's missing chunks as a vector's
// missing-chunks: a comma list in ascending order, or - for none.
func missingText(s envelope.ChunkSet) string {
	var parts []string
	for _, i := range s.Indices() {
		parts = append(parts, strconv.Itoa(i))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ",")
}

// ---------------------------------------------------------------------------
// Checks

// checkError checks err against an error vector: class, detail, offset and
// locations.
func checkError(t *testing.T, g *golden, err error) {
	t.Helper()
	class := errorClasses[g.class]
	require.Error(t, err, "want %s", g.class)
	require.ErrorIs(t, err, class, "want %s, got %v", g.class, err)
	if g.detail != "" || g.hasOffset {
		checkSyntaxError(t, g, err)
	}
	problems := sourcecatalog.Problems(err)
	require.NotEmpty(t, problems)
	for _, p := range problems {
		assert.LessOrEqual(t, len(p.Error()), 300, "error texts stay bounded: %q", p.Error())
	}
	first := problems[0]
	assert.Equal(t, class, first.Class, "class of the first problem: %v", first)
	classes := 0
	for _, c := range allClasses {
		if errors.Is(first, c) {
			classes++
		}
	}
	assert.Equal(t, 1, classes, "a problem wraps exactly one class: %v", first)

	switch len(g.where) {
	case 0:
	case 1:
		assert.True(t, g.where[0].matches(first), "where: %s; got %q (%v)", g.where[0].text, first.Location(), first)
	default:
		require.Len(t, problems, len(g.where), "one problem per where line: %v", err)
		used := make([]bool, len(g.where))
	problem:
		for _, p := range problems {
			assert.Equal(t, class, p.Class, "class of %v", p)
			for i, w := range g.where {
				if !used[i] && w.matches(p) {
					used[i] = true
					continue problem
				}
			}
			t.Errorf("unexpected problem at %q: %v", p.Location(), p)
		}
	}
}

// checkSyntaxError checks the canonical detail and offset of err.
func checkSyntaxError(t *testing.T, g *golden, err error) {
	t.Helper()
	require.ErrorIs(t, err, sourcecatalog.ErrMalformedJSON)
	if g.detail != "" {
		assert.ErrorIs(t, err, syntaxDetails[g.detail], "detail %s, got %v", g.detail, err)
	}
	if g.hasOffset {
		var se *canonical.SyntaxError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, g.offset, se.Offset, "offset")
	}
}

// checkReencodes checks that canon, the canonical bytes of the message
// (named what) that g's payload decoded to, are the RFC 8785 form of the
// payload and decode again; it returns what they decode to, for the
// caller to compare with the first decoding.
func checkReencodes[T any](t *testing.T, g *golden, what string, canon []byte, decode func([]byte) (T, error)) T {
	t.Helper()
	out, err := canonical.Transform(g.payload)
	require.NoError(t, err)
	assert.Equal(t, string(out), string(canon), "the "+what+"'s canonical bytes are the RFC 8785 form of its text")
	again, err := decode(canon)
	require.NoError(t, err)
	return again
}

// checkTransformAgrees checks that canonical.Transform accepts the payload
// of an error vector unless the error is malformed JSON, and then refuses it
// the same way.
func checkTransformAgrees(t *testing.T, g *golden) {
	t.Helper()
	_, err := canonical.Transform(g.payload)
	if g.class != "malformed-json" {
		assert.NoError(t, err, "the payload is strict JSON; only the protocol refuses it")
		return
	}
	if g.detail != "" || g.hasOffset {
		checkSyntaxError(t, g, err)
	}
}

func checkCanonical(t *testing.T, g *golden, b []byte) {
	t.Helper()
	want, err := hex.DecodeString(g.fields["canonical-hex"])
	require.NoError(t, err)
	assert.Equal(t, g.fields["canonical-sha256"], sum(want), "the vector's canonical-sha256 must be that of its canonical-hex")
	assert.Equal(t, string(want), string(b), "canonical bytes")
	assert.Equal(t, g.fields["canonical-sha256"], sum(b), "canonical-sha256")
}

// checkRecord checks that a record decodes from its canonical bytes and is
// rebuilt from its accessors to the same bytes.
func checkRecord(t *testing.T, r *catalog.Record) {
	t.Helper()
	again, err := catalog.Decode(r.Canonical())
	require.NoError(t, err)
	assert.Equal(t, r.Canonical(), again.Canonical())
	var rebuilt *catalog.Record
	switch r.Kind() {
	case catalog.KindPath:
		p, _ := r.AsPath()
		rebuilt, err = catalog.NewPath(p)
	case catalog.KindSource:
		s, _ := r.AsSource()
		rebuilt, err = catalog.NewSource(s)
	case catalog.KindObservation:
		o, _ := r.AsObservation()
		rebuilt, err = catalog.NewObservation(o)
	}
	require.NoError(t, err)
	assert.Equal(t, string(r.Canonical()), string(rebuilt.Canonical()))
}

func checkSnapshotOutputs(t *testing.T, g *golden, s *envelope.Snapshot) {
	t.Helper()
	var counts, payloads, chunks []string
	total := 0
	for i, c := range s.Chunks {
		assert.Equal(t, i, c.Index(), "chunks in index order")
		counts = append(counts, strconv.Itoa(len(c.Records())))
		payloads = append(payloads, c.PayloadSHA256().String())
		chunks = append(chunks, sum(c.Canonical()))
		total += len(c.Records())
	}
	assert.Equal(t, g.fields["chunk-count"], strconv.Itoa(s.Manifest.ChunkCount), "chunk-count")
	assert.Equal(t, g.fields["chunk-count"], strconv.Itoa(len(s.Chunks)), "chunk-count")
	assert.Equal(t, g.fields["record-count"], strconv.Itoa(s.Manifest.RecordCount), "record-count")
	assert.Equal(t, g.fields["record-count"], strconv.Itoa(total), "record-count")
	assert.Equal(t, g.fields["chunk-records"], strings.Join(counts, ","), "chunk-records")
	assert.Equal(t, g.fields["document-sha256"], s.Manifest.DocumentSHA256.String(), "document-sha256")
	assert.Equal(t, g.fields["payload-sha256"], strings.Join(payloads, ","), "payload-sha256")
	assert.Equal(t, g.fields["manifest-sha256"], sum(s.Manifest.Canonical()), "manifest-sha256")
	assert.Equal(t, g.fields["chunks-sha256"], strings.Join(chunks, ","), "chunks-sha256")
}

// checkWire recomputes, without the library's encoders, what a complete
// snapshot must be: the wire format of manifest and chunks, the hashes, the
// canonical global order, the limits, and that the chunker closed each
// chunk only when the next record would have broken a limit or, under the
// content-defined rule (SPEC.md §7.2), opens a run.
func checkWire(t *testing.T, s *envelope.Snapshot, contentDefined bool) {
	t.Helper()
	var all []*catalog.Record
	for _, c := range s.Chunks {
		all = append(all, c.Records()...)
	}
	var opens []bool
	if contentDefined {
		opens = opensRun(t, all)
	}
	at := 0
	w := envelope.DefaultWrapper{}
	for i, c := range s.Chunks {
		recs := c.Records()
		b := body(recs)
		assert.LessOrEqual(t, len(recs), sourcecatalog.MaxRecordsPerChunk)
		assert.LessOrEqual(t, len(b), sourcecatalog.MaxChunkBody)
		assert.Equal(t, sum(b), c.PayloadSHA256().String(), "payload_sha256 of chunk %d", i)
		assert.Equal(t, chunkText(c, recs), string(c.Canonical()), "wire format of chunk %d", i)
		key := envelope.ChunkKey(c.SnapshotID(), i)
		wrapped := w.Wrap(nil, sourcecatalog.ChunkEntityType, key, c.Canonical())
		assert.LessOrEqual(t, len(wrapped), sourcecatalog.MaxRequest)
		assert.Equal(t, len(wrapped), w.WrappedSize(sourcecatalog.ChunkEntityType, key, c.Canonical()))
		if len(recs) == 0 {
			assert.Len(t, s.Chunks, 1, "only an empty snapshot has an empty chunk")
		}
		if i+1 < len(s.Chunks) {
			next := s.Chunks[i+1].Records()[0]
			grown := append(append([]*catalog.Record(nil), recs...), next)
			full := len(recs) == sourcecatalog.MaxRecordsPerChunk ||
				len(body(grown)) > sourcecatalog.MaxChunkBody ||
				len(w.Wrap(nil, sourcecatalog.ChunkEntityType, key, []byte(chunkText(c, grown)))) > sourcecatalog.MaxRequest
			assert.True(t, full || contentDefined && opens[at+len(recs)], "chunk %d was closed although the next record fits", i)
		}
		for k := range recs {
			if contentDefined && k > 0 {
				assert.False(t, opens[at+k], "chunk %d holds record %d, which opens a run", i, k)
			}
		}
		at += len(recs)
	}
	for i := 1; i < len(all); i++ {
		assert.Negative(t, compareRecords(all[i-1], all[i]), "records %d and %d are not in canonical global order", i-1, i)
	}
	m := &s.Manifest
	assert.Equal(t, sum(body(all)), m.DocumentSHA256.String(), "document_sha256")
	assert.Equal(t, len(all), m.RecordCount)
	assert.Equal(t, len(s.Chunks), m.ChunkCount)
	assert.Equal(t, manifestText(m), string(m.Canonical()), "manifest wire format")
	assert.LessOrEqual(t, len(w.Wrap(nil, sourcecatalog.ManifestEntityType, envelope.ManifestKey(m.SnapshotID), m.Canonical())), sourcecatalog.MaxRequest)
}

// opensRun restates the content-defined rule of SPEC.md §7.2: for records
// in canonical order, whether each opens a run — it follows a record of
// another kind, or the SHA-256 of its key text is less, bytewise, than
// that of every other record of its kind within the window.
func opensRun(t *testing.T, all []*catalog.Record) []bool {
	w := 48
	for _, b := range []struct{ records, window int }{{2048, 6}, {4096, 12}, {8192, 24}} {
		if len(all) <= b.records {
			w = b.window
			break
		}
	}
	digests := make([]string, len(all))
	for i, r := range all {
		key := []string{r.Kind().String(), r.Key().Path, r.Key().SourceRef}
		switch r.Kind() {
		case catalog.KindPath:
			key = key[:2]
		case catalog.KindSource:
			key = []string{key[0], key[2]}
		}
		j, err := json.Marshal(key)
		require.NoError(t, err)
		text, err := canonical.Transform(j)
		require.NoError(t, err)
		h := sha256.Sum256(text)
		digests[i] = string(h[:])
	}
	out := make([]bool, len(all))
	for i := 1; i < len(all); i++ {
		out[i] = all[i].Kind() != all[i-1].Kind()
		if out[i] {
			continue
		}
		out[i] = true
		for j := max(0, i-w); j <= min(len(all)-1, i+w); j++ {
			if j != i && all[j].Kind() == all[i].Kind() && digests[j] <= digests[i] {
				out[i] = false
			}
		}
	}
	return out
}

// compareRecords is the canonical global order written out again: paths by
// path, sources by source_ref, observations by path and source_ref.
func compareRecords(a, b *catalog.Record) int {
	if a.Kind() != b.Kind() {
		return int(a.Kind()) - int(b.Kind())
	}
	if c := strings.Compare(a.PathName(), b.PathName()); c != 0 {
		return c
	}
	return strings.Compare(a.SourceRef(), b.SourceRef())
}

func body(records []*catalog.Record) []byte {
	b := []byte(`{"records":[`)
	for i, r := range records {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, r.Canonical()...)
	}
	return append(b, "]}"...)
}

// chunkText writes a chunk of the given records the way SPEC.md §6.3 says.
func chunkText(c *envelope.Chunk, records []*catalog.Record) string {
	b := body(records)
	return fmt.Sprintf(`{"chunk_index":%d,"payload_sha256":"%s","protocol":"%s","records":%s,"revision":%d,"snapshot_id":"%s","vessel_id":"%s"}`,
		c.Index(), sum(b), sourcecatalog.Protocol, b[len(`{"records":`):len(b)-1], c.Revision(), c.SnapshotID(), c.VesselID())
}

func manifestText(m *envelope.Manifest) string {
	return fmt.Sprintf(`{"chunk_count":%d,"discovered_at_utc":"%s","document_sha256":"%s","inventory_coverage":"%s",`+
		`"protocol":"%s","record_count":%d,"revision":%d,"scope":"%s","snapshot_id":"%s","transport_complete":true,"vessel_id":"%s"}`,
		m.ChunkCount, m.DiscoveredAt.UTC().Format(time.RFC3339Nano), m.DocumentSHA256, sourcecatalog.Coverage,
		sourcecatalog.Protocol, m.RecordCount, m.Revision, sourcecatalog.Scope, m.SnapshotID, m.VesselID)
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// buildInput reads the header of a build vector and decodes its records,
// which must be valid: a build vector tests Build, not the record decoder.
func buildInput(t *testing.T, g *golden) envelope.Input {
	t.Helper()
	var in envelope.Input
	var err error
	in.VesselID, err = uuid.Parse(g.fields["vessel"])
	require.NoError(t, err, "vessel")
	in.SnapshotID, err = uuid.Parse(g.fields["snapshot"])
	require.NoError(t, err, "snapshot")
	in.Revision, err = strconv.ParseInt(g.fields["revision"], 10, 64)
	require.NoError(t, err, "revision")
	in.DiscoveredAt, err = time.Parse(time.RFC3339Nano, g.fields["discovered-at"])
	require.NoError(t, err, "discovered-at")
	in.Truncated = g.fields["truncated"] == "true"
	in.PaginationUncertain = g.fields["pagination-uncertain"] == "true"
	in.Records, err = catalog.DecodeList(g.payload)
	require.NoError(t, err, "the records of a build vector must decode")
	return in
}

// splitSnapshot parses a snapshot payload strictly and returns the
// canonical bytes of its manifest and of each chunk.
func splitSnapshot(t *testing.T, payload []byte) ([]byte, [][]byte) {
	t.Helper()
	v, err := canonical.Parse(payload)
	require.NoError(t, err, "a snapshot payload is strict JSON")
	require.Equal(t, canonical.KindObject, v.Kind())
	mems := v.Members()
	require.Len(t, mems, 2, `a snapshot payload is {"manifest":{...},"chunks":[...]}`)
	require.Equal(t, "chunks", mems[0].Name)
	require.Equal(t, "manifest", mems[1].Name)
	require.Equal(t, canonical.KindArray, mems[0].Value.Kind())
	var chunks [][]byte
	for i := range mems[0].Value.Elems() {
		chunks = append(chunks, mems[0].Value.Elems()[i].AppendCanonical(nil))
	}
	return mems[1].Value.AppendCanonical(nil), chunks
}

// rawSnapshot returns the messages of a snapshot payload as written.
func rawSnapshot(t *testing.T, payload []byte) ([]byte, [][]byte) {
	t.Helper()
	var p struct {
		Manifest json.RawMessage   `json:"manifest"`
		Chunks   []json.RawMessage `json:"chunks"`
	}
	require.NoError(t, json.Unmarshal(payload, &p))
	chunks := make([][]byte, len(p.Chunks))
	for i, c := range p.Chunks {
		chunks[i] = c
	}
	return p.Manifest, chunks
}

// signalkReasons are the ScanError reasons a signalk vector may expect:
// those of the mapping itself.
var signalkReasons = map[string]bool{"json": true, "model": true, "self": true, "source": true}

func runSignalK(t *testing.T, g *golden) {
	sel, err := signalk.ParseSelection(g.fields["selection"])
	require.NoError(t, err)
	var age signalk.AgeBound
	if ref := g.fields["reference-time"]; ref != "" {
		age.Now, err = time.Parse(time.RFC3339, ref)
		require.NoError(t, err)
		n, err := strconv.Atoi(g.fields["max-age"])
		require.NoError(t, err)
		age.MaxAge = time.Duration(n) * time.Second
	}
	rs, err := signalk.MapWithin(g.payload, sel, age)
	if !g.ok {
		require.Error(t, err)
		require.Nil(t, rs)
		require.Equal(t, errorClasses[g.class], sourcecatalog.Class(err), "want %s, got %v", g.class, err)
		if r := g.fields["reason"]; r != "" {
			var se *signalk.ScanError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, r, string(se.Reason), "reason: %v", err)
		}
		return
	}
	require.NoError(t, err)
	assert.Equal(t, g.fields["record-count"], strconv.Itoa(len(rs)), "record-count")
	list, body := []byte("["), []byte(`{"records":[`)
	for i, r := range rs {
		if i > 0 {
			list, body = append(list, ','), append(body, ',')
		}
		list, body = append(list, r.Canonical()...), append(body, r.Canonical()...)
		checkRecord(t, r)
	}
	list, body = append(list, ']'), append(body, "]}"...)
	checkCanonical(t, g, list)
	sum := sha256.Sum256(body)
	assert.Equal(t, g.fields["document-sha256"], hex.EncodeToString(sum[:]), "document-sha256")
	if len(rs) > 0 {
		assert.NoError(t, catalog.Check(rs), "the records are a valid snapshot's content")
	}
}
