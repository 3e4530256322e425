package httpbinding_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// With the auto gate (NewGate) a sender follows what the receiver
// declares (SPEC.md §11.7): it gzips bodies only for request_gzip and
// sends an unchanged cycle by reference only for chunk_reference; to a
// receiver declaring neither it sends exactly what a gate set by the
// operator sends. The Handler declares by default what it accepts.
func TestGateFollowsTheDeclaration(t *testing.T) {
	cases := []struct {
		name       string
		opts       []httpbinding.HandlerOption
		gzip, refs bool
	}{
		{"default", nil, true, false},
		{"with chunk references", []httpbinding.HandlerOption{httpbinding.WithChunkReferences(true)}, true, true},
		{"declaring neither", []httpbinding.HandlerOption{httpbinding.WithChunkReferences(true), httpbinding.WithCapabilities()}, false, false},
		{"declaring references only", []httpbinding.HandlerOption{httpbinding.WithChunkReferences(true), httpbinding.WithCapabilities(httpbinding.CapabilityChunkReference)}, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			var mu sync.Mutex
			gzipped, plain, refs := 0, 0, 0
			h := httpbinding.NewHandler(finalize.NewReceiver(memstore.New()), httpbinding.InsecureNoAuth(vesselA),
				append([]httpbinding.HandlerOption{httpbinding.WithObserver(func(e httpbinding.Event) {
					if e.Kind == httpbinding.EventMessage && e.EntityType == sourcecatalog.ChunkRefEntityType {
						mu.Lock()
						refs++
						mu.Unlock()
					}
				})}, tc.opts...)...)
			ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost {
					mu.Lock()
					if r.Header.Get("Content-Encoding") == "gzip" {
						gzipped++
					} else {
						plain++
					}
					mu.Unlock()
				}
				h.ServeHTTP(w, r)
			}))
			defer ts.Close()
			c := testClient(t, ts)
			b := newRefBoard(t)
			pub := outbox.NewPublisher(b.store, vesselA, c, outbox.WithGate(httpbinding.NewGate(c)))

			first := b.commit("nav", 150)
			rep, err := pub.Drain(ctx, outbox.DrainOptions{})
			require.NoError(t, err)
			require.Equal(t, outbox.Drained, rep.Outcome)
			require.Equal(t, len(first.Entries), rep.Delivered)
			second := b.commit("nav", 150) // the same document again
			rep, err = pub.Drain(ctx, outbox.DrainOptions{})
			require.NoError(t, err)
			require.Equal(t, len(second.Entries), rep.Delivered)

			sent := len(first.Entries) + len(second.Entries)
			chunks := len(second.Entries) - 1
			if tc.gzip {
				assert.Equal(t, sent, gzipped, "every body gzipped")
			} else {
				assert.Equal(t, sent, plain, "no body gzipped")
			}
			if tc.refs {
				assert.Equal(t, chunks, refs, "the unchanged cycle's chunks by reference")
			} else {
				assert.Zero(t, refs, "no reference sent")
			}
		})
	}
}
