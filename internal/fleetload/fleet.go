// Package fleetload drives a fleet of vessels against a receiver served
// over the HTTP binding (SPEC.md §11): each vessel with its own bearer
// token and httpbinding.Client, a few senders at once, each sending one
// vessel's snapshot at a time as an outbox.Publisher does to a receiver
// declaring manifest_index (SPEC.md §6.7, §7.5, §11.6, §11.7): the
// declaration read through the vessel's httpbinding.Gate and reused for
// its max-age, the manifest index, then whole, in index order, only the
// chunks the receiver answered missing — every chunk of a vessel's first
// snapshot, none of an identical one. It
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
	"github.com/yachtmemory/sourcecatalog/canonical"
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

// A Snapshot is one vessel's snapshot as its outbox sends it.
type Snapshot struct {
	Vessel int // index in the fleet
	ID     uuid.UUID
	// Entries are the committed entries: the manifest's first, then the
	// chunks in index order.
	Entries []outbox.Entry
	// Index is the manifest index that stands for the manifest
	// (outbox.IndexEntry).
	Index outbox.Entry
	// Missing are the chunks the receiver lacks, which its answer to the
	// index names and which are sent whole after it: every chunk of a
	// vessel's first snapshot (BuildRound), those whose payload the
	// vessel's snapshot before did not have for a later one (Follow).
	Missing envelope.ChunkSet
}

// Messages returns what a sender sends of s, in order: the index, then
// each missing chunk whole.
func (s Snapshot) Messages() []outbox.Entry {
	out := []outbox.Entry{s.Index}
	for _, i := range s.Missing.Indices() {
		out = append(out, s.Entries[1+i])
	}
	return out
}

// BuildRound builds every vessel's snapshot of records at revision rev,
// discovered at at, and returns them in fleet order, each as a vessel's
// first snapshot: every chunk missing. Every snapshot must take messages
// messages (manifest and chunks): the benchmark's idea of a typical
// snapshot is checked, not assumed. An error says which.
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
		x, err := outbox.IndexEntry(entries)
		if err != nil {
			return nil, fmt.Errorf("fleetload: vessel %d: %w", i, err)
		}
		var missing envelope.ChunkSet
		for c := range s.Chunks {
			missing.Add(c)
		}
		round[i] = Snapshot{Vessel: i, ID: s.Manifest.SnapshotID, Entries: entries, Index: x, Missing: missing}
	}
	return round, nil
}

// Follow makes round the round after prev, of the same fleet in the same
// order: each snapshot's Missing becomes the chunks whose payload_sha256
// is not among those of the vessel's snapshot in prev, which a receiver
// that staged prev holds (SPEC.md §6.7) — none for an identical document.
func Follow(round, prev []Snapshot) error {
	if len(round) != len(prev) {
		return fmt.Errorf("fleetload: a round of %d snapshots after one of %d", len(round), len(prev))
	}
	for i := range round {
		s, p := &round[i], prev[i]
		if s.Vessel != p.Vessel {
			return fmt.Errorf("fleetload: snapshot %d is vessel %d's, after vessel %d's", i, s.Vessel, p.Vessel)
		}
		held := map[canonical.Digest]bool{}
		for _, e := range p.Entries[1:] {
			held[e.Digest] = true
		}
		s.Missing = envelope.ChunkSet{}
		for _, e := range s.Entries[1:] {
			if !held[e.Digest] {
				s.Missing.Add(e.ChunkIndex)
			}
		}
	}
	return nil
}

// Messages returns the number of messages a sender sends of round.
func Messages(round []Snapshot) int {
	n := 0
	for _, s := range round {
		n += 1 + s.Missing.Len()
	}
	return n
}
