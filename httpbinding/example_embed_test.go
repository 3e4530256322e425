package httpbinding_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/outbox"
	outboxmem "github.com/yachtmemory/sourcecatalog/outbox/memstore"
)

// The receiver embedded in a service's mux behind an ingress that
// terminates mutual TLS and forwards over loopback: the Handler takes the
// vessel from the ingress's header, and a Health handler answers the
// probes. Here the test's client plays the ingress.
func ExampleTrustedProxy() {
	ctx := context.Background()
	recv := finalize.NewReceiver(memstore.New())
	auth, err := httpbinding.NewTrustedProxy(httpbinding.ProxyConfig{
		Proxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, // where the ingress connects from
		Header:  "X-Client-Cert-Uri",                                   // urn:uuid:<vessel>, the certificate's SAN
	})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /v2/messages", httpbinding.NewHandler(recv, auth))
	mux.Handle("GET /healthz", &httpbinding.Health{Check: recv.Ping})
	srv := httptest.NewServer(mux) // in production: httpbinding.NewInsecureServer on loopback
	defer srv.Close()

	// A cycle committed on board: a manifest and one chunk.
	vessel := uuid.MustParse("0d1f3c5e-2a4b-4c6d-8e0f-1a2b3c4d5e6f")
	src, _ := catalog.NewSource(catalog.Source{SourceRef: "gps"})
	p, _ := catalog.NewPath(catalog.Path{Path: "navigation.position"})
	o, _ := catalog.NewObservation(catalog.Observation{Path: "navigation.position", SourceRef: "gps", ValueType: catalog.Position})
	commit, err := outbox.NewWriter(outboxmem.New()).Commit(ctx, outbox.NewCycle(vessel, time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), []*catalog.Record{src, p, o}))
	if err != nil {
		panic(err)
	}
	send := func(e outbox.Entry, identity string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v2/messages", bytes.NewReader(envelope.DefaultWrapper{}.Wrap(nil, e.EntityType, e.EntityKey, e.Payload)))
		req.Header.Set("Content-Type", "application/json")
		if identity != "" {
			req.Header.Set("X-Client-Cert-Uri", identity)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Println(e.EntityType, resp.StatusCode)
	}
	send(commit.Entries[0], "") // no identity: the ingress did not authenticate it
	for _, e := range commit.Entries {
		send(e, "urn:uuid:"+vessel.String())
	}
	c, err := recv.Active(ctx, vessel)
	if err != nil {
		panic(err)
	}
	fmt.Println("active revision", c.Revision, "items", len(c.Items)) // the discovery time in ms (SPEC §2.4)
	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println("healthz", resp.StatusCode)
	// Output:
	// signalk_catalog_manifest_v2 401
	// signalk_catalog_manifest_v2 200
	// signalk_catalog_chunk_v2 200
	// active revision 1777636800000 items 3
	// healthz 200
}
