package fleetload

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/internal/testpki"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// serveReceiver runs the receiver serve runs (receiver.New's handler:
// indexes and references accepted) over SQLite behind TLS for fleet and
// returns its URL, its CA and the receiver.
func serveReceiver(t *testing.T, fleet []Vessel) (string, *testpki.CA, *finalize.Receiver) {
	t.Helper()
	tokens, err := httpbinding.ParseTokens(bytes.NewReader(TokenFile(fleet)))
	if err != nil {
		t.Fatal(err)
	}
	store, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "shore.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	recv := finalize.NewReceiver(store)
	url, ca := serveTLS(t, httpbinding.NewHandler(recv, tokens, httpbinding.WithChunkReferences(true), httpbinding.WithManifestIndexes(true)))
	return url, ca, recv
}

// The harness sends each round as a boat does to serve's receiver: a
// first snapshot is its index and every chunk whole; an identical one is
// its index alone, not one chunk body the receiver holds; a changed one
// is its index and the changed chunks. Every snapshot is activated.
func TestSendSteadyState(t *testing.T) {
	ctx := context.Background()
	fleet := NewFleet(3)
	url, ca, recv := serveReceiver(t, fleet)
	records := examples.Scaled(300)
	var rounds [3][]Snapshot
	for i, recs := range [][]*catalog.Record{records, records, examples.WithChangedUnits(records, 1)} {
		var err error
		if rounds[i], err = BuildRound(fleet, int64(i+1), at, recs, 4); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			if err := Follow(rounds[i], rounds[i-1]); err != nil {
				t.Fatal(err)
			}
		}
	}
	changed := rounds[2][0].Missing.Len()
	if changed < 1 || changed > 2 {
		t.Fatalf("one changed unit changes %d chunks of 3", changed)
	}
	clients, err := NewClients(url, ca.Pool, fleet, true)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct{ messages, chunks int }{
		{3 * 4, 3 * 3},
		{3, 0}, // no chunk body the receiver holds
		{3 * (1 + changed), 3 * changed},
	} {
		res, err := Send(ctx, clients, rounds[i], 2, CheckStaged)
		clients.CloseIdle()
		if err != nil {
			t.Fatalf("round %d: %v", i+1, err)
		}
		if res.Messages != want.messages || res.Chunks != want.chunks || res.Latency.Len() != want.messages {
			t.Errorf("round %d: %d messages, %d chunks whole; want %d, %d", i+1, res.Messages, res.Chunks, want.messages, want.chunks)
		}
		for _, s := range rounds[i] {
			active, err := recv.Active(ctx, fleet[s.Vessel].ID)
			if err != nil || active.SnapshotID != s.ID {
				t.Errorf("round %d, vessel %d: active %v, %v; want %v", i+1, s.Vessel, active.SnapshotID, err, s.ID)
			}
		}
	}
}

// A round planned as if the receiver held nothing, after it staged the
// same document, fails on the index's receipt: the harness does not send
// chunk bodies the receiver holds.
func TestSendRefusesUnneededChunks(t *testing.T) {
	ctx := context.Background()
	fleet := NewFleet(2)
	url, ca, _ := serveReceiver(t, fleet)
	records := examples.Scaled(300)
	clients, err := NewClients(url, ca.Pool, fleet, true)
	if err != nil {
		t.Fatal(err)
	}
	for rev := int64(1); rev <= 2; rev++ {
		round, err := BuildRound(fleet, rev, at, records, 4) // every chunk missing
		if err != nil {
			t.Fatal(err)
		}
		_, err = Send(ctx, clients, round, 2, CheckStaged)
		switch {
		case rev == 1 && err != nil:
			t.Fatal(err)
		case rev == 2 && (err == nil || !strings.Contains(err.Error(), "names chunks [] missing, want [0 1 2]")):
			t.Errorf("round 2 planned whole: %v", err)
		}
	}
}
