// Package storeheal keeps a long-running service's store usable across
// storage failures: when a failure poisons the store's handle — an I/O
// error, a full disk, a failed COMMIT, a lost database connection — it
// closes that handle and opens a new one, with backoff, while every call
// is refused with ErrReopening, and serves again once the store opens
// cleanly. A store whose handle must be closed and opened again to
// resolve an outcome in doubt (sqlitestore.ErrPoisoned) is then reopened
// by the service itself, not by a restart; meanwhile its refusals are
// store_unavailable (SPEC.md §10.1), answered 503 and never a receipt
// (§11.3).
//
//	h, err := storeheal.Open(ctx, func(ctx context.Context) (*sqlitestore.Store, io.Closer, error) {
//		s, err := sqlitestore.Open(ctx, path, sqlitestore.WithExclusiveLock())
//		if err != nil {
//			return nil, nil, err
//		}
//		if err := storeheal.ProbeReceiver(ctx, s); err != nil { // a disk still full
//			s.Close()
//			return nil, nil, err
//		}
//		return s, s, nil
//	}, func(err error) bool { return errors.Is(err, sqlitestore.ErrPoisoned) })
//	...
//	defer h.Close()
//	receiver := finalize.NewReceiver(storeheal.Receiver(h, func(s *sqlitestore.Store) finalize.Store { return s }))
//
// A receiver's store is simpler still as a [Source] — sqlitestore.Source
// names a file — which [OpenReceiver] opens and probes the same way, and
// which receiver.Config takes; an on-board outbox, as an [OutboxSource]
// (sqlitestore.OutboxSource) that [OpenOutbox] opens, for a sender that
// runs for months.
//
// # Healing
//
// A [Handle] holds one open store handle of any type, made by its
// [Opener], and runs every call on it ([Handle.Do], and the
// finalize.Store and outbox.Store of [Receiver] and [Outbox]). A call
// whose error the poisoned predicate accepts poisons the handle; from
// then on:
//
//  1. Poisoned: new calls are refused at once with an error wrapping
//     ErrReopening, while the calls already in flight on the old handle
//     finish or fail. None of them is cut short, and none runs on the new
//     handle.
//  2. Reopening: the old handle is closed (releasing its locks, such as
//     sqlitestore's WithExclusiveLock, before anything opens the file
//     again), then the Opener is called until it succeeds: at once, then
//     after a backoff that doubles from the initial to the maximum delay
//     ([WithBackoff]), each delay drawn from its upper half. The maximum,
//     a second by default, bounds how long calls are still refused once
//     the store can serve again. An Opener returns only a handle that can serve:
//     [ProbeReceiver] and [ProbeOutbox] check that a write can be made.
//     Calls are still refused with ErrReopening.
//  3. Healthy: the new handle serves every call.
//
// One goroutine does the reopening, so there is one reopen at a time and
// one handle open at a time. A handle that is poisoned again before it has
// served for the maximum delay continues the backoff where it was instead
// of reopening at once, so a failure the reopen does not cure (a disk still
// full) costs one attempt per maximum delay. [Handle.Status] says where the
// Handle is, with the failure that poisoned it and the latest failed
// attempt, and [WithObserver] reports every change, for health checks,
// logs and metrics. [Handle.Close] stops the reopening and closes the
// handle.
//
// A store removed or replaced under its handle — a SQLite file deleted,
// renamed, or another file put at its path — poisons it with an error
// wrapping [ErrReplaced], which Status counts apart (Replacements). Its
// Opener must not then open whatever the name names now: sqlitestore's
// Source reopens only the file it opened first and creates none, so the
// Handle stays Reopening, answering 503, until that file is back or the
// operator restarts the service to accept another.
//
// # What a caller may rely on
//
// A call's result is the result of the one handle it ran on: a call that
// returned nil was made durable by that handle, as its store's contract
// says, before any reopen; a refused call ran nothing. Storeheal never
// re-runs a call on the new handle: a refused or failed call is the
// caller's to retry (a receiver answers 503, and the sender resends).
package storeheal
