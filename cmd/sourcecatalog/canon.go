package main

import (
	"flag"

	"github.com/yachtmemory/sourcecatalog/canonical"
)

var canonCommand = &command{
	name:     "canon",
	synopsis: "[FILE]",
	summary:  "write the RFC 8785 canonical form of a JSON text",
	help:     helpText("canon"),
	run:      runCanon,
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
