package bench

import "time"

// A Span is the wall-clock and processor time of one measured call.
type Span struct{ Wall, CPU time.Duration }

// Measure returns the time f takes; CPU is negative where it cannot be
// read.
func Measure(f func()) Span {
	c, w := CPUTime(), time.Now()
	f()
	s := Span{Wall: time.Since(w), CPU: CPUTime()}
	if c < 0 || s.CPU < 0 {
		s.CPU = -1
	} else {
		s.CPU -= c
	}
	return s
}

// Add adds o to s; a CPU time that could not be read stays negative.
func (s *Span) Add(o Span) {
	s.Wall += o.Wall
	if s.CPU < 0 || o.CPU < 0 {
		s.CPU = -1
	} else {
		s.CPU += o.CPU
	}
}
