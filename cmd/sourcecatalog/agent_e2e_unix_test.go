//go:build unix

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/agent"
	"github.com/yachtmemory/sourcecatalog/catalog"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/internal/sktest"
	"github.com/yachtmemory/sourcecatalog/sqlitestore"
)

// TestAgentCommandEndToEnd: the agent command ← a real signalk-server playing
// both sample feeds, agent → serve on SQLite over TLS with a bearer token.
// The shore activates the sample's paths and sources of both feeds; a
// second cycle with nothing changed on board gives the same document; a
// server restarted between cycles makes the next scan incomplete (its new
// start has not settled) and nothing is committed from it.
//
// Without a signalk-server (SOURCECATALOG_SIGNALK_SERVER, see
// scripts/signalk.sh) the test skips, and under CI=true fails.
func TestAgentCommandEndToEnd(t *testing.T) {
	t.Parallel()
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("runs a signalk-server")
	}
	sk := sktest.Start(t, sktest.Options{Feeds: sktest.FeedBoth})
	wctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	require.NoError(t, sk.WaitSelfPaths(wctx, 40), "the sample feeds fill the tree")

	dir := t.TempDir()
	pki := newServePKI(t, dir)
	tokens := writeFile(t, dir, "tokens", []byte(httpbinding.TokenHash("vessel-token", examples.VesselID)+"\n"))
	tokenFile := writeFile(t, dir, "token", []byte("vessel-token\n"))
	shore, boat := filepath.Join(dir, "shore.db"), filepath.Join(dir, "boat.db")
	srv := startServe(t, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--store", "sqlite:"+shore, "--create-store",
		"--retain", "8", "--tls-cert", pki.serverCert, "--tls-key", pki.serverKey, "--tokens", tokens)
	listen, _ := srv.log.addrs(t)

	var stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"agent", "--signalk", sk.URL(), "--settle", "5s", "--interval", "3s", "--log-format", "json",
			"--store", "sqlite:" + boat, "--vessel", vesselFlag, "--url", "https://" + listen + "/", "--ca", pki.caFile,
			"--token-file", tokenFile, "--receiver-v2"}, strings.NewReader(""), io.Discard, &stderr)
	}()
	exited, code := false, 0
	stop := func() {
		if exited {
			return
		}
		require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGTERM))
		select {
		case code = <-done:
			exited = true
		case <-time.After(2 * time.Minute): // a watchdog, not a timing assertion
			t.Fatalf("SIGTERM did not stop the agent; log:\n%s", stderr.String())
		}
	}
	t.Cleanup(stop)
	// records returns the agent's log records, in order.
	records := func() []map[string]any {
		var out []map[string]any
		sc := bufio.NewScanner(strings.NewReader(stderr.String()))
		for sc.Scan() {
			var rec map[string]any
			require.NoError(t, json.Unmarshal(sc.Bytes(), &rec), sc.Text())
			out = append(out, rec)
		}
		return out
	}
	count := func(msg string, match func(map[string]any) bool) int {
		n := 0
		for _, r := range records() {
			if r["msg"] == msg && (match == nil || match(r)) {
				n++
			}
		}
		return n
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		watchdog := time.Now().Add(3 * time.Minute)
		for !cond() {
			select {
			case c := <-done:
				t.Fatalf("the agent exited %d while waiting for %s; log:\n%s", c, what, stderr.String())
			default:
			}
			require.True(t, time.Now().Before(watchdog), "no %s within the watchdog; log:\n%s", what, stderr.String())
			time.Sleep(50 * time.Millisecond)
		}
	}
	logged := func(msg string) []map[string]any {
		var out []map[string]any
		for _, r := range records() {
			if r["msg"] == msg {
				out = append(out, r)
			}
		}
		return out
	}
	settling := func(r map[string]any) bool { return r["cause"] == agent.CauseNotSettled }

	// Two cycles, each delivered.
	waitFor("two cycles delivered", func() bool {
		return count("cycle committed", nil) >= 2 && count("published", nil) >= 2
	})
	assert.GreaterOrEqual(t, count("scan incomplete: nothing committed", settling), 1, "the first scan waits for the server to settle")
	cycles := logged("cycle committed")
	first, second := cycles[0], cycles[1]
	assert.Equal(t, first["document_sha256"], second["document_sha256"], "nothing changed on board: the same document")
	assert.Equal(t, false, second["changed"])
	assert.GreaterOrEqual(t, second["paths"], 30.0, "the sample feeds' paths")
	assert.Equal(t, second["paths"], second["observations"])

	// status, beside serve, shows the second cycle active with its records.
	st := statusOf(t, "--store", "sqlite:"+shore, "--vessel", vesselFlag)
	require.Len(t, st.Vessels, 1)
	v := st.Vessels[0]
	require.NotNil(t, v.Active)
	require.GreaterOrEqual(t, len(v.Snapshots), 2)
	activeRev := int64(0)
	for _, c := range cycles {
		if c["snapshot_id"] == v.Active.SnapshotID {
			activeRev = int64(c["revision"].(float64))
		}
	}
	assert.Equal(t, activeRev, v.Active.Revision, "the active snapshot is one the agent committed")
	assert.Equal(t, int(second["paths"].(float64)+second["sources"].(float64)+second["observations"].(float64)), v.Snapshots[len(v.Snapshots)-2].RecordCount)

	// The inventory holds the sources of both sample feeds.
	store, err := sqlitestore.Open(context.Background(), shore)
	require.NoError(t, err)
	cat, err := finalize.NewReceiver(store).Active(context.Background(), examples.VesselID)
	require.NoError(t, err)
	require.NoError(t, store.Close())
	feeds := map[string]int{}
	paths := 0
	for _, it := range cat.Items {
		r, err := catalog.Decode(it.Record)
		require.NoError(t, err)
		assert.True(t, it.CurrentlyObserved)
		switch r.Kind() {
		case catalog.KindSource:
			label, _, _ := strings.Cut(r.SourceRef(), ".")
			feeds[label]++
		case catalog.KindPath:
			paths++
		}
	}
	assert.Positive(t, feeds[sktest.LabelN2K], "NMEA 2000 sources: %v", feeds)
	assert.Positive(t, feeds[sktest.Label0183], "NMEA 0183 sources: %v", feeds)
	assert.GreaterOrEqual(t, paths, 30)

	// The server restarts: the next scan is incomplete, nothing committed.
	before := count("scan incomplete: nothing committed", settling)
	require.NoError(t, sk.Restart())
	waitFor("the incomplete scan after the restart", func() bool {
		return count("scan incomplete: nothing committed", settling) > before
	})
	stop()
	assert.Equal(t, exitOK, code, stderr.String())
	recs := records()
	last := -1
	for i, r := range recs {
		if r["msg"] == "scan incomplete: nothing committed" && settling(r) {
			last = i
		}
	}
	for _, r := range recs[last:] {
		assert.NotEqual(t, "cycle committed", r["msg"], "nothing committed from the incomplete scan")
	}
	assert.Equal(t, "agent stopped", recs[len(recs)-1]["msg"])
	cycles = logged("cycle committed")
	_, lastRev := outboxPending(t, boat, examples.VesselID)
	assert.Equal(t, cycles[len(cycles)-1]["revision"], float64(lastRev), "the outbox's last revision is the last cycle logged")
}
