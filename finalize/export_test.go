package finalize

import (
	"context"

	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/envelope"
)

// Activate exposes the activation step to the benchmarks.
func Activate(ctx context.Context, tx Tx, v VesselState, snap *envelope.Snapshot, index []IndexEntry) (VesselState, error) {
	return activate(ctx, tx, v, snap, func() []IndexEntry { return index })
}

// IndexOf returns the record index of a snapshot.
func IndexOf(snap *envelope.Snapshot) []IndexEntry {
	staged := make([]StagedChunk, len(snap.Chunks))
	for i, c := range snap.Chunks {
		staged[i] = StagedChunk{Snapshot: c.SnapshotID(), Index: c.Index(), Canonical: c.Canonical(), Payload: c.PayloadSHA256()}
	}
	m := snap.Manifest.Canonical()
	verified, err := verifyStaged(Snapshot{Manifest: m, ManifestDigest: canonical.Sum(m)}, staged)
	if err != nil {
		panic(err)
	}
	return recordIndex(verified)
}

// CountDecodes counts, until restore is called, the staged sets Finalize
// decodes in full.
func CountDecodes() (count func() int, restore func()) {
	n := 0
	decodeStaged = func(manifest []byte, chunks [][]byte) (*envelope.Snapshot, error) {
		n++
		return envelope.DecodeStaged(manifest, chunks)
	}
	return func() int { return n }, func() { decodeStaged = envelope.DecodeStaged }
}
