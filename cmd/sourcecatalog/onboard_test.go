package main

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/outbox"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// commitOut is commit's --json output, decoded strictly.
type commitOut struct {
	VesselID       string `json:"vessel_id"`
	SnapshotID     string `json:"snapshot_id"`
	Revision       int64  `json:"revision"`
	DiscoveredAt   string `json:"discovered_at"`
	ChunkCount     int    `json:"chunk_count"`
	RecordCount    int    `json:"record_count"`
	DocumentSHA256 string `json:"document_sha256"`
	Entries        int    `json:"entries"`
	Pending        int    `json:"pending"`
	Retried        bool   `json:"retried"`
}

// decodeStrict decodes one JSON document into v, refusing unknown fields
// and trailing data.
func decodeStrict(t *testing.T, doc string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(v), doc)
	require.False(t, dec.More(), "one JSON document: %s", doc)
}

// recordsFile writes records as commit reads them and returns the path.
func recordsFile(t *testing.T, dir, name string, records []*catalog.Record) string {
	t.Helper()
	return writeFile(t, dir, name, catalog.EncodeList(records))
}

// commitJSONOf runs commit --json and decodes its output.
func commitJSONOf(t *testing.T, args ...string) commitOut {
	t.Helper()
	r := cli(t, "", append([]string{"commit", "--json"}, args...)...)
	require.Equal(t, exitOK, r.code, "stderr:\n%s", r.stderr)
	var out commitOut
	decodeStrict(t, r.stdout, &out)
	return out
}

// outboxPending counts the vessel's pending outbox entries in an SQLite
// file and returns its last allocated revision.
func outboxPending(t *testing.T, path string, vessel uuid.UUID) (pending int, last int64) {
	t.Helper()
	ctx := context.Background()
	s, err := sqlitestore.Open(ctx, path)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	pending, err = countPending(ctx, s.Outbox(), vessel)
	require.NoError(t, err)
	errPeek := assert.AnError
	err = s.Outbox().WithVessel(ctx, vessel, func(tx outbox.Tx) error {
		next, err := tx.NextRevision(ctx, 0)
		last = next - 1
		if err != nil {
			return err
		}
		return errPeek // roll the allocation back
	})
	require.ErrorIs(t, err, errPeek)
	return pending, last
}

// parseTime parses a time the commands print.
func parseTime(t *testing.T, s string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err)
	return at
}

func TestCommit(t *testing.T) {
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "boat.db")
	boat := recordsFile(t, dir, "boat.json", examples.Boat())
	scaled := recordsFile(t, dir, "scaled.json", examples.Scaled(600))
	const snap = "0b1f9a52-3c55-4a8e-9d3e-6f1c2b7a4d10"

	first := commitJSONOf(t, "--store", db, "--vessel", vesselFlag, "--discovered-at", atFlag, boat)
	assert.Equal(t, commitOut{
		// The revision floored by the discovery time (SPEC.md §2.4).
		VesselID: vesselFlag, SnapshotID: first.SnapshotID, Revision: 1777636800000, DiscoveredAt: atFlag,
		ChunkCount: 2, RecordCount: 129, DocumentSHA256: first.DocumentSHA256, Entries: 3, Pending: 3,
	}, first)
	assert.NotEqual(t, snap, first.SnapshotID)

	before := time.Now().Truncate(time.Second).UnixMilli()
	second := commitJSONOf(t, "--store", db, "--vessel", vesselFlag, "--snapshot", snap, scaled)
	assert.Equal(t, parseTime(t, second.DiscoveredAt).UnixMilli(), second.Revision, "the next revision, floored by the time of the commit")
	assert.GreaterOrEqual(t, second.Revision, before)
	assert.Equal(t, snap, second.SnapshotID)
	assert.Equal(t, 600, second.RecordCount)
	assert.Greater(t, second.ChunkCount, 2)
	assert.False(t, second.Retried)

	// A retry, from standard input, at another time: nothing written, the
	// first commit's revision and discovery time.
	r := cli(t, string(catalog.EncodeList(examples.Scaled(600))), "commit", "-", "--vessel", vesselFlag, "--snapshot", snap, "--store", db)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Regexp(t, `^already committed: vessel `+vesselFlag+` snapshot `+snap+` revision `+strconv.FormatInt(second.Revision, 10)+`: \d+ chunks, 600 records, \d+ outbox entries \(\d+ pending\)\n$`, r.stdout)
	retry := commitJSONOf(t, "--store", db, "--vessel", vesselFlag, "--snapshot", snap, "--discovered-at", "2027-01-01T00:00:00Z", scaled)
	want := second
	want.Retried = true
	assert.Equal(t, want, retry)

	// The same snapshot id with other records: a conflict, nothing written.
	r = cli(t, "", "commit", "--store", db, "--vessel", vesselFlag, "--snapshot", snap, boat)
	assert.Equal(t, exitInvalid, r.code)
	assert.Empty(t, r.stdout)
	assert.Contains(t, r.stderr, "sourcecatalog commit: snapshot "+snap+" was committed before with records that make another document; nothing written")
	pending, last := outboxPending(t, filepath.Join(dir, "boat.db"), examples.VesselID)
	assert.Equal(t, second.Revision, last, "the refused commit allocated no revision")
	assert.Equal(t, first.Entries+second.Entries, pending)

	// Text output of a new commit.
	r = cli(t, "", "commit", "--store", db, "--vessel", vesselFlag, "--discovered-at", atFlag, boat)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Regexp(t, `^committed: vessel `+vesselFlag+` snapshot [0-9a-f-]{36} revision `+strconv.FormatInt(second.Revision+1, 10)+`: 2 chunks, 129 records, 3 outbox entries \(3 pending\)\n$`, r.stdout)
}

// TestCommitDefaultTime: without --discovered-at the discovery time is now,
// to the millisecond, and floors the revision (SPEC.md §2.4): a board
// whose outbox was wiped and that commits again a few milliseconds later
// starts above the revision it committed before, even within one second.
func TestCommitDefaultTime(t *testing.T) {
	dir := t.TempDir()
	boat := recordsFile(t, dir, "boat.json", examples.Boat())
	first := commitJSONOf(t, "--store", "sqlite:"+filepath.Join(dir, "boat.db"), "--vessel", vesselFlag, boat)
	assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,3})?Z$`, first.DiscoveredAt, "now, in UTC, to the millisecond")
	assert.Equal(t, parseTime(t, first.DiscoveredAt).UnixMilli(), first.Revision)
	time.Sleep(5 * time.Millisecond)
	wiped := commitJSONOf(t, "--store", "sqlite:"+filepath.Join(dir, "wiped.db"), "--vessel", vesselFlag, boat)
	assert.Greater(t, wiped.Revision, first.Revision, "a wiped outbox's next commit starts above the revision sent before")
}

// TestCommitCut: --cut picks the rule of SPEC.md §7.2; the content-defined
// cut of the same records makes more, smaller chunks of the same document.
func TestCommitCut(t *testing.T) {
	dir := t.TempDir()
	scaled := recordsFile(t, dir, "scaled.json", examples.Scaled(1500))
	commit := func(args ...string) commitOut {
		return commitJSONOf(t, append([]string{"--store", "sqlite:" + filepath.Join(t.TempDir(), "boat.db"), "--vessel", vesselFlag, "--discovered-at", atFlag, scaled}, args...)...)
	}
	byDefault, greedy, cd := commit(), commit("--cut", "greedy"), commit("--cut", "content-defined")
	assert.Equal(t, byDefault.ChunkCount, greedy.ChunkCount, "greedy is the default")
	assert.Greater(t, cd.ChunkCount, 3*greedy.ChunkCount)
	assert.Equal(t, greedy.DocumentSHA256, cd.DocumentSHA256, "one document however it is cut")
}

func TestCommitRefuses(t *testing.T) {
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "boat.db")
	boat := recordsFile(t, dir, "boat.json", examples.Boat())
	invalid := writeFile(t, dir, "invalid.json", []byte(`[{"kind":"path","path":"a.b","unit":null},{"kind":"nonsense"}]`))
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"memory store", []string{"--store", "memory", "--vessel", vesselFlag, boat}, exitUsage, "--store memory keeps no outbox across runs"},
		{"no store", []string{"--vessel", vesselFlag, boat}, exitUsage, "--store is required"},
		{"no vessel", []string{"--store", db, boat}, exitUsage, "--vessel is required"},
		{"no records file", []string{"--store", db, "--vessel", vesselFlag}, exitUsage, "RECORDS_FILE is required"},
		{"two records files", []string{"--store", db, "--vessel", vesselFlag, boat, boat}, exitUsage, "unexpected argument"},
		{"snapshot not v4", []string{"--store", db, "--vessel", vesselFlag, "--snapshot", "0b1f9a52-3c55-1a8e-9d3e-6f1c2b7a4d10", boat}, exitUsage, "random (version 4)"},
		{"bad time", []string{"--store", db, "--vessel", vesselFlag, "--discovered-at", "2026-05-01T12:00:00+02:00", boat}, exitUsage, "--discovered-at"},
		{"json with a value", []string{"--store", db, "--vessel", vesselFlag, "--json=true", boat}, exitUsage, "--json takes no value"},
		{"store twice", []string{"--store", db, "--store", db, "--vessel", vesselFlag, boat}, exitUsage, "given more than once"},
		{"bad store", []string{"--store", "postgres:x", "--vessel", vesselFlag, boat}, exitUsage, "must be memory, sqlite:FILE or mysql:DSN"},
		{"invalid records", []string{"--store", db, "--vessel", vesselFlag, invalid}, exitInvalid, "record 1"},
		{"missing file", []string{"--store", db, "--vessel", vesselFlag, filepath.Join(dir, "absent.json")}, exitInvalid, "absent.json"},
		{"bad cut", []string{"--store", db, "--vessel", vesselFlag, "--cut", "fastest", boat}, exitUsage, "--cut must be greedy or content-defined"},
		{"cut twice", []string{"--store", db, "--vessel", vesselFlag, "--cut", "greedy", "--cut", "greedy", boat}, exitUsage, "given more than once"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cli(t, "", append([]string{"commit"}, tc.args...)...)
			assert.Equal(t, tc.code, r.code, r.stderr)
			assert.Empty(t, r.stdout)
			assert.Contains(t, r.stderr, tc.stderr)
		})
	}
	_, last := outboxPending(t, filepath.Join(dir, "boat.db"), examples.VesselID)
	assert.Zero(t, last, "nothing was committed")
}

// countPending counts the vessel's pending outbox entries.
func countPending(ctx context.Context, s outbox.Store, vessel uuid.UUID) (int, error) {
	n := 0
	err := s.WithVessel(ctx, vessel, func(tx outbox.Tx) error {
		pending, err := tx.Pending(ctx, math.MaxInt)
		n = len(pending)
		return err
	})
	return n, err
}
