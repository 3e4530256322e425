package httpbinding

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/yachtmemory/sourcecatalog"
)

// DefaultHealthTimeout bounds one health check by default.
const DefaultHealthTimeout = 5 * time.Second

// Health is an http.Handler answering a health probe (a load balancer's,
// an orchestrator's readiness check) from Check, such as a
// finalize.Receiver's Ping, which asks the store:
//
//	200 "ok\n"                 Check returned nil within Timeout
//	503 "store unavailable\n"  Check failed or did not answer in time
//	405 (Allow: GET, HEAD)     another method
//
// Every answer is plain text with Cache-Control: no-store, and names no
// cause: why a check failed goes to the Observer alone, since it may
// describe the server's internals. It serves every path it is mounted at,
// and is safe for concurrent use; each probe runs Check once, so mount it
// where only the prober reaches it (the admin listener of
// cmd/sourcecatalog serve, or behind the operator's network).
type Health struct {
	// Check reports whether the receiver can serve. A nil Check fails
	// every probe.
	Check func(ctx context.Context) error
	// Timeout bounds Check; DefaultHealthTimeout when zero or less.
	Timeout time.Duration
	// Observer, when not nil, gets an EventHealth per probe, with the
	// error of a failed check.
	Observer Observer
}

var _ http.Handler = (*Health)(nil)

// errNoCheck fails the probes of a Health without a Check.
var errNoCheck = sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "httpbinding: a Health handler needs a Check")

// ServeHTTP implements http.Handler.
func (h *Health) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writePlain(w, http.StatusMethodNotAllowed)
		return
	}
	start := time.Now()
	err := h.check(r.Context())
	if h.Observer != nil {
		h.Observer(Event{Kind: EventHealth, Err: err, Duration: time.Since(start)})
	}
	if err != nil {
		writeText(w, http.StatusServiceUnavailable, "store unavailable\n")
		return
	}
	writeText(w, http.StatusOK, "ok\n")
}

// check runs Check within the timeout; a Check that returns nil after
// the timeout has passed fails too, as one that did not answer.
func (h *Health) check(ctx context.Context) error {
	if h.Check == nil {
		return errNoCheck
	}
	ctx, cancel := context.WithTimeout(ctx, orDefault(h.Timeout, DefaultHealthTimeout))
	defer cancel()
	err := h.Check(ctx)
	if err == nil && ctx.Err() != nil {
		err = sourcecatalog.Wrap(sourcecatalog.ErrStoreUnavailable, context.Cause(ctx))
	}
	return err
}

// writeText writes a plain text answer.
func writeText(w http.ResponseWriter, status int, body string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}
