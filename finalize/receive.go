package finalize

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/envelope"
)

// ReceiveManifest strictly decodes a manifest and stages it durably.
//
// It returns an envelope.Staged receipt, or envelope.AlreadyReceived with
// a matching receipt when identical bytes were staged before; the
// receipt's Complete reports that the snapshot's set is now complete, the
// cue to call Finalize (SPEC.md §8.6). It stages nothing and returns an
// error wrapping: the decoder's classes for a malformed manifest;
// sourcecatalog.ErrForeignVessel when the manifest names another vessel than origin;
// sourcecatalog.ErrUnregisteredVessel for a vessel the registry refuses; sourcecatalog.ErrConflict when
// the manifest contradicts what was staged for the snapshot (another
// manifest, chunks of another revision, a chunk index at or beyond its
// chunk_count); sourcecatalog.ErrStagingExhausted when a staging bound would be
// exceeded; sourcecatalog.ErrStoreUnavailable, with the cause, when the registry or the
// store fails or ctx is done.
//
// A refusal does not depend on the order of arrival: of two messages that
// contradict each other, whichever arrives first is staged and the other
// is refused with sourcecatalog.ErrConflict. Only what needs the complete set, such as
// the document hash and the record count, waits for Finalize.
func (r *Receiver) ReceiveManifest(ctx context.Context, origin Origin, raw []byte) (envelope.Receipt, error) {
	st, err := r.StageManifest(ctx, origin, raw)
	return st.Receipt, err
}

// A Staged is what a receive call did, for a caller running the server
// policy of SPEC.md §8.6 itself: the receipt, and whether the snapshot was
// finalized before the message came.
type Staged struct {
	Receipt envelope.Receipt
	// Finalized reports that the message was already received (a resend
	// of a message whose answer was lost) for a snapshot that was
	// finalized — activated, superseded or rejected — when it came, as the
	// receive transaction read it: Finalize would only report the outcome
	// again. A snapshot still staging is never Finalized, complete or not.
	Finalized bool
	// FinalizeRun is the Finalize the receive call ran in the transaction
	// that staged the message completing the set (WithFinalizeWhenComplete),
	// nil when it ran none.
	FinalizeRun *FinalizeRun
}

// A FinalizeRun is a Finalize that a receive call ran in its own
// transaction: the Outcome and the error Finalize would have returned with
// it (sourcecatalog.ErrRevisionConflict, with a Rejected outcome), and how
// long it took.
type FinalizeRun struct {
	Outcome  Outcome
	Err      error
	Duration time.Duration
}

// NeedsFinalize reports whether the server policy of SPEC.md §8.6 runs
// Finalize after the message: the receipt reports the set complete, the
// snapshot was not finalized before it came, and the receive call did not
// finalize it itself (FinalizeRun). A snapshot whose Finalize was cut by a
// crash is still staging, so its resent messages need a Finalize, and
// Reconcile covers it too.
func (s Staged) NeedsFinalize() bool {
	return s.Receipt.Complete && !s.Finalized && s.FinalizeRun == nil
}

// StageManifest is ReceiveManifest, returning also whether the snapshot
// was already finalized. The Observer sees it as ReceiveManifest.
func (r *Receiver) StageManifest(ctx context.Context, origin Origin, raw []byte) (Staged, error) {
	return r.receive("ReceiveManifest", origin, func() (Staged, *Usage, error) {
		return r.receiveManifest(ctx, origin, raw)
	})
}

// receive runs one of the receive methods, op, and reports it.
func (r *Receiver) receive(op string, origin Origin, method func() (Staged, *Usage, error)) (Staged, error) {
	start := time.Now()
	st, u, err := method()
	if r.observe != nil {
		e := Event{Kind: EventReceive, Op: op, Vessel: origin.VesselID, Snapshot: st.Receipt.SnapshotID, Err: err, Duration: time.Since(start)}
		if err == nil {
			e.Receipt, e.Usage = st.Receipt, u
		}
		r.report(e)
		if run := st.FinalizeRun; err == nil && run != nil {
			r.report(Event{Kind: EventFinalize, Op: "Finalize", Vessel: origin.VesselID, Snapshot: st.Receipt.SnapshotID,
				Outcome: run.Outcome, Err: run.Err, Duration: run.Duration, Usage: &run.Outcome.Usage})
		}
	}
	if err != nil {
		return Staged{}, err
	}
	return st, nil
}

// staging runs fn, the transaction of a receive method op that fills st,
// and under WithFinalizeWhenComplete, when fn staged the message that
// completed the set, Finalize in the same transaction. A Finalize that
// would end the transaction with an error leaves the message to be staged
// alone, in a transaction run again without it. That Finalize has half of
// the time left to ctx (finalizeContext), so that one cut short by ctx's
// deadline leaves the rest for staging the message alone.
func (r *Receiver) staging(ctx context.Context, op string, vessel uuid.UUID, st *Staged, fn func(Tx) error) error {
	for inTx := r.finalizeWhenComplete; ; inTx = false {
		later := false
		err := r.withVessel(ctx, op, vessel, func(tx Tx) error {
			st.FinalizeRun, later = nil, false
			if err := fn(tx); err != nil || !inTx || !st.Receipt.Complete || st.Receipt.Status != envelope.Staged {
				return err
			}
			fctx, cancel := finalizeContext(ctx)
			defer cancel()
			start := time.Now()
			run := &FinalizeRun{Outcome: Outcome{VesselID: vessel, SnapshotID: st.Receipt.SnapshotID}}
			result, err := r.finalizeTx(fctx, tx, &run.Outcome)
			if err != nil {
				later = true
				return err
			}
			run.Err, run.Duration, st.FinalizeRun = result, time.Since(start), run
			return nil
		})
		if !later {
			return err
		}
	}
}

// finalizeContext returns the context of a Finalize run in a staging
// transaction under ctx: with half of the time left to ctx's deadline,
// when it has one.
func finalizeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, time.Until(deadline)/2)
}

// receiveManifest is ReceiveManifest. With an error, rc holds what was
// decoded of the manifest; u is the usage when it staged the manifest.
func (r *Receiver) receiveManifest(ctx context.Context, origin Origin, raw []byte) (st Staged, u *Usage, err error) {
	m, err := envelope.DecodeManifest(raw)
	if err != nil {
		return st, nil, err
	}
	canon := m.Canonical()
	rc := &st.Receipt
	*rc = envelope.Receipt{
		Status: envelope.Staged, EntityType: sourcecatalog.ManifestEntityType,
		VesselID: m.VesselID, SnapshotID: m.SnapshotID, Revision: m.Revision,
		ChunkIndex: sourcecatalog.NoIndex, Digest: canonical.Sum(canon),
	}
	if err := r.admit(ctx, origin, m.VesselID); err != nil {
		return st, nil, err
	}
	err = r.staging(ctx, "ReceiveManifest", m.VesselID, &st, func(tx Tx) error {
		rc.Status, rc.Complete, st.Finalized, u = envelope.Staged, false, false, nil
		var staged Usage
		s, err := tx.Snapshot(ctx, m.SnapshotID)
		switch {
		case errors.Is(err, sourcecatalog.ErrNotFound):
			s = Snapshot{ID: m.SnapshotID, Revision: m.Revision, State: StateStaging}
			if staged, err = r.admitNewSnapshot(ctx, tx, int64(len(canon))); err != nil {
				return err
			}
		case err != nil:
			return err
		case s.Manifest != nil:
			if s.ManifestDigest != rc.Digest {
				return conflict("another manifest was staged for this snapshot")
			}
			rc.Status, rc.Complete, st.Finalized = envelope.AlreadyReceived, complete(s), s.State != StateStaging
			return nil
		case s.Revision != m.Revision:
			return conflict("chunks of another revision were staged for this snapshot")
		case s.State != StateStaging:
			return conflict("the snapshot was finalized without this manifest")
		default:
			if err := chunksWithin(ctx, tx, s.ID, m.ChunkCount); err != nil {
				return err
			}
			if staged, err = r.admitBytes(ctx, tx, int64(len(canon))); err != nil {
				return err
			}
		}
		s.Manifest, s.ManifestDigest = canon, rc.Digest
		s.ChunkCount, s.RecordCount = m.ChunkCount, m.RecordCount
		s.StagedBytes += int64(len(canon))
		rc.Complete, u = complete(s), &staged
		return tx.PutSnapshot(ctx, s)
	})
	return st, u, err
}

// ReceiveChunk strictly decodes a chunk, checking its payload hash, and
// stages it durably. Chunks may arrive before their manifest.
//
// Receipts and errors are those of ReceiveManifest. sourcecatalog.ErrConflict here means
// other bytes were staged at the same snapshot and chunk index, the
// snapshot's messages disagree on the revision, or the chunk index is at
// or beyond the staged manifest's chunk_count.
func (r *Receiver) ReceiveChunk(ctx context.Context, origin Origin, raw []byte) (envelope.Receipt, error) {
	st, err := r.receive("ReceiveChunk", origin, func() (Staged, *Usage, error) {
		c, err := envelope.DecodeChunk(raw)
		if err != nil {
			return Staged{}, nil, err
		}
		return r.receiveChunk(ctx, origin, c)
	})
	return st.Receipt, err
}

// ReceiveDecodedChunk is ReceiveChunk for a chunk that envelope.DecodeChunk
// returned, so that a caller that looks into a message before handing it
// over — a binding checking its entity key — decodes it once. A Chunk can
// only be made by the strict decoder or by Build; anything else, such as
// nil or a zero Chunk, is refused with sourcecatalog.ErrInvalidValue. The
// Observer sees it as ReceiveChunk.
func (r *Receiver) ReceiveDecodedChunk(ctx context.Context, origin Origin, c *envelope.Chunk) (envelope.Receipt, error) {
	st, err := r.StageChunk(ctx, origin, c)
	return st.Receipt, err
}

// StageChunk is ReceiveDecodedChunk, returning also whether the snapshot
// was already finalized. The Observer sees it as ReceiveChunk.
func (r *Receiver) StageChunk(ctx context.Context, origin Origin, c *envelope.Chunk) (Staged, error) {
	return r.receive("ReceiveChunk", origin, func() (Staged, *Usage, error) {
		if c == nil || len(c.Canonical()) == 0 {
			return Staged{}, nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "not a decoded chunk")
		}
		return r.receiveChunk(ctx, origin, c)
	})
}

// receiveChunk stages a decoded chunk. With an error, rc holds what the
// chunk names; u is the usage when it staged the chunk.
func (r *Receiver) receiveChunk(ctx context.Context, origin Origin, c *envelope.Chunk) (st Staged, u *Usage, err error) {
	return r.stage(ctx, origin, "ReceiveChunk", c, func(context.Context, Tx) (*envelope.Chunk, error) { return c, nil })
}

// A chunkMessage is what staging reads of a chunk before it holds the
// chunk's bytes: a whole chunk, or a reference to one (chunkref.go).
type chunkMessage interface {
	VesselID() uuid.UUID
	SnapshotID() uuid.UUID
	Revision() int64
	Index() int
	PayloadSHA256() canonical.Digest
}

// stage stages the chunk m names, under the rules of SPEC.md §8.2, for the
// method op. whole returns the chunk's bytes, in the transaction, once the
// rules say it is to be staged.
func (r *Receiver) stage(ctx context.Context, origin Origin, op string, m chunkMessage, whole func(context.Context, Tx) (*envelope.Chunk, error)) (st Staged, u *Usage, err error) {
	rc := &st.Receipt
	*rc = envelope.Receipt{
		Status: envelope.Staged, EntityType: sourcecatalog.ChunkEntityType,
		VesselID: m.VesselID(), SnapshotID: m.SnapshotID(), Revision: m.Revision(),
		ChunkIndex: m.Index(), Digest: m.PayloadSHA256(),
	}
	if err := r.admit(ctx, origin, m.VesselID()); err != nil {
		return st, nil, err
	}
	err = r.staging(ctx, op, m.VesselID(), &st, func(tx Tx) error {
		rc.Status, rc.Complete, st.Finalized, u = envelope.Staged, false, false, nil
		var staged Usage
		var c *envelope.Chunk
		s, err := tx.Snapshot(ctx, m.SnapshotID())
		switch {
		case errors.Is(err, sourcecatalog.ErrNotFound):
			s = Snapshot{ID: m.SnapshotID(), Revision: m.Revision(), State: StateStaging}
			if c, err = whole(ctx, tx); err != nil {
				return err
			}
			if staged, err = r.admitNewSnapshot(ctx, tx, int64(len(c.Canonical()))); err != nil {
				return err
			}
		case err != nil:
			return err
		default:
			old, err := tx.Chunk(ctx, s.ID, m.Index())
			switch {
			case err == nil:
				if old.Payload != m.PayloadSHA256() || s.Revision != m.Revision() {
					return conflict("other bytes were staged at this chunk index")
				}
				rc.Status, rc.Complete, st.Finalized = envelope.AlreadyReceived, complete(s), s.State != StateStaging
				return nil
			case !errors.Is(err, sourcecatalog.ErrNotFound):
				return err
			case s.Revision != m.Revision():
				return conflict("the snapshot's messages disagree on the revision")
			case s.State != StateStaging:
				return conflict("the snapshot was finalized without this chunk")
			case s.Manifest != nil && m.Index() >= s.ChunkCount:
				return conflict("chunk_index beyond the manifest's chunk_count")
			}
			if c, err = whole(ctx, tx); err != nil {
				return err
			}
			if staged, err = r.admitBytes(ctx, tx, int64(len(c.Canonical()))); err != nil {
				return err
			}
		}
		s.ChunksStaged++
		s.StagedBytes += int64(len(c.Canonical()))
		rc.Complete, u = complete(s), &staged
		if err := tx.PutChunk(ctx, StagedChunk{Snapshot: s.ID, Index: c.Index(), Canonical: c.Canonical(), Payload: c.PayloadSHA256()}); err != nil {
			return err
		}
		return tx.PutSnapshot(ctx, s)
	})
	return st, u, err
}

// chunksWithin refuses a manifest's chunk_count when a chunk staged before
// it has an index at or beyond count, as ReceiveChunk refuses such a chunk
// after the manifest.
func chunksWithin(ctx context.Context, tx Tx, snapshot uuid.UUID, count int) error {
	chunks, err := tx.Chunks(ctx, snapshot)
	if err != nil {
		return err
	}
	if len(chunks) > 0 && chunks[len(chunks)-1].Index >= count {
		return conflict("a chunk staged for this snapshot has an index beyond the manifest's chunk_count").AtField("chunk_count")
	}
	return nil
}

func conflict(detail string) *sourcecatalog.Error {
	return sourcecatalog.Errorf(sourcecatalog.ErrConflict, detail)
}

// complete reports whether the receiver holds every message of s: its
// manifest and a chunk at every index. A chunk beyond the manifest's
// chunk_count is never staged, so counting them is enough.
func complete(s Snapshot) bool {
	return s.Manifest != nil && s.ChunksStaged == s.ChunkCount
}
