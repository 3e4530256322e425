package fleetfloor

import (
	"os"
	"syscall"
)

// datasync is fdatasync(2).
func datasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
