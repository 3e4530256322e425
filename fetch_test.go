package sourcecatalog_test

// TestModuleFetchable is the README's install lines, run offline: the module
// is exported at a version into a module proxy on disk, with the go
// command's own file rules (golang.org/x/mod/zip), and a consumer module
// outside the repository fetches, builds and installs it from there. The
// third-party modules come from the local module cache (bash scripts/test.sh
// runs go mod download first), so nothing is fetched from the network.

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// The README's install lines, which the test runs.
const (
	getLine     = "go get " + modulePath + "@latest"
	installLine = "go install " + modulePath + "/cmd/sourcecatalog@latest"
)

const (
	modulePath = "github.com/yachtmemory/sourcecatalog"
)

// fetchVersion is the version the module is exported at: a pre-release, so
// that @latest resolves to it only because the proxy lists no other, and
// one of its own for each run, since the consumer uses the host's module
// cache, where an earlier run's copy must not stand in for this one's.
var fetchVersion = fmt.Sprintf("v0.0.0-fetchtest.%d.%d", time.Now().UnixNano(), os.Getpid())

// codecOffenders are the module paths a consumer of canonical, catalog and
// envelope alone must not link: the stores', the metrics', the WebSocket
// client's and this test's own dependencies.
var codecOffenders = []string{
	"github.com/ncruces/",
	"github.com/go-sql-driver/",
	"github.com/prometheus/",
	"github.com/coder/websocket",
	"golang.org/x/mod",
}

func TestModuleFetchable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the module from a local proxy: not with -short")
	}
	gocmd := requireGo(t)
	root, err := os.Getwd() // the root package's directory: the module root
	if err != nil {
		t.Fatal(err)
	}
	hostEnv := goEnv(t, gocmd, "GOMODCACHE", "GOCACHE", "GOROOT")
	download := filepath.Join(hostEnv["GOMODCACHE"], "cache", "download")
	if _, err := os.Stat(download); err != nil {
		prerequisite(t, "no module cache to fetch the dependencies from (run go mod download): %v", err)
	}

	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{getLine, installLine} {
		if !bytes.Contains(readme, []byte("\n"+line+"\n")) {
			t.Errorf("README.md lacks the install line %q", line)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	goMod := checkGoMod(t, root)
	files := moduleFiles(t, root)
	checkNoNestedModules(t, files)

	proxy := t.TempDir()
	exportModule(t, root, files, proxy)

	work := t.TempDir()
	if rel, err := filepath.Rel(root, work); err == nil && filepath.IsLocal(rel) {
		t.Fatalf("the consumer would be inside the repository (%s): set TMPDIR elsewhere", work)
	}
	env := offlineEnv(work, proxy, download, hostEnv)
	t.Cleanup(func() { removeFromModuleCache(t, hostEnv["GOMODCACHE"]) })
	consumer := filepath.Join(work, "consumer")
	writeFiles(t, consumer, map[string]string{
		"go.mod":        "module example.com/consumer\n\ngo " + goMod.Go.Version + "\n",
		"codec/main.go": codecProgram,
		"full/main.go":  fullProgram,
	})

	runGo(t, env, consumer, gocmd, strings.Fields(getLine)[1:]...)
	if got := strings.TrimSpace(runGo(t, env, consumer, gocmd, "list", "-m", "-f", "{{.Version}}", modulePath)); got != fetchVersion {
		t.Fatalf("go get %s@latest chose %q, want %s", modulePath, got, fetchVersion)
	}

	t.Run("codec links no store, metrics or WebSocket code", func(t *testing.T) {
		// One line per package outside the standard library: its path, then
		// the paths it imports.
		deps := runGo(t, env, consumer, gocmd, "list", "-deps", "-f",
			`{{if not .Standard}}{{.ImportPath}} {{join .Imports " "}}{{end}}`, "./codec")
		var offenders, entries []string
		for _, line := range strings.Split(strings.TrimSpace(deps), "\n") {
			pkg, imports, _ := strings.Cut(line, " ")
			if isCodecOffender(pkg) {
				offenders = append(offenders, pkg)
				continue
			}
			for _, imp := range strings.Fields(imports) {
				if isCodecOffender(imp) {
					entries = append(entries, pkg+" imports "+imp)
				}
			}
		}
		if len(offenders) > 0 {
			t.Errorf("a consumer of canonical, catalog and envelope links %d packages it must not:\n\t%s\nthrough:\n\t%s",
				len(offenders), strings.Join(offenders, "\n\t"), strings.Join(entries, "\n\t"))
		}
	})

	bin := filepath.Join(work, "bin")
	runGo(t, env, consumer, gocmd, "build", "-o", bin+string(filepath.Separator), "./...")

	t.Run("codec program", func(t *testing.T) {
		out := run(t, env, consumer, nil, filepath.Join(bin, exe("codec")))
		for _, want := range []string{`canonical: {"a":[1,2],"b":"x"}`, "snapshot: 3 records in 1 chunks, verified"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("sqlitestore and prommetrics program", func(t *testing.T) {
		out := run(t, env, consumer, nil, filepath.Join(bin, exe("full")), t.TempDir())
		for _, want := range []string{"finalize: activated, revision 7, 3 items", `sourcecatalog_finalize_total{outcome="activated"} 1`} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})

	// Where no module is.
	t.Run("go install the command", func(t *testing.T) {
		runGo(t, env, work, gocmd, strings.Fields(installLine)[1:]...)
		tool := filepath.Join(env.gobin, exe("sourcecatalog"))
		if info := runGo(t, env, work, gocmd, "version", "-m", tool); !strings.Contains(info, modulePath+"\t"+fetchVersion) {
			t.Errorf("the installed command is not built from %s %s:\n%s", modulePath, fetchVersion, info)
		}
		if out := run(t, env, work, nil, tool, "help"); !strings.Contains(out, "sourcecatalog canon [FILE]") {
			t.Errorf("sourcecatalog help:\n%s", out)
		}
		if out := run(t, env, work, strings.NewReader(`{"b":1,"a":[1.0,2e0]}`), tool, "canon"); out != `{"a":[1,2],"b":1}` {
			t.Errorf("sourcecatalog canon wrote %q", out)
		}
	})
}

func isCodecOffender(pkg string) bool {
	for _, bad := range codecOffenders {
		if strings.HasPrefix(pkg, bad) {
			return true
		}
	}
	return false
}

// prerequisite skips the test, or fails it when CI=true: there a missing
// tool or cache is a broken machine, not a reason to prove nothing.
func prerequisite(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

func requireGo(t *testing.T) string {
	t.Helper()
	gocmd, err := exec.LookPath("go")
	if err != nil {
		prerequisite(t, "the go command is not on PATH: %v", err)
	}
	return gocmd
}

// goEnv reads the host's go environment (its module cache, build cache and
// GOROOT), ignoring GOFLAGS the test run may carry.
func goEnv(t *testing.T, gocmd string, names ...string) map[string]string {
	t.Helper()
	cmd := exec.Command(gocmd, append([]string{"env", "-json"}, names...)...)
	cmd.Env = append(withoutGoVars(os.Environ(), "GOFLAGS"), "GOFLAGS=")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	env := map[string]string{}
	if err := json.Unmarshal(out, &env); err != nil {
		t.Fatalf("go env -json: %v", err)
	}
	for _, n := range names {
		if env[n] == "" {
			t.Fatalf("go env %s is empty", n)
		}
	}
	return env
}

// checkGoMod fails when the module's go.mod could not be fetched as it is:
// a replace directive is ignored in a dependency, so what builds here would
// not build for a consumer.
func checkGoMod(t *testing.T, root string) *modfile.File {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.Module == nil || f.Module.Mod.Path != modulePath {
		t.Fatalf("go.mod declares module %v, want %s", f.Module, modulePath)
	}
	if f.Go == nil {
		t.Fatal("go.mod has no go directive")
	}
	for _, r := range f.Replace {
		t.Errorf("go.mod:%d: replace %v => %v: a consumer ignores it", r.Syntax.Start.Line, r.Old, r.New)
	}
	if t.Failed() {
		t.FailNow()
	}
	return f
}

// checkNoNestedModules fails when a go.mod outside testdata would cut its
// directory out of the module zip.
func checkNoNestedModules(t *testing.T, files []string) {
	t.Helper()
	for _, f := range files {
		if !strings.HasSuffix(f, "/go.mod") {
			continue
		}
		if !strings.HasPrefix(f, "testdata/") && !strings.Contains(f, "/testdata/") {
			t.Errorf("%s: a nested module; its directory would be left out of the module zip", f)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// moduleFiles lists the files, slash-separated and relative to root, that
// the module zip is made from: those git tracks, and new ones it does not
// ignore, as they are in the work tree (so uncommitted edits are tested,
// and built binaries and other ignored files are left out). Without git, or
// outside a repository, it lists the directory, leaving out VCS metadata.
func moduleFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	// safe.directory: git refuses a clone another user owns (a CI
	// checkout), citing "dubious ownership".
	args := []string{"-c", "safe.directory=" + root}
	if real, err := filepath.EvalSymlinks(root); err == nil && real != root {
		args = append(args, "-c", "safe.directory="+real)
	}
	cmd := exec.Command("git", append(args, "ls-files", "-z", "--cached", "--others", "--exclude-standard")...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err == nil {
		for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
			if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(f))); err == nil {
				files = append(files, f) // not a tracked file deleted in the work tree
			}
		}
		return files
	}
	if _, statErr := os.Lstat(filepath.Join(root, ".git")); statErr == nil && os.Getenv("CI") == "true" {
		t.Fatalf("git ls-files in a repository: %v\n%s", err, stderr.Bytes())
	}
	t.Logf("git ls-files: %v %s; zipping every file under %s", err, bytes.TrimSpace(stderr.Bytes()), root)
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch d.Name() {
		case ".git", ".hg", ".svn", ".bzr":
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil // a worktree's or submodule's .git file
		}
		if !d.IsDir() {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// exportModule writes the module at fetchVersion into the file-system
// module proxy at dir (the GOPROXY protocol's list, .info, .mod and .zip).
// The zip follows the go command's rules (golang.org/x/mod/zip), and must
// hold go.mod and no compiled binary.
func exportModule(t *testing.T, root string, files []string, dir string) {
	t.Helper()
	start := time.Now()
	mv := module.Version{Path: modulePath, Version: fetchVersion}
	zfiles := make([]modzip.File, len(files))
	for i, f := range files {
		zfiles[i] = diskFile{root: root, path: f}
	}
	checked, err := modzip.CheckFiles(zfiles)
	if err != nil {
		t.Fatalf("the module's files cannot make a module zip: %v", err)
	}
	for _, o := range checked.Omitted {
		t.Logf("left out of the module zip: %s: %v", o.Path, o.Err)
	}
	var zbuf bytes.Buffer
	if err := modzip.Create(&zbuf, mv, zfiles); err != nil {
		t.Fatal(err)
	}
	checkZip(t, zbuf.Bytes(), mv)

	goMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{fetchVersion, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	escaped, err := module.EscapePath(modulePath)
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(dir, filepath.FromSlash(escaped), "@v")
	writeFiles(t, base, map[string]string{
		"list":                 fetchVersion + "\n",
		fetchVersion + ".info": string(info),
		fetchVersion + ".mod":  string(goMod),
		fetchVersion + ".zip":  zbuf.String(),
	})
	t.Logf("module zip: %d files, %d bytes: %v", len(checked.Valid), zbuf.Len(), time.Since(start).Round(time.Millisecond))
}

// checkZip fails when the module zip lacks go.mod or carries an
// executable, an object archive or VCS metadata.
func checkZip(t *testing.T, data []byte, mv module.Version) {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	prefix := mv.Path + "@" + mv.Version + "/"
	haveGoMod := false
	for _, f := range zr.File {
		name := strings.TrimPrefix(f.Name, prefix)
		haveGoMod = haveGoMod || name == "go.mod"
		if name == ".git" || strings.HasPrefix(name, ".git/") {
			t.Errorf("the module zip carries VCS metadata: %s", name)
			continue
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		head := make([]byte, 8)
		n, _ := io.ReadFull(rc, head)
		rc.Close()
		if kind := binaryKind(head[:n]); kind != "" {
			t.Errorf("the module zip carries %s: %s", kind, name)
		}
	}
	if !haveGoMod {
		t.Error("the module zip has no go.mod")
	}
	if t.Failed() {
		t.FailNow()
	}
}

// binaryKind names the compiled-file format whose magic number head starts
// with, or returns "".
func binaryKind(head []byte) string {
	for _, m := range []struct{ magic, kind string }{
		{"\x7fELF", "an ELF executable"},
		{"MZ", "a Windows executable"},
		{"\xfe\xed\xfa\xce", "a Mach-O executable"},
		{"\xfe\xed\xfa\xcf", "a Mach-O executable"},
		{"\xce\xfa\xed\xfe", "a Mach-O executable"},
		{"\xcf\xfa\xed\xfe", "a Mach-O executable"},
		{"!<arch>\n", "an object archive"},
	} {
		if bytes.HasPrefix(head, []byte(m.magic)) {
			return m.kind
		}
	}
	return ""
}

// diskFile is a work-tree file as golang.org/x/mod/zip reads it.
type diskFile struct{ root, path string }

func (f diskFile) Path() string                 { return f.path }
func (f diskFile) Lstat() (os.FileInfo, error)  { return os.Lstat(f.name()) }
func (f diskFile) Open() (io.ReadCloser, error) { return os.Open(f.name()) }
func (f diskFile) name() string                 { return filepath.Join(f.root, filepath.FromSlash(f.path)) }

// goEnvironment is the environment of the go commands and programs the test
// runs, and where go install puts the command.
type goEnvironment struct {
	vars  []string
	gobin string
}

// offlineEnv returns an environment in which the go command reaches no
// network: modules come from the proxy at proxy, then from the host's
// module cache download directory, with no checksum database, workspace
// or toolchain switch. The host's module and build caches are shared, so
// that the dependencies build from the same directories as the module's
// own builds (go vet's, go test's) and are found compiled in the build
// cache: a fresh module cache would make every one of them compile again,
// minutes on a cold machine. removeFromModuleCache takes the exported
// module out again. Every other GO variable of the host is dropped
// (GOFLAGS=-race among them), and GOENV=off ignores its go env -w settings.
func offlineEnv(work, proxy, download string, host map[string]string) goEnvironment {
	gobin := filepath.Join(work, "gobin")
	return goEnvironment{gobin: gobin, vars: append(withoutGoVars(os.Environ()),
		"GOENV=off",
		"GOROOT="+host["GOROOT"],
		"GOCACHE="+host["GOCACHE"],
		"GOPATH="+filepath.Join(work, "gopath"),
		"GOMODCACHE="+host["GOMODCACHE"],
		"GOBIN="+gobin,
		"GOPROXY="+fileURL(proxy)+","+fileURL(download),
		"GOSUMDB=off",
		"GONOSUMDB=", "GOPRIVATE=", "GONOPROXY=", "GOINSECURE=",
		"GOWORK=off",
		"GOTOOLCHAIN=local",
		"GO111MODULE=on",
		"CGO_ENABLED=0", // the README promises a pure Go build
		// -mod=mod: the consumer's go.mod gains what its imports need.
		// -modcacherw: removeFromModuleCache can remove the module.
		"GOFLAGS=-mod=mod -modcacherw -buildvcs=false",
	)}
}

// withoutGoVars returns env without the go command's variables (GO*, CGO_*),
// or, given names, without those.
func withoutGoVars(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		drop := strings.HasPrefix(k, "GO") || strings.HasPrefix(k, "CGO_")
		if len(names) > 0 {
			drop = false
			for _, n := range names {
				drop = drop || k == n
			}
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}

func fileURL(dir string) string {
	p := filepath.ToSlash(dir)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive letter
	}
	return (&url.URL{Scheme: "file", Path: p}).String()
}

func runGo(t *testing.T, env goEnvironment, dir, gocmd string, args ...string) string {
	t.Helper()
	return run(t, env, dir, nil, gocmd, args...)
}

// run runs name in dir with env and returns its standard output, failing
// the test with both outputs when it fails.
func run(t *testing.T, env goEnvironment, dir string, stdin io.Reader, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env, cmd.Stdin = dir, env.vars, stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s %s: %v", filepath.Base(name), strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	if err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatal(err)
		}
		t.Fatalf("%s %s in %s: %v\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), dir, err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.String()
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func exe(name string) string {
	if runtime.GOOS == "windows" {
		return name + ".exe"
	}
	return name
}

// The consumer's records: one path, its source and the observation that
// selects it.
const consumerRecords = `
func records() []*catalog.Record {
	label := "GPS"
	var out []*catalog.Record
	for _, r := range []func() (*catalog.Record, error){
		func() (*catalog.Record, error) {
			return catalog.NewPath(catalog.Path{Path: "navigation.speedOverGround", Unit: catalog.UnitOf("m/s")})
		},
		func() (*catalog.Record, error) {
			return catalog.NewSource(catalog.Source{SourceRef: "ttyUSB0.GP", Label: &label})
		},
		func() (*catalog.Record, error) {
			vt, err := catalog.DetectValueType([]byte("3.2"))
			if err != nil {
				return nil, err
			}
			return catalog.NewObservation(catalog.Observation{Path: "navigation.speedOverGround", SourceRef: "ttyUSB0.GP", ValueType: vt})
		},
	} {
		rec, err := r()
		if err != nil {
			panic(err)
		}
		out = append(out, rec)
	}
	return out
}

var (
	vessel   = uuid.MustParse("6f1c2a52-3c4b-4d0e-9a51-2f4f2b0c7a11")
	snapshot = uuid.MustParse("0b7e8a7c-51f3-4a4e-8f0c-3d2a9e6b5c44")
)

func build() (*envelope.Snapshot, error) {
	return envelope.Build(envelope.Input{
		VesselID: vessel, SnapshotID: snapshot, Revision: 7,
		DiscoveredAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), Records: records(),
	})
}
`

// codecProgram uses canonical, catalog and envelope alone.
const codecProgram = `package main

import (
	"fmt"
	"os"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
)

func main() {
	c, err := canonical.Transform([]byte(` + "`" + `{"b": "x", "a": [1.0, 2e0]}` + "`" + `))
	if err != nil {
		fail(err)
	}
	fmt.Printf("canonical: %s\n", c)
	s, err := build()
	if err != nil {
		fail(err)
	}
	chunks := make([][]byte, len(s.Chunks))
	for i, ch := range s.Chunks {
		chunks[i] = ch.Canonical()
	}
	d, err := envelope.DecodeSnapshot(s.Manifest.Canonical(), chunks)
	if err != nil {
		fail(err)
	}
	if err := envelope.Verify(&d.Manifest, d.Chunks); err != nil {
		fail(err)
	}
	fmt.Printf("snapshot: %d records in %d chunks, verified\n", d.Manifest.RecordCount, len(d.Chunks))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
` + consumerRecords

// fullProgram receives and finalizes a snapshot into a SQLite file, with
// the Prometheus observer counting.
const fullProgram = `package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/prommetrics"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

func main() {
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(dir string) error {
	ctx := context.Background()
	s, err := build()
	if err != nil {
		return err
	}
	store, err := sqlitestore.Open(ctx, filepath.Join(dir, "catalog.db"))
	if err != nil {
		return err
	}
	defer store.Close()
	reg := prometheus.NewRegistry()
	m, err := prommetrics.New(reg)
	if err != nil {
		return err
	}
	r := finalize.NewReceiver(store, finalize.WithObserver(m.ObserveReceiver))
	origin := finalize.Origin{VesselID: vessel}
	for _, c := range s.Chunks {
		if _, err := r.ReceiveChunk(ctx, origin, c.Canonical()); err != nil {
			return err
		}
	}
	receipt, err := r.ReceiveManifest(ctx, origin, s.Manifest.Canonical())
	if err != nil {
		return err
	}
	if !receipt.Complete {
		return fmt.Errorf("receipt %+v: not complete", receipt)
	}
	outcome, err := r.Finalize(ctx, vessel, snapshot)
	if err != nil {
		return err
	}
	active, err := r.Active(ctx, vessel)
	if err != nil {
		return err
	}
	fmt.Printf("finalize: %s, revision %d, %d items\n", outcome.Status, active.Revision, len(active.Items))
	families, err := reg.Gather()
	if err != nil {
		return err
	}
	for _, f := range families {
		if f.GetName() != "sourcecatalog_finalize_total" {
			continue
		}
		for _, c := range f.GetMetric() {
			for _, l := range c.GetLabel() {
				fmt.Printf("%s{%s=%q} %g\n", f.GetName(), l.GetName(), l.GetValue(), c.GetCounter().GetValue())
			}
		}
	}
	return store.Close()
}
` + consumerRecords

// removeFromModuleCache removes the exported version of the module from the
// module cache at modcache: its extracted tree, its downloaded files and
// the list of the versions downloaded.
func removeFromModuleCache(t *testing.T, modcache string) {
	escaped, err := module.EscapePath(modulePath)
	if err != nil {
		t.Fatal(err)
	}
	dirs := []string{filepath.Join(modcache, filepath.FromSlash(escaped)+"@"+fetchVersion)}
	at := filepath.Join(modcache, "cache", "download", filepath.FromSlash(escaped), "@v")
	downloaded, _ := filepath.Glob(filepath.Join(at, fetchVersion+".*"))
	downloaded = append(downloaded, filepath.Join(at, "list")) // the go command's list of the versions it fetched
	for _, path := range append(dirs, downloaded...) {
		if err := os.RemoveAll(path); err != nil {
			t.Errorf("removing the exported module from the module cache: %v", err)
		}
	}
}
