package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// ---------------------------------------------------------------------------
// A receiver over the HTTP binding, on loopback TLS

// A pubReceiver is a finalize.Receiver on an SQLite file behind
// httpbinding's Handler, served over TLS on a loopback port.
type pubReceiver struct {
	url  string
	path string // the receiver's SQLite file
	// requests counts the requests that reached the server; while fail
	// is positive, a request is answered 503 and fail decremented.
	requests, fail atomic.Int64
	// onPost, when set before publishing, is called on each POST.
	onPost   func()
	stopOnce sync.Once
	stop     func()
}

func startReceiver(t *testing.T, pki *testCA, dir string, auth httpbinding.Authenticator) *pubReceiver {
	t.Helper()
	r := &pubReceiver{path: filepath.Join(dir, "shore.db")}
	store, err := sqlitestore.Open(context.Background(), r.path)
	require.NoError(t, err)
	h := httpbinding.NewHandler(finalize.NewReceiver(store), auth)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		if r.fail.Add(-1) >= 0 {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "unavailable (test)", http.StatusServiceUnavailable)
			return
		}
		r.fail.Store(0)
		if r.onPost != nil && req.Method == http.MethodPost {
			r.onPost()
		}
		h.ServeHTTP(w, req)
	}))
	srv.TLS = httpbinding.ServerTLSConfig(mustCert(t)(pki.Server()), pki.Pool)
	srv.StartTLS()
	r.url = srv.URL + "/v2/messages"
	r.stop = func() {
		r.stopOnce.Do(func() {
			srv.Close()
			require.NoError(t, store.Close())
		})
	}
	t.Cleanup(r.stop)
	return r
}

// fastBackoff shortens publish's waits for the test.
func fastBackoff(t *testing.T) {
	saved := publishBackoff
	publishBackoff.min, publishBackoff.max = 5*time.Millisecond, 20*time.Millisecond
	t.Cleanup(func() { publishBackoff = saved })
}

// publishOut is publish's --json output.
type publishOut struct {
	VesselID          string   `json:"vessel_id"`
	Result            string   `json:"result"`
	Passes            int      `json:"passes"`
	Sent              int      `json:"sent"`
	Delivered         int      `json:"delivered"`
	Staged            int      `json:"staged"`
	AlreadyReceived   int      `json:"already_received"`
	Failed            int      `json:"failed"`
	Referenced        int      `json:"referenced"`
	Indexed           int      `json:"indexed"`
	BytesSent         int64    `json:"bytes_sent"`
	BytesUncompressed int64    `json:"bytes_uncompressed"`
	StoppedSnapshots  []string `json:"stopped_snapshots"`
	Pending           int      `json:"pending"`
	Error             string   `json:"error"`
}

// publishJSONOf decodes publish's --json output; it checks the byte
// counts against the entries sent, and returns the report without them.
func publishJSONOf(t *testing.T, r result) publishOut {
	t.Helper()
	var out publishOut
	decodeStrict(t, r.stdout, &out)
	if out.Delivered > 0 {
		assert.Positive(t, out.BytesSent, "bytes are counted for what was delivered")
	}
	if out.Sent == 0 {
		assert.Zero(t, out.BytesSent, "no bytes without a send")
	}
	assert.GreaterOrEqual(t, out.BytesUncompressed, out.BytesSent)
	out.BytesSent, out.BytesUncompressed = 0, 0
	return out
}

// credentials are the two ways a vessel authenticates: the publish flags
// and the server's Authenticator.
type credentials struct {
	name string
	make func(t *testing.T, pki *testCA, dir string) ([]string, httpbinding.Authenticator)
}

var allCredentials = []credentials{
	{
		name: "mutual TLS",
		make: func(t *testing.T, pki *testCA, dir string) ([]string, httpbinding.Authenticator) {
			cert, key := writeCert(t, dir, "vessel", mustCert(t)(pki.Vessel(examples.VesselID)))
			return []string{"--cert", cert, "--key", key}, httpbinding.MutualTLS{ClientCAs: pki.Pool}
		},
	},
	{
		name: "bearer token",
		make: func(t *testing.T, pki *testCA, dir string) ([]string, httpbinding.Authenticator) {
			const token = "s3cr3t-t0ken_for.the~boat"
			tokens, err := httpbinding.ParseTokens(strings.NewReader(httpbinding.TokenHash(token, examples.VesselID) + "\n"))
			require.NoError(t, err)
			return []string{"--token-file", writeFile(t, dir, "token", []byte(token+"\n"))}, tokens
		},
	},
}

// A publishRig is one test's receiver, trusting a vessel's credentials,
// and the boat's outbox file.
type publishRig struct {
	dir, boat string
	ca        *testCA
	rcv       *pubReceiver
	flags     []string // the credentials' publish flags
}

func newPublishRig(t *testing.T, cred credentials) *publishRig {
	t.Helper()
	g := &publishRig{dir: t.TempDir()}
	g.boat = filepath.Join(g.dir, "boat.db")
	g.ca = newTestCA(t, g.dir)
	var auth httpbinding.Authenticator
	g.flags, auth = cred.make(t, g.ca, g.dir)
	g.rcv = startReceiver(t, g.ca, g.dir, auth)
	return g
}

// commitBoat commits examples.Boat() to the boat's outbox.
func (g *publishRig) commitBoat(t *testing.T) commitOut {
	t.Helper()
	return commitJSONOf(t, "--store", "sqlite:"+g.boat, "--vessel", vesselFlag, recordsFile(t, g.dir, "boat.json", examples.Boat()))
}

// args is the command line publishing the outbox to the receiver with the
// credentials, then extra.
func (g *publishRig) args(outbox string, extra ...string) []string {
	args := []string{"publish", "--store", "sqlite:" + outbox, "--vessel", vesselFlag, "--url", g.rcv.url, "--ca", g.ca.caFile}
	return append(append(args, g.flags...), extra...)
}

// ---------------------------------------------------------------------------
// publish

func TestPublish(t *testing.T) {
	for _, cred := range allCredentials {
		t.Run(cred.name, func(t *testing.T) {
			g := newPublishRig(t, cred)
			rcv, boat := g.rcv, g.boat
			first := g.commitBoat(t)
			second := commitJSONOf(t, "--store", "sqlite:"+boat, "--vessel", vesselFlag, recordsFile(t, g.dir, "scaled.json", examples.Scaled(600)))
			entries := first.Entries + second.Entries
			args := g.args(boat, "--receiver-v2")

			r := cli(t, "", append(args, "--json")...)
			require.Equal(t, exitOK, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			assert.Equal(t, publishOut{
				VesselID: vesselFlag, Result: "delivered", Passes: 2, Sent: entries, Delivered: entries, Staged: entries,
				StoppedSnapshots: []string{},
			}, publishJSONOf(t, r), "one pass delivers, the next finds nothing pending")
			assert.Equal(t, int64(entries), rcv.requests.Load())
			pending, _ := outboxPending(t, boat, examples.VesselID)
			assert.Zero(t, pending)

			// Nothing pending: one pass that sends nothing.
			r = cli(t, "", args...)
			require.Equal(t, exitOK, r.code, r.stderr)
			assert.Equal(t, "pass 1: sent 0, delivered 0 (0 staged, 0 already received), failed 0\n"+
				"published: vessel "+vesselFlag+": 0 delivered (0 staged, 0 already received) in 1 pass(es), 0 snapshots stopped, 0 pending\n", r.stdout)

			// The receiver activated both revisions.
			rcv.stop()
			st := statusOf(t, "--store", "sqlite:"+rcv.path, "--vessel", vesselFlag)
			require.Len(t, st.Vessels, 1)
			v := st.Vessels[0]
			require.NotNil(t, v.Active)
			assert.Equal(t, activeOut{SnapshotID: second.SnapshotID, Revision: second.Revision, DiscoveredAt: second.DiscoveredAt}, *v.Active)
			assert.Equal(t, &lastOut{SnapshotID: second.SnapshotID, Revision: second.Revision, Outcome: "activated"}, v.LastOutcome)
			assert.Equal(t, gaugeOut{Used: 2, Limit: 32, Fraction: 2.0 / 32}, v.Usage.RetainedSnapshots)
			assert.Equal(t, gaugeOut{Used: 0, Limit: 8, Fraction: 0}, v.Usage.IncompleteSnapshots)
			assert.Equal(t, int64(finalize.DefaultLimits.RetainedBytes), v.Usage.RetainedBytes.Limit)
			assert.Positive(t, v.Usage.RetainedBytes.Used)
			assert.Equal(t, v.Usage.RetainedSnapshots.Fraction, v.Usage.Highest)
			require.Len(t, v.Snapshots, 2)
			assert.Equal(t, []int64{second.Revision, first.Revision}, []int64{v.Snapshots[0].Revision, v.Snapshots[1].Revision})
			assert.Greater(t, second.Revision, first.Revision)
			for _, s := range v.Snapshots {
				assert.Equal(t, "activated", s.State)
				assert.Equal(t, s.ChunkCount, s.ChunksStaged)
				assert.False(t, s.Complete, "only a snapshot staging is complete")
			}
		})
	}
}

func TestPublishCapabilityGate(t *testing.T) {
	g := newPublishRig(t, allCredentials[0])
	g.commitBoat(t)

	// The gate asks the receiver by default; --receiver-v2=off shuts it.
	for _, extra := range [][]string{{"--receiver-v2=off"}, {"--receiver-v2=off", "--json"}} {
		r := cli(t, "", g.args(g.boat, extra...)...)
		assert.Equal(t, exitInvalid, r.code)
		assert.Empty(t, r.stdout)
		assert.Contains(t, r.stderr, "sourcecatalog publish: the receiver is not declared v2-capable: nothing sent. Pass --receiver-v2")
	}
	assert.Zero(t, g.rcv.requests.Load(), "nothing was sent")
	pending, _ := outboxPending(t, g.boat, examples.VesselID)
	assert.Equal(t, 3, pending)
}

func TestPublishRetries(t *testing.T) {
	fastBackoff(t)
	g := newPublishRig(t, allCredentials[1])
	rcv := g.rcv
	com := g.commitBoat(t)
	rcv.fail.Store(4) // the first pass fails in full, the second in part

	r := cli(t, "", g.args(g.boat, "--receiver-v2")...)
	require.Equal(t, exitOK, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	assert.Equal(t, int64(3+4), rcv.requests.Load())
	for _, want := range []string{
		"pass 1: sent 3, delivered 0 (0 staged, 0 already received), failed 3\n  last failure: ",
		"answer 503 not application/json\n  retrying in 5ms\n",
		"pass 3: sent 1, delivered 1 (1 staged, 0 already received), failed 0\n",
		"pass 4: sent 0, delivered 0",
		"published: vessel " + vesselFlag + ": 3 delivered (3 staged, 0 already received) in 4 pass(es), 0 snapshots stopped, 0 pending\n",
	} {
		assert.Contains(t, r.stdout, want)
	}
	// The second pass delivered: the wait starts again from the shortest.
	assert.Regexp(t, `\npass 2: sent 3, delivered 2 \(2 staged, 0 already received\), failed 1\n  last failure: [^\n]+\n  retrying in 5ms\npass 3: `, r.stdout)
	rcv.stop()
	v := statusOf(t, "--store", "sqlite:"+rcv.path).Vessels
	require.Len(t, v, 1)
	require.NotNil(t, v[0].Active)
	assert.Equal(t, com.Revision, v[0].Active.Revision)
}

func TestPublishBackoffDoubles(t *testing.T) {
	fastBackoff(t)
	g := newPublishRig(t, allCredentials[0])
	g.commitBoat(t)
	g.rcv.fail.Store(12) // four passes fail in full

	r := cli(t, "", g.args(g.boat, "--receiver-v2")...)
	require.Equal(t, exitOK, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	var waits []string
	for _, line := range strings.Split(r.stdout, "\n") {
		if w, ok := strings.CutPrefix(line, "  retrying in "); ok {
			waits = append(waits, w)
		}
	}
	assert.Equal(t, []string{"5ms", "10ms", "20ms", "20ms"}, waits, "doubling, capped")
}

func TestPublishGivesUp(t *testing.T) {
	fastBackoff(t)
	g := newPublishRig(t, allCredentials[0])
	g.commitBoat(t)
	g.rcv.fail.Store(1 << 40)

	start := time.Now()
	r := cli(t, "", g.args(g.boat, "--receiver-v2", "--give-up-after", "300ms", "--json")...)
	assert.Less(t, time.Since(start), 10*time.Second)
	assert.Equal(t, exitInvalid, r.code, r.stderr)
	out := publishJSONOf(t, r)
	assert.Equal(t, "gave_up", out.Result)
	assert.Equal(t, 3, out.Pending)
	assert.Zero(t, out.Delivered)
	assert.Greater(t, out.Passes, 1)
	// Every send failed; of the entries in flight together
	// (httpbinding.DefaultMaxInFlight) when the time ran out, those after
	// the one cut count in Sent only (outbox.WithInFlight).
	assert.Positive(t, out.Failed)
	assert.LessOrEqual(t, out.Failed, out.Sent)
	assert.GreaterOrEqual(t, out.Failed, out.Sent-2)
	assert.Contains(t, out.Error, "gave up after 300ms with entries pending; last failure: ")
	assert.Contains(t, r.stderr, "sourcecatalog publish: gave up after 300ms")
}

func TestPublishRefusedCredentials(t *testing.T) {
	fastBackoff(t)
	g := newPublishRig(t, allCredentials[1])
	g.commitBoat(t)

	g.flags = []string{"--token-file", writeFile(t, g.dir, "wrong-token", []byte("not-the-token\n"))}
	r := cli(t, "", g.args(g.boat, "--receiver-v2", "--give-up-after", "10s", "--json")...)
	assert.Equal(t, exitInvalid, r.code)
	out := publishJSONOf(t, r)
	assert.Equal(t, "failed", out.Result)
	assert.Equal(t, 1, out.Passes, "a 401 is not retried")
	assert.Equal(t, 3, out.Pending)
	assert.Contains(t, r.stderr, "the receiver refused the credentials (401)")
	assert.NotContains(t, r.stdout+r.stderr, "not-the-token", "the token is never printed")
}

// Failures only an operator can mend stop publish at once, with what to
// check: a forgotten --ca (the receiver's certificate fails verification
// against the system's roots: never "store unavailable", never retried),
// and credentials of another vessel (403 foreign_vessel).
func TestPublishNeedsOperator(t *testing.T) {
	fastBackoff(t)
	otherToken := func(t *testing.T, pki *testCA, dir string) ([]string, httpbinding.Authenticator) {
		const token = "token-of-another-boat"
		tokens, err := httpbinding.ParseTokens(strings.NewReader(httpbinding.TokenHash(token, uuid.New()) + "\n"))
		require.NoError(t, err)
		return []string{"--token-file", writeFile(t, dir, "token", []byte(token+"\n"))}, tokens
	}
	for _, tc := range []struct {
		name   string
		cred   credentials
		noCA   bool
		stderr []string
	}{
		{"forgotten --ca", allCredentials[0], true, []string{"the receiver's certificate failed TLS verification: tls: failed to verify certificate: x509: ", "check --ca"}},
		{"another vessel's token", credentials{"other", otherToken}, false, []string{"foreign vessel", "check --vessel"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newPublishRig(t, tc.cred)
			g.commitBoat(t)
			args := g.args(g.boat, "--receiver-v2", "--give-up-after", "20s", "--json")
			if tc.noCA {
				i := slices.Index(args, "--ca")
				args = slices.Delete(args, i, i+2)
			}
			r := cli(t, "", args...)
			assert.Equal(t, exitInvalid, r.code, r.stderr)
			out := publishJSONOf(t, r)
			assert.Equal(t, "failed", out.Result)
			assert.Equal(t, 1, out.Passes, "not retried")
			assert.Equal(t, 3, out.Sent, "the pass stops at the first; the others, in flight with it (httpbinding.DefaultMaxInFlight), finish")
			assert.Equal(t, 3, out.Pending)
			for _, want := range tc.stderr {
				assert.Contains(t, r.stderr, want)
			}
			assert.NotContains(t, r.stderr, "store unavailable")
		})
	}
}

// A conflict stops the snapshot and publishing goes on; identical bytes
// sent again are already_received.
func TestPublishConflictAndAlreadyReceived(t *testing.T) {
	g := newPublishRig(t, allCredentials[0])
	dir, rcv := g.dir, g.rcv
	const snap = "6a0c3e55-8f4b-4c1e-a6a2-90f0e1d2c3b4"
	boatFile := recordsFile(t, dir, "boat.json", examples.Boat())
	publishArgs := func(outbox string, extra ...string) []string {
		return g.args(filepath.Join(dir, outbox), append([]string{"--receiver-v2"}, extra...)...)
	}
	// Three boats' outboxes with one snapshot id at revision 1: a and b
	// with the same records and time, c with others.
	for _, o := range []struct{ name, records string }{
		{"a.db", boatFile}, {"b.db", boatFile}, {"c.db", recordsFile(t, dir, "scaled.json", examples.Scaled(300))},
	} {
		commitJSONOf(t, "--store", "sqlite:"+filepath.Join(dir, o.name), "--vessel", vesselFlag, "--snapshot", snap, "--discovered-at", atFlag, o.records)
	}
	r := cli(t, "", publishArgs("a.db")...)
	require.Equal(t, exitOK, r.code, r.stderr)

	r = cli(t, "", publishArgs("b.db", "--json")...)
	require.Equal(t, exitOK, r.code, r.stderr)
	out := publishJSONOf(t, r)
	assert.Equal(t, 3, out.AlreadyReceived)
	assert.Equal(t, 3, out.Delivered)
	assert.Zero(t, out.Staged)

	r = cli(t, "", publishArgs("c.db", "--json")...)
	assert.Equal(t, exitInvalid, r.code)
	out = publishJSONOf(t, r)
	assert.Equal(t, "stopped", out.Result)
	assert.Equal(t, []string{snap}, out.StoppedSnapshots)
	assert.Zero(t, out.Pending, "a stopped snapshot's entries are no longer pending")
	assert.Zero(t, out.Delivered)
	assert.Contains(t, r.stderr, "sourcecatalog publish: a conflict stopped 1 snapshot")
	sent := rcv.requests.Load()

	// A stopped snapshot is never sent again.
	r = cli(t, "", publishArgs("c.db")...)
	assert.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, sent, rcv.requests.Load())
}

func TestPublishRefuses(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeCert(t, dir, "vessel", mustCert(t)(newTestCA(t, dir).Vessel(examples.VesselID)))
	token := writeFile(t, dir, "token", []byte("abc\n"))
	empty := writeFile(t, dir, "empty-token", []byte("\n\n"))
	notToken := writeFile(t, dir, "bad-token", []byte("has space\n"))
	db := "sqlite:" + filepath.Join(dir, "boat.db")
	const u = "https://127.0.0.1:1/v2/messages"
	base := func(extra ...string) []string {
		return append([]string{"publish", "--store", db, "--vessel", vesselFlag, "--receiver-v2"}, extra...)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"memory store", []string{"publish", "--store", "memory", "--vessel", vesselFlag, "--url", u}, exitUsage, "--store memory keeps no outbox"},
		{"no store", []string{"publish", "--vessel", vesselFlag, "--url", u}, exitUsage, "--store is required"},
		{"no vessel", []string{"publish", "--store", db, "--url", u}, exitUsage, "--vessel is required"},
		{"no url", base(), exitUsage, "--url is required"},
		{"http url", base("--url", "http://127.0.0.1:1/"), exitUsage, "--url must be an https URL"},
		{"cert without key", base("--url", u, "--cert", cert), exitUsage, "--cert and --key go together"},
		{"cert and token", base("--url", u, "--cert", cert, "--key", key, "--token-file", token), exitUsage, "exclude each other"},
		{"token on the command line", base("--url", u, "--token", "abc"), exitUsage, `unknown flag "--token"`},
		{"argument", base("--url", u, "extra"), exitUsage, `unexpected argument "extra"`},
		{"zero timeout", base("--url", u, "--timeout", "0s"), exitUsage, "--timeout must be a positive duration"},
		{"bad give-up", base("--url", u, "--give-up-after", "soon"), exitUsage, "--give-up-after must be a positive duration"},
		{"ca not PEM", base("--url", u, "--ca", token), exitInvalid, "--ca: no PEM certificate"},
		{"missing key", base("--url", u, "--cert", cert, "--key", filepath.Join(dir, "absent.key")), exitInvalid, "--cert and --key: "},
		{"empty token file", base("--url", u, "--token-file", empty), exitInvalid, "holds no token on its first line"},
		{"token not b64token", base("--url", u, "--token-file", notToken), exitInvalid, "the bearer token is not 1 to 512 bytes of b64token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cli(t, "", tc.args...)
			assert.Equal(t, tc.code, r.code, r.stderr)
			assert.Empty(t, r.stdout)
			assert.Contains(t, r.stderr, tc.stderr)
			assert.NotContains(t, r.stderr, "has space")
		})
	}
}

// TestRevisionsSurviveLostOutbox: the boat's outbox file is lost between
// two cycles, and later restored from an old copy; the next cycle
// activates each time (SPEC.md §2.4), and the receiver never supersedes.
func TestRevisionsSurviveLostOutbox(t *testing.T) {
	g := newPublishRig(t, allCredentials[0])
	publish := func() {
		t.Helper()
		r := cli(t, "", g.args(g.boat, "--receiver-v2")...)
		require.Equal(t, exitOK, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	// cycle commits and publishes one cycle, discovered at at, and
	// requires the receiver to have activated it.
	cycle := func(at time.Time, n int) commitOut {
		t.Helper()
		com := commitJSONOf(t, "--store", "sqlite:"+g.boat, "--vessel", vesselFlag, "--discovered-at", envelope.FormatTime(at),
			recordsFile(t, g.dir, "cycle.json", examples.Scaled(100+n)))
		publish()
		st, err := sqlitestore.Open(context.Background(), g.rcv.path)
		require.NoError(t, err)
		defer func() { require.NoError(t, st.Close()) }()
		vs, err := finalize.NewReceiver(st).Status(context.Background(), examples.VesselID)
		require.NoError(t, err)
		require.Equal(t, com.SnapshotID, vs.Active.ActiveSnapshot.String(), "cycle %d (revision %d) is active", n, com.Revision)
		require.Zero(t, vs.SupersededByActive, "cycle %d: nothing superseded", n)
		return com
	}
	boatFiles := func() []string {
		t.Helper()
		files, err := filepath.Glob(g.boat + "*")
		require.NoError(t, err)
		return files
	}
	at := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Second)
	first := cycle(at, 1)
	backup := t.TempDir()
	for _, f := range boatFiles() { // a copy of the closed file
		copyFile(t, f, filepath.Join(backup, filepath.Base(f)))
	}
	second := cycle(at.Add(15*time.Minute), 2)

	// A new SD card: the outbox file is gone.
	for _, f := range boatFiles() {
		require.NoError(t, os.Remove(f))
	}
	third := cycle(at.Add(30*time.Minute), 3)
	assert.Greater(t, third.Revision, second.Revision, "the new file starts above the lost one")

	// The old copy is restored: it holds the first cycle only.
	for _, f := range boatFiles() {
		require.NoError(t, os.Remove(f))
	}
	copies, err := filepath.Glob(filepath.Join(backup, "*"))
	require.NoError(t, err)
	for _, f := range copies {
		copyFile(t, f, filepath.Join(g.dir, filepath.Base(f)))
	}
	_, last := outboxPending(t, g.boat, examples.VesselID)
	require.Equal(t, first.Revision, last, "the restored copy knows the first cycle only")
	fourth := cycle(at.Add(45*time.Minute), 4)
	assert.Greater(t, fourth.Revision, third.Revision, "the restored copy starts above what the newer files allocated")
}

// copyFile copies a file's bytes.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, b, 0o600))
}

// Entries committed while publish runs are published by the same run, and
// its exit status agrees with what its summary counts as pending at the
// end: 0 only when nothing is.
func TestPublishWhileCommitting(t *testing.T) {
	t.Run("committed once: published too", func(t *testing.T) {
		g := newPublishRig(t, allCredentials[1])
		first := g.commitBoat(t)
		var once sync.Once
		var second commitOut
		g.rcv.onPost = func() {
			once.Do(func() {
				second = commitJSONOf(t, "--store", "sqlite:"+g.boat, "--vessel", vesselFlag, recordsFile(t, g.dir, "scaled.json", examples.Scaled(600)))
			})
		}
		r := cli(t, "", g.args(g.boat, "--json")...)
		require.Equal(t, exitOK, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
		out := publishJSONOf(t, r)
		assert.Equal(t, "delivered", out.Result)
		assert.Zero(t, out.Pending)
		assert.Equal(t, first.Entries+second.Entries, out.Delivered)
	})
	t.Run("committed without end: gives up, pending, exit 1", func(t *testing.T) {
		g := newPublishRig(t, allCredentials[1])
		g.commitBoat(t)
		// Several POSTs are in flight at once, and some still run when
		// publish has given up: the commits take turns, and none runs
		// once the test has its answer.
		var committing sync.Mutex
		var n int
		stopped := false
		g.rcv.onPost = func() {
			committing.Lock()
			defer committing.Unlock()
			if stopped {
				return
			}
			n++
			recs := recordsFile(t, g.dir, fmt.Sprintf("scaled%d.json", n), examples.Scaled(10))
			commitJSONOf(t, "--store", "sqlite:"+g.boat, "--vessel", vesselFlag, recs)
		}
		r := cli(t, "", g.args(g.boat, "--json", "--give-up-after", "1s")...)
		committing.Lock()
		stopped = true
		committing.Unlock()
		require.Equal(t, exitInvalid, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
		out := publishJSONOf(t, r)
		assert.Equal(t, "gave_up", out.Result)
		assert.Positive(t, out.Pending)
	})
}

// publish's exit status is 0 only when its report counts nothing pending
// and nothing stopped.
func TestPublishExitStatus(t *testing.T) {
	cases := []struct {
		name string
		rep  publishJSON
		want int
	}{
		{"delivered", publishJSON{Result: "delivered"}, exitOK},
		{"delivered, entries pending at the end", publishJSON{Result: "delivered", Pending: 197}, exitInvalid},
		{"pending not counted", publishJSON{Result: "delivered", Pending: -1}, exitInvalid},
		{"stopped", publishJSON{Result: "stopped", StoppedSnapshots: []uuid.UUID{uuid.New()}}, exitInvalid},
		{"gave up", publishJSON{Result: "gave_up", Pending: 3, Error: "gave up"}, exitInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errs bytes.Buffer
			got := reportPublish(&env{stdout: &out, stderr: &errs}, publishCommand, tc.rep, false)
			assert.Equal(t, tc.want, got, "stdout:\n%s\nstderr:\n%s", out.String(), errs.String())
		})
	}
}
