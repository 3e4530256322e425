package inventory_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/httpbinding/inventory"
)

var vessel = uuid.MustParse("0d1f3c5e-2a4b-4c6d-8e0f-1a2b3c4d5e6f")

var epoch = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// recordsOf returns 2n+2 records: n paths, each observed from one of two
// sources, and the sources.
func recordsOf(t testing.TB, prefix string, n int) []*catalog.Record {
	t.Helper()
	var out []*catalog.Record
	for _, ref := range []string{"can0.a", "can0.b"} {
		s, err := catalog.NewSource(catalog.Source{SourceRef: ref})
		require.NoError(t, err)
		out = append(out, s)
	}
	for i := range n {
		name := fmt.Sprintf("%s.sensor%05d", prefix, i)
		p, err := catalog.NewPath(catalog.Path{Path: name, Unit: catalog.UnitOf("m")})
		require.NoError(t, err)
		o, err := catalog.NewObservation(catalog.Observation{Path: name, SourceRef: []string{"can0.a", "can0.b"}[i%2], ValueType: catalog.Number})
		require.NoError(t, err)
		out = append(out, p, o)
	}
	return out
}

// activate stages and finalizes a snapshot of records at revision.
func activate(t testing.TB, r *finalize.Receiver, rev int64, records []*catalog.Record) *envelope.Snapshot {
	t.Helper()
	ctx := context.Background()
	s, err := envelope.Build(envelope.Input{VesselID: vessel, SnapshotID: uuid.New(), Revision: rev, DiscoveredAt: epoch.Add(time.Duration(rev) * time.Minute), Records: records})
	require.NoError(t, err)
	origin := finalize.Origin{VesselID: vessel}
	for _, c := range s.Chunks {
		_, err := r.StageChunk(ctx, origin, c)
		require.NoError(t, err)
	}
	_, err = r.ReceiveManifest(ctx, origin, s.Manifest.Canonical())
	require.NoError(t, err)
	out, err := r.Finalize(ctx, vessel, s.Manifest.SnapshotID)
	require.NoError(t, err)
	require.Equal(t, finalize.Activated, out.Status)
	return s
}

// get fetches path from srv and returns the status and body.
func get(t testing.TB, srv *httptest.Server, path string) (int, []byte) {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	return resp.StatusCode, b
}

func decodeStrict[T any](t testing.TB, b []byte) T {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	var v T
	require.NoError(t, dec.Decode(&v), "%s", b)
	return v
}

// A maximal snapshot of 25,600 records, read in pages of 1,000 through
// the cursors: every item once, in canonical order, the last page without
// a cursor, every page naming the active snapshot.
func TestInventoryPagesThroughAMaximalSnapshot(t *testing.T) {
	r := finalize.NewReceiver(memstore.New())
	records := recordsOf(t, "nav", (sourcecatalog.MaxRecords-2)/2)
	require.Len(t, records, sourcecatalog.MaxRecords)
	s := activate(t, r, 3, records)
	srv := httptest.NewServer(inventory.NewHandler(r))
	defer srv.Close()

	var items []inventory.Item
	path := "/vessels/" + vessel.String() + "/inventory?limit=1000"
	pages := 0
	for {
		status, body := get(t, srv, path)
		require.Equal(t, http.StatusOK, status, "%s", body)
		p := decodeStrict[inventory.Page](t, body)
		pages++
		require.Equal(t, vessel, p.VesselID)
		require.Equal(t, s.Manifest.SnapshotID, p.SnapshotID)
		require.Equal(t, int64(3), p.Revision)
		require.Equal(t, s.Manifest.DocumentSHA256.String(), p.DocumentSHA256)
		require.True(t, p.DiscoveredAt.Equal(s.Manifest.DiscoveredAt))
		require.Equal(t, sourcecatalog.MaxRecords, p.ItemCount)
		require.LessOrEqual(t, len(p.Items), 1000)
		items = append(items, p.Items...)
		require.LessOrEqual(t, len(items), sourcecatalog.MaxRecords, "no item twice")
		if p.NextCursor == "" {
			break
		}
		require.Len(t, p.Items, 1000, "only the last page is short")
		path = "/vessels/" + vessel.String() + "/inventory?limit=1000&cursor=" + url.QueryEscape(p.NextCursor)
	}
	require.Equal(t, 26, pages)
	require.Len(t, items, sourcecatalog.MaxRecords)
	catalog.Sort(records) // the canonical order of the items
	for i, rec := range records {
		it := items[i]
		k := rec.Key()
		require.Equal(t, k.Kind.String(), it.Kind, "item %d", i)
		require.Equal(t, k.Path, it.Path, "item %d", i)
		require.Equal(t, k.SourceRef, it.SourceRef, "item %d", i)
		require.True(t, it.CurrentlyObserved)
		require.Equal(t, inventory.Seen{Revision: 3, At: s.Manifest.DiscoveredAt}, it.FirstSeen)
		require.Equal(t, it.FirstSeen, it.LastSeen)
		require.JSONEq(t, string(rec.Canonical()), string(it.Record), "item %d", i)
	}

	status, body := get(t, srv, "/vessels/"+vessel.String()+"/inventory")
	require.Equal(t, http.StatusOK, status)
	require.Len(t, decodeStrict[inventory.Page](t, body).Items, inventory.DefaultPageItems, "the default limit")
}

// A second activation: items that left are no longer observed, keep
// their first sighting and have their last frozen; a cursor of the
// previous snapshot is 409.
func TestInventorySightingsAndStaleCursors(t *testing.T) {
	r := finalize.NewReceiver(memstore.New())
	first := activate(t, r, 1, recordsOf(t, "nav", 3))
	srv := httptest.NewServer(inventory.NewHandler(r))
	defer srv.Close()
	status, body := get(t, srv, "/vessels/"+vessel.String()+"/inventory?limit=2")
	require.Equal(t, http.StatusOK, status)
	stale := decodeStrict[inventory.Page](t, body).NextCursor
	require.NotEmpty(t, stale)

	second := activate(t, r, 2, recordsOf(t, "nav", 2))
	status, body = get(t, srv, "/vessels/"+vessel.String()+"/inventory?cursor="+stale)
	require.Equal(t, http.StatusConflict, status, "%s", body)
	require.Contains(t, string(body), "read the inventory again from the first page")

	status, body = get(t, srv, "/vessels/"+vessel.String()+"/inventory")
	require.Equal(t, http.StatusOK, status)
	p := decodeStrict[inventory.Page](t, body)
	require.Equal(t, second.Manifest.SnapshotID, p.SnapshotID)
	byPath := map[string]inventory.Item{}
	for _, it := range p.Items {
		if it.Kind == "path" {
			byPath[it.Path] = it
		}
	}
	gone := byPath["nav.sensor00002"]
	require.False(t, gone.CurrentlyObserved, "a path the second snapshot does not select")
	require.Equal(t, inventory.Seen{Revision: 1, At: first.Manifest.DiscoveredAt}, gone.FirstSeen)
	require.Equal(t, inventory.Seen{Revision: 1, At: first.Manifest.DiscoveredAt}, gone.LastSeen, "last seen frozen at the snapshot before")
	kept := byPath["nav.sensor00000"]
	require.True(t, kept.CurrentlyObserved)
	require.Equal(t, int64(1), kept.FirstSeen.Revision)
	require.Equal(t, inventory.Seen{Revision: 2, At: second.Manifest.DiscoveredAt}, kept.LastSeen)

	status, body = get(t, srv, "/vessels/"+vessel.String()+"/history")
	require.Equal(t, http.StatusOK, status)
	h := decodeStrict[inventory.History](t, body)
	require.Equal(t, second.Manifest.SnapshotID, *h.ActiveSnapshotID)
	require.Equal(t, int64(2), h.ActiveRevision)
	require.Len(t, h.Snapshots, 2)
	require.Equal(t, inventory.Snapshot{
		SnapshotID: second.Manifest.SnapshotID, Revision: 2, State: "activated", Outcome: "activated", Active: true,
		RecordCount: second.Manifest.RecordCount, ChunkCount: len(second.Chunks), ChunksStaged: len(second.Chunks),
		StagedBytes: h.Snapshots[0].StagedBytes,
	}, h.Snapshots[0], "highest revision first")
	require.Equal(t, first.Manifest.SnapshotID, h.Snapshots[1].SnapshotID)
	require.False(t, h.Snapshots[1].Active)
	require.Positive(t, h.Snapshots[0].StagedBytes)
}

// failing is a store whose every transaction fails with a cause that
// names the server's internals.
type failing struct{ finalize.Store }

var errSecret = errors.New("open /var/lib/secret/catalog.db: permission denied")

func (failing) WithVessel(context.Context, uuid.UUID, func(finalize.Tx) error) error {
	return errSecret
}

// Every refusal is JSON with the right status, and a store failure names
// no cause.
func TestInventoryRefusals(t *testing.T) {
	r := finalize.NewReceiver(memstore.New())
	activate(t, r, 1, recordsOf(t, "nav", 3))
	srv := httptest.NewServer(inventory.NewHandler(r))
	defer srv.Close()
	var logged []error
	broken := httptest.NewServer(inventory.NewHandler(finalize.NewReceiver(failing{}), inventory.WithErrorLog(func(err error) { logged = append(logged, err) })))
	defer broken.Close()
	v := "/vessels/" + vessel.String()
	other := "/vessels/" + uuid.New().String()
	cursor := func(s string) string { return "/inventory?cursor=" + url.QueryEscape(s) }
	b64 := func(s string) string { return cursor(strings.TrimRight(base64URL(s), "=")) }
	cases := []struct {
		name, path string
		status     int
	}{
		{"unknown vessel", other + "/inventory", 404},
		{"unknown vessel's history", other + "/history", 404},
		{"upper-case id", "/vessels/" + strings.ToUpper(vessel.String()) + "/inventory", 400},
		{"nil id", "/vessels/" + uuid.Nil.String() + "/inventory", 400},
		{"not an id", "/vessels/boat/inventory", 400},
		{"history with a bad id", "/vessels/boat/history", 400},
		{"history with a parameter", v + "/history?limit=2", 400},
		{"limit 0", v + "/inventory?limit=0", 400},
		{"limit over the maximum", v + "/inventory?limit=1001", 400},
		{"limit not a number", v + "/inventory?limit=ten", 400},
		{"limit signed", v + "/inventory?limit=+5", 400},
		{"limit twice", v + "/inventory?limit=5&limit=6", 400},
		{"an empty cursor", v + "/inventory?cursor=", 400},
		{"a cursor not base64", v + cursor("!!!"), 400},
		{"a cursor not JSON", v + b64("not json"), 400},
		{"a cursor with an unknown member", v + b64(`{"s":"`+uuid.New().String()+`","k":1,"p":"a","r":"","x":1}`), 400},
		{"a cursor of no kind", v + b64(`{"s":"`+uuid.New().String()+`","k":9,"p":"a","r":""}`), 400},
		{"a cursor of the nil snapshot", v + b64(`{"s":"`+uuid.Nil.String()+`","k":1,"p":"a","r":""}`), 400},
		{"a cursor too long", v + cursor(strings.Repeat("A", inventory.MaxCursor+1)), 400},
		{"a cursor of another snapshot", v + b64(`{"s":"`+uuid.New().String()+`","k":1,"p":"a","r":""}`), 409},
		{"another path", "/vessels/" + vessel.String(), 404},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := get(t, srv, tc.path)
			require.Equal(t, tc.status, status, "%s", body)
			e := decodeStrict[struct {
				Error string `json:"error"`
			}](t, body)
			require.NotEmpty(t, e.Error)
		})
	}
	resp, err := srv.Client().Post(srv.URL+v+"/inventory", "application/json", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	require.Equal(t, "GET, HEAD", resp.Header.Get("Allow"))

	for _, p := range []string{v + "/inventory", v + "/history"} {
		status, body := get(t, broken, p)
		require.Equal(t, http.StatusServiceUnavailable, status)
		require.NotContains(t, string(body), "secret", "the answer names no cause")
	}
	require.Len(t, logged, 2)
	require.ErrorIs(t, logged[0], errSecret, "the error log gets the cause")
}
