package httpbinding_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
)

// TestHealth: a probe is 200 when the check passes in time and 503 with
// no cause when it fails, hangs past the timeout, or there is no check;
// other methods are 405; the Observer gets why.
func TestHealth(t *testing.T) {
	hang := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	late := func(ctx context.Context) error { <-ctx.Done(); return nil }
	cases := []struct {
		name    string
		check   func(context.Context) error
		method  string
		status  int
		body    string
		wantErr error
	}{
		{"a serving store", finalize.NewReceiver(memstore.New()).Ping, http.MethodGet, 200, "ok\n", nil},
		{"HEAD", finalize.NewReceiver(memstore.New()).Ping, http.MethodHead, 200, "", nil},
		{"a failing store", func(context.Context) error { return errInjected }, http.MethodGet, 503, "store unavailable\n", errInjected},
		{"a store that hangs", hang, http.MethodGet, 503, "store unavailable\n", context.DeadlineExceeded},
		{"nil after the timeout", late, http.MethodGet, 503, "store unavailable\n", sourcecatalog.ErrStoreUnavailable},
		{"no check", nil, http.MethodGet, 503, "store unavailable\n", sourcecatalog.ErrInvalidValue},
		{"a store that cannot be pinged", finalize.NewReceiver(struct{ finalize.Store }{memstore.New()}).Ping, http.MethodGet, 503, "store unavailable\n", sourcecatalog.ErrUnsupported},
		{"POST", func(context.Context) error { return nil }, http.MethodPost, 405, "Method Not Allowed\n", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var events []httpbinding.Event
			h := &httpbinding.Health{Check: c.check, Timeout: 50 * time.Millisecond, Observer: func(e httpbinding.Event) { events = append(events, e) }}
			srv := httptest.NewServer(h)
			defer srv.Close()
			req, err := http.NewRequest(c.method, srv.URL+"/healthz", nil)
			require.NoError(t, err)
			resp, err := srv.Client().Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, c.status, resp.StatusCode)
			require.Equal(t, c.body, string(body), "the answer names no cause")
			require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
			require.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
			if c.status == 405 {
				require.Equal(t, "GET, HEAD", resp.Header.Get("Allow"))
				require.Empty(t, events, "a refused method runs no check")
				return
			}
			require.Len(t, events, 1)
			require.Equal(t, httpbinding.EventHealth, events[0].Kind)
			if c.wantErr == nil {
				require.NoError(t, events[0].Err)
			} else {
				require.True(t, errors.Is(events[0].Err, c.wantErr), "the Observer gets why: %v", events[0].Err)
			}
		})
	}
}
