package httpbinding

import (
	"sync"

	"github.com/google/uuid"
)

// A limiter bounds the requests of each vessel in flight at once. Its map
// holds only vessels with a request in flight.
type limiter struct {
	mu   sync.Mutex
	max  int
	busy map[uuid.UUID]int
}

func newLimiter(max int) *limiter {
	return &limiter{max: max, busy: make(map[uuid.UUID]int)}
}

// acquire takes a slot for vessel, reporting false when its max are taken;
// release gives a taken slot back and must be called exactly once.
func (l *limiter) acquire(vessel uuid.UUID) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.busy[vessel] >= l.max {
		return false
	}
	l.busy[vessel]++
	return true
}

func (l *limiter) release(vessel uuid.UUID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.busy[vessel]--; l.busy[vessel] <= 0 {
		delete(l.busy, vessel)
	}
}
