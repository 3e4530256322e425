// Command vectorgen writes the golden vectors of testdata/vectors from the
// tables of package vectors. Run it from the module root:
//
//	go run ./internal/vectorgen
//
// It replaces every *.txt file in the directory, removing vectors that no
// longer exist, and writes nothing when any vector fails to generate.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/yachtmemory/sourcecatalog/internal/vectorgen/vectors"
)

func main() {
	dir := flag.String("dir", filepath.Join("testdata", "vectors"), "output directory")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "vectorgen:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	files, err := vectors.Files()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	old, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return err
	}
	for _, f := range old {
		if _, keep := files[filepath.Base(f)]; !keep {
			if err := os.Remove(f); err != nil {
				return err
			}
		}
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := os.WriteFile(filepath.Join(dir, name), files[name], 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("vectorgen: wrote %d vectors to %s\n", len(names), dir)
	return nil
}
