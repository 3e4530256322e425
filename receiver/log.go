package receiver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/storeheal"
)

// Log writes a receiver's log lines to Logger (slog.Default() when nil)
// from the events of its pieces: its methods are observers, for an
// integrator wiring the pieces himself —
// finalize.WithObserver(log.Finalize), httpbinding.WithObserver(log.Binding),
// storeheal.WithObserver(log.Store) — and New wires them all. Lines name
// the vessel and snapshot; none holds a credential.
type Log struct {
	Logger *slog.Logger
}

// usageWarning is how full a staging bound is when Log warns.
const usageWarning = 0.8

func (l Log) logger() *slog.Logger {
	if l.Logger == nil {
		return slog.Default()
	}
	return l.Logger
}

// Store logs each change of a storeheal Handle's status: "store
// poisoned" (ERROR, with the cause), or "store file removed or replaced"
// (ERROR) when the cause wraps storeheal.ErrReplaced, "store reopening" (WARN), each
// "store reopen failed" (WARN, with the attempts and the error) and
// "store reopened" (INFO).
func (l Log) Store(s storeheal.Status) {
	log, state := l.logger(), s.State.String()
	switch {
	case s.State == storeheal.Poisoned && errors.Is(s.Cause, storeheal.ErrReplaced):
		log.Error("store file removed or replaced: refusing requests; only the file it had open is reopened (put it back, or restart to accept the file now at the path)",
			"state", state, "err", s.Cause, "replacements", s.Replacements)
	case s.State == storeheal.Poisoned:
		log.Error("store poisoned: refusing requests until it is reopened", "state", state, "err", s.Cause)
	case s.State == storeheal.Reopening && s.Attempts == 0 && s.LastErr != nil:
		log.Warn("store reopening", "state", state, "close_err", s.LastErr)
	case s.State == storeheal.Reopening && s.Attempts == 0:
		log.Warn("store reopening", "state", state)
	case s.State == storeheal.Reopening:
		log.Warn("store reopen failed", "state", state, "attempts", s.Attempts, "err", s.LastErr)
	case s.State == storeheal.Healthy:
		log.Info("store reopened", "state", state, "failed_attempts", s.Attempts, "reopens", s.Reopens)
	}
}

// Binding logs what the Handler and the Reconciler report: every request
// as "message" with its vessel, snapshot, entity type, outcome, status
// and duration — at INFO, or WARN for a 5xx — and each reconciliation
// that finalized something (INFO) or failed (WARN). Finalize calls are
// logged by Finalize, from the Receiver's events.
func (l Log) Binding(e httpbinding.Event) {
	log := l.logger()
	switch e.Kind {
	case httpbinding.EventMessage:
		attrs := appendIDs(nil, e.Vessel, e.Snapshot)
		if e.EntityType != "" {
			attrs = append(attrs, "entity_type", e.EntityType)
		}
		attrs = append(attrs, "outcome", e.Outcome, "status", e.Status, "duration", e.Duration)
		if e.Err != nil {
			attrs = append(attrs, "err", e.Err)
		}
		level := slog.LevelInfo
		if e.Status >= 500 {
			level = slog.LevelWarn
		}
		log.Log(context.Background(), level, "message", attrs...)
	case httpbinding.EventReconcile:
		switch {
		case e.Err != nil && e.Vessel == uuid.Nil:
			log.Warn("reconcile: listing the vessels failed", "err", e.Err)
		case e.Err != nil:
			log.Warn("reconcile failed", "vessel", e.Vessel.String(), "finalized", len(e.Outcomes), "err", e.Err)
		case len(e.Outcomes) > 0:
			log.Info("reconciled", "vessel", e.Vessel.String(), "finalized", len(e.Outcomes), "duration", e.Duration)
		}
	}
}

// Finalize logs what the Receiver reports: every Finalize as "finalize"
// (vessel, snapshot, outcome, revisions, duration; WARN with the error
// when it failed), a WARN for a snapshot the active one superseded (a
// vessel whose revisions went backwards, SPEC.md §8.4), every store
// retry (WARN), and a WARN when a staging bound is 80% full.
func (l Log) Finalize(e finalize.Event) {
	log := l.logger()
	switch e.Kind {
	case finalize.EventFinalize:
		attrs := append(appendIDs(nil, e.Vessel, e.Snapshot), "outcome", finalizeOutcome(e))
		level := slog.LevelInfo
		if e.Err == nil || e.Outcome.Status != "" {
			attrs = append(attrs, "revision", e.Outcome.Revision, "active_revision", e.Outcome.ActiveRevision)
		}
		if e.Outcome.Status == finalize.Staging {
			attrs = append(attrs, "missing_manifest", e.Outcome.MissingManifest, "missing_chunks", len(e.Outcome.MissingChunks))
		}
		if why := firstErr(e.Err, e.Outcome.Err); why != nil {
			attrs, level = append(attrs, "err", why), slog.LevelWarn
		}
		attrs = append(attrs, "duration", e.Duration)
		log.Log(context.Background(), level, "finalize", attrs...)
		if e.Outcome.Status == finalize.Superseded && e.Outcome.SupersededByActive > 0 {
			log.Warn("snapshot superseded by the active one: while superseded_by_active grows, the vessel sends revisions below one it sent before (a lost or restored on-board store, SPEC.md §2.4)",
				"vessel", e.Vessel.String(), "snapshot", e.Snapshot.String(), "revision", e.Outcome.Revision,
				"active_revision", e.Outcome.ActiveRevision, "superseded_by_active", e.Outcome.SupersededByActive)
		}
	case finalize.EventRetry:
		log.Warn("store retry", "op", e.Op, "vessel", e.Vessel.String())
	}
	if u := e.Usage; u != nil && u.Highest() >= usageWarning {
		log.Warn("staging bound filling up", "vessel", e.Vessel.String(), "highest", u.Highest(),
			"incomplete_snapshots", gaugeText(u.IncompleteSnapshots), "incomplete_bytes", gaugeText(u.IncompleteBytes),
			"retained_snapshots", gaugeText(u.RetainedSnapshots), "retained_bytes", gaugeText(u.RetainedBytes))
	}
}

// finalizeOutcome is a Finalize event's outcome, as prommetrics'
// FinalizeOutcome: its status, which a rejection has with its error, or
// else the wire name of its error's class ("error" for none).
func finalizeOutcome(e finalize.Event) string {
	if e.Err == nil || e.Outcome.Status == finalize.Rejected {
		return string(e.Outcome.Status)
	}
	if name := sourcecatalog.WireName(sourcecatalog.Class(e.Err)); name != "" {
		return name
	}
	return "error"
}

// firstErr returns the first error that is not nil.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func gaugeText(g finalize.Gauge) string { return fmt.Sprintf("%d/%d", g.Used, g.Limit) }

// appendIDs appends the vessel and the snapshot, those that are known.
func appendIDs(attrs []any, vessel, snapshot uuid.UUID) []any {
	if vessel != uuid.Nil {
		attrs = append(attrs, "vessel", vessel.String())
	}
	if snapshot != uuid.Nil {
		attrs = append(attrs, "snapshot", snapshot.String())
	}
	return attrs
}
