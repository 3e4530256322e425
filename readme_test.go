package sourcecatalog_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// A goBlock is one ```go block of README.md.
type goBlock struct {
	line int    // of its first line of code, 1-based
	code string // its text, without the fences
}

// readmeGoBlocks returns the README's ```go blocks, in order. A fence may be
// indented (a block inside a list); its lines lose that indentation.
func readmeGoBlocks(t *testing.T, readme []byte) []goBlock {
	var blocks []goBlock
	var cur *goBlock
	var indent string
	sc := bufio.NewScanner(bytes.NewReader(readme))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " \t")
		switch {
		case cur == nil && trimmed == "```go":
			cur, indent = &goBlock{line: n + 1}, line[:len(line)-len(trimmed)]
		case cur != nil && trimmed == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.code += strings.TrimPrefix(line, indent) + "\n"
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Fatalf("README.md:%d: a ```go block is not closed", cur.line-1)
	}
	return blocks
}

// readmeImports are the packages a README block may use without importing
// them, by the name it uses. A block that needs another package, or one of
// two packages of the same name (finalize/memstore, outbox/memstore),
// starts with its own import declarations.
var readmeImports = map[string]string{
	"context": "context", "errors": "errors", "fmt": "fmt", "log": "log", "slog": "log/slog",
	"http": "net/http", "netip": "net/netip", "os": "os", "time": "time",
	"uuid":          "github.com/google/uuid",
	"prometheus":    "github.com/prometheus/client_golang/prometheus",
	"promhttp":      "github.com/prometheus/client_golang/prometheus/promhttp",
	"sourcecatalog": "github.com/yachtmemory/sourcecatalog",
	"agent":         "github.com/yachtmemory/sourcecatalog/agent",
	"canonical":     "github.com/yachtmemory/sourcecatalog/canonical",
	"catalog":       "github.com/yachtmemory/sourcecatalog/catalog",
	"envelope":      "github.com/yachtmemory/sourcecatalog/envelope",
	"finalize":      "github.com/yachtmemory/sourcecatalog/finalize",
	"httpbinding":   "github.com/yachtmemory/sourcecatalog/httpbinding",
	"inventory":     "github.com/yachtmemory/sourcecatalog/httpbinding/inventory",
	"mysqlstore":    "github.com/yachtmemory/sourcecatalog/mysqlstore",
	"outbox":        "github.com/yachtmemory/sourcecatalog/outbox",
	"prommetrics":   "github.com/yachtmemory/sourcecatalog/prommetrics",
	"receiver":      "github.com/yachtmemory/sourcecatalog/receiver",
	"signalk":       "github.com/yachtmemory/sourcecatalog/signalk",
	"sqlitestore":   "github.com/yachtmemory/sourcecatalog/sqlitestore",
	"storeheal":     "github.com/yachtmemory/sourcecatalog/storeheal",
}

// quoted matches an import path in a block's own import declarations.
var quoted = regexp.MustCompile(`"([^"]+)"`)

// readmeGiven are the variables a README block may use without declaring
// them: what the prose around the blocks says the reader already has.
const readmeGiven = `ctx context.Context, vessel uuid.UUID, records []*catalog.Record, store finalize.Store, r *finalize.Receiver`

// TestReadmeGoBlocksCompile type-checks every ```go block of README.md, so
// that what the README shows an integrator is the API as it is. A block
// is a function body, or top-level declarations when it starts with func
// or type: it may use the packages of readmeImports (and a body the
// variables of readmeGiven), and may start with import declarations of
// its own. Only hard errors fail: a variable a fragment declares for the
// reader and does not use again is not one.
func TestReadmeGoBlocksCompile(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := readmeGoBlocks(t, readme)
	if len(blocks) < 4 {
		t.Fatalf("README.md has %d ```go blocks; the test expects the usage, embedding and retention ones at least", len(blocks))
	}
	paths := slices.Collect(maps.Values(readmeImports))
	for _, b := range blocks {
		own, _ := splitImports(b.code)
		for _, m := range quoted.FindAllStringSubmatch(own, -1) {
			paths = append(paths, m[1])
		}
	}
	imp := exportImporter(t, paths)
	for _, b := range blocks {
		t.Run(fmt.Sprintf("README.md:%d", b.line), func(t *testing.T) {
			for _, err := range checkBlock(b, imp) {
				t.Error(err)
			}
		})
	}
}

// TestReadmeGoBlocksCheckerFails holds the checker to failing: a block
// calling a function that does not exist, or with the wrong arguments, is
// reported; a fragment's unused variable is not.
func TestReadmeGoBlocksCheckerFails(t *testing.T) {
	imp := exportImporter(t, append(slices.Collect(maps.Values(readmeImports)), "strings"))
	for _, c := range []struct {
		code string
		fail bool
	}{
		{"canonical.NoSuchFunction()\n", true},
		{"x, err := canonical.Transform(42)\n", true},
		{"x := undefinedVariable\n", true},
		{"x, err := canonical.Transform([]byte(`{}`)) // x and err unused: fine\n", false},
		{"import \"strings\"\n\nn := strings.Count(\"ab\", \"a\")\n", false},
		{"func f(ctx context.Context) error { return canonical.NoSuchFunction(ctx) }\n", true},
		{"func f() (uuid.UUID, error) { return uuid.NewRandom() }\n", false},
	} {
		errs := checkBlock(goBlock{line: 1, code: c.code}, imp)
		if got := len(errs) > 0; got != c.fail {
			t.Errorf("%q: failed %v, want %v (%v)", c.code, got, c.fail, errs)
		}
	}
}

// checkBlock type-checks one block and returns its hard errors, located at
// the README's lines.
func checkBlock(b goBlock, imp types.Importer) []error {
	own, body := splitImports(b.code)
	var src strings.Builder
	src.WriteString("package readme\n\nimport (\n")
	for name, path := range readmeImports {
		if !strings.Contains(own, `"`+path+`"`) {
			fmt.Fprintf(&src, "\t%s %q\n", name, path)
		}
	}
	src.WriteString(")\n")
	src.WriteString(own)
	if declarations(body) {
		src.WriteString("\n")
	} else {
		src.WriteString("\nfunc _(" + readmeGiven + ") {\n{\n")
	}
	offset := strings.Count(src.String(), "\n") // lines before the body
	src.WriteString(body)
	if !declarations(body) {
		src.WriteString("}\n}\n")
	}

	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "README.md", src.String(), parser.SkipObjectResolution)
	if err != nil {
		return []error{relocate(err, b, offset, own)}
	}
	var errs []error
	conf := types.Config{Importer: imp, Error: func(err error) {
		if te, ok := err.(types.Error); ok && te.Soft {
			return // unused variables and imports
		}
		errs = append(errs, relocate(err, b, offset, own))
	}}
	conf.Check("readme", fset, []*ast.File{f}, nil)
	return errs
}

// declarations reports whether a block's body is top-level declarations (a
// whole function, a type) rather than statements.
func declarations(body string) bool {
	first := strings.TrimLeft(body, "\n")
	return strings.HasPrefix(first, "func ") || strings.HasPrefix(first, "type ")
}

// splitImports separates the import declarations a block starts with from
// the rest, its function body.
func splitImports(code string) (imports, body string) {
	rest := code
	for {
		trimmed := strings.TrimLeft(rest, "\n")
		if !strings.HasPrefix(trimmed, "import ") {
			return code[:len(code)-len(rest)], rest
		}
		end := strings.Index(trimmed, "\n")
		if strings.HasPrefix(trimmed, "import (") {
			end = strings.Index(trimmed, "\n)") + 2
		}
		if end < 0 {
			end = len(trimmed)
		}
		rest = trimmed[end:]
	}
}

// relocate rewrites an error's position in the generated file as the line
// of README.md it came from.
func relocate(err error, b goBlock, offset int, own string) error {
	var te types.Error
	if errors.As(err, &te) {
		p := te.Fset.Position(te.Pos)
		return fmt.Errorf("README.md:%d: %s", readmeLine(p.Line, b, offset, own), te.Msg)
	}
	return fmt.Errorf("README.md:%d (block): %v", b.line, err)
}

// readmeLine maps a line of the generated file to README.md's numbering.
func readmeLine(line int, b goBlock, offset int, own string) int {
	if line > offset {
		return b.line + strings.Count(own, "\n") + line - offset - 1
	}
	return b.line
}

// exportImporter returns an importer of the packages' compiled export data,
// which `go list -export` builds or finds in the build cache.
func exportImporter(t *testing.T, paths []string) types.Importer {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the go command is needed under CI=true: %v", err)
		}
		t.Skipf("no go command: %v", err)
	}
	args := append([]string{"list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}"}, paths...)
	cmd := exec.Command("go", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v\n%s", err, stderr.Bytes())
	}
	exports := map[string]string{}
	for line := range strings.Lines(string(out)) {
		path, file, _ := strings.Cut(strings.TrimSpace(line), "\t")
		exports[path] = file
	}
	fset := token.NewFileSet()
	return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data for %q: add it to readmeImports", path)
		}
		return os.Open(file)
	})
}

// TestReadmeListsEveryPackage: the README's package table has a row for
// every package of the module that an integrator can import (not internal
// ones, nor testdata), so that a new package is documented where a
// newcomer looks first.
func TestReadmeListsEveryPackage(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (d.Name() == "internal" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			dirs = append(dirs, filepath.ToSlash(filepath.Dir(path)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	dirs = slices.Compact(slices.Sorted(slices.Values(dirs)))
	if len(dirs) < 15 {
		t.Fatalf("found %d package directories; the walk is wrong", len(dirs))
	}
	for _, dir := range dirs {
		row := "| `" + dir + "` |"
		if dir == "." {
			row = "| `sourcecatalog` (the root) |"
		}
		if !bytes.Contains(readme, []byte("\n"+row)) {
			t.Errorf("README.md's package table has no row %q", row)
		}
	}
}

// TestReadmeCountsTheVectors: the package table's vector count is the
// number of vector files.
func TestReadmeCountsTheVectors(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join("testdata", "vectors", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no vectors found: %v", err)
	}
	row := fmt.Sprintf("| `testdata/vectors` | %d language-neutral golden vectors", len(files))
	if !bytes.Contains(readme, []byte(row)) {
		t.Errorf("README.md's package table does not say %q", row)
	}
}
