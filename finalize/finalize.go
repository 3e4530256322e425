package finalize

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
)

// OutcomeStatus says where a snapshot stands after Finalize.
type OutcomeStatus string

// Outcome statuses.
const (
	// Staging: the set is incomplete; Outcome says what is missing.
	// The active catalog is unchanged.
	Staging OutcomeStatus = "staging"
	// Activated: this call activated the snapshot.
	Activated OutcomeStatus = "activated"
	// AlreadyActive: the snapshot, or another with the same revision and
	// document, is the active one.
	AlreadyActive OutcomeStatus = "already_active"
	// Superseded: the snapshot is older than the active revision, which
	// was left untouched.
	Superseded OutcomeStatus = "superseded"
	// Rejected: the complete set failed verification; Err says why.
	Rejected OutcomeStatus = "rejected"
)

// An Outcome reports what Finalize found and did.
type Outcome struct {
	Status     OutcomeStatus
	VesselID   uuid.UUID
	SnapshotID uuid.UUID
	Revision   int64 // 0 when nothing of the snapshot is staged

	// ActiveSnapshot and ActiveRevision name the vessel's active snapshot
	// after the call.
	ActiveSnapshot uuid.UUID
	ActiveRevision int64

	// For StatusStaging: whether the manifest is missing, and which chunk
	// indexes are (known only once the manifest is staged).
	MissingManifest bool
	MissingChunks   []int

	// For Rejected: the verification failure, wrapping its classes.
	Err error

	// Usage is the vessel's usage of its staging bounds after the call.
	Usage Usage

	// SupersededByActive counts, after the call, the vessel's retained
	// snapshots that the active snapshot superseded: finalized Superseded
	// after it was activated. A count that keeps growing means the vessel
	// sends revisions below one it sent before — its on-board store was
	// lost or restored (SPEC.md §2.4, §8.4) — and none of them will
	// activate.
	SupersededByActive int
}

// Finalize verifies a staged snapshot and, when it is complete, valid and
// newer than the active revision, activates it. It verifies the staged
// bytes again every time: it decodes them, unless the set is the active
// snapshot's cut the same way, which it checks by digests computed again
// (SPEC.md §8.4); such a set activates by moving the active pointer alone. It is idempotent and
// resumable: call it again after any failure, or from Reconcile. Calls for
// one vessel are serialised by the Store.
//
// The outcome is StatusStaging while pieces are missing; Rejected when the
// complete set fails any check (exact index set, record count, chunk and
// document hashes, uniqueness, schema, integrity); Superseded when the
// snapshot is older than the active revision; AlreadyActive when it, or an
// identical document at the same revision, is active; Activated when this
// call activated it. A finalized snapshot reports the same outcome again,
// in the light of what is active now: Superseded once a higher revision
// replaced it; Rejected with the same reason and error.
//
// Errors: sourcecatalog.ErrRevisionConflict (with a Rejected outcome, recorded, and again
// on every later call) when the snapshot claims the active revision with
// another document;
// sourcecatalog.ErrStagingExhausted when the retained bounds would be exceeded (nothing
// changes; Prune, Discard or WithRetention make room); sourcecatalog.ErrStoreUnavailable
// when the store fails or ctx is done. An unknown snapshot, uuid.Nil
// included, is StatusStaging with its manifest missing.
//
// The Outcome carries the vessel's [Usage] after the call, so that a caller
// can warn before a bound fills.
func (r *Receiver) Finalize(ctx context.Context, vesselID, snapshotID uuid.UUID) (Outcome, error) {
	start := time.Now()
	out, err := r.finalizeVessel(ctx, vesselID, snapshotID)
	e := Event{Kind: EventFinalize, Op: "Finalize", Vessel: vesselID, Snapshot: snapshotID, Outcome: out, Err: err, Duration: time.Since(start)}
	if out.Status != "" {
		e.Usage = &out.Usage
	}
	r.report(e)
	return out, err
}

func (r *Receiver) finalizeVessel(ctx context.Context, vesselID, snapshotID uuid.UUID) (Outcome, error) {
	var out Outcome
	var result error
	err := r.withVessel(ctx, "Finalize", vesselID, func(tx Tx) error {
		out = Outcome{VesselID: vesselID, SnapshotID: snapshotID}
		var err error
		result, err = r.finalizeTx(ctx, tx, &out)
		return err
	})
	if err != nil {
		return Outcome{}, err
	}
	return out, result
}

// finalizeTx is Finalize of the snapshot out names within the vessel's
// transaction, with the usage after it: it fills out and returns the error
// Finalize returns with it, or the error that aborts the transaction.
func (r *Receiver) finalizeTx(ctx context.Context, tx Tx, out *Outcome) (result, err error) {
	if result, err = r.finalize(ctx, tx, out); err != nil {
		return nil, err
	}
	var all []Snapshot
	out.Usage, all, err = r.usage(ctx, tx)
	out.SupersededByActive = supersededByActive(all, out.ActiveRevision, out.ActiveSnapshot)
	return result, err
}

// finalize is Finalize within the vessel's transaction: it fills out and
// returns the error Finalize returns with it, or the error that aborts the
// transaction.
func (r *Receiver) finalize(ctx context.Context, tx Tx, out *Outcome) (result, err error) {
	v, err := tx.Vessel(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { out.ActiveSnapshot, out.ActiveRevision = v.ActiveSnapshot, v.ActiveRevision }()
	s, err := tx.Snapshot(ctx, out.SnapshotID)
	if errors.Is(err, sourcecatalog.ErrNotFound) {
		out.Status, out.MissingManifest = Staging, true
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out.Revision = s.Revision
	if s.State != StateStaging {
		out.Status = finalStatus(s, v)
		if s.State == StateRejected {
			out.Err, result, err = rejection(ctx, tx, s)
		}
		return result, err
	}
	chunks, err := tx.Chunks(ctx, s.ID)
	if err != nil {
		return nil, err
	}
	if missing(out, s, chunks) {
		out.Status = Staging
		return nil, nil
	}
	snap, err := verifyIdentical(ctx, tx, out.VesselID, v, s, chunks)
	if err != nil {
		return nil, err
	}
	var verr error
	if snap == nil {
		snap, verr = verifyStaged(s, chunks)
	}
	if verr != nil {
		out.Status, out.Err = Rejected, verr
		return nil, r.finish(ctx, tx, &s, StateRejected, Rejected, verr.Error())
	}
	switch m := &snap.Manifest; {
	case m.Revision < v.ActiveRevision:
		out.Status = Superseded
		return nil, r.finish(ctx, tx, &s, StateSuperseded, Superseded, supersededBy(v.ActiveRevision, v.ActiveSnapshot))
	case m.Revision == v.ActiveRevision && m.DocumentSHA256 != v.ActiveDocument:
		out.Status, out.Err = Rejected, revisionConflict()
		return out.Err, r.finish(ctx, tx, &s, StateRejected, Rejected, out.Err.Error())
	case m.Revision == v.ActiveRevision:
		out.Status = AlreadyActive
		return nil, r.finish(ctx, tx, &s, StateSuperseded, AlreadyActive, "")
	}
	var index func() []IndexEntry
	if needsIndex(v, &snap.Manifest) {
		index = indexLater(snap)
	}
	if err := r.finish(ctx, tx, &s, StateActivated, Activated, ""); err != nil {
		return nil, err
	}
	next, err := activate(ctx, tx, v, snap, index)
	if err != nil {
		return nil, err
	}
	v = next
	out.Status = Activated
	return nil, r.retainAfterActivation(ctx, tx, v)
}

// finalStatus is the outcome a finalized snapshot reports again.
func finalStatus(s Snapshot, v VesselState) OutcomeStatus {
	switch {
	case s.ID == v.ActiveSnapshot:
		return AlreadyActive
	case s.Final == Activated:
		return Superseded // activated once, replaced since
	case s.Final == AlreadyActive && s.Revision != v.ActiveRevision:
		return Superseded // its twin was replaced since
	}
	return s.Final
}

// supersededBy is the Reason a snapshot finalized Superseded keeps: the
// active snapshot that superseded it.
func supersededBy(revision int64, snapshot uuid.UUID) string {
	return fmt.Sprintf("revision %d, snapshot %s, was active", revision, snapshot)
}

// supersededByActive counts the snapshots of all that the active snapshot
// (revision, snapshot) superseded, by the Reason they keep.
func supersededByActive(all []Snapshot, revision int64, snapshot uuid.UUID) int {
	if snapshot == uuid.Nil {
		return 0
	}
	reason, n := supersededBy(revision, snapshot), 0
	for _, s := range all {
		if s.State == StateSuperseded && s.Final == Superseded && s.Reason == reason {
			n++
		}
	}
	return n
}

func revisionConflict() error {
	return sourcecatalog.Errorf(sourcecatalog.ErrRevisionConflict, "the active snapshot has this revision with another document")
}

// rejection finds again why a snapshot was rejected, so that Finalize
// reports it again with the same outcome and error: the verification
// failure of its staged set or, when the set verifies, the revision
// conflict, which Finalize also returns as its error.
func rejection(ctx context.Context, tx Tx, s Snapshot) (why, result, err error) {
	chunks, err := tx.Chunks(ctx, s.ID)
	if err != nil {
		return nil, nil, err
	}
	if _, verr := verifyStaged(s, chunks); verr != nil {
		return verr, nil, nil
	}
	rc := revisionConflict()
	return rc, rc, nil
}

// missing fills out's missing pieces and reports whether there are any.
func missing(out *Outcome, s Snapshot, chunks []StagedChunk) bool {
	if s.Manifest == nil {
		out.MissingManifest = true
		return true
	}
	have := make([]bool, s.ChunkCount)
	for _, c := range chunks {
		if c.Index < len(have) {
			have[c.Index] = true
		}
	}
	for i, ok := range have {
		if !ok {
			out.MissingChunks = append(out.MissingChunks, i)
		}
	}
	return len(out.MissingChunks) > 0
}

// verifyStaged decodes the staged bytes again and verifies the complete set;
// the store is not trusted to have kept them intact (SPEC.md §8.4). It
// returns the snapshot, whose chunks keep their records' entries. A set
// identical to the active one is verified by verifyIdentical instead.
func verifyStaged(s Snapshot, staged []StagedChunk) (*envelope.Snapshot, error) {
	if canonical.Sum(s.Manifest) != s.ManifestDigest {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrHashMismatch, "the staged manifest does not match its digest")
	}
	raw := make([][]byte, len(staged))
	for i, c := range staged {
		raw[i] = c.Canonical
	}
	// Staged bytes are immutable (see Tx): they are decoded in place.
	snap, err := decodeStaged(s.Manifest, raw)
	if err != nil {
		return nil, err
	}
	for _, c := range snap.Chunks {
		if staged[c.Index()].Payload != c.PayloadSHA256() {
			return nil, sourcecatalog.Errorf(sourcecatalog.ErrHashMismatch, "a staged chunk does not match its payload hash").InChunk(c.Index())
		}
	}
	return snap, nil
}

// recordIndex returns the record index of a verified snapshot: each
// record's key and the SHA-256 of its canonical bytes, in canonical order.
func recordIndex(snap *envelope.Snapshot) []IndexEntry {
	index := make([]IndexEntry, snap.Manifest.RecordCount)
	h := sha256.New() // one hash reset per record costs less than sha256.Sum256
	k := 0
	for _, c := range snap.Chunks {
		for i := range c.Len() {
			e := c.Entry(i)
			h.Reset()
			h.Write(e.Canonical)
			h.Sum(index[k].Digest[:0])
			index[k].Key = e.Key
			k++
		}
	}
	return index
}

// needsIndex reports whether activating m needs its record index: the
// inventory changes only for a document other than the active one.
func needsIndex(v VesselState, m *envelope.Manifest) bool {
	return v.ActiveSnapshot == uuid.Nil || m.DocumentSHA256 != v.ActiveDocument
}

// indexLater starts making snap's record index on another goroutine, which
// touches nothing but snap, so that hashing every record overlaps with the
// store's reads and writes that do not need the digests; the function it
// returns waits for the index.
func indexLater(snap *envelope.Snapshot) func() []IndexEntry {
	ready := make(chan []IndexEntry, 1)
	go func() { ready <- recordIndex(snap) }()
	var index []IndexEntry
	return func() []IndexEntry {
		if ready != nil {
			index, ready = <-ready, nil
		}
		return index
	}
}

// finish moves a staging snapshot to a final state, within the retained
// bounds.
func (r *Receiver) finish(ctx context.Context, tx Tx, s *Snapshot, state SnapshotState, final OutcomeStatus, reason string) error {
	u, all, err := r.usage(ctx, tx)
	if err != nil {
		return err
	}
	if !u.RetainedSnapshots.fits(1) || !u.RetainedBytes.fits(s.StagedBytes) {
		if r.retain < 0 {
			return sourcecatalog.Errorf(sourcecatalog.ErrStagingExhausted, "retained snapshots exhausted for the vessel; prune or discard")
		}
		if err := r.makeRoom(ctx, tx, u, all, s); err != nil {
			return err
		}
	}
	s.State, s.Final, s.Reason = state, final, reason
	return tx.PutSnapshot(ctx, *s)
}

// activate brings the inventory up to date for snap and flips the active
// pointer. Only items that appear, change or leave are written; a document
// identical to the active one writes only the pointer. index returns
// snap's record index; it is called only when needsIndex, and may be nil
// otherwise.
func activate(ctx context.Context, tx Tx, v VesselState, snap *envelope.Snapshot, index func() []IndexEntry) (VesselState, error) {
	m := &snap.Manifest
	next := VesselState{
		ActiveSnapshot: m.SnapshotID, ActiveRevision: m.Revision,
		ActiveDiscoveredAt: m.DiscoveredAt, ActiveDocument: m.DocumentSHA256,
	}
	if needsIndex(v, m) {
		old, err := tx.Index(ctx)
		if err != nil {
			return v, err
		}
		var (
			put    []Item
			retire []catalog.Key
			seen   = Seen{Revision: m.Revision, At: m.DiscoveredAt}
		)
		if len(old) == 0 {
			put = allItems(snap, seen) // needs no digest
		} else {
			put, retire = diff(old, index(), snap)
			for i := range put {
				put[i].FirstSeen, put[i].LastSeen = seen, seen
			}
		}
		if len(put) > 0 {
			if err := tx.PutItems(ctx, put); err != nil {
				return v, err
			}
		}
		if len(retire) > 0 {
			last := Seen{Revision: v.ActiveRevision, At: v.ActiveDiscoveredAt}
			if err := tx.RetireItems(ctx, retire, last); err != nil {
				return v, err
			}
		}
		if err := tx.SetIndex(ctx, index()); err != nil {
			return v, err
		}
	}
	return next, tx.SetVessel(ctx, next)
}

// allItems returns an item for every record of snap, in canonical order,
// first and last seen at seen: what an activation over an empty index
// puts.
func allItems(snap *envelope.Snapshot, seen Seen) []Item {
	put := make([]Item, snap.Manifest.RecordCount)
	k := 0
	for _, c := range snap.Chunks {
		for i := range c.Len() {
			e := c.Entry(i)
			put[k] = Item{Key: e.Key, Record: e.Canonical, FirstSeen: seen, CurrentlyObserved: true, LastSeen: seen}
			k++
		}
	}
	return put
}

// diff merges the active index with the new one (both in canonical order)
// and returns the items to write: appearing or changed records, and the keys
// of records that leave the selection.
func diff(old, cur []IndexEntry, snap *envelope.Snapshot) (put []Item, retire []catalog.Key) {
	records := recordCursor{chunks: snap.Chunks}
	i, k := 0, 0
	for i < len(old) || k < len(cur) {
		// Equal digests mean equal records, keys included: the common case
		// of an unchanged item needs no key comparison.
		if i < len(old) && k < len(cur) && old[i].Digest == cur[k].Digest {
			i++
			k++
			continue
		}
		d := 0
		switch {
		case i >= len(old):
			d = 1
		case k >= len(cur):
			d = -1
		default:
			d = old[i].Key.Compare(cur[k].Key)
		}
		switch {
		case d < 0: // leaves
			retire = append(retire, old[i].Key)
			i++
		case d > 0: // appears
			put = append(put, Item{Key: cur[k].Key, Record: records.at(k), CurrentlyObserved: true})
			k++
		default: // stays; written only when changed
			if old[i].Digest != cur[k].Digest {
				put = append(put, Item{Key: cur[k].Key, Record: records.at(k), CurrentlyObserved: true})
			}
			i++
			k++
		}
	}
	return put, retire
}

// A recordCursor finds the records of a snapshot by their position in the
// snapshot, for positions that never decrease.
type recordCursor struct {
	chunks []*envelope.Chunk
	c      int // the chunk holding record pos
	first  int // the position of that chunk's first record
}

// at returns the canonical bytes of the record at position pos.
func (rc *recordCursor) at(pos int) []byte {
	for pos-rc.first >= rc.chunks[rc.c].Len() {
		rc.first += rc.chunks[rc.c].Len()
		rc.c++
	}
	return rc.chunks[rc.c].Entry(pos - rc.first).Canonical
}

// retainAfterActivation applies the opt-in retention policy.
func (r *Receiver) retainAfterActivation(ctx context.Context, tx Tx, v VesselState) error {
	if r.retain < 0 {
		return nil
	}
	return prune(ctx, tx, v, r.retain)
}

// makeRoom prunes the oldest finalized snapshots, never the active one nor
// s, until s fits the retained bounds; u is the usage of all.
func (r *Receiver) makeRoom(ctx context.Context, tx Tx, u Usage, all []Snapshot, s *Snapshot) error {
	v, err := tx.Vessel(ctx)
	if err != nil {
		return err
	}
	var victims []Snapshot
	for _, o := range all {
		if o.State != StateStaging && o.ID != v.ActiveSnapshot && o.ID != s.ID {
			victims = append(victims, o)
		}
	}
	slices.SortFunc(victims, func(a, b Snapshot) int { return cmp.Compare(a.Revision, b.Revision) })
	fits := func() bool { return u.RetainedSnapshots.fits(1) && u.RetainedBytes.fits(s.StagedBytes) }
	for _, o := range victims {
		if fits() {
			break
		}
		if err := tx.DeleteSnapshot(ctx, o.ID); err != nil {
			return err
		}
		u.RetainedSnapshots.Used--
		u.RetainedBytes.Used -= o.StagedBytes
	}
	if !fits() {
		return sourcecatalog.Errorf(sourcecatalog.ErrStagingExhausted, "retained snapshots exhausted for the vessel")
	}
	return nil
}
