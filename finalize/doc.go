// Package finalize is the receiver side of the Source Catalog protocol v2
// (SPEC.md §8; draft 0.1.0, "Completion, retries, and atomic activation"):
// durable staging of manifests and chunks, a resumable finalize step that
// verifies a complete snapshot, and atomic activation of the vessel's
// catalog.
//
// The state machine lives here, once. Storage is the integrator's: a
// [Store] offers only a transaction serialised per vessel with plain reads
// and writes; memstore is the in-memory reference and finalizetest the
// conformance suite every Store must pass.
//
// # Messages
//
// [Receiver.ReceiveManifest] and [Receiver.ReceiveChunk] decode a message
// strictly, bind it to the vessel the integrator authenticated ([Origin])
// and, optionally, to a registered vessel ([WithRegistry]), and stage it.
// The answer is an [envelope.Receipt], which acknowledges durable staging,
// never activation, and reports when the snapshot's set is complete: the
// server's cue to call Finalize; [Receiver.StageManifest] and
// [Receiver.StageChunk] also say whether the snapshot was finalized before
// the message came ([Staged.NeedsFinalize]), so that a server skips the
// Finalize of a resend that would change nothing. An identical retry is answered
// envelope.AlreadyReceived with a matching receipt; other bytes at the
// same snapshot and chunk index, or another manifest for the snapshot,
// are refused with sourcecatalog.ErrConflict and no receipt. Chunks may arrive before
// their manifest, and a refusal does not depend on the order: of two
// messages that contradict each other (another revision, a chunk index at
// or beyond the manifest's chunk_count), whichever arrives first is staged
// and the other refused.
//
// # States of a snapshot
//
//	(nothing) --receive--> staging <--receive (any order, retries)
//	                          |
//	          Finalize or Reconcile, once the set is complete:
//	          verify the staged bytes again: decoded, or by
//	          identity with the active snapshot
//	                          |
//	   +----------------+-----+-----------+--------------------+
//	   | invalid        | older than      | same revision and  | newer than
//	   |                | the active      | same document      | the active
//	   v                v                 v                    v
//	rejected        superseded        superseded           activated
//	                                  (already_active)     (superseded once a
//	                                                        newer one activates)
//
// Finalize reports [Staging] while pieces are missing, saying which;
// a snapshot claiming the active revision with another document is
// rejected with sourcecatalog.ErrRevisionConflict. Finalize is idempotent: a finalized
// snapshot reports its outcome again.
//
// # Activation
//
// Activation is one Store transaction: the inventory of paths, sources and
// observations is brought up to date and the vessel's active pointer
// flips. Items are never deleted. An item that stays selected is not
// rewritten (its last-seen is the active snapshot, derived when read);
// items that appear, change or leave the selection are written, a leaving
// item keeping its record and first-seen and getting its last-seen frozen
// at the previously active snapshot. A new revision with an identical
// document writes only the pointer.
//
// # Bounds: a vessel stops after 32 finalized snapshots by default
//
// Staging is bounded per vessel ([Limits]): incomplete snapshots and
// retained finalized ones, by count and bytes. Exhaustion fails closed with
// sourcecatalog.ErrStagingExhausted and loses nothing. Nothing is pruned automatically
// unless [WithRetention] opts in; [Receiver.Discard] and [Receiver.Prune]
// are the operator's explicit actions, and the active snapshot is never
// removed.
//
// So with [DefaultLimits] and no retention, the retained bound fills: after
// 32 finalized snapshots — about eight hours of 15-minute cycles — Finalize
// fails with sourcecatalog.ErrStagingExhausted for every complete snapshot of the vessel,
// and once 8 of them wait, receiving fails too, until an operator prunes.
// Choose a retention policy before going live, and watch
// [Usage]: [Outcome] carries it after every Finalize and [Receiver.Usage]
// reports it at any time, each bound's use against its limit, so that a
// server can warn, or export metrics, well before a bound fills (for
// example when [Usage.Highest] reaches 0.8).
//
// # Errors
//
// Every error wraps exactly one class of package sourcecatalog, and a call
// refusing its input changes nothing. A failing store or registry, or a
// done context, is reported as sourcecatalog.ErrStoreUnavailable wrapping its cause; the
// call may be retried.
package finalize
