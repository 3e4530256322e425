package main

import (
	"flag"

	"github.com/yachtmemory/sourcecatalog/canonical"
)

var canonCommand = &command{
	name:     "canon",
	synopsis: "[FILE]",
	summary:  "write the RFC 8785 canonical form of a JSON text",
	help: `Canon reads one JSON text from FILE, or from standard input when FILE is
absent or "-", and writes exactly its RFC 8785 canonical bytes to standard
output, with no trailing newline.

The input must be strict JSON as package canonical defines it: no duplicate
member names, valid UTF-8 without lone surrogates, no byte-order mark, no
trailing content, at most 64 levels of nesting, and no number whose value
would change (1e400, 1e-400, 9007199254740993). Anything else is reported
with its byte offset, and the exit status is 1. Input is limited to 64 MiB.
`,
	run: runCanon,
}

func runCanon(e *env, c *command, args []string) int {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	operands, status, ok := c.parse(e, fs, args)
	if !ok {
		return status
	}
	if len(operands) > 1 {
		return c.usageError(e, "unexpected argument %q: at most one FILE", operands[1])
	}
	in, name, err := readInput(e, operands)
	if err != nil {
		return c.failf(e, "%v", err)
	}
	out, err := canonical.Transform(in)
	if err != nil {
		return c.failf(e, "%s: %v", name, err)
	}
	e.stdout.Write(out) // run reports a failed write
	return exitOK
}
