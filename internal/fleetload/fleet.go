// Package fleetload drives a fleet of vessels against a receiver served
// over the HTTP binding (SPEC.md §11): each vessel with its own bearer
// token and httpbinding.Client, a few senders at once, each sending one
// vessel's snapshot at a time, manifest first and then the chunks in
// index order, as an outbox.Publisher does (SPEC.md §7.3, §11.6). It
// measures the latency of every message and reads a server process's CPU
// time and peak resident memory from /proc. The service benchmark of
// cmd/sourcecatalog (BenchmarkServeFleet) runs it against serve and
// against the floor servers of package fleetfloor.
package fleetload

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// A Vessel is one member of the fleet: its id and the bearer token that
// authenticates it.
type Vessel struct {
	ID    uuid.UUID
	Token string
}

// NewFleet returns n vessels with random ids and random 32-byte tokens
// written in hex (RFC 6750 b64token characters).
func NewFleet(n int) []Vessel {
	fleet := make([]Vessel, n)
	for i := range fleet {
		var t [32]byte
		rand.Read(t[:])
		fleet[i] = Vessel{ID: uuid.New(), Token: hex.EncodeToString(t[:])}
	}
	return fleet
}

// TokenFile returns the token file that authenticates the fleet (the
// --tokens file of serve, httpbinding.ParseTokens): one line per vessel.
func TokenFile(fleet []Vessel) []byte {
	var b strings.Builder
	b.WriteString("# fleetload vessels\n")
	for _, v := range fleet {
		b.WriteString(httpbinding.TokenHash(v.Token, v.ID) + "\n")
	}
	return []byte(b.String())
}

// A Snapshot is one vessel's snapshot as its outbox sends it: the
// entries in sending order, the manifest's first.
type Snapshot struct {
	Vessel  int // index in the fleet
	ID      uuid.UUID
	Entries []outbox.Entry
}

// BuildRound builds every vessel's snapshot of records at revision rev,
// discovered at at, and returns them in fleet order. Every snapshot must
// take messages messages (manifest and chunks): the benchmark's idea of a
// typical snapshot is checked, not assumed. An error says which.
func BuildRound(fleet []Vessel, rev int64, at time.Time, records []*catalog.Record, messages int) ([]Snapshot, error) {
	round := make([]Snapshot, len(fleet))
	for i, v := range fleet {
		s, err := envelope.Build(envelope.Input{VesselID: v.ID, SnapshotID: uuid.New(), Revision: rev, DiscoveredAt: at, Records: records})
		if err != nil {
			return nil, fmt.Errorf("fleetload: vessel %d: %w", i, err)
		}
		entries := outbox.Entries(s)
		if len(entries) != messages {
			return nil, fmt.Errorf("fleetload: a snapshot of %d records takes %d messages, not %d", len(records), len(entries), messages)
		}
		round[i] = Snapshot{Vessel: i, ID: s.Manifest.SnapshotID, Entries: entries}
	}
	return round, nil
}

// Messages returns the number of messages of round.
func Messages(round []Snapshot) int {
	n := 0
	for _, s := range round {
		n += len(s.Entries)
	}
	return n
}
