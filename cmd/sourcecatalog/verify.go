package main

import (
	"flag"
	"fmt"

	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/internal/files"
)

const readingHelp = `The chunks file must be a JSON array of chunk objects, in any order and with
any whitespace and member order: each chunk is canonicalised and then
strictly decoded, so a pretty-printed or reshuffled copy of what build wrote
verifies too. Each file is limited to 64 MiB and the chunks file to 256
elements.
`

var verifyCommand = &command{
	name:     "verify",
	synopsis: "HEADER_FILE CHUNKS_FILE",
	summary:  "check that a header and its chunks form a complete, valid snapshot",
	help:     helpText("verify") + readingHelp,
	run:      runVerify,
}

func runVerify(e *env, c *command, args []string) int {
	s, status := readSnapshot(e, c, args)
	if s == nil {
		return status
	}
	fmt.Fprintf(e.stdout, "ok: %s\n", summary(s))
	return exitOK
}

// readSnapshot reads, decodes and verifies the HEADER_FILE and CHUNKS_FILE
// operands. It returns nil and the exit status when that fails, having
// reported why.
func readSnapshot(e *env, c *command, args []string) (*envelope.Snapshot, int) {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	operands, status, ok := c.parse(e, fs, args)
	if !ok {
		return nil, status
	}
	switch len(operands) {
	case 0:
		return nil, c.usageError(e, "missing HEADER_FILE and CHUNKS_FILE")
	case 1:
		return nil, c.usageError(e, "missing CHUNKS_FILE")
	case 2:
	default:
		return nil, c.usageError(e, "unexpected argument %q: want HEADER_FILE and CHUNKS_FILE", operands[2])
	}
	header, err := files.ReadFile(operands[0])
	if err != nil {
		return nil, c.failf(e, "%v", err)
	}
	chunks, err := files.ReadFile(operands[1])
	if err != nil {
		return nil, c.failf(e, "%v", err)
	}
	s, err := files.Decode(header, chunks)
	if err != nil {
		return nil, c.problems(e, err, "the snapshot does not verify")
	}
	return s, exitOK
}
