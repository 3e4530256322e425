package receiver

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/storeheal"
)

// /healthz follows the store's state and its ping, logging a failed
// ping's cause but never answering it; /metrics is served when given.
func TestAdminHandler(t *testing.T) {
	var failing error
	var logged bytes.Buffer
	state := storeheal.Healthy
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})
	h := adminHandler(func() storeheal.Status { return storeheal.Status{State: state} },
		func(context.Context) error { return failing }, metrics, finalize.NewReceiver(memstore.New()), slog.New(slog.NewTextHandler(&logged, nil)))
	get := func(method, path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
		return rec
	}
	rec := get("GET", "/healthz")
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "ok\n", rec.Body.String())
	assert.Equal(t, "no-store", rec.Header().Get("Cache-Control"))

	failing = errors.New("database is locked")
	rec = get("GET", "/healthz")
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Equal(t, "store unavailable\n", rec.Body.String(), "the cause stays in the log")
	assert.Contains(t, logged.String(), "database is locked")

	failing = nil
	for _, state = range []storeheal.State{storeheal.Poisoned, storeheal.Reopening} {
		rec = get("GET", "/healthz")
		assert.Equal(t, http.StatusServiceUnavailable, rec.Code, "%s", state)
		assert.Equal(t, "store "+state.String()+"\n", rec.Body.String())
	}
	state = storeheal.Healthy
	assert.Equal(t, http.StatusOK, get("GET", "/healthz").Code)
	failing = errors.New("database is locked")

	assert.Equal(t, http.StatusOK, get("GET", "/metrics").Code)
	assert.Equal(t, http.StatusServiceUnavailable, get("HEAD", "/healthz").Code, "HEAD is GET without a body")
	assert.Equal(t, http.StatusMethodNotAllowed, get("POST", "/healthz").Code)
	assert.Equal(t, http.StatusNotFound, get("GET", "/").Code)
}
