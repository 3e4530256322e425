package agent_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/agent"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// In auto mode the agent asks the receiver's declaration at each cycle's
// publishing step: a receiver that answers none (the installed v1
// receiver, GET 405) is sent nothing; once it declares v2 the pending
// cycles are delivered; rolled back, it is sent nothing again. Each
// change is logged.
func TestAutoGateFollowsTheDeclaration(t *testing.T) {
	g := newRig(t, boat)
	tokens, err := httpbinding.ParseTokens(strings.NewReader(httpbinding.TokenHash(token, vessel) + "\n"))
	require.NoError(t, err)
	// It states no max-age: it is rolled back within what it would state.
	h := httpbinding.NewHandler(g.shore, tokens, httpbinding.WithCapabilities(httpbinding.CapabilityRequestGzip), httpbinding.WithDeclarationMaxAge(0))
	var v2 atomic.Bool
	var posts atomic.Int64
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
		}
		if !v2.Load() {
			if r.Method != http.MethodPost {
				w.Header().Set("Allow", "POST")
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
			t.Errorf("a v2 entry was sent to a receiver that declares no v2")
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	c := g.newClient(ts, token)
	cfg := g.config()
	cfg.Transport = c
	cfg.Gate = agent.GateAuto // the default
	var sentBeforeUpgrade, sentBeforeRollback int64
	g.clock.At(start.Add(10*time.Minute), func() { sentBeforeUpgrade = posts.Load(); v2.Store(true) })
	g.clock.At(start.Add(25*time.Minute), func() { sentBeforeRollback = posts.Load(); v2.Store(false) })
	g.run(cfg, 2*interval+time.Minute)

	assert.Equal(t, minutes(0, 15, 30), g.disc.times())
	assert.Zero(t, sentBeforeUpgrade, "nothing sent while the receiver answers no declaration")
	assert.Equal(t, int64(6), sentBeforeRollback, "both cycles' entries (3 each) sent once v2 is declared")
	assert.Equal(t, sentBeforeRollback, posts.Load(), "nothing sent after the rollback")

	first := g.logged("receiver declaration")
	require.Len(t, first, 1)
	assert.Contains(t, first[0]["declared"], "none")
	changed := g.logged("receiver declaration changed")
	require.Len(t, changed, 2)
	assert.Equal(t, `{"capabilities":["request_gzip"],"protocols":["yachtmemory.source-catalog.v2"]}`, changed[0]["declared"])
	assert.Equal(t, first[0]["declared"], changed[0]["previous"])
	assert.Equal(t, first[0]["declared"], changed[1]["declared"])
	off := g.logged("nothing sent: the receiver is not declared v2-capable (SPEC.md §7.5); entries stay pending")
	require.Len(t, off, 2, "cycles 1 and 3")
	assert.Contains(t, off[0]["reason"], "answers no capability declaration")
	assert.Equal(t, 3, len(g.pending()), "the third cycle's entries (3) wait")
}

// A Sender in auto mode reads the declaration once for two cycles'
// publishing steps within the max-age the receiver states, and at each
// step when it states none (SPEC.md §11.7).
func TestSenderReusesTheDeclaration(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []httpbinding.HandlerOption
		gets int64
	}{
		{"default max-age", nil, 1},
		{"no max-age", []httpbinding.HandlerOption{httpbinding.WithDeclarationMaxAge(0)}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			g := newRig(t, boat)
			tokens, err := httpbinding.ParseTokens(strings.NewReader(httpbinding.TokenHash(token, vessel) + "\n"))
			require.NoError(t, err)
			h := httpbinding.NewHandler(g.shore, tokens, tc.opts...)
			var gets, posts atomic.Int64
			ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet {
					gets.Add(1)
				} else {
					posts.Add(1)
				}
				h.ServeHTTP(w, r)
			}))
			t.Cleanup(ts.Close)
			cfg := g.config()
			cfg.Transport = g.newClient(ts, token)
			cfg.Gate = agent.GateAuto
			s, err := agent.NewSender(cfg)
			require.NoError(t, err)
			for i := range 2 {
				_, err := s.Commit(ctx, examples.Scaled(10+i))
				require.NoError(t, err)
				rep, err := s.Publish(ctx, outbox.DrainOptions{})
				require.NoError(t, err, "cycle %d", i)
				assert.Equal(t, outbox.Drained, rep.Outcome)
				g.clock.Advance(agent.DefaultInterval)
			}
			assert.Equal(t, tc.gets, gets.Load(), "declaration GETs")
			assert.Positive(t, posts.Load())
			assert.Empty(t, g.pending())
		})
	}
}
