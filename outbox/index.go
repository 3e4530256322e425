package outbox

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/envelope"
)

// IndexEntry returns the manifest index of a committed snapshot (SPEC.md
// §6.7): the entry that stands for its manifest entry, to be sent instead
// of it to a receiver that declared the capability manifest_index. entries
// are the snapshot's entries, the manifest and every chunk in any order,
// as Commit returns them. The index lists each chunk entry's Digest, its
// payload_sha256, at its index, and carries the manifest entry's
// identity and State; its Payload is the index's canonical bytes, and its
// Digest their SHA-256, which the receipt of the index carries (§9.1). The
// receipt's Missing names the chunks to send whole next; the others the
// receiver staged.
//
// It returns an error wrapping sourcecatalog.ErrIntegrity when entries are
// not exactly one snapshot's manifest and its chunk_count chunks, each
// index once, and the manifest decoder's error for a manifest entry that
// does not decode. It writes nothing: delivering the chunks the receipt
// does not name is the Publisher's.
func IndexEntry(entries []Entry) (Entry, error) {
	var man *Entry
	for i := range entries {
		if entries[i].EntityType == sourcecatalog.ManifestEntityType {
			if man != nil {
				return Entry{}, notOneSnapshot("two manifests")
			}
			man = &entries[i]
		}
	}
	if man == nil {
		return Entry{}, notOneSnapshot("no manifest")
	}
	m, err := envelope.DecodeManifest(man.Payload)
	if err != nil {
		return Entry{}, err
	}
	if len(entries) != m.ChunkCount+1 {
		return Entry{}, notOneSnapshot("not chunk_count chunks")
	}
	digests := make([]canonical.Digest, m.ChunkCount)
	seen := make([]bool, m.ChunkCount)
	for _, e := range entries {
		if e.EntityType == sourcecatalog.ManifestEntityType {
			continue
		}
		switch {
		case e.EntityType != sourcecatalog.ChunkEntityType:
			return Entry{}, notOneSnapshot("an entry is neither a manifest nor a chunk")
		case e.VesselID != m.VesselID || e.SnapshotID != m.SnapshotID || e.Revision != m.Revision:
			return Entry{}, notOneSnapshot("a chunk of another snapshot")
		case e.ChunkIndex < 0 || e.ChunkIndex >= m.ChunkCount || seen[e.ChunkIndex]:
			return Entry{}, notOneSnapshot("a chunk index out of range or twice")
		}
		seen[e.ChunkIndex] = true
		digests[e.ChunkIndex] = e.Digest
	}
	x, err := envelope.NewManifestIndex(m, digests)
	if err != nil {
		return Entry{}, err
	}
	out := *man
	out.EntityType = sourcecatalog.ManifestIndexEntityType
	out.Payload = x.Canonical()
	out.Digest = canonical.Sum(out.Payload)
	return out, nil
}

func notOneSnapshot(detail string) error {
	return sourcecatalog.Errorf(sourcecatalog.ErrIntegrity, "not one snapshot's entries: "+detail)
}

// WithManifestIndexes makes the Publisher send a snapshot's pending
// manifest as its manifest index (SPEC.md §6.7, §7.5), IndexEntry, as
// with an IndexGate whose ManifestIndexes reports true. It is off by
// default, and must stay off unless the receiver declared the capability
// manifest_index (SPEC.md §11.7).
func WithManifestIndexes(on bool) PublisherOption { return func(p *Publisher) { p.index = on } }

// An IndexGate is a Gate that also decides manifest indexes: after it
// opened, the Publisher sends a snapshot's pending manifest as its
// manifest index while ManifestIndexes reports true. httpbinding.Gate is
// one: it reports whether the receiver declared manifest_index (SPEC.md
// §11.7).
//
// The index is the manifest entry for every rule of Publish: its receipt
// (matched against IndexEntry's) delivers the manifest entry and every
// chunk entry of the snapshot its Missing does not name, which the
// receiver staged from the records it holds; the Publisher then sends
// whole exactly the missing chunks, and never as references.
//
// The chunks the receiver cannot hold from this outbox — no delivered
// chunk entry of an earlier revision carries their digest (a
// DeliveredTx finds none; over another Tx no chunk is taken for one) —
// ride with the index: they are sent whole right after it, within the
// window of WithInFlight, without waiting for its receipt, and each is
// delivered by its own receipt, whatever the index's Missing says of it.
// So a first snapshot, or the changed chunks of a cycle, cost no round
// trip more than the index. No other chunk of the snapshot is sent until
// the index's receipt comes back, and a failed index leaves them pending
// with it, for the next pass to send the index again. A refusal of class
// unsupported — a receiver that no longer accepts indexes — is answered
// at once with the plain manifest, and the chunks are sent as without
// indexes; that snapshot is not indexed again.
type IndexGate interface {
	Gate
	ManifestIndexes() bool
}

// indexes reports whether the Publisher sends manifest indexes now.
func (p *Publisher) indexes() bool {
	if p.index {
		return true
	}
	g, ok := p.gate.(IndexGate)
	return ok && g.ManifestIndexes()
}

// indexable returns, of the pending entries, the index entry of each
// snapshot whose pending manifest is to be sent as its manifest index,
// and pending with every pending entry of those snapshots, so that the
// pass holds whole each snapshot it indexes, and the chunks of those
// snapshots that ride with their index (fresh). An indexed snapshot's
// entries come manifest first, then its fresh chunks, then the others.
// It reads in tx, the transaction that read pending. A snapshot whose
// entries make no index (IndexEntry's error) is sent as without
// indexes, and its manifest's check (checkEntry) says why.
func (p *Publisher) indexable(ctx context.Context, tx Tx, pending []Entry) (map[uuid.UUID]Entry, []Entry, map[refKey]bool, error) {
	if !p.indexes() {
		return nil, pending, nil, nil
	}
	out, fresh := map[uuid.UUID]Entry{}, map[refKey]bool{}
	var all []Entry
	for i := 0; i < len(pending); i++ {
		e := pending[i]
		if e.ChunkIndex != sourcecatalog.NoIndex || e.EntityType != sourcecatalog.ManifestEntityType || p.refused(refKey{e.SnapshotID, sourcecatalog.NoIndex}) {
			all = append(all, e)
			continue
		}
		entries, err := tx.Entries(ctx, e.SnapshotID)
		if err != nil {
			return nil, nil, nil, err
		}
		x, err := IndexEntry(entries)
		if err != nil {
			all = append(all, e)
			continue
		}
		out[e.SnapshotID] = x
		// The snapshot's pending entries from the store, whole: the
		// batch may have cut them; its fresh chunks first.
		var rest []Entry
		for _, en := range entries {
			switch {
			case en.State != Pending:
			case en.ChunkIndex == sourcecatalog.NoIndex:
				all = append(all, en)
			default:
				ok, err := p.isFresh(ctx, tx, en)
				if err != nil {
					return nil, nil, nil, err
				}
				if ok {
					fresh[refKey{en.SnapshotID, en.ChunkIndex}] = true
					all = append(all, en)
				} else {
					rest = append(rest, en)
				}
			}
		}
		all = append(all, rest...)
		for i+1 < len(pending) && pending[i+1].SnapshotID == e.SnapshotID {
			i++
		}
	}
	return out, all, fresh, nil
}

// isFresh reports whether chunk entry e rides with its snapshot's index:
// no delivered chunk entry of an earlier revision of the vessel carries
// its payload_sha256, so the receiver holds no records of it from this
// outbox (SPEC.md §7.5). Over a Tx that is no DeliveredTx none does.
func (p *Publisher) isFresh(ctx context.Context, tx Tx, e Entry) (bool, error) {
	dtx, ok := tx.(DeliveredTx)
	if !ok || e.EntityType != sourcecatalog.ChunkEntityType {
		return false, nil
	}
	_, err := dtx.DeliveredChunk(ctx, e.Digest, e.Revision)
	switch {
	case errors.Is(err, sourcecatalog.ErrNotFound):
		return true, nil
	case err != nil:
		return false, err
	}
	return false, nil
}

// sendIndex sends x, the index of manifest entry e: on a refusal of
// class unsupported it sends e at once, never indexes e's snapshot
// again, and reports indexed false. A conflict, or any other failure, is
// the answer as it is.
func (p *Publisher) sendIndex(ctx context.Context, e, x Entry, pass *Pass) (rc envelope.Receipt, indexed bool, err error) {
	rc, err = p.sendCounted(ctx, x, pass)
	if !errors.Is(err, sourcecatalog.ErrUnsupported) {
		return rc, true, err
	}
	p.mu.Lock()
	if p.noRef == nil {
		p.noRef = map[refKey]bool{}
	}
	p.noRef[refKey{e.SnapshotID, sourcecatalog.NoIndex}] = true
	p.mu.Unlock()
	rc, err = p.sendCounted(ctx, e, pass)
	return rc, false, err
}

// deliveredIndex marks e, the manifest entry sent as its index, delivered
// by rc, the receipt of the index, with every pending chunk entry of its
// snapshot that rc.Missing does not name and that is not riding (sent
// with the index: its own receipt delivers it), in one transaction, and
// counts them in pass. It returns the indices delivered.
func (p *Publisher) deliveredIndex(ctx context.Context, e Entry, rc envelope.Receipt, riding map[int]bool, pass *Pass) (map[int]bool, error) {
	var resolved map[int]bool
	err := p.store.WithVessel(ctx, p.vessel, func(tx Tx) error {
		resolved = map[int]bool{}
		entries, err := tx.Entries(ctx, e.SnapshotID)
		if err != nil {
			return err
		}
		if err := tx.SetState(ctx, e.SnapshotID, sourcecatalog.NoIndex, Delivered); err != nil {
			return err
		}
		for _, en := range entries {
			if en.EntityType != sourcecatalog.ChunkEntityType || en.State != Pending || rc.Missing.Has(en.ChunkIndex) || riding[en.ChunkIndex] {
				continue
			}
			if err := tx.SetState(ctx, e.SnapshotID, en.ChunkIndex, Delivered); err != nil {
				return err
			}
			resolved[en.ChunkIndex] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	p.forget(e)
	for i := range resolved {
		p.forget(Entry{SnapshotID: e.SnapshotID, ChunkIndex: i})
	}
	pass.Delivered += 1 + len(resolved)
	pass.Indexed += len(resolved)
	if rc.Status == envelope.AlreadyReceived {
		pass.AlreadyReceived++
	}
	return resolved, nil
}
