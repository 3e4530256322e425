package mysqlstore

import (
	"context"
	"database/sql"
	"errors"

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

// ChunkByPayload implements finalize.PayloadTx over the by_payload index
// of the chunks table (schema_v2.sql).
func (t *tx) ChunkByPayload(ctx context.Context, digest canonical.Digest) (finalize.StagedChunk, error) {
	t.check()
	var c finalize.StagedChunk
	var snap []byte
	err := scanChunk(t.queryRow(ctx, `SELECT snapshot_id, chunk_index, payload_sha256, chunk_canonical FROM signalk_catalog_chunks_v2
		WHERE vessel_id = ? AND payload_sha256 = ? LIMIT 1`, t.vessel, digest[:]), &c, &snap, &c.Index)
	if errors.Is(err, sql.ErrNoRows) {
		return c, sourcecatalog.ErrNotFound
	}
	if err != nil {
		return c, wrap("read chunk by payload", err)
	}
	if c.Snapshot, err = uuid.FromBytes(snap); err != nil {
		return finalize.StagedChunk{}, wrap("read chunk by payload", err)
	}
	return c, nil
}

// DeliveredChunk implements outbox.DeliveredTx over the by_digest index of
// the outbox table (schema_v2.sql).
func (t *outboxTx) DeliveredChunk(ctx context.Context, digest canonical.Digest, before int64) (outbox.Entry, error) {
	t.check()
	out, err := t.entries(ctx, "read delivered outbox entry",
		`WHERE vessel_id = ? AND digest = ? AND revision < ? AND chunk_index >= 0 AND state = ? ORDER BY revision DESC LIMIT 1`,
		t.vessel, digest[:], before, string(outbox.Delivered))
	switch {
	case err != nil:
		return outbox.Entry{}, err
	case len(out) == 0:
		return outbox.Entry{}, sourcecatalog.ErrNotFound
	}
	return out[0], nil
}
