package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

var commitCommand = &command{
	name:     "commit",
	synopsis: "--store sqlite:FILE|mysql:DSN --vessel UUID [--snapshot UUID] [--discovered-at TIME] [--cut greedy|content-defined] [--json] RECORDS_FILE|-",
	summary:  "commit one discovery cycle to the on-board outbox",
	help:     helpText("commit"),
	run:      runCommit,
}

func runCommit(e *env, c *command, args []string) int {
	var (
		store    storeFlag
		vessel   = uuidFlag{check: notNil}
		snapshot = uuidFlag{check: randomUUID}
		at       timeFlag
		asJSON   boolFlag
		cut      cutFlag
	)
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.Var(&store, "store", "")
	fs.Var(&vessel, "vessel", "")
	fs.Var(&snapshot, "snapshot", "")
	fs.Var(&at, "discovered-at", "")
	fs.Var(&asJSON, "json", "")
	fs.Var(&cut, "cut", "")
	operands, status, ok := c.parse(e, fs, args)
	if !ok {
		return status
	}
	switch {
	case store.kind == "":
		return c.usageError(e, "--store is required")
	case store.kind == "memory":
		return c.usageError(e, "--store memory keeps no outbox across runs: use sqlite:FILE or mysql:DSN")
	case !vessel.set:
		return c.usageError(e, "--vessel is required")
	case len(operands) == 0:
		return c.usageError(e, `RECORDS_FILE is required ("-" for standard input)`)
	case len(operands) > 1:
		return c.usageError(e, "unexpected argument %q: one RECORDS_FILE", operands[1])
	}
	in, name, err := readInput(e, operands)
	if err != nil {
		return c.failf(e, "%v", err)
	}
	records, err := decodeRecords(in)
	if err != nil {
		return c.problems(e, err, name+" holds invalid records; nothing committed")
	}
	if !at.set {
		at.t = time.Now().UTC().Truncate(time.Millisecond)
	}
	cycle := outbox.NewCycle(vessel.id, at.t, records)
	if snapshot.set {
		cycle.SnapshotID = snapshot.id
	}
	return withStores(e, c, &store, storeOptions{outbox: true}, func(ctx context.Context, st *stores) int {
		cm, err := outbox.NewWriter(st.outbox, outbox.WithBuildOptions(cut.options()...)).Commit(ctx, cycle)
		switch {
		case errors.Is(err, sourcecatalog.ErrConflict):
			return c.failf(e, "snapshot %s was committed before with records that make another document; nothing written: commit a new cycle (a new --snapshot, or none)", cycle.SnapshotID)
		case errors.Is(err, sourcecatalog.ErrStoreUnavailable):
			return c.failf(e, "%s: %v; nothing committed", st.name, err)
		case err != nil:
			return c.problems(e, err, "nothing committed")
		}
		return printCommit(e, c, cm, asJSON.on)
	})
}

// commitJSON is commit's --json output.
type commitJSON struct {
	VesselID       uuid.UUID `json:"vessel_id"`
	SnapshotID     uuid.UUID `json:"snapshot_id"`
	Revision       int64     `json:"revision"`
	DiscoveredAt   string    `json:"discovered_at"`
	ChunkCount     int       `json:"chunk_count"`
	RecordCount    int       `json:"record_count"`
	DocumentSHA256 string    `json:"document_sha256"`
	Entries        int       `json:"entries"`
	Pending        int       `json:"pending"`
	Retried        bool      `json:"retried"`
}

func printCommit(e *env, c *command, cm outbox.Commit, asJSON bool) int {
	m, err := envelope.DecodeManifest(cm.Entries[0].Payload)
	if err != nil {
		return c.failf(e, "the committed manifest does not decode: %v", err)
	}
	out := commitJSON{
		VesselID: m.VesselID, SnapshotID: m.SnapshotID, Revision: m.Revision,
		DiscoveredAt: envelope.FormatTime(m.DiscoveredAt), ChunkCount: m.ChunkCount, RecordCount: m.RecordCount,
		DocumentSHA256: m.DocumentSHA256.String(), Entries: len(cm.Entries), Retried: cm.Retried,
	}
	for _, en := range cm.Entries {
		if en.State == outbox.Pending {
			out.Pending++
		}
	}
	if asJSON {
		return writeJSON(e, c, out)
	}
	verb := "committed"
	if cm.Retried {
		verb = "already committed"
	}
	fmt.Fprintf(e.stdout, "%s: vessel %s snapshot %s revision %d: %s, %s, %d outbox entries (%d pending)\n", verb,
		out.VesselID, out.SnapshotID, out.Revision, plural(out.ChunkCount, "chunk"), plural(out.RecordCount, "record"),
		out.Entries, out.Pending)
	return exitOK
}

// withStores opens the stores store names, runs fn on them with a context
// that an interrupt cancels, and closes them. A failure to close is a
// failure of a command that otherwise succeeded.
func withStores(e *env, c *command, store *storeFlag, opts storeOptions, fn func(context.Context, *stores) int) (status int) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	st, err := store.open(ctx, opts)
	if err != nil {
		return c.failf(e, "%v", err)
	}
	defer func() {
		if err := st.close(); err != nil && status == exitOK {
			status = c.failf(e, "closing %s: %v", st.name, err)
		}
	}()
	return fn(ctx, st)
}

// writeJSON writes v to standard output as one indented JSON document.
func writeJSON(e *env, c *command, v any) int {
	enc := json.NewEncoder(e.stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return c.failf(e, "%v", err)
	}
	return exitOK
}
