package inventory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/httpbinding/inventory"
)

// A shore service reads a vessel's active catalog page by page.
func Example() {
	ctx := context.Background()
	vessel := uuid.MustParse("0d1f3c5e-2a4b-4c6d-8e0f-1a2b3c4d5e6f")
	recv := finalize.NewReceiver(memstore.New())

	// A snapshot of two paths observed from one source, activated.
	src, _ := catalog.NewSource(catalog.Source{SourceRef: "can0.gps"})
	records := []*catalog.Record{src}
	for _, path := range []string{"navigation.courseOverGroundTrue", "navigation.speedOverGround"} {
		p, _ := catalog.NewPath(catalog.Path{Path: path, Unit: catalog.UnitOf("m/s")})
		o, _ := catalog.NewObservation(catalog.Observation{Path: path, SourceRef: "can0.gps", ValueType: catalog.Number})
		records = append(records, p, o)
	}
	snap, _ := envelope.Build(envelope.Input{
		VesselID: vessel, SnapshotID: uuid.MustParse("6f1c2d3e-4a5b-4c6d-9e8f-0a1b2c3d4e5f"), Revision: 1,
		DiscoveredAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), Records: records,
	})
	origin := finalize.Origin{VesselID: vessel}
	recv.ReceiveManifest(ctx, origin, snap.Manifest.Canonical())
	for _, c := range snap.Chunks {
		recv.StageChunk(ctx, origin, c)
	}
	recv.Finalize(ctx, vessel, snap.Manifest.SnapshotID)

	mux := http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", inventory.NewHandler(recv)))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	next := srv.URL + "/admin/vessels/" + vessel.String() + "/inventory?limit=2"
	for next != "" {
		resp, err := http.Get(next)
		if err != nil {
			panic(err)
		}
		var page inventory.Page
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			panic(err)
		}
		fmt.Printf("revision %d, %d items in all\n", page.Revision, page.ItemCount)
		for _, it := range page.Items {
			fmt.Println(" ", it.Kind, it.Path, it.SourceRef, it.CurrentlyObserved, it.FirstSeen.Revision)
		}
		next = ""
		if page.NextCursor != "" {
			next = srv.URL + "/admin/vessels/" + vessel.String() + "/inventory?limit=2&cursor=" + url.QueryEscape(page.NextCursor)
		}
	}
	// Output:
	// revision 1, 5 items in all
	//   path navigation.courseOverGroundTrue  true 1
	//   path navigation.speedOverGround  true 1
	// revision 1, 5 items in all
	//   source  can0.gps true 1
	//   observation navigation.courseOverGroundTrue can0.gps true 1
	// revision 1, 5 items in all
	//   observation navigation.speedOverGround can0.gps true 1
}
