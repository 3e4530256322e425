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
	synopsis: "--store sqlite:FILE|mysql:DSN --vessel UUID [--snapshot UUID] [--discovered-at TIME] [--json] RECORDS_FILE|-",
	summary:  "commit one discovery cycle to the on-board outbox",
	help: `Commit commits one discovery cycle to the on-board outbox (SPEC.md §7.4),
for a controller not written in Go: it reads a JSON array of records, as
build does, from RECORDS_FILE or from standard input for "-", and in one
store transaction allocates the vessel's next revision, builds the
snapshot, checks every entry against its digest and writes the manifest
and every chunk as pending outbox entries. Publish sends them.

The revision is floored by the clock (SPEC.md §2.4): it is the larger of
one more than the outbox's last revision and the discovery time
(--discovered-at, but never later than this computer's clock) in
milliseconds since 1970, so that a new, emptied or restored outbox file starts
above every revision the vessel sent before, as long as the clock has
moved on since. A revision is therefore a number such as 1777636800000.

A commit is all or nothing. Committing the same cycle again — the same
--snapshot and records that make the same document — writes nothing and
answers the revision and entries of the first commit (the retry of a
commit whose answer was lost); its discovery time is the first commit's.
The same --snapshot with records that make another document is refused
(exit 1, nothing written): start a new cycle, without --snapshot or with
a new id. A controller that retries must therefore pass --snapshot; it
is printed on every commit.

Flags (each at most once; flags and RECORDS_FILE in any order):
  --store STORE        the outbox: sqlite:FILE (created when absent; other
                       processes, such as a running publish, may share it)
                       or mysql:DSN (a github.com/go-sql-driver/mysql DSN
                       naming a database whose schema is current; run
                       serve --migrate once). memory is refused: nothing
                       would outlive the command
  --vessel UUID        the vessel_id: a lowercase 8-4-4-4-12 UUID, not nil
  --snapshot UUID      the snapshot_id: a lowercase random (version 4) UUID;
                       a new random one when absent
  --discovered-at TIME discovered_at_utc, spelled as for build (RFC 3339 in
                       UTC with "Z", such as 2026-05-01T12:00:00Z); default
                       the time commit runs, in UTC, to the millisecond:
                       the grain of the revision floor, so that a wiped
                       outbox committing again within the same second
                       still starts above the revision it sent before.
                       Pass the time the scan ran when it matters
  --json               print one JSON object instead of the text line

Output: one line,
  committed: vessel V snapshot S revision N: C chunks, R records, E outbox entries (P pending)
starting "already committed:" for a retry. With --json, one object:
  {"vessel_id": "…", "snapshot_id": "…", "revision": N,
   "discovered_at": "TIME", "chunk_count": C, "record_count": R,
   "document_sha256": "hex", "entries": E, "pending": P, "retried": false}
where entries counts the manifest and the chunks, pending those not yet
delivered, and retried is true for a retry.

Exit status: 0 committed (or already committed); 1 invalid records (each
problem reported with its record index), records that do not build, the
snapshot id committed with another document, or a store that fails — in
every case nothing was written; 2 usage error. Input is limited to 64 MiB.
`,
	run: runCommit,
}

func runCommit(e *env, c *command, args []string) int {
	var (
		store    storeFlag
		vessel   = uuidFlag{check: notNil}
		snapshot = uuidFlag{check: randomUUID}
		at       timeFlag
		asJSON   boolFlag
	)
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.Var(&store, "store", "")
	fs.Var(&vessel, "vessel", "")
	fs.Var(&snapshot, "snapshot", "")
	fs.Var(&at, "discovered-at", "")
	fs.Var(&asJSON, "json", "")
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
		cm, err := outbox.NewWriter(st.outbox).Commit(ctx, cycle)
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
