package examples_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProgramsAreShort holds the runnable programs under examples/ to what
// they show: the shore service and the boat program each in at most 40
// lines, not counting the import declaration and blank lines. Each has its
// own test that runs it.
func TestProgramsAreShort(t *testing.T) {
	for _, program := range []string{"shore", "boat"} {
		path := filepath.Join(program, "main.go")
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		imports := map[int]bool{}
		for _, d := range f.Decls {
			for l := fset.Position(d.Pos()).Line; l <= fset.Position(d.End()).Line; l++ {
				imports[l] = true
			}
		}
		n := 0
		for i, line := range strings.Split(string(src), "\n") {
			if strings.TrimSpace(line) != "" && !imports[i+1] {
				n++
			}
		}
		if n > 40 || n < 10 {
			t.Errorf("%s: %d lines without imports and blank lines, want 10 to 40", path, n)
		}
	}
}
