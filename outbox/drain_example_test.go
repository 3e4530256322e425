package outbox_test

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/outbox"
	outboxmem "github.com/yachtmemory/sourcecatalog/outbox/memstore"
)

// A sender publishes until nothing is pending: a failed send is reported
// with its class and cause, waited for and sent again. A failure only an
// operator can mend (outbox.NeedsOperator: credentials refused, TLS
// verification failed) would end the Drain at once instead.
func ExamplePublisher_Drain() {
	ctx := context.Background()
	vessel := uuid.MustParse("0d1f3c5e-2a4b-4c6d-8e0f-1a2b3c4d5e6f")
	path, _ := catalog.NewPath(catalog.Path{Path: "navigation.speedOverGround", Unit: catalog.UnitOf("m/s")})
	source, _ := catalog.NewSource(catalog.Source{SourceRef: "can0.0123456789abcdef"})
	obs, _ := catalog.NewObservation(catalog.Observation{
		Path: "navigation.speedOverGround", SourceRef: "can0.0123456789abcdef", ValueType: catalog.Number,
	})
	store := outboxmem.New()
	cycle := outbox.NewCycle(vessel, time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), []*catalog.Record{path, source, obs})
	if _, err := outbox.NewWriter(store).Commit(ctx, cycle); err != nil {
		panic(err)
	}

	link := &shoreLink{receiver: finalize.NewReceiver(memstore.New()), origin: finalize.Origin{VesselID: vessel}, dropOnce: true}
	p := outbox.NewPublisher(store, vessel, link, outbox.WithReceiverV2(true))
	report, err := p.Drain(ctx, outbox.DrainOptions{
		Backoff: outbox.Backoff{Min: time.Millisecond, Max: 10 * time.Millisecond},
		Until:   time.Now().Add(time.Minute),
		OnPass: func(d outbox.DrainPass) {
			fmt.Printf("board: pass %d: sent %d, delivered %d\n", d.N, d.Pass.Sent, d.Pass.Delivered)
			for _, f := range d.Pass.Failures {
				fmt.Printf("board:   %s failed (%s): %v\n", f.EntityType, sourcecatalog.WireName(f.Class), f.Err)
			}
		},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("board:", report.Outcome, "in", report.Passes, "passes:", report.Delivered, "delivered,", report.Failed, "failed send")
	// Output:
	// board: pass 1: sent 2, delivered 1
	// board:   signalk_catalog_manifest_v2 failed (store_unavailable): sourcecatalog: store unavailable: link down
	// shore: finalize: activated revision 1777636800000
	// board: pass 2: sent 1, delivered 1
	// board: pass 3: sent 0, delivered 0
	// board: delivered in 3 passes: 2 delivered, 1 failed send
}
