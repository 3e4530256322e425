package outbox

import (
	"context"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/yachtmemory/sourcecatalog"
)

// Bounds of a StartMemory (SPEC.md §12.7).
const (
	// MaxServerStarts is how many server starts a StartMemory keeps: a
	// start added beyond it drops the one first seen earliest.
	MaxServerStarts = 64
	// MaxStartIDBytes bounds a start id (signalk-server's is a 36-byte
	// UUID).
	MaxStartIDBytes = 256
)

// A ServerStart is what an on-board controller remembers of one start of
// its Signal K server (SPEC.md §12.7): the start id the server's hello
// names, when a scan of this controller first read it, and when the
// start's picture was first trusted — settled —, zero while it has not
// been. Times are kept to the millisecond.
type ServerStart struct {
	ID        string
	FirstSeen time.Time
	Settled   time.Time
	// Others is, in what RememberStart returns, how many other starts
	// the memory holds: a start first seen after another is a restart
	// of the server, not a server this controller never met. It is
	// ignored in what RememberStart is given.
	Others int
}

// A StartMemory is an on-board Store that remembers the starts of its
// Signal K server across processes, so that a start one process saw
// settle is trusted at once by the next — an agent restarted, a discover
// run from cron (SPEC.md §12.7). outbox/memstore's Store and
// sqlitestore's Outbox are; outboxtest.RunStartMemory is the conformance
// suite. A Store that is not one leaves a controller to settle by the
// clock alone, after every start it sees.
type StartMemory interface {
	// RememberStart records s and returns the start as remembered, in
	// one transaction: a start not remembered is added as s is, dropping
	// the start first seen earliest when MaxServerStarts are kept; a
	// remembered start keeps its FirstSeen, and takes s.Settled when it
	// has none and s has one. So a caller learns, by passing the time it
	// saw a start, when any process first saw it, whether it settled,
	// and how many other starts are remembered (Others).
	// An ID empty, over MaxStartIDBytes or not UTF-8, or a zero
	// FirstSeen, is an error wrapping sourcecatalog.ErrInvalidValue and
	// changes nothing; a store that cannot serve returns one wrapping
	// sourcecatalog.ErrStoreUnavailable.
	RememberStart(ctx context.Context, s ServerStart) (ServerStart, error)
}

// CheckServerStart returns the error RememberStart returns for s when it
// is out of range, or nil; every StartMemory checks with it.
func CheckServerStart(s ServerStart) error {
	switch {
	case s.ID == "" || len(s.ID) > MaxStartIDBytes || !utf8.ValidString(s.ID):
		return sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue,
			"outbox: a server start id must be 1 to "+strconv.Itoa(MaxStartIDBytes)+" bytes of UTF-8")
	case s.FirstSeen.IsZero():
		return sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "outbox: a server start needs the time it was first seen")
	}
	return nil
}
