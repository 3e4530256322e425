// Command gen writes example_header.json and example_chunks.json, the
// example snapshot of package examples, into the current directory (or the
// one named by -dir) in the layout `sourcecatalog build` writes. It runs
// from package examples' go:generate directive:
//
//	go generate ./examples
package main

import (
	"flag"
	"fmt"
	"os"

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
	return files.Write(dir, s, examples.HeaderFile, examples.ChunksFile)
}
