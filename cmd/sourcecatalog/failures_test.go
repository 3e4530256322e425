package main

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/internal/files"
)

var errFull = errors.New("no space left on device (test)")

// fullWriter accepts room bytes and then fails every write.
type fullWriter struct{ room int }

func (w *fullWriter) Write(b []byte) (int, error) {
	if len(b) <= w.room {
		w.room -= len(b)
		return len(b), nil
	}
	n := w.room
	w.room = 0
	return n, errFull
}

// Every command that writes to standard output fails with status 1 when
// the output cannot be written, wherever the write fails.
func TestStdoutWriteFailure(t *testing.T) {
	h, c := exampleFiles(t)
	for _, tc := range []struct {
		name   string
		stdin  string
		args   func(t *testing.T) []string
		prefix string
	}{
		{"canon", string(catalog.EncodeList(examples.Boat())), func(*testing.T) []string { return []string{"canon"} }, "sourcecatalog canon"},
		{"build", string(catalog.EncodeList(examples.Boat())), func(t *testing.T) []string { return buildArgs(t.TempDir()) }, "sourcecatalog build"},
		{"verify", "", func(*testing.T) []string { return []string{"verify", h, c} }, "sourcecatalog verify"},
		{"inspect", "", func(*testing.T) []string { return []string{"inspect", h, c} }, "sourcecatalog inspect"},
		{"demo", "", func(*testing.T) []string { return []string{"demo"} }, "sourcecatalog demo"},
		{"help", "", func(*testing.T) []string { return []string{"help"} }, "sourcecatalog"},
		{"help build", "", func(*testing.T) []string { return []string{"help", "build"} }, "sourcecatalog"},
		{"build -h", "", func(*testing.T) []string { return []string{"build", "-h"} }, "sourcecatalog build"},
	} {
		for _, room := range []int{0, 1, 100} {
			t.Run(fmt.Sprintf("%s, fails after %d bytes", tc.name, room), func(t *testing.T) {
				args := tc.args(t)
				var stdout bytes.Buffer
				require.Equal(t, exitOK, run(args, strings.NewReader(tc.stdin), &stdout, &bytes.Buffer{}), "the command succeeds")
				require.Greater(t, stdout.Len(), room, "the output is larger than the room")

				var stderr bytes.Buffer
				code := run(tc.args(t), strings.NewReader(tc.stdin), &fullWriter{room: room}, &stderr)
				assert.Equal(t, exitInvalid, code)
				assert.Equal(t, tc.prefix+": writing standard output: "+errFull.Error()+"\n", stderr.String())
			})
		}
	}
}

type closer struct{ err error }

func (c closer) Close() error { return c.err }

func TestCloseStdout(t *testing.T) {
	for _, tc := range []struct {
		name         string
		status       int
		err          error
		want         int
		wantReported bool
	}{
		{"closed after success", exitOK, nil, exitOK, false},
		{"close fails after success", exitOK, errFull, exitInvalid, true},
		{"close fails after a usage error", exitUsage, errFull, exitUsage, false},
		{"close fails after a failure", exitInvalid, errFull, exitInvalid, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			assert.Equal(t, tc.want, closeStdout(tc.status, closer{tc.err}, &stderr))
			if tc.wantReported {
				assert.Equal(t, "sourcecatalog: writing standard output: "+errFull.Error()+"\n", stderr.String())
			} else {
				assert.Empty(t, stderr.String())
			}
		})
	}
}

// An argument beyond what a command takes is a usage error that names it.
func TestExtraArguments(t *testing.T) {
	h, c := exampleFiles(t)
	for _, tc := range []struct {
		args  []string
		extra string
	}{
		{[]string{"canon", "a.json", "b.json"}, "b.json"},
		{buildArgs(t.TempDir(), "a.json", "b.json"), "b.json"},
		{[]string{"verify", h, c, "c.json"}, "c.json"},
		{[]string{"inspect", h, c, "c.json"}, "c.json"},
		{[]string{"demo", "now"}, "now"},
		{[]string{"demo", "--", "--seed"}, "--seed"},
		{[]string{"help", "canon", "extra"}, "extra"},
		{[]string{"--help", "demo", "extra"}, "extra"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := cli(t, "", tc.args...)
			assert.Equal(t, exitUsage, r.code)
			assert.Empty(t, r.stdout)
			prefix := "sourcecatalog " + tc.args[0]
			if tc.args[0] == "--help" {
				prefix = "sourcecatalog help"
			}
			assert.True(t, strings.HasPrefix(r.stderr, prefix+`: unexpected argument "`+tc.extra+`"`), r.stderr)
			assert.Contains(t, r.stderr, "Usage:")
		})
	}
}

// Flag errors name the flag as the documentation spells it, --name, however
// it was given, and never echo its value.
func TestFlagErrorsSpelling(t *testing.T) {
	const bad = "BAD-VALUE"
	for _, tc := range []struct {
		cmd, flag string
		want      string
	}{
		{"build", "vessel", "must be a lowercase"},
		{"build", "revision", "must be digits"},
		{"build", "discovered-at", "must be RFC 3339"},
		{"build", "snapshot", "must be a lowercase"},
		{"demo", "seed", "must be digits"},
	} {
		for _, spelling := range [][]string{{"--" + tc.flag, bad}, {"--" + tc.flag + "=" + bad}, {"-" + tc.flag, bad}, {"-" + tc.flag + "=" + bad}} {
			t.Run(tc.cmd+" "+strings.Join(spelling, " "), func(t *testing.T) {
				r := cli(t, "", append([]string{tc.cmd}, spelling...)...)
				assert.Equal(t, exitUsage, r.code)
				assert.True(t, strings.HasPrefix(r.stderr, "sourcecatalog "+tc.cmd+": --"+tc.flag+" "+tc.want), r.stderr)
				assert.NotRegexp(t, `(^|[^-])-`+regexp.QuoteMeta(tc.flag)+`\b`, r.stderr, "spelled with one dash")
				assert.NotContains(t, r.stderr, bad)
			})
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"build", "-out"}, "sourcecatalog build: --out needs a value"},
		{[]string{"build", "--out="}, "sourcecatalog build: --out must not be empty"},
		{[]string{"demo", "-mysql", "u:secret@tcp(h)/", "-mysql", "u:secret@tcp(h)/"}, "sourcecatalog demo: --mysql given more than once"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := cli(t, "", tc.args...)
			assert.Equal(t, exitUsage, r.code)
			assert.True(t, strings.HasPrefix(r.stderr, tc.want+"\n"), r.stderr)
			assert.NotContains(t, r.stderr, "secret")
		})
	}
}

// --discovered-at takes exactly the times the envelope accepts; "required"
// means only that the flag is absent.
func TestBuildDiscoveredAtRange(t *testing.T) {
	records := examples.Boat()
	for _, at := range []string{
		"0000-01-01T00:00:00Z",
		"0000-12-31T23:59:59.999999999Z",
		"0001-01-01T00:00:00Z",
		"0001-01-01T00:00:00.000000001Z",
		"1969-12-31T23:59:59.5Z",
		"2026-05-01T12:00:00Z",
		"9999-12-31T23:59:59.999999999Z",
	} {
		t.Run(at, func(t *testing.T) {
			// What the envelope says of this time.
			var envErr error
			tm, err := envelope.ParseTime(at)
			require.NoError(t, err)
			_, envErr = envelope.Build(envelope.Input{
				VesselID: examples.VesselID, SnapshotID: examples.SnapshotID, Revision: 1,
				DiscoveredAt: tm, Records: records,
			})

			dir := filepath.Join(t.TempDir(), "out")
			args := []string{"build", "--vessel", vesselFlag, "--revision", "1", "--discovered-at", at, "--out", dir}
			r := cli(t, string(catalog.EncodeList(records)), args...)
			if envErr != nil {
				assert.Equal(t, exitUsage, r.code, r.stderr)
				assert.True(t, strings.HasPrefix(r.stderr, "sourcecatalog build: --discovered-at must not be "+at), r.stderr)
				assert.NotContains(t, r.stderr, "must be set")
				assert.NoDirExists(t, dir)
				return
			}
			require.Equal(t, exitOK, r.code, r.stderr)
			header, err := os.ReadFile(filepath.Join(dir, files.HeaderName))
			require.NoError(t, err)
			m, err := envelope.DecodeManifest(header)
			require.NoError(t, err)
			assert.Equal(t, at, envelope.FormatTime(m.DiscoveredAt))
		})
	}
}

// build replaces both files or neither: a target it cannot replace is
// found before the other is touched.
func TestBuildBothOrNothing(t *testing.T) {
	records := string(catalog.EncodeList(examples.Boat()))
	for _, tc := range []struct {
		name, blocked string
	}{
		{"header.json is a directory", files.HeaderName},
		{"chunks.json is a directory", files.ChunksName},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			old := map[string][]byte{files.HeaderName: []byte("old header\n"), files.ChunksName: []byte("old chunks\n")}
			for name, data := range old {
				if name != tc.blocked {
					writeFile(t, out, name, data)
				}
			}
			require.NoError(t, os.Mkdir(filepath.Join(out, tc.blocked), 0o755))
			r := cli(t, records, buildArgs(out)...)
			assert.Equal(t, exitInvalid, r.code)
			assert.Empty(t, r.stdout)
			assert.Equal(t, "sourcecatalog build: "+filepath.Join(out, tc.blocked)+" is a directory, not a regular file\n", r.stderr)
			assert.ElementsMatch(t, []string{files.HeaderName, files.ChunksName}, dirEntries(t, out), "nothing left behind")
			for name, data := range old {
				if name != tc.blocked {
					b, err := os.ReadFile(filepath.Join(out, name))
					require.NoError(t, err)
					assert.Equal(t, string(data), string(b), "%s unchanged", name)
				}
			}
		})
	}
}
