package sqlitestore

import (
	"context"
	"database/sql"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

var (
	_ finalize.PayloadTx = (*tx)(nil)
	_ outbox.DeliveredTx = (*outboxTx)(nil)
)

// ChunkByPayload implements finalize.PayloadTx over the chunks_payload
// index (schema version 4). The row is checked against its checksum like
// every chunk read: a damaged row is ErrDamaged, never bytes passed on.
func (t *tx) ChunkByPayload(ctx context.Context, digest canonical.Digest) (finalize.StagedChunk, error) {
	var c finalize.StagedChunk
	var snap, payload []byte
	var stored sql.NullInt64
	found, err := t.queryRow(ctx, "read chunk by payload", `SELECT snapshot_id, chunk_index, payload_sha256, chunk_canonical, checksum
		FROM chunks WHERE vessel_id = ? AND payload_sha256 = ? LIMIT 1`, []any{t.vessel, digest[:]},
		&snap, &c.Index, &payload, &c.Canonical, &stored)
	switch {
	case err != nil:
		return c, err
	case !found:
		return c, sourcecatalog.ErrNotFound
	}
	id, err := uuid.FromBytes(snap)
	if err == nil {
		err = t.checkChunk(id, c.Index, payload, c.Canonical, stored)
	}
	if err != nil {
		return finalize.StagedChunk{}, t.fail(ctx, "read chunk by payload", damagedRow("vessel %s chunk by payload %s", vesselText(t.vessel), digest))
	}
	c.Snapshot = id
	copy(c.Payload[:], payload)
	return c, nil
}

// DeliveredChunk implements outbox.DeliveredTx over the outbox_digest
// index (schema version 4).
func (t *outboxTx) DeliveredChunk(ctx context.Context, digest canonical.Digest, before int64) (outbox.Entry, error) {
	out, err := t.entries(ctx, "read delivered outbox entry",
		`WHERE o.vessel_id = ? AND o.digest = ? AND o.revision < ? AND o.chunk_index >= 0 AND o.state = ? ORDER BY o.revision DESC LIMIT 1`,
		t.vessel, digest[:], before, string(outbox.Delivered))
	switch {
	case err != nil:
		return outbox.Entry{}, err
	case len(out) == 0:
		return outbox.Entry{}, sourcecatalog.ErrNotFound
	}
	return out[0], nil
}
