package fleetload

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/internal/fleetfloor"
	"github.com/yachtmemory/sourcecatalog/internal/testpki"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

var at = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// The benchmark's typical snapshot: 1,500 records take 15 chunks and the
// manifest; another message count is refused.
func TestBuildRound(t *testing.T) {
	fleet := NewFleet(2)
	round, err := BuildRound(fleet, 3, at, examples.Scaled(1500), 16)
	if err != nil {
		t.Fatal(err)
	}
	if len(round) != 2 || Messages(round) != 32 {
		t.Fatalf("%d snapshots, %d messages; want 2, 32", len(round), Messages(round))
	}
	for i, s := range round {
		e := s.Entries
		if s.Vessel != i || e[0].VesselID != fleet[i].ID || e[0].EntityKey != envelope.ManifestKey(s.ID) || e[0].Revision != 3 {
			t.Errorf("snapshot %d: vessel %d, first entry %q revision %d", i, s.Vessel, e[0].EntityKey, e[0].Revision)
		}
		if last := e[len(e)-1]; last.EntityKey != envelope.ChunkKey(s.ID, 14) {
			t.Errorf("snapshot %d: last entry %q, want chunk 14", i, last.EntityKey)
		}
		// A first snapshot: the index, then every chunk whole.
		x, err := outbox.IndexEntry(e)
		if err != nil || s.Index.EntityType != sourcecatalog.ManifestIndexEntityType || !bytes.Equal(s.Index.Payload, x.Payload) {
			t.Errorf("snapshot %d: index %q, %v", i, s.Index.EntityType, err)
		}
		if m := s.Messages(); len(m) != 16 || m[0].EntityType != sourcecatalog.ManifestIndexEntityType || m[1].EntityKey != envelope.ChunkKey(s.ID, 0) || m[15].EntityKey != e[15].EntityKey {
			t.Errorf("snapshot %d: %d messages", i, len(m))
		}
	}
	if round[0].ID == round[1].ID || fleet[0].Token == fleet[1].Token {
		t.Error("two vessels share a snapshot id or a token")
	}
	if _, err := BuildRound(fleet, 1, at, examples.Scaled(1500), 15); err == nil || !strings.Contains(err.Error(), "takes 16 messages, not 15") {
		t.Errorf("15 messages wanted: %v", err)
	}
}

// recorder is a Sink that keeps each body with the vessel that sent it.
type recorder struct {
	mu     sync.Mutex
	bodies map[uuid.UUID][][]byte
}

func (r *recorder) Message(_ context.Context, v uuid.UUID, body []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bodies[v] = append(r.bodies[v], body)
	return nil
}

// floorServer runs a floor Handler behind TLS for fleet and returns its
// URL, its CA and what it received.
func floorServer(t *testing.T, fleet []Vessel) (string, *testpki.CA, *recorder) {
	t.Helper()
	tokens, err := httpbinding.ParseTokens(bytes.NewReader(TokenFile(fleet)))
	if err != nil {
		t.Fatal(err)
	}
	sink := &recorder{bodies: map[uuid.UUID][][]byte{}}
	url, ca := serveTLS(t, fleetfloor.NewHandler(tokens, sink, nil, 16))
	return url, ca, sink
}

// serveTLS serves h over TLS until the test ends and returns its URL and
// the CA its certificate chains to.
func serveTLS(t *testing.T, h http.Handler) (string, *testpki.CA) {
	t.Helper()
	ca, err := testpki.NewCA("test")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.Server()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL + "/", ca
}

// Send delivers every message once, each vessel's in order with its own
// token, and times each.
func TestSend(t *testing.T) {
	fleet := NewFleet(5)
	url, ca, got := floorServer(t, fleet)
	round, err := BuildRound(fleet, 1, at, examples.Scaled(300), 4)
	if err != nil {
		t.Fatal(err)
	}
	clients, err := NewClients(url, ca.Pool, fleet, false)
	if err != nil {
		t.Fatal(err)
	}
	defer clients.CloseIdle()
	res, err := Send(context.Background(), clients, round, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Snapshots != 5 || res.Messages != 20 || res.Chunks != 15 || res.Latency.Len() != 20 || res.Elapsed <= 0 || res.Latency.Quantile(1) > res.Elapsed {
		t.Errorf("result %+v, %d samples, max %v", res, res.Latency.Len(), res.Latency.Quantile(1))
	}
	if len(got.bodies) != len(fleet) {
		t.Errorf("messages of %d vessels, want %d", len(got.bodies), len(fleet))
	}
	for _, s := range round {
		bodies := got.bodies[fleet[s.Vessel].ID] // authenticated by the vessel's token
		if len(bodies) != len(s.Entries) {
			t.Errorf("vessel %d: %d messages, want %d", s.Vessel, len(bodies), len(s.Entries))
			continue
		}
		for i, e := range s.Messages() { // in order
			want := envelope.DefaultWrapper{}.Wrap(nil, e.EntityType, e.EntityKey, e.Payload)
			if !bytes.Equal(bodies[i], want) {
				t.Errorf("vessel %d: message %d is not %s", s.Vessel, i, e.EntityKey)
			}
		}
	}
}

func TestCheckStaged(t *testing.T) {
	round, err := BuildRound(NewFleet(1), 1, at, examples.Scaled(300), 4)
	if err != nil {
		t.Fatal(err)
	}
	snap := round[0]
	msgs := snap.Messages()
	all := snap.Missing
	for _, tc := range []struct {
		name string
		i    int
		edit func(*envelope.Receipt)
		ok   bool
	}{
		{"the index, every chunk missing", 0, func(r *envelope.Receipt) { r.Missing = all }, true},
		{"the index, a chunk not named", 0, func(r *envelope.Receipt) { r.Missing = all; r.Missing[0] &^= 1 << 1 }, false},
		{"the index, no chunk missing", 0, func(*envelope.Receipt) {}, false},
		{"the index as a manifest", 0, func(r *envelope.Receipt) { *r = snap.Entries[0].Receipt(); r.Missing = all }, false},
		{"the last chunk, complete", 3, func(r *envelope.Receipt) { r.Complete = true }, true},
		{"the last chunk, not complete", 3, func(*envelope.Receipt) {}, false},
		{"a chunk before, complete", 2, func(r *envelope.Receipt) { r.Complete = true }, false},
		{"already received", 1, func(r *envelope.Receipt) { r.Status = envelope.AlreadyReceived }, false},
		{"another digest", 1, func(r *envelope.Receipt) { r.Digest[0] ^= 1 }, false},
		{"another entry's", 1, func(r *envelope.Receipt) { *r = msgs[2].Receipt() }, false},
	} {
		rc := msgs[tc.i].Receipt()
		tc.edit(&rc)
		if err := CheckStaged(snap, tc.i, rc); (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok %v", tc.name, err, tc.ok)
		}
	}
	// An identical snapshot's index names no chunk and completes it.
	snap.Missing = envelope.ChunkSet{}
	rc := snap.Index.Receipt()
	rc.Complete = true
	if err := CheckStaged(snap, 0, rc); err != nil {
		t.Errorf("an identical snapshot's index: %v", err)
	}
	rc.Missing.Add(2)
	if err := CheckStaged(snap, 0, rc); err == nil {
		t.Error("an identical snapshot's index naming chunk 2: no error")
	}
}

// A failed Send or Check stops the round with its error; a token the
// server does not know is refused.
func TestSendFails(t *testing.T) {
	fleet := NewFleet(3)
	url, ca, _ := floorServer(t, fleet)
	round, err := BuildRound(fleet, 1, at, examples.Scaled(300), 4)
	if err != nil {
		t.Fatal(err)
	}
	clients, err := NewClients(url, ca.Pool, fleet, false)
	if err != nil {
		t.Fatal(err)
	}
	// The floor's receipt is not the entry's: CheckStaged refuses it.
	if _, err := Send(context.Background(), clients, round, 2, CheckStaged); err == nil || !strings.Contains(err.Error(), "names chunks [] missing") {
		t.Errorf("CheckStaged on the floor's receipts: %v", err)
	}
	stop := errors.New("stop")
	if _, err := Send(context.Background(), clients, round, 2, func(Snapshot, int, envelope.Receipt) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("a Check's error: %v", err)
	}
	strangers, err := NewClients(url, ca.Pool, NewFleet(3), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Send(context.Background(), strangers, round, 2, nil); !errors.Is(err, httpbinding.ErrUnauthorized) {
		t.Errorf("unknown tokens: %v, want ErrUnauthorized", err)
	}
	// A floor answers no declaration: a vessel asking for it sends nothing.
	gated, err := NewClients(url, ca.Pool, fleet, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Send(context.Background(), gated, round, 2, nil); !errors.Is(err, outbox.ErrCapabilityOff) {
		t.Errorf("no declaration: %v, want ErrCapabilityOff", err)
	}
	if _, err := Send(context.Background(), clients, round, 0, nil); err == nil {
		t.Error("no sender: no error")
	}
}
