package outbox

import (
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
