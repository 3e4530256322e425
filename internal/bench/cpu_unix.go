//go:build unix

package bench

import (
	"syscall"
	"time"
)

// CPUTime returns the processor time, user and system, that the process
// has used so far, or -1 where it cannot be read. Benchmarks take the
// difference around what they measure, on a machine otherwise idle.
func CPUTime() time.Duration {
	var u syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &u) != nil {
		return -1
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
