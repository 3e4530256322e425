//go:build unix

package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/examples"
)

// A lockedBuffer is a bytes.Buffer for a writer on another goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// startAgent runs the agent over a Signal K server and a receiver, with
// a new outbox file and the interval given, until its first cycle is
// delivered (2 entries: one chunk), and returns the rig, the channel of
// its exit status and its outputs.
func startAgent(t *testing.T, interval string) (*publishRig, chan int, *lockedBuffer, *lockedBuffer) {
	t.Helper()
	sk := startSignalK(t)
	g := newPublishRig(t, allCredentials[1])
	args := append([]string{"agent", "--signalk", sk.URL, "--settle", "0", "--interval", interval, "--log-format", "json",
		"--store", "sqlite:" + g.boat, "--vessel", vesselFlag, "--url", g.rcv.url, "--ca", g.ca.caFile, "--receiver-v2"}, g.flags...)
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() { done <- run(args, strings.NewReader(""), &stdout, &stderr) }()
	watchdog := time.Now().Add(time.Minute)
	for !strings.Contains(stderr.String(), `"msg":"published"`) {
		select {
		case code := <-done:
			t.Fatalf("agent exited %d early:\n%s", code, stderr.String())
		default:
		}
		require.True(t, time.Now().Before(watchdog), "no delivery within the watchdog; log:\n%s", stderr.String())
		time.Sleep(20 * time.Millisecond)
	}
	return g, done, &stdout, &stderr
}

// agent discovers, commits and publishes, and SIGTERM stops it with exit
// status 0: the receiver activated the cycle, the log says what it found.
func TestAgent(t *testing.T) {
	g, done, stdout, stderr := startAgent(t, "1h")
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGTERM))
	select {
	case code := <-done:
		require.Equal(t, exitOK, code, stderr.String())
	case <-time.After(time.Minute): // a watchdog, not a timing assertion
		t.Fatalf("SIGTERM did not stop the agent; log:\n%s", stderr.String())
	}
	assert.Empty(t, stdout.String())
	log := stderr.String()
	for _, want := range []string{
		`"msg":"agent started"`, `"vessel_id":"` + vesselFlag + `"`,
		`"msg":"cycle committed"`, `"entries":2,"paths":2,"sources":2,"observations":2,"document_sha256":"`, `"changed":true`,
		`"msg":"published"`, `"outcome":"delivered"`, `"delivered":2`,
		`"msg":"agent stopped"`,
	} {
		assert.Contains(t, log, want)
	}
	pending, last := outboxPending(t, g.boat, examples.VesselID)
	assert.Zero(t, pending)
	assert.Contains(t, log, fmt.Sprintf(`"revision":%d,"entries":2`, last), "the one cycle committed")
	g.rcv.stop()
	st := statusOf(t, "--store", "sqlite:"+g.rcv.path, "--vessel", vesselFlag)
	require.Len(t, st.Vessels, 1)
	require.NotNil(t, st.Vessels[0].Active)
	assert.Equal(t, last, st.Vessels[0].Active.Revision)
}

// The outbox file removed under the agent: its next commit finds it, and
// the agent ends with exit status 1 saying so, rather than healing into a
// new file or waiting for ever; no file is created at the path.
func TestAgentStoreRemoved(t *testing.T) {
	g, done, _, stderr := startAgent(t, "1s")
	require.Contains(t, stderr.String(), `"msg":"creating the outbox: no file at the path`)
	require.NoError(t, os.Remove(g.boat))
	select {
	case code := <-done:
		require.Equal(t, exitInvalid, code, stderr.String())
	case <-time.After(time.Minute): // a watchdog, not a timing assertion
		t.Fatalf("the agent went on without its file; log:\n%s", stderr.String())
	}
	assert.Contains(t, stderr.String(), `"msg":"store file removed or replaced`)
	assert.Contains(t, stderr.String(), "restart the agent to open the file now at the path")
	_, err := os.Stat(g.boat)
	assert.ErrorIs(t, err, os.ErrNotExist, "a file was created at the path")
}
