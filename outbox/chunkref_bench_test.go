package outbox_test

import (
	"bytes"
	"compress/gzip"
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
// receipt as the binding does: it counts the request bytes, plain and as
// httpbinding's WithRequestCompression sends them (gzip at
// BestCompression when that is shorter), and times the shore's work
// (Receive and Finalize).
type shore struct {
	recv         *finalize.Receiver
	bytes, gzips int
	cpu          time.Duration
	last         map[string][]byte // by entity key: the payload last staged
}

func (s *shore) Send(ctx context.Context, e outbox.Entry) (envelope.Receipt, error) {
	body := envelope.DefaultWrapper{}.Wrap(nil, e.EntityType, e.EntityKey, e.Payload)
	s.bytes += len(body)
	s.gzips += min(len(body), gzipLen(body))
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

// gzipLen is the length of b gzipped as httpbinding's Client does.
func gzipLen(b []byte) int {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = w.Write(b)
	_ = w.Close()
	return buf.Len()
}

// roundCost is what one published cycle cost: request bytes, plain and
// gzipped, the shore's time, and the time of the work no receiver can
// skip for it — decoding and verifying the snapshot's staged bytes once
// (SPEC.md §8.4), which Finalize does for every snapshot it activates.
type roundCost struct {
	bytes, gzips int
	cpu, verify  time.Duration
}

func (c *roundCost) add(d roundCost) {
	c.bytes += d.bytes
	c.gzips += d.gzips
	c.cpu += d.cpu
	c.verify += d.verify
}

// round commits a cycle of records and publishes it.
func round(b *testing.B, ob outbox.Store, sh *shore, vessel uuid.UUID, at time.Time, records []*catalog.Record, refs bool) roundCost {
	ctx := context.Background()
	commit, err := outbox.NewWriter(ob, outbox.WithRevisionFloor(false)).Commit(ctx, outbox.NewCycle(vessel, at, records))
	if err != nil {
		b.Fatal(err)
	}
	bytes, gzips, cpu := sh.bytes, sh.gzips, sh.cpu
	p := outbox.NewPublisher(ob, vessel, sh, outbox.WithReceiverV2(true), outbox.WithChunkReferences(refs))
	pass, err := p.Publish(ctx)
	if err != nil || pass.Remaining != 0 {
		b.Fatalf("publish: %+v %v", pass, errors.Join(err))
	}
	chunks := make([][]byte, 0, len(commit.Entries)-1)
	for _, e := range commit.Entries[1:] {
		chunks = append(chunks, e.Payload)
	}
	start := time.Now()
	if _, err := envelope.DecodeStaged(commit.Entries[0].Payload, chunks); err != nil {
		b.Fatal(err)
	}
	return roundCost{bytes: sh.bytes - bytes, gzips: sh.gzips - gzips, cpu: sh.cpu - cpu, verify: time.Since(start)}
}

// BenchmarkChunkRefs measures, for the example boat and the typical boat
// (1,500 records, 15 chunks), the request bytes of a second cycle —
// identical, or with 1 % of its records changed, spread over the catalog
// — with chunk references off and on, uncompressed and gzipped, against
// the bytes of the first cycle uncompressed; the first cycle gzipped; and
// the shore's time (Receive and Finalize) of an identical round by
// reference against a first round, beside what was the floor of that
// ratio: one decode and verification of the staged snapshot over the
// first round, which an identical set no longer pays since SPEC.md §8.4
// verifies it by identity with the active snapshot.
// Targets: identical by reference ≤ 0.05 of the first's bytes, the first
// gzipped ≤ 0.25, the 1 %-changed second ≤ 0.60, the identical round's
// shore time ≤ 0.20 of a first.
func BenchmarkChunkRefs(b *testing.B) {
	typical := examples.Scaled(1500)
	example := examples.Boat()
	for _, boat := range []struct {
		name             string
		records, changed []*catalog.Record
	}{
		{"example", example, examples.WithChangedUnits(example, max(1, len(example)/100))},
		{"typical", typical, examples.WithChangedUnits(typical, 15)},
	} {
		b.Run(boat.name, func(b *testing.B) {
			t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
			var first, identOff, identOn, changedOff, changedOn roundCost
			for b.Loop() {
				for _, second := range []struct {
					records []*catalog.Record
					refs    bool
					cost    *roundCost
				}{{boat.records, false, &identOff}, {boat.records, true, &identOn}, {boat.changed, false, &changedOff}, {boat.changed, true, &changedOn}} {
					vessel := uuid.New()
					sh := &shore{recv: finalize.NewReceiver(finalmem.New())}
					ob := memstore.New()
					first.add(round(b, ob, sh, vessel, t0, boat.records, second.refs))
					second.cost.add(round(b, ob, sh, vessel, t0.Add(15*time.Minute), second.records, second.refs))
				}
			}
			f := float64(first.bytes) / 4 // four first rounds per iteration
			b.ReportMetric(f/float64(b.N), "first-bytes")
			b.ReportMetric(float64(first.gzips)/float64(first.bytes), "first-gzip/first")
			b.ReportMetric(float64(identOff.bytes)/f, "identical-off/first")
			b.ReportMetric(float64(identOn.bytes)/f, "identical-on/first")
			b.ReportMetric(float64(identOn.gzips)/f, "identical-on-gzip/first")
			b.ReportMetric(float64(changedOff.bytes)/f, "changed-off/first")
			b.ReportMetric(float64(changedOn.bytes)/f, "changed-on/first")
			b.ReportMetric(float64(changedOn.gzips)/f, "changed-on-gzip/first")
			firstCPU := float64(first.cpu) / 4
			b.ReportMetric(float64(identOn.cpu)/firstCPU, "identical-cpu/first")
			b.ReportMetric(float64(identOn.verify)/firstCPU, "verify-floor/first")
		})
	}
}
