package agent_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/yachtmemory/sourcecatalog/agent"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/finalize"
	finalizemem "github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/outbox"
	outboxmem "github.com/yachtmemory/sourcecatalog/outbox/memstore"
)

// A sender in one call: the gate reads the receiver's declaration, which
// here names request_gzip and chunk_reference, so the second, unchanged
// cycle sends its chunks by reference, in fewer bytes.
func ExampleNewSender() {
	receiver := httpbinding.NewHandler(finalize.NewReceiver(finalizemem.New()),
		httpbinding.InsecureNoAuth(examples.VesselID), httpbinding.WithChunkReferences(true))
	ts := httptest.NewTLSServer(receiver)
	defer ts.Close()

	sender, err := agent.NewSender(agent.Config{
		Vessel: examples.VesselID, Store: outboxmem.New(), URL: ts.URL + "/v2/messages",
		HTTPClient: ts.Client(), // trusts the test server; on board: CAFile, TokenFile or CertFile+KeyFile
	})
	if err != nil {
		panic(err)
	}
	defer sender.Close()
	ctx := context.Background()
	var sent []int64
	for range 2 {
		if _, err := sender.Commit(ctx, examples.Boat()); err != nil {
			panic(err)
		}
		rep, err := sender.Publish(ctx, outbox.DrainOptions{})
		if err != nil {
			panic(err)
		}
		sent = append(sent, rep.Bytes.Sent)
		fmt.Printf("%s: %d delivered, %d by reference, gzipped %t, %d pending\n",
			rep.Outcome, rep.Delivered, rep.Referenced, rep.Bytes.Sent < rep.Bytes.Uncompressed, rep.Pending)
	}
	fmt.Println("fewer bytes the second time:", sent[1] < sent[0])
	// Output:
	// delivered: 3 delivered, 0 by reference, gzipped true, 0 pending
	// delivered: 3 delivered, 2 by reference, gzipped true, 0 pending
	// fewer bytes the second time: true
}
