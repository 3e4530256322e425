package sqlitestore

import (
	"context"
	"fmt"
	"math"
	"strings"

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
// index (schema version 4). Every row is checked against its checksum,
// like every chunk read, and a damaged row's bytes are never handed out:
// the rows with the digest are read newest first, a damaged one is
// skipped for the next — and when the records they share are damaged,
// every row sharing them — and when every row held is damaged the error
// wraps sourcecatalog.ErrHashMismatch, naming them, and leaves the
// transaction usable (SPEC.md §6.6: the sender then sends the chunk
// whole, whose records mend the shared ones, or whose row, newer,
// resolves the next reference to that digest).
func (t *tx) ChunkByPayload(ctx context.Context, digest canonical.Digest) (finalize.StagedChunk, error) {
	var damaged []string
	skip := int64(-1) // the damaged body, at most one per digest
	for before := int64(math.MaxInt64); ; {
		var r chunkRow
		found, err := t.queryRow(ctx, "read chunk by payload", chunkSelect+`WHERE c.vessel_id = ? AND c.payload_sha256 = ? AND c.rowid < ?
			AND (c.body_id IS NULL OR c.body_id != ?) ORDER BY c.rowid DESC LIMIT 1`,
			[]any{t.vessel, digest[:], before, skip}, r.dest()...)
		switch {
		case err != nil:
			return finalize.StagedChunk{}, err
		case !found && len(damaged) > 0:
			return finalize.StagedChunk{}, sourcecatalog.Errorf(sourcecatalog.ErrHashMismatch, fmt.Sprintf(
				"sqlitestore: vessel %s: every chunk held with payload %s is damaged (%s): it does not match the checksum written with it",
				vesselText(t.vessel), digest, strings.Join(damaged, ", ")))
		case !found:
			return finalize.StagedChunk{}, sourcecatalog.ErrNotFound
		}
		before = r.rowid
		c, body, err := t.staged(&r)
		switch {
		case err != nil && body != 0:
			skip = body
			damaged = append(damaged, fmt.Sprintf("the records of chunk body %d", body))
		case err != nil:
			damaged = append(damaged, fmt.Sprintf("snapshot %s chunk %d", vesselText(r.snapshot), r.index))
		default:
			return c, nil
		}
	}
}

// DeliveredChunk implements outbox.DeliveredTx. A chunk entry stored
// whole is found through the outbox_digest index (schema version 4, since
// version 5 of such entries only); one that shares its records through
// the body of that digest, among the entries naming the body, from the
// body's first_revision down in outbox_pending's order. Of the two, the
// higher revision answers.
func (t *outboxTx) DeliveredChunk(ctx context.Context, digest canonical.Digest, before int64) (outbox.Entry, error) {
	whole, err := t.entries(ctx, "read delivered outbox entry",
		`WHERE o.vessel_id = ? AND o.digest = ? AND o.revision < ? AND o.chunk_index >= 0 AND o.body_id IS NULL
			AND o.state = 'delivered' ORDER BY o.revision DESC LIMIT 1`,
		t.vessel, digest[:], before)
	if err != nil {
		return outbox.Entry{}, err
	}
	var id, first int64
	found, err := t.queryRow(ctx, "read outbox body", `SELECT id, first_revision FROM outbox_bodies WHERE vessel_id = ? AND digest = ?`,
		[]any{t.vessel, digest[:]}, &id, &first)
	if err != nil {
		return outbox.Entry{}, err
	}
	var shared []outbox.Entry
	if found {
		shared, err = t.entries(ctx, "read delivered outbox entry",
			`WHERE o.vessel_id = ? AND o.state = 'delivered' AND o.revision < ? AND o.revision >= ? AND o.body_id = ?
				ORDER BY o.revision DESC, o.chunk_index DESC LIMIT 1`,
			t.vessel, before, first, id)
		if err != nil {
			return outbox.Entry{}, err
		}
	}
	switch {
	case len(shared) > 0 && (len(whole) == 0 || shared[0].Revision > whole[0].Revision):
		return shared[0], nil
	case len(whole) > 0:
		return whole[0], nil
	}
	return outbox.Entry{}, sourcecatalog.ErrNotFound
}
