package finalize

import (
	"context"
	"errors"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/envelope"
)

// A PayloadTx is a Tx that finds staged chunks by their payload digest,
// which a Receiver needs to resolve chunk references (SPEC.md §6.6). It is
// optional: a Store whose Tx is no PayloadTx keeps compiling and working,
// and the Receiver refuses every reference it is given with
// sourcecatalog.ErrReferenceUnavailable, so that the sender sends the
// whole chunk.
type PayloadTx interface {
	Tx
	// ChunkByPayload returns a chunk staged for the transaction's vessel,
	// of any snapshot the vessel still has stored, in any state, whose
	// Payload is digest, as Chunk returns it; sourcecatalog.ErrNotFound
	// when there is none. When several have it, any one. It never returns
	// a chunk of another vessel, and sees the writes made earlier in the
	// transaction: a chunk staged by it, none of a snapshot deleted by it.
	//
	// A store that checks what it reads back (a checksum written with the
	// row) skips a chunk it finds damaged for another with the digest, and
	// when every one it holds is damaged returns an error wrapping
	// sourcecatalog.ErrHashMismatch, naming the rows, and never their
	// bytes; the transaction stays usable. The Receiver answers a
	// reference hash_mismatch then, and an index leaves the chunk missing
	// (SPEC.md §6.6, §6.7), so that the sender sends the chunk whole
	// rather than repeating a reference the store cannot serve.
	ChunkByPayload(ctx context.Context, digest canonical.Digest) (StagedChunk, error)
}

// ReceiveChunkRef strictly decodes a chunk reference (SPEC.md §6.6) and
// stages the chunk it stands for, durably, exactly as ReceiveChunk stages
// that chunk sent whole: the receipt is the chunk's (entity type
// sourcecatalog.ChunkEntityType), an identical retry — by reference or
// whole — is envelope.AlreadyReceived, and the conflicts are the chunk's,
// found before the referenced bytes are looked for.
//
// Beyond ReceiveChunk's errors it returns an error wrapping
// sourcecatalog.ErrReferenceUnavailable when the store holds no chunk of
// the vessel with the reference's payload_sha256 (or its Tx is no
// PayloadTx), and sourcecatalog.ErrHashMismatch when the bytes it holds
// do not decode or do not have that digest, or the store found them
// damaged (see PayloadTx); it stages nothing then. Both are located at
// the reference's chunk and payload_sha256.
func (r *Receiver) ReceiveChunkRef(ctx context.Context, origin Origin, raw []byte) (envelope.Receipt, error) {
	st, err := r.receive("ReceiveChunkRef", origin, func() (Staged, *Usage, error) {
		ref, err := envelope.DecodeChunkRef(raw)
		if err != nil {
			return Staged{}, nil, err
		}
		return r.stage(ctx, origin, "ReceiveChunkRef", ref, resolver(ref))
	})
	return st.Receipt, err
}

// StageChunkRef is ReceiveChunkRef for a reference that
// envelope.DecodeChunkRef returned, returning also whether the snapshot
// was already finalized (see Staged). nil or a zero ChunkRef is refused
// with sourcecatalog.ErrInvalidValue. The Observer sees it as
// ReceiveChunkRef.
func (r *Receiver) StageChunkRef(ctx context.Context, origin Origin, ref *envelope.ChunkRef) (Staged, error) {
	return r.receive("ReceiveChunkRef", origin, func() (Staged, *Usage, error) {
		if ref == nil || len(ref.Canonical()) == 0 {
			return Staged{}, nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "not a decoded chunk reference")
		}
		return r.stage(ctx, origin, "ReceiveChunkRef", ref, resolver(ref))
	})
}

// resolver returns the whole chunk ref stands for, from the bytes tx holds
// for the vessel.
func resolver(ref *envelope.ChunkRef) func(context.Context, Tx) (*envelope.Chunk, error) {
	return func(ctx context.Context, tx Tx) (*envelope.Chunk, error) {
		ptx, ok := tx.(PayloadTx)
		if !ok {
			return nil, ref.Unavailable()
		}
		held, err := ptx.ChunkByPayload(ctx, ref.PayloadSHA256())
		switch {
		case errors.Is(err, sourcecatalog.ErrNotFound):
			return nil, ref.Unavailable()
		case errors.Is(err, sourcecatalog.ErrHashMismatch):
			return nil, sourcecatalog.Errorf(sourcecatalog.ErrHashMismatch,
				"the records the receiver holds for this payload_sha256 are damaged; send the whole chunk: "+err.Error()).AtField("payload_sha256").InChunk(ref.Index())
		case err != nil:
			return nil, err
		}
		return ref.Resolve(held.Canonical)
	}
}
