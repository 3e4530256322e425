package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
)

// startFakeReceiver serves handler over TLS with the rig's server
// certificate, counting POSTs, and returns its URL.
func startFakeReceiver(t *testing.T, g *publishRig, handler http.HandlerFunc) (string, *atomic.Int64) {
	t.Helper()
	var posts atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
		}
		handler(w, r)
	}))
	srv.TLS = httpbinding.ServerTLSConfig(mustCert(t)(g.ca.Server()), g.ca.Pool)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL + "/v2/messages", &posts
}

// With --receiver-v2=auto publish sends only to a receiver that declares
// protocol v2 (SPEC.md §11.7): a v1 receiver, which answers the GET 405,
// and a hostile declaration keep the gate off, send nothing and exit 1.
func TestPublishReceiverV2Auto(t *testing.T) {
	fastBackoff(t)
	t.Run("a v2 receiver", func(t *testing.T) {
		g := newPublishRig(t, allCredentials[0])
		g.commitBoat(t)
		r := cli(t, "", g.args(g.boat, "--receiver-v2=auto")...)
		require.Equal(t, exitOK, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
		assert.Contains(t, r.stdout, `receiver declaration: {"capabilities":["request_gzip"],"protocols":["yachtmemory.source-catalog.v2"]}`)
		assert.Contains(t, r.stdout, "3 delivered")
		assert.Equal(t, int64(4), g.rcv.requests.Load(), "one GET, three POSTs")
		pending, _ := outboxPending(t, g.boat, examples.VesselID)
		assert.Zero(t, pending)
	})
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		stderr  string
	}{
		{"the v1 receiver", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", "POST")
			w.WriteHeader(http.StatusMethodNotAllowed)
		}, "the receiver answers no capability declaration (SPEC.md §11.7): GET answered 405 (SPEC.md §7.5, §11.7)"},
		{"no such path", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }, "GET answered 404"},
		{"an unsorted declaration", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"capabilities":["request_gzip","chunk_reference"],"protocols":["yachtmemory.source-catalog.v2"]}`)
		}, `no declaration of v2 (SPEC.md §11.7): sourcecatalog: field "capabilities": integrity violation: element 1 is out of canonical order`},
		{"another protocol", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"capabilities":[],"protocols":["yachtmemory.source-catalog.v1"]}`)
		}, "no yachtmemory.source-catalog.v2 among the protocols declared"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newPublishRig(t, allCredentials[0])
			g.commitBoat(t)
			url, posts := startFakeReceiver(t, g, tc.handler)
			// A gate that opened would send, fail and retry: give up soon.
			args := g.args(g.boat, "--receiver-v2=auto", "--give-up-after", "2s")
			for i := range args {
				if args[i] == g.rcv.url {
					args[i] = url
				}
			}
			r := cli(t, "", args...)
			assert.Equal(t, exitInvalid, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			assert.Contains(t, r.stderr, "sourcecatalog publish: the receiver at --url declares no protocol v2 support: nothing sent.")
			assert.Contains(t, r.stderr, tc.stderr)
			assert.Zero(t, posts.Load(), "nothing was sent")
			pending, _ := outboxPending(t, g.boat, examples.VesselID)
			assert.Equal(t, 3, pending)
		})
	}
	t.Run("a declaration not read for now", func(t *testing.T) {
		g := newPublishRig(t, allCredentials[0])
		g.commitBoat(t)
		g.rcv.fail.Store(2) // two GETs answered 503
		r := cli(t, "", g.args(g.boat, "--receiver-v2=auto")...)
		require.Equal(t, exitOK, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
		assert.Contains(t, r.stdout, "capability declaration not read: sourcecatalog: store unavailable: httpbinding: answer 503 to the declaration's GET\n  retrying in 5ms\n")
		assert.Equal(t, int64(2+1+3), g.rcv.requests.Load())
	})
	t.Run("flag values", func(t *testing.T) {
		g := newPublishRig(t, allCredentials[0])
		for _, extra := range [][]string{{"--receiver-v2=on"}, {"--receiver-v2=false"}, {"--receiver-v2", "--receiver-v2=auto"}} {
			r := cli(t, "", g.args(g.boat, extra...)...)
			assert.Equal(t, exitUsage, r.code, "%v: %s", extra, r.stderr)
		}
		assert.Zero(t, g.rcv.requests.Load())
	})
}
