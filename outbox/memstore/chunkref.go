package memstore

import (
	"context"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

var _ outbox.DeliveredTx = (*memTx)(nil)

// DeliveredChunk implements outbox.DeliveredTx, scanning the vessel's
// entries with this transaction's writes.
func (t *memTx) DeliveredChunk(ctx context.Context, digest canonical.Digest, before int64) (outbox.Entry, error) {
	if err := t.check(ctx); err != nil {
		return outbox.Entry{}, err
	}
	var best outbox.Entry
	found := false
	for _, e := range t.all() {
		if e.Digest == digest && e.Revision < before && e.ChunkIndex >= 0 && e.State == outbox.Delivered &&
			(!found || e.Revision > best.Revision) {
			best, found = e, true
		}
	}
	if !found {
		return outbox.Entry{}, sourcecatalog.ErrNotFound
	}
	return best, nil
}
