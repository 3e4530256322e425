package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

// The operator commands read and change a receiver's store through a
// finalize.Receiver with finalize.DefaultLimits and no retention policy.

// storeHelp is the --store and --json paragraph of the operator commands.
const storeHelp = `  --store STORE  the receiver's store: memory (empty: for trying the
                 command), sqlite:FILE (created when absent, except by
                 status, which only reads it; a running serve may share
                 it) or mysql:DSN, a
                 github.com/go-sql-driver/mysql DSN naming a database whose
                 schema is current (serve --migrate creates it). The DSN is
                 never printed
  --json         print one JSON document instead of text: field names are
                 snake_case and stable, ids are lowercase UUIDs, times RFC
                 3339 in UTC
`

var statusCommand = &command{
	name:     "status",
	synopsis: "--store memory|sqlite:FILE|mysql:DSN [--vessel UUID] [--json]",
	summary:  "show a vessel's active snapshot, staging and usage of its bounds",
	help: helpText("status") + storeHelp + `  --vessel UUID  one vessel (default: every vessel the store lists)

Output with --json:
  {"vessels": [{
    "vessel_id": "…",
    "active": {"snapshot_id": "…", "revision": N, "discovered_at": "TIME"},
    "last_outcome": {"snapshot_id": "…", "revision": N,
                     "outcome": "activated", "reason": ""},
    "usage": {"incomplete_snapshots": {"used": U, "limit": L, "fraction": F},
              "incomplete_bytes": {…}, "retained_snapshots": {…},
              "retained_bytes": {…}, "highest": F},
    "superseded_by_active": K,
    "snapshots": [{"snapshot_id": "…", "revision": N, "state": "staging",
                   "outcome": "", "reason": "", "chunk_count": C,
                   "record_count": R, "chunks_staged": S, "staged_bytes": B,
                   "missing_manifest": false, "missing_chunks": [1, 2],
                   "complete": false}]}]}
active is null before the first activation and last_outcome when nothing
was finalized (or all was pruned). state is staging, activated, superseded
or rejected; outcome, "" while staging, is the outcome that finalized the
snapshot (activated, already_active, superseded or rejected) and reason
why it was rejected or which snapshot superseded it. superseded_by_active
counts the snapshots the active one superseded since it was activated;
one may be a cycle that arrived late, a growing count is a vessel whose
revisions went backwards. chunk_count and record_count are 0 until the
manifest is staged; missing_chunks is known only then; complete means
nothing is missing, so that reconcile finalizes it. fraction is used over
limit.

Exit status: 0; 1 when the store fails; 2 usage error.
`,
	run: runStatus,
}

var reconcileCommand = &command{
	name:     "reconcile",
	synopsis: "--store memory|sqlite:FILE|mysql:DSN [--vessel UUID] [--json]",
	summary:  "finalize every complete staged snapshot",
	help: helpText("reconcile") + storeHelp + `  --vessel UUID  one vessel (default: every vessel with staging work)

Output: a line per outcome,
  vessel V: revision N snapshot S: activated; active revision N
or "vessel V: nothing to finalize", and "vessel V: error: …" for a vessel
whose reconciliation failed (the others go on). With --json:
  {"vessels": [{"vessel_id": "…", "outcomes": [{"snapshot_id": "…",
     "revision": N, "outcome": "activated", "reason": "",
     "active_snapshot_id": "…", "active_revision": N}], "error": ""}]}
outcome is activated, already_active, superseded or rejected (reason
then says why); active_snapshot_id is null while nothing is active;
error is "" unless the vessel's reconciliation failed.

Exit status: 0, rejected snapshots included; 1 when a vessel's
reconciliation failed (a store failure, a full retained bound) or the
store fails; 2 usage error.
`,
	run: runReconcile,
}

var discardCommand = &command{
	name:     "discard",
	synopsis: "--store memory|sqlite:FILE|mysql:DSN --vessel UUID --snapshot UUID [--json]",
	summary:  "remove one staged snapshot, never the active one",
	help: helpText("discard") + storeHelp + `  --vessel UUID    the vessel
  --snapshot UUID  the snapshot to remove

Output: "discarded: vessel V snapshot S (revision N, STATE)", or
"nothing to discard: …". With --json:
  {"vessel_id": "…", "snapshot_id": "…", "discarded": true,
   "revision": N, "state": "staging"}
revision and state are the snapshot's before it was removed (0 and ""
when it was not there).

Exit status: 0 discarded or not there; 1 the active snapshot (nothing
removed, nothing printed on standard output) or the store fails; 2 usage
error.
`,
	run: runDiscard,
}

var pruneCommand = &command{
	name:     "prune",
	synopsis: "--store memory|sqlite:FILE|mysql:DSN (--vessel UUID | --all) --keep N [--json]",
	summary:  "remove finalized snapshots beyond the newest N",
	help: helpText("prune") + storeHelp + `  --vessel UUID  the vessel to prune
  --all          prune every vessel the store lists instead
  --keep N       how many finalized snapshots to keep: digits, 0 to
                 1000000 (0 keeps only the active one)

Output: "vessel V: pruned K snapshots (revisions …), R retained". With
--json:
  {"keep": N, "vessels": [{"vessel_id": "…", "pruned": [{"snapshot_id":
     "…", "revision": N, "state": "superseded"}], "retained": R,
     "error": ""}]}
retained counts the finalized snapshots left; error is "" unless pruning
that vessel failed (the others go on).

Exit status: 0; 1 when pruning a vessel failed or the store fails; 2
usage error.
`,
	run: runPrune,
}

// operatorFlags are the flags every operator command takes.
type operatorFlags struct {
	store  storeFlag
	asJSON boolFlag
	vessel uuidFlag
	// readOnly: the command only reads the store (status).
	readOnly bool
}

// parse parses the operator command's flags, those of fs included, and
// checks the common ones.
func (f *operatorFlags) parse(e *env, c *command, fs *flag.FlagSet, args []string) (int, bool) {
	f.vessel.check = notNil
	fs.Var(&f.store, "store", "")
	fs.Var(&f.asJSON, "json", "")
	fs.Var(&f.vessel, "vessel", "")
	operands, status, ok := c.parse(e, fs, args)
	switch {
	case !ok:
		return status, false
	case len(operands) > 0:
		return c.usageError(e, "unexpected argument %q: %s takes no arguments", operands[0], c.name), false
	case f.store.kind == "":
		return c.usageError(e, "--store is required"), false
	}
	return 0, true
}

// run runs fn on a Receiver over the store.
func (f *operatorFlags) run(e *env, c *command, fn func(context.Context, *finalize.Receiver) int) int {
	return withStores(e, c, &f.store, storeOptions{readOnly: f.readOnly}, func(ctx context.Context, st *stores) int {
		return fn(ctx, finalize.NewReceiver(st.receiver))
	})
}

// vessels returns the vessel --vessel names, or the store's.
func (f *operatorFlags) vessels(ctx context.Context, r *finalize.Receiver, staging bool) ([]uuid.UUID, error) {
	if f.vessel.set {
		return []uuid.UUID{f.vessel.id}, nil
	}
	return r.Vessels(ctx, staging)
}

// report writes out as JSON with --json, or prints it; then, when failed
// vessels failed, it fails with failure, whose one %s is their number.
func (f *operatorFlags) report(e *env, c *command, out any, show func(), failed int, failure string) int {
	status := exitOK
	if f.asJSON.on {
		status = writeJSON(e, c, out)
	} else {
		show()
	}
	if failed > 0 {
		return c.failf(e, failure, plural(failed, "vessel"))
	}
	return status
}

// ---------------------------------------------------------------------------
// status

func runStatus(e *env, c *command, args []string) int {
	f := operatorFlags{readOnly: true}
	if status, ok := f.parse(e, c, flag.NewFlagSet(c.name, flag.ContinueOnError), args); !ok {
		return status
	}
	return f.run(e, c, func(ctx context.Context, r *finalize.Receiver) int {
		ids, err := f.vessels(ctx, r, false)
		if err != nil {
			return c.failf(e, "listing the vessels: %v", err)
		}
		out := statusJSON{Vessels: []vesselJSON{}}
		for _, id := range ids {
			st, err := r.Status(ctx, id)
			if err != nil {
				return c.failf(e, "vessel %s: %v", id, err)
			}
			out.Vessels = append(out.Vessels, vesselOf(st))
		}
		if f.asJSON.on {
			return writeJSON(e, c, out)
		}
		printStatus(e, out)
		return exitOK
	})
}

// ---------------------------------------------------------------------------
// reconcile

func runReconcile(e *env, c *command, args []string) int {
	var f operatorFlags
	if status, ok := f.parse(e, c, flag.NewFlagSet(c.name, flag.ContinueOnError), args); !ok {
		return status
	}
	return f.run(e, c, func(ctx context.Context, r *finalize.Receiver) int {
		ids, err := f.vessels(ctx, r, true)
		if err != nil {
			return c.failf(e, "listing the vessels: %v", err)
		}
		out := reconcileJSON{Vessels: []reconciledJSON{}}
		failed := 0
		for _, id := range ids {
			outs, err := r.Reconcile(ctx, id)
			v := reconciledJSON{VesselID: id, Outcomes: []outcomeJSON{}}
			for _, o := range outs {
				v.Outcomes = append(v.Outcomes, outcomeOf(o))
			}
			if err != nil {
				v.Error = err.Error()
				failed++
			}
			out.Vessels = append(out.Vessels, v)
		}
		return f.report(e, c, out, func() { printReconcile(e, out) }, failed, "the reconciliation of %s failed")
	})
}

func printReconcile(e *env, out reconcileJSON) {
	if len(out.Vessels) == 0 {
		fmt.Fprintln(e.stdout, "no vessel has staging work")
	}
	for _, v := range out.Vessels {
		if len(v.Outcomes) == 0 && v.Error == "" {
			fmt.Fprintf(e.stdout, "vessel %s: nothing to finalize\n", v.VesselID)
		}
		for _, o := range v.Outcomes {
			fmt.Fprintf(e.stdout, "vessel %s: revision %d snapshot %s: %s", v.VesselID, o.Revision, o.SnapshotID, o.Outcome)
			if o.Reason != "" {
				fmt.Fprintf(e.stdout, " (%s)", o.Reason)
			}
			if o.ActiveSnapshotID != nil {
				fmt.Fprintf(e.stdout, "; active revision %d", o.ActiveRevision)
			}
			fmt.Fprintln(e.stdout)
		}
		if v.Error != "" {
			fmt.Fprintf(e.stdout, "vessel %s: error: %s\n", v.VesselID, v.Error)
		}
	}
}

// ---------------------------------------------------------------------------
// discard

func runDiscard(e *env, c *command, args []string) int {
	var f operatorFlags
	snapshot := uuidFlag{check: notNil}
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.Var(&snapshot, "snapshot", "")
	if status, ok := f.parse(e, c, fs, args); !ok {
		return status
	}
	switch {
	case !f.vessel.set:
		return c.usageError(e, "--vessel is required")
	case !snapshot.set:
		return c.usageError(e, "--snapshot is required")
	}
	return f.run(e, c, func(ctx context.Context, r *finalize.Receiver) int {
		st, err := r.Status(ctx, f.vessel.id)
		if err != nil {
			return c.failf(e, "vessel %s: %v", f.vessel.id, err)
		}
		out := discardJSON{VesselID: f.vessel.id, SnapshotID: snapshot.id}
		for _, s := range st.Snapshots {
			if s.ID == snapshot.id {
				out.Discarded, out.Revision, out.State = true, s.Revision, string(s.State)
			}
		}
		err = r.Discard(ctx, f.vessel.id, snapshot.id)
		switch {
		case errors.Is(err, finalize.ErrActiveSnapshot):
			return c.failf(e, "snapshot %s is the active snapshot of vessel %s (revision %d), which is never removed; nothing discarded",
				snapshot.id, f.vessel.id, st.Active.ActiveRevision)
		case err != nil:
			return c.failf(e, "vessel %s snapshot %s: %v", f.vessel.id, snapshot.id, err)
		case f.asJSON.on:
			return writeJSON(e, c, out)
		case out.Discarded:
			fmt.Fprintf(e.stdout, "discarded: vessel %s snapshot %s (revision %d, %s)\n", out.VesselID, out.SnapshotID, out.Revision, out.State)
		default:
			fmt.Fprintf(e.stdout, "nothing to discard: vessel %s has no snapshot %s staged\n", out.VesselID, out.SnapshotID)
		}
		return exitOK
	})
}

// ---------------------------------------------------------------------------
// prune

// maxKeep bounds prune's --keep.
const maxKeep = 1000000

func runPrune(e *env, c *command, args []string) int {
	var (
		f    operatorFlags
		all  boolFlag
		keep countFlag
	)
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.Var(&all, "all", "")
	fs.Var(&keep, "keep", "")
	if status, ok := f.parse(e, c, fs, args); !ok {
		return status
	}
	switch {
	case f.vessel.set == all.on:
		return c.usageError(e, "give --vessel UUID or --all, one of them")
	case !keep.set:
		return c.usageError(e, "--keep is required")
	}
	return f.run(e, c, func(ctx context.Context, r *finalize.Receiver) int {
		ids, err := f.vessels(ctx, r, false)
		if err != nil {
			return c.failf(e, "listing the vessels: %v", err)
		}
		out := pruneJSON{Keep: keep.n, Vessels: []prunedJSON{}}
		failed := 0
		for _, id := range ids {
			v := pruneVessel(ctx, r, id, keep.n)
			if v.Error != "" {
				failed++
			}
			out.Vessels = append(out.Vessels, v)
		}
		return f.report(e, c, out, func() { printPrune(e, out) }, failed, "pruning %s failed")
	})
}

// pruneVessel prunes one vessel and reports the finalized snapshots that
// are gone, comparing its status before and after.
func pruneVessel(ctx context.Context, r *finalize.Receiver, id uuid.UUID, keep int) prunedJSON {
	v := prunedJSON{VesselID: id, Pruned: []prunedSnapshotJSON{}}
	before, err := r.Status(ctx, id)
	if err == nil {
		err = r.Prune(ctx, id, keep)
	}
	var after finalize.VesselStatus
	if err == nil {
		after, err = r.Status(ctx, id)
	}
	if err != nil {
		v.Error = err.Error()
		return v
	}
	left := map[uuid.UUID]bool{}
	for _, s := range after.Snapshots {
		left[s.ID] = true
		if s.State != finalize.StateStaging {
			v.Retained++
		}
	}
	for _, s := range before.Snapshots {
		if s.State != finalize.StateStaging && !left[s.ID] {
			v.Pruned = append(v.Pruned, prunedSnapshotJSON{SnapshotID: s.ID, Revision: s.Revision, State: string(s.State)})
		}
	}
	return v
}

func printPrune(e *env, out pruneJSON) {
	if len(out.Vessels) == 0 {
		fmt.Fprintln(e.stdout, "no vessel to prune")
	}
	for _, v := range out.Vessels {
		if v.Error != "" {
			fmt.Fprintf(e.stdout, "vessel %s: error: %s\n", v.VesselID, v.Error)
			continue
		}
		revs := make([]string, len(v.Pruned))
		for i, s := range v.Pruned {
			revs[i] = strconv.FormatInt(s.Revision, 10)
		}
		fmt.Fprintf(e.stdout, "vessel %s: pruned %s", v.VesselID, plural(len(v.Pruned), "snapshot"))
		if len(revs) > 0 {
			fmt.Fprintf(e.stdout, " (revisions %s)", strings.Join(revs, ", "))
		}
		fmt.Fprintf(e.stdout, ", %d retained\n", v.Retained)
	}
}

// countFlag is a count: digits, 0 to maxKeep, given at most once.
type countFlag struct {
	n   int
	set bool
}

func (f *countFlag) String() string { return "" }
func (f *countFlag) Set(s string) error {
	if f.set {
		return errTwice
	}
	n, err := strconv.Atoi(s)
	if !digits(s) || err != nil || n > maxKeep || (len(s) > 1 && s[0] == '0') {
		return fmt.Errorf("must be digits, 0 to %d", maxKeep)
	}
	f.n, f.set = n, true
	return nil
}
