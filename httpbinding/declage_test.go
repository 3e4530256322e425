package httpbinding_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/internal/fakeclock"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

// fakeNow returns a virtual clock and sets g to measure on it.
func fakeNow(g *httpbinding.Gate) *fakeclock.Clock {
	clk := fakeclock.New(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	httpbinding.SetGateClock(g, clk.Now)
	return clk
}

// The Handler states how long its declaration may be reused (SPEC.md
// §11.7): DefaultDeclarationMaxAge, WithDeclarationMaxAge's whole
// seconds up to MaxDeclarationMaxAge, or no-store for none.
func TestDeclarationMaxAgeHeader(t *testing.T) {
	cases := []struct {
		name string
		opts []httpbinding.HandlerOption
		want string
	}{
		{"default", nil, "private, max-age=1800"},
		{"set", []httpbinding.HandlerOption{httpbinding.WithDeclarationMaxAge(90*time.Second + 500*time.Millisecond)}, "private, max-age=90"},
		{"over the bound", []httpbinding.HandlerOption{httpbinding.WithDeclarationMaxAge(24 * time.Hour)}, "private, max-age=3600"},
		{"none", []httpbinding.HandlerOption{httpbinding.WithDeclarationMaxAge(0)}, "no-store"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := httpbinding.NewHandler(finalize.NewReceiver(memstore.New()), httpbinding.InsecureNoAuth(vesselA), tc.opts...)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v2/messages", nil))
			require.Equal(t, http.StatusOK, w.Code)
			assert.Equal(t, tc.want, w.Header().Get("Cache-Control"))
			w = httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v2/messages", nil))
			assert.Equal(t, "no-store", w.Header().Get("Cache-Control"), "a message's answer is never reused")
		})
	}
}

// A Gate reuses a declaration of v2 for the max-age the receiver states,
// at most MaxDeclarationMaxAge, and for none when the receiver states
// none or one it cannot read (SPEC.md §11.7). Each case opens the gate,
// moves the clock on by after, and opens it again.
func TestGateReusesForMaxAge(t *testing.T) {
	cases := []struct {
		name  string
		cc    []string // Cache-Control field lines
		after time.Duration
		gets  int32
	}{
		{"within max-age", []string{"private, max-age=60"}, 59 * time.Second, 1},
		{"at max-age", []string{"private, max-age=60"}, 60 * time.Second, 2},
		{"quoted", []string{`max-age="60"`}, 59 * time.Second, 1},
		{"case", []string{"Private, MAX-AGE=60"}, 59 * time.Second, 1},
		{"absent", nil, time.Second, 2},
		{"no-store", []string{"no-store"}, time.Second, 2},
		{"no-cache beside max-age", []string{"max-age=60, no-cache"}, time.Second, 2},
		{"no-store on another line", []string{"max-age=60", "no-store"}, time.Second, 2},
		{"twice", []string{"max-age=60, max-age=60"}, time.Second, 2},
		{"zero", []string{"max-age=0"}, 0, 2},
		{"garbage", []string{"max-age=sixty"}, time.Second, 2},
		{"signed", []string{"max-age=+60"}, time.Second, 2},
		{"fraction", []string{"max-age=60.5"}, time.Second, 2},
		{"empty", []string{"max-age="}, time.Second, 2},
		{"huge, within the bound", []string{"max-age=999999999999999999999"}, httpbinding.MaxDeclarationMaxAge - time.Second, 1},
		{"huge, at the bound", []string{"max-age=999999999999999999999"}, httpbinding.MaxDeclarationMaxAge, 2},
		{"a day, at the bound", []string{"max-age=86400"}, httpbinding.MaxDeclarationMaxAge, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var gets atomic.Int32
			ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gets.Add(1)
				for _, v := range tc.cc {
					w.Header().Add("Cache-Control", v)
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, declBoth)
			}))
			defer ts.Close()
			gate := httpbinding.NewGate(testClient(t, ts))
			clk := fakeNow(gate)
			for i := range 2 {
				declared, err := gate.Open(context.Background())
				require.NoError(t, err)
				assert.Equal(t, declBoth, declared, "open %d", i)
				assert.True(t, gate.ChunkReferences())
				clk.Advance(tc.after)
			}
			assert.Equal(t, tc.gets, gets.Load(), "declaration GETs")
		})
	}
	t.Run("not declared is never reused", func(t *testing.T) {
		var gets atomic.Int32
		ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			gets.Add(1)
			w.Header().Set("Cache-Control", "max-age=3600")
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"capabilities":[],"protocols":["yachtmemory.source-catalog.v1"]}`)
		}))
		defer ts.Close()
		gate := httpbinding.NewGate(testClient(t, ts))
		for range 2 {
			_, err := gate.Open(context.Background())
			require.ErrorIs(t, err, outbox.ErrCapabilityOff)
		}
		assert.Equal(t, int32(2), gets.Load())
	})
}

// Two publishing steps within the Handler's max-age read its declaration
// once; a step after it has passed reads it again (SPEC.md §11.7).
func TestPublishingStepsReuseTheDeclaration(t *testing.T) {
	ctx := context.Background()
	h := httpbinding.NewHandler(finalize.NewReceiver(memstore.New()), httpbinding.InsecureNoAuth(vesselA))
	var gets, posts atomic.Int32
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			gets.Add(1)
		} else {
			posts.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	defer ts.Close()
	c := testClient(t, ts)
	gate := httpbinding.NewGate(c)
	clk := fakeNow(gate)
	b := newRefBoard(t)
	pub := outbox.NewPublisher(b.store, vesselA, c, outbox.WithGate(gate))
	step := func() {
		t.Helper()
		b.commit("nav", 3)
		rep, err := pub.Drain(ctx, outbox.DrainOptions{})
		require.NoError(t, err)
		require.Equal(t, outbox.Drained, rep.Outcome)
	}
	step()
	clk.Advance(httpbinding.DefaultDeclarationMaxAge - time.Second)
	step()
	assert.Equal(t, int32(1), gets.Load(), "two steps within the max-age: one GET")
	clk.Advance(time.Second)
	step()
	assert.Equal(t, int32(2), gets.Load(), "a step after the max-age: read again")
	assert.Equal(t, int32(6), posts.Load())
}

// An answer to a message that says the receiver no longer accepts what
// was sent — 404, 405, 415, 501, a refusal unsupported — makes the gate
// read the declaration again at its next Open, however long the receiver
// let it be reused, and offer no optional capability until then; other
// answers do not (SPEC.md §11.7).
func TestGateReadsAgainAfterARefusal(t *testing.T) {
	refusal := func(class error) string {
		return string(envelope.RefusalOf(sourcecatalog.Errorf(class, "x")).Canonical())
	}
	cases := []struct {
		name, ctype, body string
		status            int
		again             bool
	}{
		{"415 unsupported", "application/json", refusal(sourcecatalog.ErrUnsupported), http.StatusUnsupportedMediaType, true},
		{"422 unsupported", "application/json", refusal(sourcecatalog.ErrUnsupported), http.StatusUnprocessableEntity, true},
		{"400", "text/plain", "bad request", http.StatusBadRequest, true},
		{"404", "text/plain", "not found", http.StatusNotFound, true},
		{"405", "text/plain", "method not allowed", http.StatusMethodNotAllowed, true},
		{"501", "text/plain", "not implemented", http.StatusNotImplemented, true},
		{"422 invalid_value", "application/json", refusal(sourcecatalog.ErrInvalidValue), http.StatusUnprocessableEntity, false},
		{"503 store_unavailable", "application/json", refusal(sourcecatalog.ErrStoreUnavailable), http.StatusServiceUnavailable, false},
		{"502 from a proxy", "text/html", "<html>", http.StatusBadGateway, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var gets atomic.Int32
			ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet {
					gets.Add(1)
					w.Header().Set("Cache-Control", "private, max-age=3600")
					w.Header().Set("Content-Type", "application/json")
					_, _ = io.WriteString(w, declBoth)
					return
				}
				w.Header().Set("Content-Type", tc.ctype)
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			defer ts.Close()
			c := testClient(t, ts)
			gate := httpbinding.NewGate(c)
			_, err := gate.Open(context.Background())
			require.NoError(t, err)
			require.True(t, gate.ChunkReferences())
			_, err = c.Send(context.Background(), commitCycle(t, vesselA, uuid.Nil, "nav", 1).entries[0])
			require.Error(t, err)
			assert.Equal(t, !tc.again, gate.ChunkReferences(), "references offered after the answer")
			_, err = gate.Open(context.Background())
			require.NoError(t, err)
			want := int32(1)
			if tc.again {
				want = 2
			}
			assert.Equal(t, want, gets.Load(), "declaration GETs")
			assert.True(t, gate.ChunkReferences(), "offered again once read again")
		})
	}
}

// A receiver downgraded within the max-age it stated — it no longer takes
// gzip — answers the first gzipped body 415: the sender reads the
// declaration again before its next message, sends no other body
// gzipped, and reuses the new declaration at the next publishing step
// (SPEC.md §11.7).
func TestGateFollowsADowngradeWithinMaxAge(t *testing.T) {
	ctx := context.Background()
	var downgraded atomic.Bool
	var mu sync.Mutex
	var gets, gzipped, refused int
	up := httpbinding.NewHandler(finalize.NewReceiver(memstore.New()), httpbinding.InsecureNoAuth(vesselA),
		httpbinding.WithDeclarationMaxAge(time.Hour))
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.Method == http.MethodGet && downgraded.Load():
			gets++
			w.Header().Set("Cache-Control", "private, max-age=3600")
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, declV2)
			return
		case r.Method == http.MethodGet:
			gets++
		case r.Header.Get("Content-Encoding") == "gzip":
			gzipped++
			if downgraded.Load() {
				refused++
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnsupportedMediaType)
				_, _ = w.Write(envelope.RefusalOf(sourcecatalog.Errorf(sourcecatalog.ErrUnsupported, "no gzip")).Canonical())
				return
			}
		}
		up.ServeHTTP(w, r)
	}))
	defer ts.Close()
	c := testClient(t, ts)
	gate := httpbinding.NewGate(c)
	b := newRefBoard(t)
	pub := outbox.NewPublisher(b.store, vesselA, c, outbox.WithGate(gate))
	step := func() outbox.DrainReport {
		t.Helper()
		b.commit("nav", 150)
		rep, err := pub.Drain(ctx, outbox.DrainOptions{Backoff: outbox.Backoff{Min: time.Millisecond, Max: time.Millisecond},
			Until: time.Now().Add(5 * time.Second)})
		require.NoError(t, err)
		return rep
	}
	step()
	mu.Lock()
	require.Equal(t, 1, gets)
	first := gzipped
	require.Positive(t, first, "gzipped while request_gzip is declared")
	mu.Unlock()

	downgraded.Store(true)
	rep := step()
	mu.Lock()
	assert.Equal(t, 2, gets, "read again before the message after the 415")
	assert.Equal(t, 1, refused, "one gzipped body refused, and no other sent gzipped")
	assert.Equal(t, first+1, gzipped)
	mu.Unlock()
	assert.Equal(t, 1, rep.Failed)

	rep = step()
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 2, gets, "the declaration read after the 415 reused")
	assert.Equal(t, first+1, gzipped, "nothing gzipped on the old declaration")
	assert.Equal(t, declV2, rep.Declared)
}

// A receiver rolled back within the max-age it stated is sent one
// message: its answer (400, as a receiver of another protocol answers a
// v2 entity) makes the sender read the declaration before the next
// message, and the receiver, declaring no v2 any more, is sent nothing
// else, in this publishing step or the next (SPEC.md §7.5, §11.7).
func TestNothingSentAfterARollbackIsNoticed(t *testing.T) {
	ctx := context.Background()
	var rolledBack atomic.Bool
	var gets, posts, postsAfter atomic.Int32
	h := httpbinding.NewHandler(finalize.NewReceiver(memstore.New()), httpbinding.InsecureNoAuth(vesselA),
		httpbinding.WithDeclarationMaxAge(time.Hour))
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			gets.Add(1)
		} else {
			posts.Add(1)
		}
		if !rolledBack.Load() {
			h.ServeHTTP(w, r)
			return
		}
		if r.Method == http.MethodPost {
			postsAfter.Add(1)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("Allow", "POST")
		w.WriteHeader(http.StatusMethodNotAllowed)
	}))
	defer ts.Close()
	c := testClient(t, ts)
	b := newRefBoard(t)
	pub := outbox.NewPublisher(b.store, vesselA, c, outbox.WithGate(httpbinding.NewGate(c)))
	drain := func() (outbox.DrainReport, error) {
		return pub.Drain(ctx, outbox.DrainOptions{Backoff: outbox.Backoff{Min: time.Millisecond, Max: time.Millisecond},
			Until: time.Now().Add(2 * time.Second)})
	}
	b.commit("nav", 3)
	_, err := drain()
	require.NoError(t, err)
	require.Equal(t, int32(1), gets.Load())

	rolledBack.Store(true)
	b.commit("nav", 3)
	rep, err := drain()
	require.Error(t, err)
	assert.Equal(t, int32(1), postsAfter.Load(), "one message before the rollback is noticed, none after")
	assert.Equal(t, int32(2), gets.Load(), "read again once, before the next message")
	require.ErrorIs(t, rep.Last, httpbinding.ErrNoDeclaration)

	_, err = drain()
	require.ErrorIs(t, err, httpbinding.ErrNoDeclaration)
	assert.Equal(t, int32(1), postsAfter.Load(), "nothing sent at the next step")
	assert.Equal(t, int32(3), gets.Load())
}
