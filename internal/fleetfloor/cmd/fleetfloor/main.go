// Command fleetfloor is the floor server of the service benchmark: see
// package fleetfloor.
package main

import (
	"os"

	"github.com/yachtmemory/sourcecatalog/internal/fleetfloor"
)

func main() { os.Exit(fleetfloor.Main(os.Args[1:], os.Stderr)) }
