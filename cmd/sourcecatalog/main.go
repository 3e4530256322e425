// Command sourcecatalog canonicalises JSON, builds, verifies and inspects
// Source Catalog v2 snapshots (protocol yachtmemory.source-catalog.v2),
// runs the receiver as an HTTPS service, commits and publishes on board,
// answers an operator's questions, and runs the protocol end to end as a
// demo.
//
// Usage:
//
//	sourcecatalog canon [FILE]
//	sourcecatalog build --vessel UUID --revision N --discovered-at TIME [--snapshot UUID] --out DIR [RECORDS_FILE]
//	sourcecatalog verify HEADER_FILE CHUNKS_FILE
//	sourcecatalog inspect HEADER_FILE CHUNKS_FILE
//	sourcecatalog demo [--seed N] [--sqlite FILE] [--mysql DSN] [--http]
//	sourcecatalog serve --listen ADDR --store STORE --retain N|all --tls-cert FILE --tls-key FILE --client-ca FILE|--tokens FILE [FLAGS]
//	sourcecatalog discover --signalk URL [--signalk-token-file FILE] [--signalk-ca FILE] [--selection S] [--settle D]
//	sourcecatalog commit --store sqlite:FILE|mysql:DSN --vessel UUID [--snapshot UUID] [--discovered-at TIME] [--json] RECORDS_FILE|-
//	sourcecatalog publish --store sqlite:FILE|mysql:DSN --vessel UUID --url URL [--ca FILE] [--cert FILE --key FILE | --token-file FILE] [--receiver-v2[=auto]] [FLAGS]
//	sourcecatalog agent --signalk URL [SIGNALK FLAGS] --store sqlite:FILE|mysql:DSN --vessel UUID --url URL [PUBLISH FLAGS] [--interval D] [--log-format text|json]
//	sourcecatalog status|reconcile --store STORE [--vessel UUID] [--json]
//	sourcecatalog discard --store STORE --vessel UUID --snapshot UUID [--json]
//	sourcecatalog prune --store STORE (--vessel UUID | --all) --keep N [--json]
//	sourcecatalog help [COMMAND]
//
// canon writes the RFC 8785 canonical bytes of a JSON text, with no
// trailing newline. build reads a JSON array of records in any order and
// writes DIR/header.json (the manifest) and DIR/chunks.json (a JSON array of
// the chunks in index order, one chunk's canonical bytes per line), or
// nothing at all when any record, integrity rule or limit fails. verify
// checks that a header and a chunks file — chunks in any order, with any
// whitespace and member order — form one complete, valid snapshot; inspect
// summarises one. demo commits two discovery cycles of the example boat to
// an outbox (in memory, or in an SQLite file with --sqlite), publishes them
// over a simulated lossy link, or with --http over the HTTPS binding through
// a fault proxy, to a receiver (in memory, in the same SQLite file, or on
// MariaDB with --mysql), finalizes them and checks the final state; on an
// SQLite file a second run resumes what the first left and continues at
// the next revisions.
//
// serve runs the receiver over HTTPS (SPEC.md §11) on a STORE — memory,
// sqlite:FILE or mysql:DSN — with client-certificate or bearer-token
// authentication, a reconciler, /healthz and Prometheus /metrics. discover
// reads one discovery cycle from a Signal K server as records, commit puts
// one discovery cycle in an on-board outbox, publish posts the pending
// entries to a serve URL until they are delivered, and agent runs the three
// every interval as one long-running on-board process. status,
// reconcile, discard and prune are the operator's commands over any STORE.
//
// Every problem found is reported on standard error, one per line, with its
// location. The exit status is 0 on success, 1 when the input is invalid, a
// check fails or a file or standard output cannot be written, and 2 for a
// usage error.
package main

import (
	"embed"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/internal/demo"
	"github.com/yachtmemory/sourcecatalog/internal/files"
)

func main() {
	status := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	os.Exit(closeStdout(status, os.Stdout, os.Stderr))
}

// closeStdout closes standard output, where a file system may report a
// failed write only now, and returns the exit status: exitInvalid if that
// fails after a successful run.
func closeStdout(status int, stdout io.Closer, stderr io.Writer) int {
	if err := stdout.Close(); err != nil && status == exitOK {
		fmt.Fprintf(stderr, "sourcecatalog: writing standard output: %v\n", err)
		return exitInvalid
	}
	return status
}

// Exit statuses.
const (
	exitOK      = 0
	exitInvalid = 1 // invalid input, a failed check or an I/O error
	exitUsage   = 2
)

// env is what a command may touch besides its arguments.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer

	// afterStep is demo's crash-test hook (demo.Config.AfterStep); nil
	// except in the tests' child processes.
	afterStep func(demo.Step) error
}

// A command is one subcommand. run gets the arguments after the command
// name and returns the exit status.
type command struct {
	name     string
	synopsis string // the arguments, for usage lines
	summary  string // one line for the command list
	help     string // the details for `sourcecatalog help NAME`
	run      func(e *env, c *command, args []string) int
}

// commands is the dispatch table, in the order usage lists it.
var commands []*command

func init() {
	commands = []*command{
		canonCommand, buildCommand, verifyCommand, inspectCommand, demoCommand,
		serveCommand, discoverCommand, commitCommand, publishCommand, agentCommand,
		statusCommand, reconcileCommand, discardCommand, pruneCommand,
	}
}

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// run is the whole program: it dispatches args to a command and returns the
// exit status. Output that cannot be written to stdout is a failure: a
// command that would succeed reports it on stderr and exits exitInvalid.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	out := &checkedWriter{w: stdout}
	status := dispatch(&env{stdin: stdin, stdout: out, stderr: stderr}, args)
	if out.err != nil && status == exitOK {
		prefix := "sourcecatalog"
		if len(args) > 0 && lookup(args[0]) != nil {
			prefix += " " + args[0]
		}
		fmt.Fprintf(stderr, "%s: %v\n", prefix, out.err)
		status = exitInvalid
	}
	return status
}

// checkedWriter remembers the first error writing to w, prefixed "writing
// standard output"; every later write fails with it without writing.
type checkedWriter struct {
	w   io.Writer
	err error
}

func (c *checkedWriter) Write(b []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		c.err = fmt.Errorf("writing standard output: %w", err)
	}
	return n, c.err
}

// dispatch runs the command args name and returns the exit status.
func dispatch(e *env, args []string) int {
	stdout, stderr := e.stdout, e.stderr
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch name := args[0]; name {
	case "-h", "-help", "--help", "help":
		if len(args) == 1 {
			usage(stdout)
			return exitOK
		}
		c := lookup(args[1])
		if c == nil || len(args) > 2 {
			if c == nil {
				fmt.Fprintf(stderr, "sourcecatalog help: unknown command %q\n", args[1])
			} else {
				fmt.Fprintf(stderr, "sourcecatalog help: unexpected argument %q: one COMMAND at most\n", args[2])
			}
			usage(stderr)
			return exitUsage
		}
		c.usage(stdout)
		return exitOK
	default:
		c := lookup(name)
		if c == nil {
			fmt.Fprintf(stderr, "sourcecatalog: unknown command %q\n", name)
			usage(stderr)
			return exitUsage
		}
		return c.run(e, c, args[1:])
	}
}

func usage(w io.Writer) {
	var b strings.Builder
	b.WriteString("sourcecatalog: canonical JSON and Source Catalog v2 snapshots (" + sourcecatalog.Protocol + ")\n\nUsage:\n")
	for _, c := range commands {
		b.WriteString("  sourcecatalog " + c.name + " " + c.synopsis + "\n")
	}
	b.WriteString("  sourcecatalog help [COMMAND]\n\nCommands:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-10s %s\n", c.name, c.summary)
	}
	b.WriteString(`
Problems are reported on standard error, one per line, with their location.
Exit status: 0 success, 1 invalid input, a failed check or an I/O error, 2 usage error.
Run 'sourcecatalog help COMMAND' for the details of a command.
`)
	io.WriteString(w, b.String())
}

func (c *command) usage(w io.Writer) {
	fmt.Fprintf(w, "Usage: sourcecatalog %s %s\n\n%s", c.name, c.synopsis, c.help)
}

// usageError reports a command line error and returns exitUsage.
func (c *command) usageError(e *env, format string, args ...any) int {
	fmt.Fprintf(e.stderr, "sourcecatalog %s: %s\n", c.name, fmt.Sprintf(format, args...))
	fmt.Fprintf(e.stderr, "Usage: sourcecatalog %s %s\nRun 'sourcecatalog help %s' for details.\n", c.name, c.synopsis, c.name)
	return exitUsage
}

// failf reports a failure that is not a list of problems and returns
// exitInvalid.
func (c *command) failf(e *env, format string, args ...any) int {
	fmt.Fprintf(e.stderr, "sourcecatalog %s: %s\n", c.name, fmt.Sprintf(format, args...))
	return exitInvalid
}

// problems reports every problem err carries, one per line, then a summary
// line ending in outcome, and returns exitInvalid.
func (c *command) problems(e *env, err error, outcome string) int {
	ps := sourcecatalog.Problems(err)
	for _, p := range ps {
		fmt.Fprintf(e.stderr, "sourcecatalog %s: %s\n", c.name, located(p))
	}
	fmt.Fprintf(e.stderr, "sourcecatalog %s: %s: %s\n", c.name, plural(len(ps), "problem"), outcome)
	return exitInvalid
}

// located renders err without the "sourcecatalog: " prefix of its Error
// text: for a problem, its location, class and detail.
func located(err error) string {
	return strings.TrimPrefix(err.Error(), "sourcecatalog: ")
}

// plural renders n with a noun: "1 chunk", "3 chunks".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// parse parses flags and operands in any order, looking the flags up in
// fs; "--" ends the flags. A flag is spelled --name VALUE or --name=VALUE
// (one leading dash works too), a boolean flag --name alone. It returns
// the operands, or the exit status when parsing ended the command: exitOK
// after -h or --help, which printed the help, and exitUsage after an
// error, which was reported naming the flag as --name. Errors never echo a flag's value, which may be a secret
// (the password in a DSN).
func (c *command) parse(e *env, fs *flag.FlagSet, args []string) ([]string, int, bool) {
	var operands []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			return append(operands, args[i+1:]...), 0, true
		}
		if len(arg) < 2 || arg[0] != '-' {
			operands = append(operands, arg)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(arg[1:], "-"), "=")
		if name == "h" || name == "help" {
			c.usage(e.stdout)
			return nil, exitOK, false
		}
		f := fs.Lookup(name)
		if f == nil || strings.HasPrefix(name, "-") {
			spelled, _, _ := strings.Cut(arg, "=")
			return nil, c.usageError(e, "unknown flag %q", spelled), false
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			// A flag with an optional value (--receiver-v2[=auto]) takes
			// one only after =.
			if _, optional := f.Value.(interface{ optionalValue() }); hasValue && !optional {
				return nil, c.usageError(e, "--%s takes no value", name), false
			}
			if !hasValue {
				value, hasValue = "true", true
			}
		}
		if !hasValue {
			if i+1 == len(args) {
				return nil, c.usageError(e, "--%s needs a value", name), false
			}
			i++
			value = args[i]
		}
		if err := f.Value.Set(value); err != nil {
			return nil, c.usageError(e, "--%s %v", name, err), false
		}
	}
	return operands, 0, true
}

// readInput reads the file named by the only operand, or standard input
// when there is none or it is "-". It returns the data and a name for
// messages.
func readInput(e *env, operands []string) ([]byte, string, error) {
	if len(operands) == 0 || operands[0] == "-" {
		b, err := files.ReadAll(e.stdin)
		if err != nil {
			return nil, "", fmt.Errorf("standard input: %w", err)
		}
		return b, "standard input", nil
	}
	b, err := files.ReadFile(operands[0])
	return b, operands[0], err
}

// recordProblemsCap bounds the record problems build reports.
const recordProblemsCap = catalog.MaxProblems

// helpFiles are the commands' help texts, one help/NAME.txt each: the
// details `sourcecatalog help NAME` prints after the usage line.
//
//go:embed help/*.txt
var helpFiles embed.FS

// helpText returns the text of help/NAME.txt. A command without one is a
// bug in the program, caught by every test that runs it: it panics.
func helpText(name string) string {
	b, err := helpFiles.ReadFile("help/" + name + ".txt")
	if err != nil {
		panic(err)
	}
	return string(b)
}
