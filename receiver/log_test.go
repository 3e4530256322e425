package receiver_test

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/receiver"
	"github.com/yachtmemory/sourcecatalog/storeheal"
)

// Each event is one line, of a documented message and level, with its
// attributes.
func TestLog(t *testing.T) {
	v, snap := examples.VesselID.String(), uuid.New()
	cause, attempt := errors.New("disk I/O error"), errors.New("still full")
	usage := func(used int64) *finalize.Usage {
		return &finalize.Usage{
			IncompleteSnapshots: finalize.Gauge{Limit: 8}, IncompleteBytes: finalize.Gauge{Limit: 1 << 20},
			RetainedSnapshots: finalize.Gauge{Used: used, Limit: 32}, RetainedBytes: finalize.Gauge{Limit: 1 << 20},
		}
	}
	for _, tc := range []struct {
		name  string
		log   func(receiver.Log)
		msg   string
		level string // "": no such line
		attrs map[string]any
	}{
		{"store poisoned", func(l receiver.Log) { l.Store(storeheal.Status{State: storeheal.Poisoned, Cause: cause}) },
			"store poisoned: refusing requests until it is reopened", "ERROR", map[string]any{"state": "poisoned", "err": "disk I/O error"}},
		{"store file replaced", func(l receiver.Log) {
			l.Store(storeheal.Status{State: storeheal.Poisoned, Cause: fmt.Errorf("shore.db removed: %w", storeheal.ErrReplaced), Replacements: 1})
		}, "store file removed or replaced: refusing requests; only the file it had open is reopened (put it back, or restart to accept the file now at the path)", "ERROR",
			map[string]any{"state": "poisoned", "replacements": float64(1)}},
		{"store reopening", func(l receiver.Log) { l.Store(storeheal.Status{State: storeheal.Reopening, Cause: cause}) },
			"store reopening", "WARN", map[string]any{"state": "reopening", "close_err": nil}},
		{"store reopening, the close failed", func(l receiver.Log) {
			l.Store(storeheal.Status{State: storeheal.Reopening, Cause: cause, LastErr: attempt})
		}, "store reopening", "WARN", map[string]any{"close_err": "still full"}},
		{"store reopen failed", func(l receiver.Log) {
			l.Store(storeheal.Status{State: storeheal.Reopening, Cause: cause, Attempts: 2, LastErr: attempt})
		}, "store reopen failed", "WARN", map[string]any{"attempts": float64(2), "err": "still full"}},
		{"store reopened", func(l receiver.Log) {
			l.Store(storeheal.Status{State: storeheal.Healthy, Cause: cause, Attempts: 2, Reopens: 1})
		}, "store reopened", "INFO", map[string]any{"failed_attempts": float64(2), "reopens": float64(1)}},
		{"a receipt", func(l receiver.Log) {
			l.Binding(httpbinding.Event{Kind: httpbinding.EventMessage, Vessel: examples.VesselID, Snapshot: snap, EntityType: sourcecatalog.ChunkEntityType, Outcome: "staged", Status: 200})
		}, "message", "INFO", map[string]any{"vessel": v, "snapshot": snap.String(), "entity_type": sourcecatalog.ChunkEntityType, "outcome": "staged", "status": float64(200)}},
		{"a conflict", func(l receiver.Log) {
			l.Binding(httpbinding.Event{Kind: httpbinding.EventMessage, Vessel: examples.VesselID, Outcome: "conflict", Status: 409, Err: errors.New("other bytes")})
		}, "message", "INFO", map[string]any{"vessel": v, "outcome": "conflict", "status": float64(409), "err": "other bytes"}},
		{"store unavailable", func(l receiver.Log) {
			l.Binding(httpbinding.Event{Kind: httpbinding.EventMessage, Vessel: examples.VesselID, Outcome: "store_unavailable", Status: 503})
		}, "message", "WARN", map[string]any{"vessel": v, "status": float64(503)}},
		{"reconciled", func(l receiver.Log) {
			l.Binding(httpbinding.Event{Kind: httpbinding.EventReconcile, Vessel: examples.VesselID, Outcomes: []finalize.Outcome{{}}, Duration: time.Second})
		}, "reconciled", "INFO", map[string]any{"vessel": v, "finalized": float64(1)}},
		{"reconciled nothing", func(l receiver.Log) {
			l.Binding(httpbinding.Event{Kind: httpbinding.EventReconcile, Vessel: examples.VesselID})
		},
			"reconciled", "", nil},
		{"listing failed", func(l receiver.Log) { l.Binding(httpbinding.Event{Kind: httpbinding.EventReconcile, Err: cause}) },
			"reconcile: listing the vessels failed", "WARN", map[string]any{"err": "disk I/O error"}},
		{"activated", func(l receiver.Log) {
			l.Finalize(finalize.Event{Kind: finalize.EventFinalize, Vessel: examples.VesselID, Snapshot: snap, Outcome: finalize.Outcome{Status: finalize.Activated, Revision: 7}})
		}, "finalize", "INFO", map[string]any{"vessel": v, "outcome": "activated", "revision": float64(7)}},
		{"finalize failed", func(l receiver.Log) {
			l.Finalize(finalize.Event{Kind: finalize.EventFinalize, Vessel: examples.VesselID, Err: sourcecatalog.Errorf(sourcecatalog.ErrStagingExhausted, "full")})
		}, "finalize", "WARN", map[string]any{"outcome": "staging_exhausted"}},
		{"superseded by the active one", func(l receiver.Log) {
			l.Finalize(finalize.Event{Kind: finalize.EventFinalize, Vessel: examples.VesselID, Snapshot: snap,
				Outcome: finalize.Outcome{Status: finalize.Superseded, Revision: 3, ActiveRevision: 40, SupersededByActive: 2}})
		}, "snapshot superseded by the active one: while superseded_by_active grows, the vessel sends revisions below one it sent before (a lost or restored on-board store, SPEC.md §2.4)",
			"WARN", map[string]any{"vessel": v, "revision": float64(3), "active_revision": float64(40), "superseded_by_active": float64(2)}},
		{"retry", func(l receiver.Log) {
			l.Finalize(finalize.Event{Kind: finalize.EventRetry, Op: "ReceiveChunk", Vessel: examples.VesselID})
		},
			"store retry", "WARN", map[string]any{"op": "ReceiveChunk", "vessel": v}},
		{"a bound 25 of 32 full", func(l receiver.Log) {
			l.Finalize(finalize.Event{Kind: finalize.EventReceive, Vessel: examples.VesselID, Usage: usage(25)})
		},
			"staging bound filling up", "", nil},
		{"a bound 26 of 32 full", func(l receiver.Log) {
			l.Finalize(finalize.Event{Kind: finalize.EventReceive, Vessel: examples.VesselID, Usage: usage(26)})
		},
			"staging bound filling up", "WARN", map[string]any{"vessel": v, "retained_snapshots": "26/32"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tail := &logTail{}
			tc.log(receiver.Log{Logger: slog.New(slog.NewJSONHandler(tail, nil))})
			line, ok := tail.find(tc.msg, tc.attrs)
			if tc.level == "" {
				assert.False(t, ok, "a line %q:\n%s", tc.msg, tail)
				return
			}
			require.True(t, ok, "no line %q with %v in:\n%s", tc.msg, tc.attrs, tail)
			assert.Equal(t, tc.level, line["level"])
		})
	}
}

// A Log without a Logger writes to slog.Default().
func TestLogDefault(t *testing.T) {
	tail := &logTail{}
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewJSONHandler(tail, nil)))
	receiver.Log{}.Finalize(finalize.Event{Kind: finalize.EventRetry, Op: "Finalize", Vessel: examples.VesselID})
	_, ok := tail.find("store retry", map[string]any{"op": "Finalize"})
	assert.True(t, ok, tail)
}
