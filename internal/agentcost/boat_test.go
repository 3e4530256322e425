package agentcost

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/signalk"
)

// readModel maps the boat's model as the agent does.
func readModel(t *testing.T, b *Boat) []*catalog.Record {
	t.Helper()
	resp, err := http.Get(b.URL() + "/signalk/v1/api/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(body), stampHolder) {
		t.Fatal("the model keeps the stamp placeholder")
	}
	recs, err := signalk.MapWithin(body, signalk.SelectLowestRef, signalk.AgeBound{Now: time.Now(), MaxAge: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// dialStream opens b's delta stream and checks its hello.
func dialStream(t *testing.T, ctx context.Context, b *Boat) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(b.URL(), "http")+"/signalk/v1/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	var hello struct{ ServerStartID string }
	if _, msg, err := c.Read(ctx); err != nil || json.Unmarshal(msg, &hello) != nil || hello.ServerStartID != startID {
		t.Fatalf("hello %+v: %v", hello, err)
	}
	return c
}

// TestBoat: the model maps back to as many records as the boat's
// catalog, every value live under an age bound; the stream sends the
// hello with the start id and every cached value, then, without a
// trickle, nothing but a device added, which the model then holds with
// its source.
func TestBoat(t *testing.T) {
	recs := examples.Scaled(300)
	b, err := NewBoat(recs, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got := readModel(t, b); len(got) != len(recs) {
		t.Fatalf("the model maps to %d records, want %d", len(got), len(recs))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := dialStream(t, ctx, b)
	paths := len(b.pairs)
	seen := map[string]bool{}
	for range paths {
		_, msg, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("after %d cached values: %v", len(seen), err)
		}
		seen[string(msg[strings.Index(string(msg), `"path"`):])] = true
	}
	if len(seen) != paths {
		t.Fatalf("%d distinct cached values, want one of each of the %d paths", len(seen), paths)
	}
	path, err := b.AddDevice()
	if err != nil {
		t.Fatal(err)
	}
	if _, msg, err := c.Read(ctx); err != nil || !strings.Contains(string(msg), `"path":"`+path+`"`) {
		t.Fatalf("after the cached values %q, %v; want the device's delta", msg, err)
	}
	got := readModel(t, b)
	if len(got) != len(recs)+recordsPerDevice {
		t.Fatalf("after a device the model maps to %d records, want %d", len(got), len(recs)+recordsPerDevice)
	}
	found := false
	for _, r := range got {
		found = found || r.PathName() == path
	}
	if !found {
		t.Errorf("the model lacks %s", path)
	}
}

// TestBoatTrickles: with a rate, values of known paths keep coming after
// the cached ones.
func TestBoatTrickles(t *testing.T) {
	b, err := NewBoat(examples.Scaled(60), 100)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := dialStream(t, ctx, b)
	for i := range len(b.pairs) + 5 {
		if _, msg, err := c.Read(ctx); err != nil || !strings.Contains(string(msg), `"path":"`+b.pairs[i%len(b.pairs)].path+`"`) {
			t.Fatalf("value %d: %q, %v; want one of %s", i, msg, err, b.pairs[i%len(b.pairs)].path)
		}
	}
}
