package httpbinding_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/finalize/memstore"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
)

// secret marks every text of the causes below: it must never reach the
// sender.
const secret = "SECRET-/var/lib/catalog.db-10.0.0.5:3306"

// An errStore fails every transaction with what fail returns for the
// transaction's context.
type errStore struct {
	finalize.Store
	fail func(ctx context.Context) error
}

func (s *errStore) WithVessel(ctx context.Context, _ uuid.UUID, _ func(finalize.Tx) error) error {
	return s.fail(ctx)
}

// Every error a store can hand the Receiver — its own sentinels with their
// details (sqlitestore's ErrLocked and ErrPoisoned, as they wrap SQLite's
// error), a done context, a driver's error of no class, an error of a
// decoding class or of conflict with a store's detail and location, a
// joined error, ErrNotFound leaked — is refused with the class's text
// alone as the message, and for staging_exhausted and store_unavailable
// no location: nothing of the cause reaches the sender, while the
// Observer gets all of it (SPEC.md §11.3). A store that panics sends no
// answer at all.
func TestRefusalsCarryNoCause(t *testing.T) {
	sqliteErr := errors.New("database is locked (5) " + secret)
	locked := sourcecatalog.Errorf(sourcecatalog.ErrStoreUnavailable, "sqlitestore: the database is locked by another user "+secret)
	poisoned := sourcecatalog.Errorf(sourcecatalog.ErrStoreUnavailable, "sqlitestore: the handle is poisoned "+secret)
	waitForDeadline := func(ctx context.Context) error {
		<-ctx.Done()
		return fmt.Errorf("sqlitestore: begin %s: %w", secret, ctx.Err())
	}
	cases := []struct {
		name   string
		fail   func(ctx context.Context) error
		class  error
		status int
		chunk  int
		field  string
	}{
		{"locked", func(context.Context) error {
			return fmt.Errorf("sqlitestore: begin: %w: %w", locked, sqliteErr)
		}, sourcecatalog.ErrStoreUnavailable, 503, -1, ""},
		{"poisoned", func(context.Context) error {
			return fmt.Errorf("%w (by: %w)", poisoned, errors.New("disk I/O error "+secret))
		}, sourcecatalog.ErrStoreUnavailable, 503, -1, ""},
		{"commit failed", func(context.Context) error {
			return fmt.Errorf("sqlitestore: commit: %w: %w", poisoned, sqliteErr)
		}, sourcecatalog.ErrStoreUnavailable, 503, -1, ""},
		{"receive timeout", waitForDeadline, sourcecatalog.ErrStoreUnavailable, 503, -1, ""},
		{"context canceled", func(context.Context) error { return fmt.Errorf("%s: %w", secret, context.Canceled) }, sourcecatalog.ErrStoreUnavailable, 503, -1, ""},
		{"driver error of no class", func(context.Context) error { return errors.New("driver: bad connection " + secret) }, sourcecatalog.ErrStoreUnavailable, 503, -1, ""},
		{"class wrapped with a cause", func(context.Context) error {
			return sourcecatalog.Wrap(sourcecatalog.ErrStoreUnavailable, errors.New(secret))
		}, sourcecatalog.ErrStoreUnavailable, 503, -1, ""},
		{"store unavailable, located", func(context.Context) error {
			return sourcecatalog.Errorf(sourcecatalog.ErrStoreUnavailable, secret).InChunk(3).AtField("items")
		}, sourcecatalog.ErrStoreUnavailable, 503, -1, ""},
		{"staging exhausted with a detail", func(context.Context) error {
			return sourcecatalog.Errorf(sourcecatalog.ErrStagingExhausted, secret).InChunk(3)
		}, sourcecatalog.ErrStagingExhausted, 503, -1, ""},
		{"invalid value of a store", func(context.Context) error {
			return sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "mysqlstore: item of kind 7 "+secret).AtField("records")
		}, sourcecatalog.ErrInvalidValue, 422, -1, "records"},
		{"conflict with a detail", func(context.Context) error {
			return sourcecatalog.Errorf(sourcecatalog.ErrConflict, secret).InChunk(2)
		}, sourcecatalog.ErrConflict, 409, 2, ""},
		{"joined", func(context.Context) error {
			return errors.Join(sourcecatalog.Errorf(sourcecatalog.ErrStoreUnavailable, secret), errors.New(secret))
		}, sourcecatalog.ErrStoreUnavailable, 503, -1, ""},
		{"not found leaked", func(context.Context) error { return fmt.Errorf("%s: %w", secret, sourcecatalog.ErrNotFound) }, sourcecatalog.ErrStoreUnavailable, 503, -1, ""},
		{"an error that is its own class", func(context.Context) error {
			return &sourcecatalog.Error{Class: errors.New(secret), Chunk: 1, Record: 1, Detail: secret}
		}, sourcecatalog.ErrStoreUnavailable, 503, -1, ""},
	}
	e := commitCycle(t, vesselA, uuid.Nil, "nav", 1).entries[0]
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := startRig(t, rigConfig{store: &errStore{Store: memstore.New(), fail: tc.fail},
				opts: []httpbinding.HandlerOption{httpbinding.WithReceiveTimeout(200 * time.Millisecond)}})
			cert := r.ca.vessel(t, vesselA)
			ans := r.post(t, &cert, http.MethodPost, nil, wrap(e))
			require.Equal(t, tc.status, ans.status, "%s", ans.body)
			assert.NotContains(t, string(ans.body), "SECRET")
			assert.NotContains(t, fmt.Sprint(ans.header), "SECRET")
			f := ans.refusal(t)
			assert.Equal(t, tc.class, f.Class)
			assert.Equal(t, tc.class.Error(), f.Message, "the class's text alone")
			assert.Equal(t, tc.chunk, f.Chunk)
			if tc.chunk < 0 {
				assert.Equal(t, -1, f.Record)
			}
			assert.Equal(t, tc.field, f.Field)
			ev := r.events.of(httpbinding.EventMessage)
			require.Len(t, ev, 1)
			require.Error(t, ev[0].Err)
			assert.Contains(t, ev[0].Err.Error(), secret, "the Observer gets the cause")
		})
	}
	t.Run("panic", func(t *testing.T) {
		r := startRig(t, rigConfig{store: &errStore{Store: memstore.New(), fail: func(context.Context) error { panic(secret) }}})
		cert := r.ca.vessel(t, vesselA)
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: r.tlsFor(&cert)}}
		defer hc.CloseIdleConnections()
		req, err := http.NewRequest(http.MethodPost, r.url, strings.NewReader(string(wrap(e))))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		require.Error(t, err, "no answer at all, so no text of the panic")
		assert.NotContains(t, err.Error(), "SECRET")
	})
}
