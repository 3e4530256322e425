//go:build !unix

package bench

import "time"

// CPUTime returns -1: the processor time is read on unix systems only.
func CPUTime() time.Duration { return -1 }
