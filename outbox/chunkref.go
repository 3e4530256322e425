package outbox

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/envelope"
)

// A DeliveredTx is a Tx that finds delivered chunk entries by their
// digest, which a Publisher sending chunk references needs (SPEC.md §7.5).
// It is optional: over a Store whose Tx is no DeliveredTx the Publisher
// sends every chunk whole.
type DeliveredTx interface {
	Tx
	// DeliveredChunk returns a chunk entry (never a manifest) of the
	// transaction's vessel in state Delivered whose Digest is digest and
	// whose Revision is below before — of those, one of the highest
	// revision —, or sourcecatalog.ErrNotFound when there is none.
	DeliveredChunk(ctx context.Context, digest canonical.Digest, before int64) (Entry, error)
}

// WithChunkReferences makes the Publisher send a pending chunk as a chunk
// reference (SPEC.md §6.6) when its outbox holds a delivered chunk of an
// earlier revision with the same payload_sha256, which the receiver then
// staged. It is off by default, and must stay off unless the receiver
// declared the capability chunk_reference (SPEC.md §11.7).
func WithChunkReferences(on bool) PublisherOption { return func(p *Publisher) { p.refs = on } }

// A ReferenceGate is a Gate that also decides chunk references: after it
// opened, the Publisher sends references while ChunkReferences reports
// true, as with WithChunkReferences(true). httpbinding.Gate is one: it
// reports whether the receiver declared chunk_reference (SPEC.md §11.7).
type ReferenceGate interface {
	Gate
	ChunkReferences() bool
}

// references reports whether the Publisher sends chunk references now.
func (p *Publisher) references() bool {
	if p.refs {
		return true
	}
	g, ok := p.gate.(ReferenceGate)
	return ok && g.ChunkReferences()
}

// refKey names a chunk entry.
type refKey struct {
	snapshot uuid.UUID
	index    int
}

// referable returns, of the pending entries, the chunks a reference may
// stand for: those with a delivered chunk of the same digest at an
// earlier revision, and not refused as references before. It reads in
// tx, the transaction that read pending.
func (p *Publisher) referable(ctx context.Context, tx Tx, pending []Entry) (map[refKey]bool, error) {
	dtx, ok := tx.(DeliveredTx)
	if !ok || !p.references() {
		return nil, nil
	}
	out := map[refKey]bool{}
	for _, e := range pending {
		k := refKey{e.SnapshotID, e.ChunkIndex}
		if e.EntityType != sourcecatalog.ChunkEntityType || p.refused(k) {
			continue
		}
		_, err := dtx.DeliveredChunk(ctx, e.Digest, e.Revision)
		switch {
		case errors.Is(err, sourcecatalog.ErrNotFound):
		case err != nil:
			return nil, err
		default:
			out[k] = true
		}
	}
	return out, nil
}

func (p *Publisher) refused(k refKey) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.noRef[k]
}

// send sends e, as ref when ref is not nil: on a refusal that says the
// receiver cannot resolve it — ErrReferenceUnavailable, ErrHashMismatch
// (its copy failed its check) or ErrUnsupported (it no longer takes
// references) — it sends e whole at once and never references e again.
// A conflict, or any other failure, is the answer as it is.
func (p *Publisher) send(ctx context.Context, e Entry, ref *envelope.ChunkRef, pass *Pass) (envelope.Receipt, error) {
	if ref == nil {
		return p.sendCounted(ctx, e, pass)
	}
	r := e
	r.EntityType, r.Payload = sourcecatalog.ChunkRefEntityType, ref.Canonical()
	pass.Referenced++
	rc, err := p.sendCounted(ctx, r, pass)
	if !errors.Is(err, sourcecatalog.ErrReferenceUnavailable) && !errors.Is(err, sourcecatalog.ErrHashMismatch) &&
		!errors.Is(err, sourcecatalog.ErrUnsupported) {
		return rc, err
	}
	p.mu.Lock()
	if p.noRef == nil {
		p.noRef = map[refKey]bool{}
	}
	p.noRef[refKey{e.SnapshotID, e.ChunkIndex}] = true
	p.mu.Unlock()
	pass.SentWhole++
	return p.sendCounted(ctx, e, pass)
}

// sendCounted sends e over the transport, adding the request's bytes to
// pass when the transport counts them (CountedTransport).
func (p *Publisher) sendCounted(ctx context.Context, e Entry, pass *Pass) (envelope.Receipt, error) {
	ct, ok := p.transport.(CountedTransport)
	if !ok {
		return p.transport.Send(ctx, e)
	}
	rc, n, err := ct.SendCounted(ctx, e)
	pass.Bytes.add(n)
	return rc, err
}

// forget drops what the Publisher remembers of a delivered entry.
func (p *Publisher) forget(e Entry) {
	p.mu.Lock()
	delete(p.noRef, refKey{e.SnapshotID, e.ChunkIndex})
	p.mu.Unlock()
}
