package fleetfloor

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/internal/testpki"
)

func TestSnapshotOf(t *testing.T) {
	id := uuid.MustParse("0f6ab2a4-7e54-4c8e-9b1a-3f2d5c6e7a81")
	w := envelope.DefaultWrapper{}
	for _, tc := range []struct {
		name string
		body []byte
		ok   bool
	}{
		{"manifest", w.Wrap(nil, sourcecatalog.ManifestEntityType, envelope.ManifestKey(id), []byte(`{}`)), true},
		{"chunk", w.Wrap(nil, sourcecatalog.ChunkEntityType, envelope.ChunkKey(id, 12), []byte(`{}`)), true},
		{"another first member", []byte(`{"entity_type":"x","entity_key":"` + id.String() + `"}`), false},
		{"not a uuid", []byte(`{"entity_key":"0f6ab2a4-7e54-4c8e-9b1a-3f2d5c6e7a8z","payload":""}`), false},
		{"a longer key", []byte(`{"entity_key":"` + id.String() + `0","payload":""}`), false},
		{"cut short", []byte(`{"entity_key":"` + id.String()), false},
		{"empty", nil, false},
	} {
		got, ok := snapshotOf(tc.body)
		if ok != tc.ok || (ok && got != id.String()) {
			t.Errorf("%s: %q %v, want %v", tc.name, got, ok, tc.ok)
		}
	}
}

// inventory records the snapshots written, failing when told.
type inventory struct {
	mu      sync.Mutex
	vessels []uuid.UUID
	err     error
}

func (i *inventory) Snapshot(_ context.Context, v uuid.UUID) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.vessels = append(i.vessels, v)
	return i.err
}

// failing is a Sink that fails.
type failing struct{}

func (failing) Message(context.Context, uuid.UUID, []byte) error { return errors.New("disk gone") }

// server runs h behind TLS and returns a client trusting it and its URL.
func server(t *testing.T, h http.Handler) (*http.Client, string) {
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
	srv.TLS = httpbinding.ServerTLSConfig(cert, nil)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return &http.Client{Transport: &http.Transport{TLSClientConfig: httpbinding.ClientTLSConfig(ca.Pool, nil)}}, srv.URL + "/"
}

// The Handler checks what serve checks before the body, reads at most
// 32,768 bytes, writes each body and, at a snapshot's last message, its
// inventory.
func TestHandler(t *testing.T) {
	const json = "application/json"
	vessel := uuid.New()
	tokens, err := httpbinding.ParseTokens(strings.NewReader(httpbinding.TokenHash("good", vessel) + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "log")
	sink, err := CreateAppendFile(file)
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	inv := &inventory{}
	client, url := server(t, NewHandler(tokens, sink, inv, 3))
	failClient, failURL := server(t, NewHandler(tokens, failing{}, nil, 3))
	snap := uuid.New()
	msg := func(i int) []byte {
		return envelope.DefaultWrapper{}.Wrap(nil, sourcecatalog.ChunkEntityType, envelope.ChunkKey(snap, i), []byte(`{"chunk":1}`))
	}
	other := envelope.DefaultWrapper{}.Wrap(nil, sourcecatalog.ChunkEntityType, envelope.ChunkKey(uuid.New(), 0), []byte(`{"chunk":1}`))
	post := func(c *http.Client, url, method, token, ctype string, body []byte) int {
		t.Helper()
		var r io.Reader = bytes.NewReader(body)
		if ctype == "chunked" { // no Content-Length: the body says how long it is
			r, ctype = struct{ io.Reader }{r}, json
		}
		req, err := http.NewRequest(method, url, r)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			var b bytes.Buffer
			b.ReadFrom(resp.Body)
			if _, err := envelope.DecodeReceipt(b.Bytes()); err != nil {
				t.Errorf("the answer is not a receipt: %v", err)
			}
		}
		return resp.StatusCode
	}
	for _, tc := range []struct {
		name                 string
		method, token, ctype string
		body                 []byte
		want                 int
	}{
		{"GET", http.MethodGet, "good", json, nil, 405},
		{"no token", http.MethodPost, "", json, msg(0), 401},
		{"unknown token", http.MethodPost, "bad", json, msg(0), 401},
		{"text/plain", http.MethodPost, "good", "text/plain", msg(0), 415},
		{"too large", http.MethodPost, "good", json, bytes.Repeat([]byte("x"), httpbinding.MaxRequestBody+1), 413},
		{"too large, chunked", http.MethodPost, "good", "chunked", append(other, bytes.Repeat([]byte(" "), httpbinding.MaxRequestBody)...), 413},
		{"the largest, chunked", http.MethodPost, "good", "chunked", append(other, bytes.Repeat([]byte(" "), httpbinding.MaxRequestBody-len(other))...), 200},
		{"not a request", http.MethodPost, "good", json, []byte(`{"a":1}`), 400},
		{"message 0", http.MethodPost, "good", json, msg(0), 200},
		{"message 1", http.MethodPost, "good", json, msg(1), 200},
	} {
		if got := post(client, url, tc.method, tc.token, tc.ctype, tc.body); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	if len(inv.vessels) != 0 {
		t.Fatalf("inventory written after 2 of 3 messages")
	}
	if got := post(client, url, http.MethodPost, "good", json, msg(2)); got != 200 || len(inv.vessels) != 1 || inv.vessels[0] != vessel {
		t.Fatalf("the last message: %d, inventory of %v", got, inv.vessels)
	}
	inv.mu.Lock()
	inv.err = errors.New("full")
	inv.mu.Unlock()
	snap = uuid.New()
	for i := range 3 {
		if got, want := post(client, url, http.MethodPost, "good", json, msg(i)), map[bool]int{true: 503, false: 200}[i == 2]; got != want {
			t.Errorf("a failing inventory, message %d: %d, want %d", i, got, want)
		}
	}
	if got := post(failClient, failURL, http.MethodPost, "good", json, msg(0)); got != 503 {
		t.Errorf("a failing sink: %d, want 503", got)
	}
	written, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(written, []byte(`{"entity_key":`)); n != 7 {
		t.Errorf("%d messages written, want 7 (those answered 200 and the one whose inventory failed)", n)
	}
}

func TestAppendFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "log")
	a, err := CreateAppendFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"one ", "two"} {
		if err := a.Message(context.Background(), uuid.Nil, []byte(b)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(file); string(got) != "one two" {
		t.Errorf("file %q, want %q", got, "one two")
	}
	if _, err := CreateAppendFile(file); err == nil {
		t.Error("an existing file was opened")
	}
}

// The SQLite inventory writes one row per record into sqlitestore's items
// table, whose key refuses a vessel's rows twice.
func TestSQLiteInventory(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "floor.db")
	records := examples.Scaled(300)
	s, err := CreateSQLiteInventory(ctx, file, records)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, b := uuid.New(), uuid.New()
	for _, v := range []uuid.UUID{a, b} {
		if err := s.Snapshot(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Snapshot(ctx, a); err == nil {
		t.Error("a vessel's rows twice: no error")
	}
	var n int
	var mode string
	if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM items WHERE vessel_id = ?", b[:]).Scan(&n); err != nil || n != len(records) {
		t.Errorf("%d rows of vessel b, want %d: %v", n, len(records), err)
	}
	if err := s.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal mode %q: %v", mode, err)
	}
	if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM items").Scan(&n); err != nil || n != 2*len(records) {
		t.Errorf("%d rows in all, want %d: %v", n, 2*len(records), err)
	}
}

func TestMainUsage(t *testing.T) {
	var stderr bytes.Buffer
	for _, args := range [][]string{
		{},
		{"--tls-cert", "c", "--tls-key", "k", "--tokens", "t"},                                  // no sink
		{"--tls-cert", "c", "--tls-key", "k", "--tokens", "t", "--append", "f", "--mysql", "d"}, // two
		{"--tls-cert", "c", "--tls-key", "k", "--tokens", "t", "--append", "f", "extra"},
	} {
		stderr.Reset()
		if got := Main(args, &stderr); got != 2 || !strings.Contains(stderr.String(), "usage:") {
			t.Errorf("%q: status %d, %q", args, got, stderr.String())
		}
	}
}
