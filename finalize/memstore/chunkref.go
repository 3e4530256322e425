package memstore

import (
	"context"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

var _ finalize.PayloadTx = (*tx)(nil)

// ChunkByPayload implements finalize.PayloadTx: the transaction's own
// chunks first, then the committed ones of snapshots it has not deleted.
// It scans the vessel's chunks, which the Receiver's retained bounds keep
// to a few thousand.
func (t *tx) ChunkByPayload(ctx context.Context, digest canonical.Digest) (finalize.StagedChunk, error) {
	if err := t.check(ctx); err != nil {
		return finalize.StagedChunk{}, err
	}
	for _, c := range t.chunks {
		if c.Payload == digest {
			return c, nil
		}
	}
	for k, c := range t.v.chunks {
		if c.Payload == digest && !t.dropped[k.snapshot] {
			return c, nil
		}
	}
	return finalize.StagedChunk{}, sourcecatalog.ErrNotFound
}
