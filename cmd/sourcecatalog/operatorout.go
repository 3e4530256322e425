package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
)

// The --json documents of the operator commands, as their help describes
// them. Lists are [] rather than null when empty.

type statusJSON struct {
	Vessels []vesselJSON `json:"vessels"`
}

type vesselJSON struct {
	VesselID    uuid.UUID   `json:"vessel_id"`
	Active      *activeJSON `json:"active"`       // null before the first activation
	LastOutcome *lastJSON   `json:"last_outcome"` // null when nothing was finalized
	Usage       usageJSON   `json:"usage"`
	// SupersededByActive counts the snapshots the active one superseded
	// since it was activated (finalize.VesselStatus.SupersededByActive).
	SupersededByActive int            `json:"superseded_by_active"`
	Snapshots          []snapshotJSON `json:"snapshots"`
}

type activeJSON struct {
	SnapshotID   uuid.UUID `json:"snapshot_id"`
	Revision     int64     `json:"revision"`
	DiscoveredAt string    `json:"discovered_at"`
}

type lastJSON struct {
	SnapshotID uuid.UUID `json:"snapshot_id"`
	Revision   int64     `json:"revision"`
	Outcome    string    `json:"outcome"`
	Reason     string    `json:"reason"`
}

type usageJSON struct {
	IncompleteSnapshots gaugeJSON `json:"incomplete_snapshots"`
	IncompleteBytes     gaugeJSON `json:"incomplete_bytes"`
	RetainedSnapshots   gaugeJSON `json:"retained_snapshots"`
	RetainedBytes       gaugeJSON `json:"retained_bytes"`
	Highest             float64   `json:"highest"`
}

type gaugeJSON struct {
	Used     int64   `json:"used"`
	Limit    int64   `json:"limit"`
	Fraction float64 `json:"fraction"`
}

type snapshotJSON struct {
	SnapshotID      uuid.UUID `json:"snapshot_id"`
	Revision        int64     `json:"revision"`
	State           string    `json:"state"`
	Outcome         string    `json:"outcome"`
	Reason          string    `json:"reason"`
	ChunkCount      int       `json:"chunk_count"`
	RecordCount     int       `json:"record_count"`
	ChunksStaged    int       `json:"chunks_staged"`
	StagedBytes     int64     `json:"staged_bytes"`
	MissingManifest bool      `json:"missing_manifest"`
	MissingChunks   []int     `json:"missing_chunks"`
	Complete        bool      `json:"complete"`
}

type reconcileJSON struct {
	Vessels []reconciledJSON `json:"vessels"`
}

type reconciledJSON struct {
	VesselID uuid.UUID     `json:"vessel_id"`
	Outcomes []outcomeJSON `json:"outcomes"`
	Error    string        `json:"error"`
}

type outcomeJSON struct {
	SnapshotID       uuid.UUID  `json:"snapshot_id"`
	Revision         int64      `json:"revision"`
	Outcome          string     `json:"outcome"`
	Reason           string     `json:"reason"`
	ActiveSnapshotID *uuid.UUID `json:"active_snapshot_id"` // null while nothing is active
	ActiveRevision   int64      `json:"active_revision"`
}

type discardJSON struct {
	VesselID   uuid.UUID `json:"vessel_id"`
	SnapshotID uuid.UUID `json:"snapshot_id"`
	Discarded  bool      `json:"discarded"`
	Revision   int64     `json:"revision"`
	State      string    `json:"state"`
}

type pruneJSON struct {
	Keep    int          `json:"keep"`
	Vessels []prunedJSON `json:"vessels"`
}

type prunedJSON struct {
	VesselID uuid.UUID            `json:"vessel_id"`
	Pruned   []prunedSnapshotJSON `json:"pruned"`
	Retained int                  `json:"retained"`
	Error    string               `json:"error"`
}

type prunedSnapshotJSON struct {
	SnapshotID uuid.UUID `json:"snapshot_id"`
	Revision   int64     `json:"revision"`
	State      string    `json:"state"`
}

// vesselOf renders a vessel's status.
func vesselOf(st finalize.VesselStatus) vesselJSON {
	v := vesselJSON{VesselID: st.VesselID, Usage: usageOf(st.Usage), SupersededByActive: st.SupersededByActive, Snapshots: []snapshotJSON{}}
	if a := st.Active; a.ActiveSnapshot != uuid.Nil {
		v.Active = &activeJSON{SnapshotID: a.ActiveSnapshot, Revision: a.ActiveRevision, DiscoveredAt: envelope.FormatTime(a.ActiveDiscoveredAt)}
	}
	if last, ok := st.LastFinalized(); ok {
		v.LastOutcome = &lastJSON{SnapshotID: last.ID, Revision: last.Revision, Outcome: string(last.Final), Reason: last.Reason}
	}
	for _, s := range st.Snapshots {
		missing := s.MissingChunks
		if missing == nil {
			missing = []int{}
		}
		v.Snapshots = append(v.Snapshots, snapshotJSON{
			SnapshotID: s.ID, Revision: s.Revision, State: string(s.State), Outcome: string(s.Final), Reason: s.Reason,
			ChunkCount: s.ChunkCount, RecordCount: s.RecordCount, ChunksStaged: s.ChunksStaged, StagedBytes: s.StagedBytes,
			MissingManifest: s.MissingManifest, MissingChunks: missing, Complete: s.Complete,
		})
	}
	return v
}

func usageOf(u finalize.Usage) usageJSON {
	g := func(g finalize.Gauge) gaugeJSON {
		return gaugeJSON{Used: g.Used, Limit: g.Limit, Fraction: g.Fraction()}
	}
	return usageJSON{
		IncompleteSnapshots: g(u.IncompleteSnapshots), IncompleteBytes: g(u.IncompleteBytes),
		RetainedSnapshots: g(u.RetainedSnapshots), RetainedBytes: g(u.RetainedBytes),
		Highest: u.Highest(),
	}
}

// outcomeOf renders an outcome of Reconcile.
func outcomeOf(o finalize.Outcome) outcomeJSON {
	out := outcomeJSON{SnapshotID: o.SnapshotID, Revision: o.Revision, Outcome: string(o.Status), ActiveRevision: o.ActiveRevision}
	if o.Err != nil {
		out.Reason = o.Err.Error()
	}
	if o.ActiveSnapshot != uuid.Nil {
		id := o.ActiveSnapshot
		out.ActiveSnapshotID = &id
	}
	return out
}

func printStatus(e *env, out statusJSON) {
	if len(out.Vessels) == 0 {
		fmt.Fprintln(e.stdout, "no vessel has a staged or an active snapshot")
	}
	var b strings.Builder
	for _, v := range out.Vessels {
		fmt.Fprintf(&b, "vessel %s\n", v.VesselID)
		if a := v.Active; a != nil {
			fmt.Fprintf(&b, "  active:       revision %d, snapshot %s, discovered %s\n", a.Revision, a.SnapshotID, a.DiscoveredAt)
		} else {
			b.WriteString("  active:       none\n")
		}
		if l := v.LastOutcome; l != nil {
			fmt.Fprintf(&b, "  last outcome: revision %d, snapshot %s: %s%s\n", l.Revision, l.SnapshotID, l.Outcome, reason(l.Reason))
		} else {
			b.WriteString("  last outcome: none\n")
		}
		if n := v.SupersededByActive; n > 0 {
			fmt.Fprintf(&b, "  warning:      %s superseded by the active revision since it was activated: "+
				"while this grows, the vessel sends revisions below one it sent before (a lost or restored on-board store, SPEC.md §2.4, §8.4)\n",
				plural(n, "snapshot"))
		}
		b.WriteString("  usage of finalize.DefaultLimits:\n")
		for _, g := range []struct {
			name string
			g    gaugeJSON
		}{
			{"incomplete snapshots", v.Usage.IncompleteSnapshots}, {"incomplete bytes", v.Usage.IncompleteBytes},
			{"retained snapshots", v.Usage.RetainedSnapshots}, {"retained bytes", v.Usage.RetainedBytes},
		} {
			fmt.Fprintf(&b, "    %-20s %10d of %-10d %5.1f%%\n", g.name, g.g.Used, g.g.Limit, 100*g.g.Fraction)
		}
		fmt.Fprintf(&b, "  snapshots: %d staged\n", len(v.Snapshots))
		for _, s := range v.Snapshots {
			fmt.Fprintf(&b, "    revision %d snapshot %s: %s\n", s.Revision, s.SnapshotID, describe(s))
		}
	}
	fmt.Fprint(e.stdout, b.String())
}

// describe renders a staged snapshot's state on one line.
func describe(s snapshotJSON) string {
	if s.State != string(finalize.StateStaging) {
		if s.Outcome != s.State {
			return fmt.Sprintf("%s (finalized %s)%s", s.State, s.Outcome, reason(s.Reason))
		}
		return s.State + reason(s.Reason)
	}
	var parts []string
	switch {
	case s.MissingManifest:
		parts = append(parts, fmt.Sprintf("manifest missing, %s staged", plural(s.ChunksStaged, "chunk")))
	default:
		parts = append(parts, fmt.Sprintf("%d of %s staged", s.ChunksStaged, plural(s.ChunkCount, "chunk")))
	}
	parts = append(parts, plural(int(s.StagedBytes), "byte"))
	if len(s.MissingChunks) > 0 {
		parts = append(parts, "missing chunks "+ranges(s.MissingChunks))
	}
	if s.Complete {
		parts = append(parts, "complete: reconcile finalizes it")
	}
	return "staging, " + strings.Join(parts, ", ")
}

func reason(r string) string {
	if r == "" {
		return ""
	}
	return ": " + r
}

// ranges renders sorted indexes compactly: "0-3, 5, 7-8".
func ranges(idx []int) string {
	var parts []string
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		part := strconv.Itoa(idx[i])
		if j > i {
			part += "-" + strconv.Itoa(idx[j])
		}
		parts = append(parts, part)
		i = j + 1
	}
	return strings.Join(parts, ", ")
}
