package outbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/finalize"
	finalmem "github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/outbox"
	"github.com/yachtmemory/sourcecatalog/outbox/memstore"
)

// shore is a Transport that hands each entry, wrapped as the binding
// wraps it, to a Receiver over a memstore, finalizing on a complete
// receipt as the binding does: it counts the request bytes and times the
// shore's work (Receive and Finalize).
type shore struct {
	recv  *finalize.Receiver
	bytes int
	cpu   time.Duration
}

func (s *shore) Send(ctx context.Context, e outbox.Entry) (envelope.Receipt, error) {
	s.bytes += len(envelope.DefaultWrapper{}.Wrap(nil, e.EntityType, e.EntityKey, e.Payload))
	start := time.Now()
	defer func() { s.cpu += time.Since(start) }()
	origin := finalize.Origin{VesselID: e.VesselID}
	var rc envelope.Receipt
	var err error
	switch e.EntityType {
	case sourcecatalog.ManifestEntityType:
		rc, err = s.recv.ReceiveManifest(ctx, origin, e.Payload)
	case sourcecatalog.ChunkRefEntityType:
		rc, err = s.recv.ReceiveChunkRef(ctx, origin, e.Payload)
	default:
		rc, err = s.recv.ReceiveChunk(ctx, origin, e.Payload)
	}
	if err == nil && rc.Complete && rc.Status == envelope.Staged {
		if _, ferr := s.recv.Finalize(ctx, e.VesselID, rc.SnapshotID); ferr != nil {
			return rc, ferr
		}
	}
	return rc, err
}

// round commits a cycle of records and publishes it; it returns the
// request bytes and the shore's time of that round.
func round(b *testing.B, ob outbox.Store, sh *shore, vessel uuid.UUID, at time.Time, records []*catalog.Record, refs bool) (int, time.Duration) {
	ctx := context.Background()
	if _, err := outbox.NewWriter(ob, outbox.WithRevisionFloor(false)).Commit(ctx, outbox.NewCycle(vessel, at, records)); err != nil {
		b.Fatal(err)
	}
	bytes, cpu := sh.bytes, sh.cpu
	p := outbox.NewPublisher(ob, vessel, sh, outbox.WithReceiverV2(true), outbox.WithChunkReferences(refs))
	pass, err := p.Publish(ctx)
	if err != nil || pass.Remaining != 0 {
		b.Fatalf("publish: %+v %v", pass, errors.Join(err))
	}
	return sh.bytes - bytes, sh.cpu - cpu
}

// BenchmarkChunkRefs measures, for the typical boat (1,500 records, 15
// chunks), the request bytes of a second cycle — identical, or with 1 %
// of its records changed, spread over the catalog — with chunk references
// on and off, against the bytes of the first cycle, and the shore's time
// (Receive and Finalize) of an identical round by reference against a
// first round. Targets: identical-bytes/first ≤ 0.05, identical-cpu/first
// ≤ 0.20.
func BenchmarkChunkRefs(b *testing.B) {
	records := examples.Scaled(1500)
	changed := examples.WithChangedUnits(records, 15)
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var first, identOff, identOn, changedOff, changedOn int
	var firstCPU, identCPU time.Duration
	for b.Loop() {
		for _, second := range []struct {
			records []*catalog.Record
			refs    bool
			bytes   *int
		}{{records, false, &identOff}, {records, true, &identOn}, {changed, false, &changedOff}, {changed, true, &changedOn}} {
			vessel := uuid.New()
			sh := &shore{recv: finalize.NewReceiver(finalmem.New())}
			ob := memstore.New()
			n, cpu := round(b, ob, sh, vessel, t0, records, second.refs)
			first += n
			firstCPU += cpu
			n, cpu = round(b, ob, sh, vessel, t0.Add(15*time.Minute), second.records, second.refs)
			*second.bytes += n
			if second.refs && &second.records[0] == &records[0] {
				identCPU += cpu
			}
		}
	}
	f := float64(first) / 4
	b.ReportMetric(f/float64(b.N), "first-bytes")
	b.ReportMetric(float64(identOff)/f, "identical-off/first")
	b.ReportMetric(float64(identOn)/f, "identical-on/first")
	b.ReportMetric(float64(changedOff)/f, "changed-off/first")
	b.ReportMetric(float64(changedOn)/f, "changed-on/first")
	b.ReportMetric(float64(identCPU)/(float64(firstCPU)/4), "identical-cpu/first")
}
