package httpbinding_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/outbox"
)

const (
	declV2   = `{"capabilities":[],"protocols":["yachtmemory.source-catalog.v2"]}`
	declBoth = `{"capabilities":["chunk_reference","request_gzip"],"protocols":["yachtmemory.source-catalog.v2"]}`
)

// The Handler answers an authenticated GET with its declaration, the same
// for every vessel, and never reads a GET's body.
func TestDeclarationRoute(t *testing.T) {
	cases := []struct {
		name string
		opts []httpbinding.HandlerOption
		want string
	}{
		{"default", nil, `{"capabilities":["request_gzip"],"protocols":["yachtmemory.source-catalog.v2"]}`},
		{"none", []httpbinding.HandlerOption{httpbinding.WithCapabilities()}, declV2},
		{"with capabilities", []httpbinding.HandlerOption{httpbinding.WithCapabilities(httpbinding.CapabilityRequestGzip, httpbinding.CapabilityChunkReference)}, declBoth},
		{"one", []httpbinding.HandlerOption{httpbinding.WithCapabilities(httpbinding.CapabilityChunkReference)},
			`{"capabilities":["chunk_reference"],"protocols":["yachtmemory.source-catalog.v2"]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := startRig(t, rigConfig{opts: tc.opts})
			for _, v := range []uuid.UUID{vesselA, vesselB} {
				cert := r.ca.vessel(t, v)
				a := r.post(t, &cert, http.MethodGet, map[string]string{"Content-Type": ""}, nil)
				require.Equal(t, http.StatusOK, a.status, "%s", a.body)
				assert.Equal(t, tc.want, string(a.body))
				assert.Equal(t, "application/json", a.header.Get("Content-Type"))
				assert.Equal(t, "private, max-age=1800", a.header.Get("Cache-Control"))
				d, err := r.client(t, &cert).Declaration(context.Background())
				require.NoError(t, err)
				assert.Equal(t, tc.want, d.String())
			}
			ev := r.events.of(httpbinding.EventMessage)
			require.NotEmpty(t, ev)
			assert.Equal(t, httpbinding.OutcomeDeclaration, ev[0].Outcome)
			assert.Equal(t, vesselA, ev[0].Vessel)
			vessels, err := r.store.Vessels(context.Background(), false)
			require.NoError(t, err)
			assert.Empty(t, vessels, "a GET stages nothing")
		})
	}

	r := startRig(t, rigConfig{})
	cert := r.ca.vessel(t, vesselA)
	t.Run("not authenticated", func(t *testing.T) {
		a := r.post(t, nil, http.MethodGet, nil, nil)
		assert.Equal(t, http.StatusUnauthorized, a.status)
		assert.NotContains(t, string(a.body), "protocols")
	})
	t.Run("a GET with a body", func(t *testing.T) {
		a := r.post(t, &cert, http.MethodGet, nil, []byte(declV2))
		assert.Equal(t, http.StatusBadRequest, a.status)
		assert.NotContains(t, string(a.body), "protocols")
	})
	for _, m := range []string{http.MethodHead, http.MethodPut, http.MethodDelete, http.MethodOptions} {
		t.Run(m, func(t *testing.T) {
			a := r.post(t, &cert, m, nil, nil)
			assert.Equal(t, http.StatusMethodNotAllowed, a.status)
			assert.Equal(t, "GET, POST", a.header.Get("Allow"))
		})
	}
}

// Bad capability names are refused where the Handler is built.
func TestWithCapabilitiesRefusesBadNames(t *testing.T) {
	for _, names := range [][]string{{""}, {"Request_Gzip"}, {"a", "a"}, {strings.Repeat("a", 65)}} {
		assert.Panics(t, func() { httpbinding.WithCapabilities(names...) }, "%q", names)
		_, err := httpbinding.NewDeclaration(names...)
		require.Error(t, err, "%q", names)
		assert.Equal(t, "capabilities", sourcecatalog.Problems(err)[0].Field)
	}
	many := make([]string, httpbinding.MaxCapabilities+1)
	for i := range many {
		many[i] = fmt.Sprintf("c%03d", i)
	}
	_, err := httpbinding.NewDeclaration(many...)
	require.ErrorIs(t, err, sourcecatalog.ErrLimitExceeded)
	d, err := httpbinding.NewDeclaration(many[1:]...)
	require.NoError(t, err)
	assert.Len(t, d.Unknown, httpbinding.MaxCapabilities)
}

// outcome is what a test expects of Client.Declaration.
type outcome int

const (
	declared     outcome = iota // v2 declared
	notDeclared                 // ErrNoDeclaration: a receiver that does not answer
	badDecl                     // *DeclarationError: hostile or not v2
	failed                      // a failed attempt, store_unavailable
	unauthorized                // 401
)

// A declaration's answer decides one of the outcomes of SPEC.md §11.7.
func TestClientDeclaration(t *testing.T) {
	cases := []struct {
		name   string
		status int
		ctype  string
		body   string
		want   outcome
		class  error  // a *DeclarationError's problem class
		field  string // and its field
		caps   []string
	}{
		{"v2", 200, "application/json", declV2, declared, nil, "", nil},
		{"both", 200, "application/json; charset=utf-8", declBoth, declared, nil, "",
			[]string{httpbinding.CapabilityChunkReference, httpbinding.CapabilityRequestGzip}},
		{"unknown capability", 200, "application/json",
			`{"capabilities":["request_gzip","zstd"],"protocols":["yachtmemory.source-catalog.v2"]}`, declared, nil, "",
			[]string{httpbinding.CapabilityRequestGzip}},
		{"404", 404, "text/plain", "not found", notDeclared, nil, "", nil},
		{"405 (the v1 receiver)", 405, "text/plain", "", notDeclared, nil, "", nil},
		{"501", 501, "text/plain", "", notDeclared, nil, "", nil},
		{"200 html", 200, "text/html", "<html>v1 receiver</html>", notDeclared, nil, "", nil},
		{"wrong protocol", 200, "application/json", `{"capabilities":[],"protocols":["yachtmemory.source-catalog.v3"]}`,
			badDecl, sourcecatalog.ErrUnsupported, "protocols", nil},
		{"malformed", 200, "application/json", `{"capabilities":[],`, badDecl, sourcecatalog.ErrMalformedJSON, "", nil},
		{"unsorted", 200, "application/json", `{"capabilities":["request_gzip","chunk_reference"],"protocols":["yachtmemory.source-catalog.v2"]}`,
			badDecl, sourcecatalog.ErrIntegrity, "capabilities", nil},
		{"duplicate", 200, "application/json", `{"capabilities":["request_gzip","request_gzip"],"protocols":["yachtmemory.source-catalog.v2"]}`,
			badDecl, sourcecatalog.ErrIntegrity, "capabilities", nil},
		{"unknown member", 200, "application/json", `{"capabilities":[],"protocols":["yachtmemory.source-catalog.v2"],"x":1}`,
			badDecl, sourcecatalog.ErrUnknownField, "x", nil},
		{"a receipt", 200, "application/json", `{"status":"staged"}`, badDecl, sourcecatalog.ErrMissingField, "capabilities", nil},
		{"oversized", 200, "application/json", declV2 + strings.Repeat(" ", httpbinding.MaxDeclarationSize), failed, nil, "", nil},
		{"500", 500, "text/plain", "", failed, nil, "", nil},
		{"503", 503, "application/json", declV2, failed, nil, "", nil},
		{"429", 429, "text/plain", "", failed, nil, "", nil},
		{"403", 403, "text/plain", "", failed, nil, "", nil},
		{"400", 400, "text/plain", "", failed, nil, "", nil},
		{"redirect", 307, "text/plain", "", failed, nil, "", nil},
		{"401", 401, "text/plain", "", unauthorized, nil, "", nil},
	}
	var current atomic.Pointer[cannedAnswer]
	var last atomic.Pointer[http.Request]
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		last.Store(r)
		current.Load().write(w)
	}))
	defer ts.Close()
	c := testClient(t, ts, httpbinding.WithBearerToken("tok"))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			current.Store(&cannedAnswer{tc.status, tc.ctype, tc.body})
			d, err := c.Declaration(context.Background())
			r := last.Load()
			assert.Equal(t, http.MethodGet, r.Method)
			assert.Equal(t, "Bearer tok", r.Header.Get("Authorization"))
			assert.Equal(t, "application/json", r.Header.Get("Accept"))
			if tc.want == declared {
				require.NoError(t, err)
				assert.True(t, d.V2())
				assert.Equal(t, tc.caps, d.Capabilities)
				assert.False(t, d.Has("zstd"), "an unknown capability is never supported")
				return
			}
			require.Error(t, err)
			assert.Equal(t, httpbinding.Declaration{}, d, "nothing is declared")
			off := errors.Is(err, outbox.ErrCapabilityOff)
			assert.Equal(t, tc.want == notDeclared || tc.want == badDecl, off, "gate off: %v", err)
			assert.Equal(t, tc.want == notDeclared, errors.Is(err, httpbinding.ErrNoDeclaration), "%v", err)
			assert.Equal(t, tc.want == unauthorized, outbox.NeedsOperator(err), "%v", err)
			var de *httpbinding.DeclarationError
			require.Equal(t, tc.want == badDecl, errors.As(err, &de), "%v", err)
			if de != nil {
				assert.Equal(t, tc.class, de.Problem.Class, "%v", err)
				assert.Equal(t, tc.field, de.Problem.Field, "%v", err)
			}
			want := sourcecatalog.ErrStoreUnavailable
			if off {
				want = sourcecatalog.ErrUnsupported
			}
			for _, class := range sourcecatalog.Classes() {
				assert.Equal(t, class == want, errors.Is(err, class), "exactly the class %v: %v", want, err)
			}
		})
	}
}

// A receiver that cannot be reached, or whose certificate fails
// verification, is a failed attempt, never a declaration either way.
func TestClientDeclarationTransport(t *testing.T) {
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, declV2)
	}))
	untrusted, err := httpbinding.NewClient(ts.URL, httpbinding.WithTimeout(5*time.Second))
	require.NoError(t, err)
	_, err = untrusted.Declaration(context.Background())
	var tf *httpbinding.TLSError
	require.ErrorAs(t, err, &tf)
	assert.True(t, outbox.NeedsOperator(err))
	assert.NotErrorIs(t, err, outbox.ErrCapabilityOff)

	c := testClient(t, ts)
	_, err = c.Declaration(context.Background())
	require.NoError(t, err)
	ts.Close()
	c.CloseIdleConnections()
	_, err = c.Declaration(context.Background())
	require.ErrorIs(t, err, sourcecatalog.ErrStoreUnavailable)
	assert.NotErrorIs(t, err, outbox.ErrCapabilityOff)
	assert.False(t, outbox.NeedsOperator(err))
}

// A v1-like receiver: it counts POSTs and answers every other method
// with status.
func v1Receiver(t *testing.T, status int) (*httptest.Server, *atomic.Int32) {
	var posts atomic.Int32
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
			w.WriteHeader(http.StatusBadRequest) // the v1 receiver knows no v2 entity
			return
		}
		w.Header().Set("Allow", "POST")
		w.WriteHeader(status)
	}))
	t.Cleanup(ts.Close)
	return ts, &posts
}

// In auto mode the gate opens only while the receiver declares v2: a
// v1-like receiver keeps it off and is sent nothing; a v2 receiver gets
// everything; a hostile declaration keeps it off with its typed error; a
// receiver that cannot be read is asked again, and nothing is sent.
func TestGateAuto(t *testing.T) {
	ctx := context.Background()
	drain := func(t *testing.T, c *httpbinding.Client, b *board, until time.Duration) (outbox.DrainReport, error) {
		gate := httpbinding.NewGate(c)
		pub := outbox.NewPublisher(b.store, b.vessel, c, outbox.WithGate(gate))
		return pub.Drain(ctx, outbox.DrainOptions{Backoff: outbox.Backoff{Min: time.Millisecond, Max: 5 * time.Millisecond},
			Until: time.Now().Add(until)})
	}
	for _, status := range []int{http.StatusMethodNotAllowed, http.StatusNotFound} {
		t.Run(fmt.Sprintf("v1 receiver, GET %d", status), func(t *testing.T) {
			ts, posts := v1Receiver(t, status)
			b := commitCycle(t, vesselA, uuid.Nil, "nav", 1)
			rep, err := drain(t, testClient(t, ts), b, 10*time.Second)
			require.ErrorIs(t, err, outbox.ErrCapabilityOff)
			require.ErrorIs(t, err, httpbinding.ErrNoDeclaration)
			assert.Equal(t, outbox.DrainFailed, rep.Outcome)
			assert.Contains(t, rep.Declared, "none")
			assert.Zero(t, posts.Load(), "nothing is sent to a v1 receiver")
			assert.Zero(t, rep.Sent)
			for _, s := range b.states(t) {
				assert.Equal(t, outbox.Pending, s)
			}
		})
	}
	t.Run("v2 receiver", func(t *testing.T) {
		r := startRig(t, rigConfig{opts: []httpbinding.HandlerOption{httpbinding.WithCapabilities(httpbinding.CapabilityRequestGzip)}})
		cert := r.ca.vessel(t, vesselA)
		b := commitCycle(t, vesselA, uuid.Nil, "nav", 150)
		c := r.client(t, &cert)
		gate := httpbinding.NewGate(c)
		rep, err := outbox.NewPublisher(b.store, b.vessel, c, outbox.WithGate(gate)).Drain(ctx, outbox.DrainOptions{})
		require.NoError(t, err)
		assert.Equal(t, outbox.Drained, rep.Outcome)
		assert.Equal(t, len(b.entries), rep.Delivered)
		assert.Equal(t, `{"capabilities":["request_gzip"],"protocols":["yachtmemory.source-catalog.v2"]}`, rep.Declared)
		assert.True(t, gate.Declared().Has(httpbinding.CapabilityRequestGzip))
		assert.False(t, gate.Declared().Has(httpbinding.CapabilityChunkReference))
		for _, s := range b.states(t) {
			assert.Equal(t, outbox.Delivered, s)
		}
	})
	hostile := []struct{ name, body string }{
		{"oversized", declV2 + strings.Repeat(" ", httpbinding.MaxDeclarationSize)},
		{"malformed", `{"capabilities":[],"protocols":["yachtmemory.source-catalog.v2"]`},
		{"unsorted", `{"capabilities":["request_gzip","chunk_reference"],"protocols":["yachtmemory.source-catalog.v2"]}`},
		{"duplicate", `{"capabilities":[],"protocols":["yachtmemory.source-catalog.v2","yachtmemory.source-catalog.v2"]}`},
		{"wrong protocol", `{"capabilities":[],"protocols":["yachtmemory.source-catalog.v1"]}`},
	}
	for _, h := range hostile {
		t.Run("hostile "+h.name, func(t *testing.T) {
			var posts atomic.Int32
			ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost {
					posts.Add(1)
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, h.body)
			}))
			defer ts.Close()
			b := commitCycle(t, vesselA, uuid.Nil, "nav", 1)
			rep, err := drain(t, testClient(t, ts), b, 200*time.Millisecond)
			require.Error(t, err)
			if h.name == "oversized" {
				// Over the bound is a failed attempt (SPEC.md §11.6, §11.7):
				// asked again until the drain gives up.
				assert.Equal(t, outbox.DrainGaveUp, rep.Outcome)
				require.ErrorIs(t, rep.Last, sourcecatalog.ErrStoreUnavailable)
			} else {
				var de *httpbinding.DeclarationError
				require.ErrorAs(t, err, &de)
				require.ErrorIs(t, err, outbox.ErrCapabilityOff)
				assert.Equal(t, outbox.DrainFailed, rep.Outcome)
			}
			assert.Zero(t, posts.Load(), "nothing is sent")
		})
	}
	t.Run("unavailable, then v2", func(t *testing.T) {
		h := httpbinding.NewHandler(finalize.NewReceiver(memstore.New()), httpbinding.InsecureNoAuth(vesselA), httpbinding.WithCapabilities())
		var gets, posts atomic.Int32
		ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && gets.Add(1) <= 3 {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			if r.Method == http.MethodPost {
				posts.Add(1)
			}
			h.ServeHTTP(w, r)
		}))
		defer ts.Close()
		b := commitCycle(t, vesselA, uuid.Nil, "nav", 1)
		c := testClient(t, ts)
		var failures []error
		pub := outbox.NewPublisher(b.store, b.vessel, c, outbox.WithGate(httpbinding.NewGate(c)))
		rep, err := pub.Drain(ctx, outbox.DrainOptions{Backoff: outbox.Backoff{Min: time.Millisecond, Max: time.Millisecond},
			OnGate: func(err error, _ time.Duration) {
				failures = append(failures, err)
				assert.Zero(t, posts.Load(), "nothing sent while the declaration is unread")
			}})
		require.NoError(t, err)
		require.Len(t, failures, 3, "asked again after each failed attempt")
		for _, f := range failures {
			assert.ErrorIs(t, f, sourcecatalog.ErrStoreUnavailable)
		}
		assert.Equal(t, outbox.Drained, rep.Outcome)
		assert.Equal(t, len(b.entries), rep.Delivered)
		assert.Equal(t, declV2, rep.Declared)
	})
}

// A gate forgets the capabilities it read once the receiver stops
// declaring v2: a rolled-back receiver's capabilities are not used.
func TestGateForgetsOnRollback(t *testing.T) {
	var v2 atomic.Bool
	v2.Store(true)
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !v2.Load() {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, declBoth)
	}))
	defer ts.Close()
	gate := httpbinding.NewGate(testClient(t, ts))
	declared, err := gate.Open(context.Background())
	require.NoError(t, err)
	assert.Equal(t, declBoth, declared)
	assert.True(t, gate.Declared().Has(httpbinding.CapabilityChunkReference))
	v2.Store(false)
	declared, err = gate.Open(context.Background())
	require.ErrorIs(t, err, httpbinding.ErrNoDeclaration)
	assert.Equal(t, "none: GET answered 405", declared)
	assert.Equal(t, httpbinding.Declaration{}, gate.Declared())
}
