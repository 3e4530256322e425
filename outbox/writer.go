package outbox

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
)

// A Cycle is one discovery cycle: what the scan found and whether it saw
// everything. Keep the Cycle, with its SnapshotID, across retries of the
// cycle; start a new one with NewCycle for the next scan.
type Cycle struct {
	VesselID     uuid.UUID
	SnapshotID   uuid.UUID // random (version 4), stable across retries
	DiscoveredAt time.Time
	Records      []*catalog.Record

	// Truncated and PaginationUncertain report what the scan saw. Either
	// one set makes Commit fail with ErrIncompleteScan, writing nothing.
	Truncated           bool
	PaginationUncertain bool
}

// NewCycle starts a discovery cycle with a fresh random snapshot id.
func NewCycle(vesselID uuid.UUID, discoveredAt time.Time, records []*catalog.Record) Cycle {
	return Cycle{VesselID: vesselID, SnapshotID: uuid.New(), DiscoveredAt: discoveredAt, Records: records}
}

// A Writer commits discovery cycles to a Store. It is safe for concurrent
// use and keeps no state of its own.
type Writer struct {
	store   Store
	opts    []envelope.Option
	counted bool             // no revision floor
	now     func() time.Time // the clock that caps the floor
}

// A WriterOption configures a Writer.
type WriterOption func(*Writer)

// WithBuildOptions passes opts (such as envelope.WithWrapper for the
// integrator's outbox request format) to envelope.Build.
func WithBuildOptions(opts ...envelope.Option) WriterOption {
	return func(w *Writer) { w.opts = append(w.opts, opts...) }
}

// WithRevisionFloor turns the revision floor of SPEC.md §2.4 on (the
// default) or off. With it on, a cycle's revision is the larger of one
// more than the store's last revision and the cycle's DiscoveredAt in
// whole milliseconds since 1970-01-01T00:00:00Z, that time taken no later
// than the Writer's clock (time.Now) when the cycle commits; a time before
// 1970 floors nothing. A store that was emptied, replaced or restored from
// an old copy therefore starts above every revision it allocated before,
// given a clock that moved on since. Off, revisions count 1, 2, 3 from an
// empty store, which §2.4 does not allow for a vessel's real outbox: it is
// for demonstrations and tests.
func WithRevisionFloor(on bool) WriterOption { return func(w *Writer) { w.counted = !on } }

// NewWriter returns a Writer over store, with the revision floor on unless
// an option turns it off.
func NewWriter(store Store, opts ...WriterOption) *Writer {
	w := &Writer{store: store, now: time.Now}
	for _, o := range opts {
		o(w)
	}
	return w
}

// revisionFloor is the floor SPEC.md §2.4 puts under the revision of a
// cycle discovered at at and committed at now: the earlier of the two in
// whole milliseconds since the Unix epoch; 0, no floor, for a time before
// the epoch or after the year 9999, which envelope.Build refuses. Every
// floor is at most 253,402,300,799,999 (the end of the year 9999), far
// below sourcecatalog.MaxRevision.
func revisionFloor(at, now time.Time) int64 {
	if now.Before(at) {
		at = now
	}
	if at.Year() > 9999 || at.Before(time.Unix(0, 0)) {
		return 0
	}
	return at.UnixMilli()
}

// A Commit is a committed cycle: its revision and outbox entries.
type Commit struct {
	Revision int64
	Entries  []Entry // manifest first, then chunks by index
	// Retried reports that the cycle had committed before and nothing was
	// written now.
	Retried bool
}

// Commit persists the cycle as outbox entries in one transaction: it
// allocates the vessel's next revision (floored as WithRevisionFloor
// says), builds the snapshot, checks every
// entry's bytes against its digest and writes all entries as pending.
//
// Committing a cycle whose transaction already committed returns the same
// revision and entries with Retried set. It fails, writing nothing, with
// ErrIncompleteScan for an incomplete scan, the envelope's classes for
// records that do not build, ErrConflict when the snapshot id was committed
// with another document, ErrHashMismatch when an entry's bytes do not match
// its digest, or, for a failing Store or a done context,
// sourcecatalog.ErrStoreUnavailable wrapping the cause.
func (w *Writer) Commit(ctx context.Context, c Cycle) (Commit, error) {
	if c.Truncated || c.PaginationUncertain {
		return Commit{}, sourcecatalog.Errorf(sourcecatalog.ErrIncompleteScan, "the scan reported truncation or pagination uncertainty; nothing was written")
	}
	var out Commit
	err := w.store.WithVessel(ctx, c.VesselID, func(tx Tx) error {
		out = Commit{}
		existing, err := tx.Entries(ctx, c.SnapshotID)
		switch {
		case err == nil:
			return w.retried(c, existing, &out)
		case !errors.Is(err, sourcecatalog.ErrNotFound):
			return err
		}
		var floor int64
		if !w.counted {
			floor = revisionFloor(c.DiscoveredAt, w.now())
		}
		rev, err := tx.NextRevision(ctx, floor)
		if err != nil {
			return err
		}
		snap, err := w.build(c, rev)
		if err != nil {
			return err
		}
		entries := Entries(snap)
		for _, e := range entries {
			if err := CheckEntry(e); err != nil {
				return err
			}
		}
		if err := tx.PutEntries(ctx, entries); err != nil {
			return err
		}
		out = Commit{Revision: rev, Entries: entries}
		return nil
	})
	if err != nil {
		return Commit{}, classed(err)
	}
	return out, nil
}

// classed returns err, or, when it wraps no class (a store's own failure, a
// done context), sourcecatalog.ErrStoreUnavailable wrapping it.
func classed(err error) error {
	if err == nil || sourcecatalog.Class(err) != nil {
		return err
	}
	return sourcecatalog.Wrap(sourcecatalog.ErrStoreUnavailable, err)
}

func (w *Writer) build(c Cycle, rev int64) (*envelope.Snapshot, error) {
	return envelope.Build(envelope.Input{
		VesselID: c.VesselID, SnapshotID: c.SnapshotID, Revision: rev,
		DiscoveredAt: c.DiscoveredAt, Records: c.Records,
	}, w.opts...)
}

// retried answers a cycle that committed before: the same entries, provided
// the records still make the same document.
func (w *Writer) retried(c Cycle, existing []Entry, out *Commit) error {
	manifest, err := envelope.DecodeManifest(existing[0].Payload)
	if err != nil {
		return err
	}
	snap, err := w.build(c, manifest.Revision)
	if err != nil {
		return err
	}
	if snap.Manifest.DocumentSHA256 != manifest.DocumentSHA256 {
		return sourcecatalog.Errorf(sourcecatalog.ErrConflict, "the snapshot id was committed with another document; start a new cycle")
	}
	*out = Commit{Revision: manifest.Revision, Entries: existing, Retried: true}
	return nil
}

// Entries returns the outbox entries of a snapshot, all pending: the
// manifest, then the chunks by index.
func Entries(s *envelope.Snapshot) []Entry {
	m := &s.Manifest
	canon := m.Canonical()
	out := make([]Entry, 0, 1+len(s.Chunks))
	out = append(out, Entry{
		VesselID: m.VesselID, SnapshotID: m.SnapshotID, Revision: m.Revision,
		EntityType: sourcecatalog.ManifestEntityType, EntityKey: envelope.ManifestKey(m.SnapshotID),
		ChunkIndex: sourcecatalog.NoIndex, Payload: canon, Digest: canonical.Sum(canon), State: Pending,
	})
	for _, c := range s.Chunks {
		out = append(out, Entry{
			VesselID: m.VesselID, SnapshotID: m.SnapshotID, Revision: m.Revision,
			EntityType: sourcecatalog.ChunkEntityType, EntityKey: envelope.ChunkKey(m.SnapshotID, c.Index()),
			ChunkIndex: c.Index(), Payload: c.Canonical(), Digest: c.PayloadSHA256(), State: Pending,
		})
	}
	return out
}

// CheckEntry verifies an entry's bytes against its digest and identity: the
// manifest's SHA-256, or the chunk's strictly decoded payload hash and
// canonical form; then the snapshot, vessel, revision and chunk index the
// bytes carry. A mismatch is an error wrapping ErrHashMismatch (or the
// decoder's class for bytes that do not decode).
func CheckEntry(e Entry) error {
	_, err := checkEntry(e)
	return err
}

// checkEntry is CheckEntry that also returns, for a chunk entry, the chunk
// its bytes decoded to (nil for a manifest), so that the Publisher does
// not decode it again.
func checkEntry(e Entry) (*envelope.Chunk, error) {
	mismatch := func(detail string) error {
		return sourcecatalog.Errorf(sourcecatalog.ErrHashMismatch, detail+" ("+e.EntityKey+")").InChunk(e.ChunkIndex)
	}
	switch e.EntityType {
	case sourcecatalog.ManifestEntityType:
		if canonical.Sum(e.Payload) != e.Digest {
			return nil, mismatch("manifest bytes do not match their digest")
		}
		m, err := envelope.DecodeManifest(e.Payload)
		if err != nil {
			return nil, err
		}
		if m.SnapshotID != e.SnapshotID || m.VesselID != e.VesselID || m.Revision != e.Revision || e.ChunkIndex != sourcecatalog.NoIndex {
			return nil, mismatch("manifest bytes do not match their entry")
		}
		return nil, nil
	case sourcecatalog.ChunkEntityType:
		c, err := envelope.DecodeChunk(e.Payload)
		if err != nil {
			return nil, err
		}
		// The decoder accepts any member order and whitespace: the bytes
		// must also be the chunk's canonical form, the bytes committed.
		if c.PayloadSHA256() != e.Digest || c.Index() != e.ChunkIndex || c.SnapshotID() != e.SnapshotID ||
			c.VesselID() != e.VesselID || c.Revision() != e.Revision || !bytes.Equal(c.Canonical(), e.Payload) {
			return nil, mismatch("chunk bytes do not match their entry")
		}
		return c, nil
	}
	return nil, sourcecatalog.Errorf(sourcecatalog.ErrUnsupported, "unknown entity type")
}
