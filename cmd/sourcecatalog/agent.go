package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"os/signal"
	"syscall"

	"github.com/yachtmemory/sourcecatalog/agent"
	"github.com/yachtmemory/sourcecatalog/receiver"
)

var agentCommand = &command{
	name: "agent",
	synopsis: "--signalk URL [--signalk-token-file FILE] [--signalk-ca FILE] [--selection S] [--settle D] " +
		"--store sqlite:FILE|mysql:DSN --vessel UUID --url URL [--ca FILE] [--cert FILE --key FILE | --token-file FILE] " +
		"[--receiver-v2[=auto|off]] [--timeout D] [--interval D] [--log-format text|json]",
	summary: "run the on-board loop: discover, commit, publish, every interval",
	help: `Agent is the on-board controller as one long-running process (package
agent): at start and then every --interval it reads a discovery cycle from
the Signal K server (as discover does), commits it to the outbox (as commit
does) and publishes the pending entries to the receiver (as publish does).

- A scan is trusted once the server has run for --settle as the agent has
  seen it: the first scan after the agent or the server starts is told so,
  and the agent scans again when the settle time has passed. A scan that
  fails otherwise commits nothing and is tried again at the next interval.
- A commit the store cannot serve is tried again, with the same snapshot
  id, after 1 s, doubling up to 30 s, until it lands; no scan runs
  meanwhile. A commit refused for its records is dropped. A store that a
  failure poisons (an I/O error or a full disk under SQLite, a connection
  lost to MariaDB) is closed and opened again, as serve's is.
- Publishing runs between the other steps while entries are pending, with
  publish's backoff, and never holds up the next scan. A receiver that
  refuses the credentials (401) or the vessel (403), or TLS verification
  that fails, is logged as an error and tried again after the next commit.
  By default the agent reads the receiver's capability declaration (a
  GET on --url, SPEC.md §11.7) at each cycle's publishing step and sends
  only while it declares protocol v2 (SPEC.md §7.5), gzipping and
  sending chunk references as the declaration allows: a receiver that
  answers none (the installed v1 receiver) or a declaration that does
  not decode keeps the gate off until a later cycle finds v2 declared;
  cycles are committed and wait in the outbox, and each says so in the
  log. --receiver-v2 declares the receiver v2-capable instead (bodies
  whole and uncompressed); --receiver-v2=off sends nothing. Each
  change of the declaration is logged ("receiver declaration", then
  "receiver declaration changed" with declared and previous); one that
  cannot be read for now is asked again with the backoff.

SIGINT or SIGTERM stops the agent after the current step: a scan or a
request in flight is cut (nothing committed, the entry stays pending), a
commit in progress completes.

Flags (each at most once), as for discover and publish:
  --signalk URL              the Signal K server, http or https
  --signalk-token-file FILE  a bearer token for the Signal K server (its
                             first line), sent to that server only
  --signalk-ca FILE          the CAs of an https Signal K server
  --selection S              lowest-ref (default) or server: the source of
                             a path several live sources feed (see discover)
  --settle D                 the settle time (default 2m)
  --store STORE              the outbox: sqlite:FILE or mysql:DSN (memory is
                             refused)
  --vessel UUID              the vessel
  --url URL                  the receiver's https URL
  --ca FILE                  the CAs of the receiver's certificate (default:
                             the system's roots)
  --cert FILE                the vessel's client certificate, with --key
  --key FILE                 its private key
  --token-file FILE          the vessel's bearer token, instead of --cert
  --receiver-v2=auto         the gate is on while the receiver declares v2
                             (the default)
  --receiver-v2              declare the receiver v2-capable: the
                             capability gate is on
  --receiver-v2=off          the gate is off: nothing is sent
  --timeout D                bounds one request to the receiver (default 2m)
  --interval D               the time between two scans' starts (default 15m)
  --log-format F             text (default) or json: slog records on
                             standard error

Log: a record per step, with the vessel_id. "cycle committed" gives the
snapshot_id, revision, entries, the paths, sources and observations found,
the document_sha256, and changed: whether the document differs from the
previous cycle's (true for the agent's first; previous_document_sha256
names the other). "published" and "published in part" give the outcome,
passes, sent, delivered, already_received and failed entries, the
entries referenced, bytes_sent and bytes_uncompressed, and the last
failure; a scan waiting for the server to settle is INFO, other failures
WARN, those an operator must mend ERROR.

Exit status: 0 after SIGINT or SIGTERM; 1 when a file of the flags cannot
be read or the store cannot be opened (or written: it is probed at start);
2 usage error.
`,
	run: runAgent,
}

func runAgent(e *env, c *command, args []string) int {
	pf, sf := newPublishFlags(), newSignalkFlags()
	interval := durationFlag{d: agent.DefaultInterval}
	var logFormat logFormatFlag
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	pf.register(fs)
	sf.register(fs)
	fs.Var(&interval, "interval", "")
	fs.Var(&logFormat, "log-format", "")
	operands, status, ok := c.parse(e, fs, args)
	if !ok {
		return status
	}
	if msg := sf.check(); msg != "" {
		return c.usageError(e, "%s", msg)
	}
	if msg := pf.check(c.name, operands); msg != "" {
		return c.usageError(e, "%s", msg)
	}
	discoverer, err := sf.client()
	if err != nil {
		return c.failf(e, "%v", err)
	}
	logger := logFormat.logger(e.stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A long-running process: the outbox heals itself after a failure
	// that poisons it, as serve's store does.
	st, _, err := pf.store.openHealing(ctx, storeOptions{outbox: true}, receiver.Log{Logger: logger}.Store)
	if err != nil {
		return c.failf(e, "opening the store: %v", err)
	}
	cfg := pf.config(st.outbox)
	cfg.Discoverer, cfg.Interval, cfg.Logger = discoverer, interval.d, logger
	a, err := agent.New(cfg)
	if err != nil {
		err = errors.New(configErr(err))
	} else {
		err = a.Run(ctx)
		a.Close()
	}
	if cerr := st.close(); cerr != nil && err == nil {
		return c.failf(e, "closing %s: %v", st.name, cerr)
	}
	if err != nil {
		return c.failf(e, "%v", err)
	}
	return exitOK
}
