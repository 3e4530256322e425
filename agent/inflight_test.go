package agent_test

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog/agent"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/finalize"
	finalizemem "github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/outbox"
	outboxmem "github.com/yachtmemory/sourcecatalog/outbox/memstore"
)

// Over the Client NewSender builds from URL, the Publisher keeps
// httpbinding.DefaultMaxInFlight entries in flight, unless
// Config.Publisher sets the number.
func TestSenderInFlightOverItsClient(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []outbox.PublisherOption
		most int
	}{
		{"default", nil, httpbinding.DefaultMaxInFlight},
		{"set by the caller", []outbox.PublisherOption{outbox.WithInFlight(1)}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			tokens, err := httpbinding.ParseTokens(strings.NewReader(httpbinding.TokenHash(token, vessel) + "\n"))
			require.NoError(t, err)
			h := httpbinding.NewHandler(finalize.NewReceiver(finalizemem.New()), tokens)
			var mu sync.Mutex
			inFlight, most := 0, 0
			// The first requests wait until as many as expected are in
			// flight (or a bound passes, when fewer ever are), then all
			// go on: the count does not hang on the machine's speed.
			reached := make(chan struct{})
			ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				inFlight++
				most = max(most, inFlight)
				if most == tc.most {
					select {
					case <-reached:
					default:
						close(reached)
					}
				}
				mu.Unlock()
				select {
				case <-reached:
				case <-time.After(5 * time.Second):
				}
				h.ServeHTTP(w, r)
				mu.Lock()
				inFlight--
				mu.Unlock()
			}))
			t.Cleanup(ts.Close)
			dir := t.TempDir()
			tokenFile, caFile := filepath.Join(dir, "token"), filepath.Join(dir, "ca.pem")
			require.NoError(t, os.WriteFile(tokenFile, []byte(token+"\n"), 0o600))
			require.NoError(t, os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o600))
			s, err := agent.NewSender(agent.Config{Vessel: vessel, Store: outboxmem.New(), URL: ts.URL + "/v2/messages",
				TokenFile: tokenFile, CAFile: caFile, Gate: agent.GateOn, Publisher: tc.opts})
			require.NoError(t, err)
			c, err := s.Commit(ctx, examples.Scaled(3500))
			require.NoError(t, err)
			require.Greater(t, len(c.Entries), 2*httpbinding.DefaultMaxInFlight, "fixture: several rounds")
			rep, err := s.Publish(ctx, outbox.DrainOptions{})
			require.NoError(t, err)
			assert.Equal(t, outbox.Drained, rep.Outcome)
			assert.Equal(t, len(c.Entries), rep.Delivered)
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, tc.most, most, "entries in flight at once")
		})
	}
}
