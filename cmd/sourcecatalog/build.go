package main

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/canonical"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/internal/files"
)

var buildCommand = &command{
	name:     "build",
	synopsis: "--vessel UUID --revision N --discovered-at TIME [--snapshot UUID] --out DIR [RECORDS_FILE]",
	summary:  "build header.json and chunks.json from a JSON array of records",
	help:     helpText("build"),
	run:      runBuild,
}

func runBuild(e *env, c *command, args []string) int {
	var (
		vessel   = uuidFlag{check: notNil}
		snapshot = uuidFlag{check: randomUUID}
		revision revisionFlag
		at       timeFlag
		out      stringFlag
	)
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.Var(&vessel, "vessel", "")
	fs.Var(&revision, "revision", "")
	fs.Var(&at, "discovered-at", "")
	fs.Var(&snapshot, "snapshot", "")
	fs.Var(&out, "out", "")
	operands, status, ok := c.parse(e, fs, args)
	if !ok {
		return status
	}
	for _, f := range []struct {
		name string
		set  bool
	}{{"vessel", vessel.set}, {"revision", revision.set}, {"discovered-at", at.set}, {"out", out.set}} {
		if !f.set {
			return c.usageError(e, "--%s is required", f.name)
		}
	}
	if len(operands) > 1 {
		return c.usageError(e, "unexpected argument %q: at most one RECORDS_FILE", operands[1])
	}

	in, name, err := readInput(e, operands)
	if err != nil {
		return c.failf(e, "%v", err)
	}
	records, err := decodeRecords(in)
	if err != nil {
		return c.problems(e, err, name+" holds invalid records; nothing written")
	}
	if !snapshot.set {
		if snapshot.id, err = uuid.NewRandom(); err != nil {
			return c.failf(e, "generating a snapshot id: %v", err)
		}
	}
	s, err := envelope.Build(envelope.Input{
		VesselID: vessel.id, SnapshotID: snapshot.id, Revision: revision.n,
		DiscoveredAt: at.t, Records: records,
	})
	if err != nil {
		return c.problems(e, err, "nothing written")
	}
	if err := files.Write(out.s, s, files.HeaderName, files.ChunksName); err != nil {
		return c.failf(e, "%v", err)
	}
	fmt.Fprintf(e.stdout, "built: %s\n", summary(s))
	return exitOK
}

// decodeRecords decodes a JSON array of records, reporting every invalid
// record (up to recordProblemsCap) rather than only the first, each located
// by its index in the array.
func decodeRecords(raw []byte) ([]*catalog.Record, error) {
	v, err := canonical.Parse(raw)
	if err != nil {
		return nil, sourcecatalog.Wrap(sourcecatalog.ErrMalformedJSON, err)
	}
	if v.Kind() != canonical.KindArray {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "the records must be a JSON array, not "+v.Kind().String())
	}
	elems := v.Elems()
	records := make([]*catalog.Record, len(elems))
	var problems []error
	for i := range elems {
		r, err := catalog.FromValue(&elems[i])
		if err == nil {
			records[i] = r
			continue
		}
		if len(problems) == recordProblemsCap {
			problems = append(problems, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "further invalid records not reported"))
			break
		}
		var e *sourcecatalog.Error
		if errors.As(err, &e) {
			err = e.AtRecord(i)
		}
		problems = append(problems, err)
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	return records, nil
}

// summary renders a snapshot's identity and size on one line.
func summary(s *envelope.Snapshot) string {
	m := &s.Manifest
	return fmt.Sprintf("vessel %s snapshot %s revision %d: %s, %s, document sha256 %s",
		m.VesselID, m.SnapshotID, m.Revision, plural(m.ChunkCount, "chunk"), plural(m.RecordCount, "record"), m.DocumentSHA256)
}

// Flag values. Each refuses to be set twice, so a repeated flag is an
// error rather than a silent override.

var errTwice = errors.New("given more than once")

type stringFlag struct {
	s   string
	set bool
}

func (f *stringFlag) String() string { return f.s }
func (f *stringFlag) Set(s string) error {
	if f.set {
		return errTwice
	}
	if s == "" {
		return errors.New("must not be empty")
	}
	f.s, f.set = s, true
	return nil
}

type uuidFlag struct {
	id    uuid.UUID
	set   bool
	check func(uuid.UUID) error
}

func (f *uuidFlag) String() string { return "" }
func (f *uuidFlag) Set(s string) error {
	if f.set {
		return errTwice
	}
	id, err := envelope.ParseUUID(s)
	if err != nil {
		return errors.New("must be a lowercase 8-4-4-4-12 UUID, not nil")
	}
	if err := f.check(id); err != nil {
		return err
	}
	f.id, f.set = id, true
	return nil
}

func notNil(uuid.UUID) error { return nil } // envelope.ParseUUID refuses nil

func randomUUID(id uuid.UUID) error {
	if id.Version() != 4 || id.Variant() != uuid.RFC4122 {
		return errors.New("must be a random (version 4) UUID")
	}
	return nil
}

// digits reports whether s is one or more ASCII digits: no sign, which
// strconv.ParseInt would take.
func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

type revisionFlag struct {
	n   int64
	set bool
}

func (f *revisionFlag) String() string { return "" }
func (f *revisionFlag) Set(s string) error {
	if f.set {
		return errTwice
	}
	bad := errors.New("must be digits without a leading zero, 1 to 9007199254740991")
	if len(s) > 16 || !digits(s) || s[0] == '0' {
		return bad
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 || n > sourcecatalog.MaxRevision {
		return bad
	}
	f.n, f.set = n, true
	return nil
}

// durationFlag is a Go duration: positive, and at least min when min is
// set. d holds the default until the flag is set.
type durationFlag struct {
	d, min time.Duration
	set    bool
}

func (f *durationFlag) String() string { return "" }
func (f *durationFlag) Set(s string) error {
	if f.set {
		return errTwice
	}
	d, err := time.ParseDuration(s)
	switch {
	case f.min > 0 && (err != nil || d < f.min):
		return fmt.Errorf("must be a duration of at least %v, such as 90s or 5m", f.min)
	case err != nil || d <= 0:
		return errors.New("must be a positive duration such as 30s, 5m or 1h")
	}
	f.d, f.set = d, true
	return nil
}

type timeFlag struct {
	t   time.Time
	set bool
}

func (f *timeFlag) String() string { return "" }
func (f *timeFlag) Set(s string) error {
	if f.set {
		return errTwice
	}
	t, err := envelope.ParseTime(s)
	if err != nil {
		return errors.New(`must be RFC 3339 in UTC with "Z" and no trailing zeros in a fraction, like 2026-05-01T12:00:00Z`)
	}
	if t.IsZero() {
		// The envelope takes the zero time.Time for a missing value.
		return errors.New(`must not be 0001-01-01T00:00:00Z, which the library reserves to mean "not set"`)
	}
	f.t, f.set = t, true
	return nil
}
