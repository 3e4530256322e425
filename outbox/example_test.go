package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/outbox"
	outboxmem "github.com/yachtmemory/sourcecatalog/outbox/memstore"
)

// A shoreLink is a Transport that hands each entry to a receiver in the
// same process. The answer crosses in its wire form (SPEC.md §9): a
// receipt, or a refusal that the sender turns back into an error of its
// class. The shore side follows the server policy of SPEC.md §8.6: it
// finalizes when a receipt reports the snapshot's set complete.
type shoreLink struct {
	receiver *finalize.Receiver
	origin   finalize.Origin // what authentication established
	dropOnce bool            // lose the first request, as a real link may
}

func (l *shoreLink) Send(ctx context.Context, e outbox.Entry) (envelope.Receipt, error) {
	if l.dropOnce {
		l.dropOnce = false
		return envelope.Receipt{}, errors.New("link down")
	}
	answer := l.serve(ctx, e)
	// On board: decode the answer.
	if rc, err := envelope.DecodeReceipt(answer); err == nil {
		return rc, nil
	}
	refusal, err := envelope.DecodeRefusal(answer)
	if err != nil {
		return envelope.Receipt{}, err
	}
	return envelope.Receipt{}, refusal.Err()
}

// serve is the shore side: receive, answer, finalize when complete.
func (l *shoreLink) serve(ctx context.Context, e outbox.Entry) []byte {
	receive := l.receiver.ReceiveChunk
	if e.EntityType == sourcecatalog.ManifestEntityType {
		receive = l.receiver.ReceiveManifest
	}
	rc, err := receive(ctx, l.origin, e.Payload)
	if err != nil {
		return envelope.RefusalOf(err).Canonical()
	}
	if rc.Complete {
		out, err := l.receiver.Finalize(ctx, rc.VesselID, rc.SnapshotID)
		if err == nil {
			fmt.Println("shore: finalize:", out.Status, "revision", out.ActiveRevision)
		}
	}
	return rc.Canonical()
}

// A discovery cycle is committed to the on-board outbox and published to
// the shore receiver through a Transport; a failed send stays pending and
// goes again on the next pass.
func Example() {
	ctx := context.Background()
	vessel := uuid.MustParse("0d1f3c5e-2a4b-4c6d-8e0f-1a2b3c4d5e6f")
	path, _ := catalog.NewPath(catalog.Path{Path: "navigation.speedOverGround", Unit: catalog.UnitOf("m/s")})
	source, _ := catalog.NewSource(catalog.Source{SourceRef: "can0.0123456789abcdef"})
	obs, _ := catalog.NewObservation(catalog.Observation{
		Path: "navigation.speedOverGround", SourceRef: "can0.0123456789abcdef", ValueType: catalog.Number,
	})

	// On board: one transaction allocates the revision — floored by the
	// discovery time in milliseconds, so that a replaced store starts above
	// every revision sent before (SPEC.md §2.4) — and writes the manifest
	// and chunks as pending entries.
	store := outboxmem.New()
	cycle := outbox.NewCycle(vessel, time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), []*catalog.Record{path, source, obs})
	commit, err := outbox.NewWriter(store).Commit(ctx, cycle)
	if err != nil {
		panic(err)
	}
	fmt.Println("board: committed revision", commit.Revision, "as", len(commit.Entries), "entries")

	link := &shoreLink{
		receiver: finalize.NewReceiver(memstore.New()),
		origin:   finalize.Origin{VesselID: vessel},
		dropOnce: true,
	}
	p := outbox.NewPublisher(store, vessel, link, outbox.WithReceiverV2(true))
	for {
		pass, err := p.Publish(ctx)
		if err != nil {
			panic(err)
		}
		fmt.Printf("board: sent %d, delivered %d, %d remaining\n", pass.Sent, pass.Delivered, pass.Remaining)
		if pass.Remaining == 0 {
			break
		}
	}
	// Output:
	// board: committed revision 1777636800000 as 2 entries
	// board: sent 2, delivered 1, 1 remaining
	// shore: finalize: activated revision 1777636800000
	// board: sent 1, delivered 1, 0 remaining
}
