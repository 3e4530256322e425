//go:build !linux

package fleetfloor

import "os"

// datasync is fsync(2) where there is no fdatasync.
func datasync(f *os.File) error { return f.Sync() }
