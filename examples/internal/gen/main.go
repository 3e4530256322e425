// Command gen writes example_header.json and example_chunks.json, the
// example snapshot of package examples, into the current directory (or the
// one named by -dir) in the layout `sourcecatalog build` writes, and
// example_records.json, the boat's records as `sourcecatalog commit` reads
// them. It runs
// from package examples' go:generate directive:
//
//	go generate ./examples
package main

import (
	"flag"
	"fmt"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"os"
	"path/filepath"

	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/internal/files"
)

func main() {
	dir := flag.String("dir", ".", "directory to write the example files to")
	flag.Parse()
	if err := generate(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func generate(dir string) error {
	s, err := examples.BoatSnapshot()
	if err != nil {
		return err
	}
	if err := files.Write(dir, s, examples.HeaderFile, examples.ChunksFile); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, examples.RecordsFile), catalog.EncodeList(examples.Boat()), 0o644)
}
