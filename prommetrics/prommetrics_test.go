package prommetrics_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/prommetrics"
	"github.com/yachtmemory/sourcecatalog/storeheal"
	"net/http/httptest"
)

// Each event is counted once, by the observer it belongs to: the
// binding's EventFinalize is not counted again.
func TestObservers(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := mustNew(t, reg)
	v := examples.VesselID
	m.ObserveBinding(httpbinding.Event{Kind: httpbinding.EventMessage, Status: 200, Outcome: "staged"})
	m.ObserveBinding(httpbinding.Event{Kind: httpbinding.EventReconcile, Err: sourcecatalog.Errorf(sourcecatalog.ErrUnsupported, "cannot list")})
	m.ObserveBinding(httpbinding.Event{Kind: httpbinding.EventFinalize, Vessel: v, Finalize: &finalize.Outcome{Status: finalize.Activated}})
	m.ObserveReceiver(finalize.Event{Kind: finalize.EventReceive, Op: "ReceiveChunk", Vessel: v, Receipt: envelope.Receipt{Status: envelope.Staged}})
	m.ObserveReceiver(finalize.Event{Kind: finalize.EventReceive, Op: "ReceiveChunk", Vessel: v, Err: errors.New("no class")})
	m.ObserveReceiver(finalize.Event{Kind: finalize.EventFinalize, Op: "Finalize", Vessel: v,
		Outcome: finalize.Outcome{Status: finalize.Superseded, SupersededByActive: 2}, Duration: time.Second})
	m.ObserveReceiver(finalize.Event{Kind: finalize.EventFinalize, Op: "Finalize", Vessel: v, Err: sourcecatalog.Errorf(sourcecatalog.ErrStagingExhausted, "full")})
	m.ObserveReceiver(finalize.Event{Kind: finalize.EventRetry, Op: "Finalize", Vessel: v})

	vl := `vessel="` + v.String() + `"`
	want := `
# HELP sourcecatalog_finalize_total Finalize calls, after a receipt or by reconciliation, by outcome (staging, activated, already_active, superseded, rejected, or the class of an error).
# TYPE sourcecatalog_finalize_total counter
sourcecatalog_finalize_total{outcome="staging_exhausted"} 1
sourcecatalog_finalize_total{outcome="superseded"} 1
# HELP sourcecatalog_messages_total HTTP requests answered, by outcome (receipt status, refusal class, unauthenticated, method_not_allowed, bad_request) and HTTP status code.
# TYPE sourcecatalog_messages_total counter
sourcecatalog_messages_total{code="200",outcome="staged"} 1
# HELP sourcecatalog_receives_total Messages handed to the Receiver, by op (ReceiveManifest, ReceiveChunk) and outcome (receipt status or refusal class).
# TYPE sourcecatalog_receives_total counter
sourcecatalog_receives_total{op="ReceiveChunk",outcome="error"} 1
sourcecatalog_receives_total{op="ReceiveChunk",outcome="staged"} 1
# HELP sourcecatalog_reconcile_total Reconciliations of one vessel, or failures to list the vessels, by result (ok, or the class of the error).
# TYPE sourcecatalog_reconcile_total counter
sourcecatalog_reconcile_total{result="unsupported"} 1
# HELP sourcecatalog_store_retries_total Store transactions run again after a transient failure such as a deadlock, by the Receiver method (op).
# TYPE sourcecatalog_store_retries_total counter
sourcecatalog_store_retries_total{op="Finalize"} 1
# HELP sourcecatalog_superseded_by_active Snapshots the vessel's active snapshot superseded since it was activated, as of the vessel's last finalize; growing, the vessel's revisions went backwards (a lost or restored on-board store, SPEC.md §2.4, §8.4).
# TYPE sourcecatalog_superseded_by_active gauge
sourcecatalog_superseded_by_active{` + vl + `} 2
`
	want += `sourcecatalog_finalize_duration_seconds_count{outcome="staging_exhausted"} 1
sourcecatalog_finalize_duration_seconds_count{outcome="superseded"} 1
sourcecatalog_finalize_duration_seconds_sum{outcome="superseded"} 1
`
	got := scrape(t, reg)
	assertLines(t, got, want)
	for _, never := range []string{`sourcecatalog_finalize_total{outcome="activated"}`, `sourcecatalog_messages_total{code="0"`} {
		if strings.Contains(got, never) {
			t.Errorf("the binding's EventFinalize was counted: %s", never)
		}
	}
}

// last_activation_timestamp_seconds is the time of the vessel's latest
// activation, and only an activation sets it: an alert on a vessel that
// stopped activating reads it.
func TestLastActivation(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := mustNew(t, reg)
	v, other := examples.VesselID, uuid.MustParse("00000000-0000-4000-8000-000000000001")
	fin := func(v uuid.UUID, s finalize.OutcomeStatus, err error) {
		m.ObserveReceiver(finalize.Event{Kind: finalize.EventFinalize, Op: "Finalize", Vessel: v, Outcome: finalize.Outcome{Status: s}, Err: err})
	}
	fin(other, finalize.AlreadyActive, nil)
	fin(other, finalize.Staging, nil)
	fin(other, finalize.Rejected, sourcecatalog.Errorf(sourcecatalog.ErrIntegrity, "bad"))
	before := float64(time.Now().Unix())
	fin(v, finalize.Activated, nil)
	after := float64(time.Now().Unix()) + 1
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, mf := range mfs {
		if mf.GetName() != "sourcecatalog_last_activation_timestamp_seconds" {
			continue
		}
		for _, s := range mf.GetMetric() {
			vessel, at := s.GetLabel()[0].GetValue(), s.GetGauge().GetValue()
			got = append(got, vessel)
			if at < before || at > after {
				t.Errorf("vessel %s activated at %v, want within [%v, %v]", vessel, at, before, after)
			}
		}
	}
	if !slices.Equal(got, []string{v.String()}) {
		t.Errorf("last activation of vessels %v, want only %s", got, v)
	}
}

// New and WatchStore refuse what they cannot register, with
// ErrInvalidValue.
func TestRegisterRefused(t *testing.T) {
	status := func() storeheal.Status { return storeheal.Status{} }
	for _, tc := range []struct {
		name     string
		register func(*prometheus.Registry) error
	}{
		{"nil registerer", func(*prometheus.Registry) error { _, err := prommetrics.New(nil); return err }},
		{"a name taken", func(reg *prometheus.Registry) error {
			reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "sourcecatalog_reconcile_total", Help: "someone else's"}))
			_, err := prommetrics.New(reg)
			return err
		}},
		{"New twice", func(reg *prometheus.Registry) error {
			if _, err := prommetrics.New(reg); err != nil {
				t.Fatal(err)
			}
			_, err := prommetrics.New(reg)
			return err
		}},
		{"a nil status", func(reg *prometheus.Registry) error { return mustNew(t, reg).WatchStore(nil) }},
		{"store metrics twice", func(reg *prometheus.Registry) error {
			m := mustNew(t, reg)
			if err := m.WatchStore(status); err != nil {
				t.Fatal(err)
			}
			return m.WatchStore(status)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.register(prometheus.NewRegistry()); !errors.Is(err, sourcecatalog.ErrInvalidValue) {
				t.Fatalf("got %v, want an error wrapping ErrInvalidValue", err)
			}
		})
	}
}

// ledger is a Registerer that keeps the collectors registered through
// it.
type ledger struct {
	prometheus.Registerer
	held map[prometheus.Collector]bool
}

func (l *ledger) Register(c prometheus.Collector) error {
	err := l.Registerer.Register(c)
	if err == nil {
		l.held[c] = true
	}
	return err
}

func (l *ledger) Unregister(c prometheus.Collector) bool {
	delete(l.held, c)
	return l.Registerer.Unregister(c)
}

// A refused registration leaves the registry as it was: New's metrics,
// or WatchStore's, are all registered or none.
func TestRegisterAllOrNone(t *testing.T) {
	reg := prometheus.NewRegistry()
	l := &ledger{reg, map[prometheus.Collector]bool{}}
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "sourcecatalog_superseded_by_active", Help: "someone else's"}))
	if _, err := prommetrics.New(l); err == nil {
		t.Fatal("New registered a name taken")
	}
	if len(l.held) != 0 {
		t.Errorf("a refused New left %d collectors registered", len(l.held))
	}
	reg = prometheus.NewRegistry()
	l = &ledger{reg, map[prometheus.Collector]bool{}}
	m := mustNew(t, l)
	n := len(l.held)
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "sourcecatalog_store_reopens_total", Help: "someone else's"}))
	if err := m.WatchStore(func() storeheal.Status { return storeheal.Status{} }); err == nil {
		t.Fatal("WatchStore registered a name taken")
	}
	if len(l.held) != n {
		t.Errorf("a refused WatchStore left %d collectors registered", len(l.held)-n)
	}
}

// The store's metrics follow its status at each scrape.
func TestWatchStore(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	st := storeheal.Status{State: storeheal.Reopening, Poisonings: 2, Reopens: 1, FailedReopens: 3, Replacements: 1}
	if err := mustNew(t, reg).WatchStore(func() storeheal.Status { return st }); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP sourcecatalog_store_poisonings_total Failures that poisoned the store handle (an I/O error, a full disk, a failed commit, a lost database connection), each followed by a reopen.
# TYPE sourcecatalog_store_poisonings_total counter
sourcecatalog_store_poisonings_total 2
# HELP sourcecatalog_store_replacements_total Poisonings because the store was removed, replaced or moved away under its handle (a SQLite file deleted, renamed, or another file or a copy put in its place); the handle then reopens only the store it had open, so it stays reopening until that file is back or the service is restarted to accept the one now there.
# TYPE sourcecatalog_store_replacements_total counter
sourcecatalog_store_replacements_total 1
# HELP sourcecatalog_store_reopens_total Attempts to reopen the store after a poisoning, by result (ok, or error: the attempt failed and is retried after a backoff).
# TYPE sourcecatalog_store_reopens_total counter
sourcecatalog_store_reopens_total{result="error"} 3
sourcecatalog_store_reopens_total{result="ok"} 1
# HELP sourcecatalog_store_state 1 for the state the store is in (healthy; poisoned: a failure, calls in flight finishing; reopening; closed), 0 for the others.
# TYPE sourcecatalog_store_state gauge
sourcecatalog_store_state{state="closed"} 0
sourcecatalog_store_state{state="healthy"} 0
sourcecatalog_store_state{state="poisoned"} 0
sourcecatalog_store_state{state="reopening"} 1
`
	assertLines(t, scrape(t, reg), want)
	st.State = storeheal.Healthy
	healthy := `
# HELP sourcecatalog_store_state 1 for the state the store is in (healthy; poisoned: a failure, calls in flight finishing; reopening; closed), 0 for the others.
# TYPE sourcecatalog_store_state gauge
sourcecatalog_store_state{state="closed"} 0
sourcecatalog_store_state{state="healthy"} 1
sourcecatalog_store_state{state="poisoned"} 0
sourcecatalog_store_state{state="reopening"} 0
`
	assertLines(t, scrape(t, reg), healthy)
}

func mustNew(t *testing.T, reg prometheus.Registerer) *prommetrics.Metrics {
	t.Helper()
	m, err := prommetrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// scrape serves reg's exposition in the text format once.
func scrape(t *testing.T, reg prometheus.Gatherer) string {
	t.Helper()
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("scrape: %d %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// assertLines checks that every line of want is a line of got.
func assertLines(t *testing.T, got, want string) {
	t.Helper()
	lines := strings.Split(got, "\n")
	for _, w := range strings.Split(strings.TrimSpace(want), "\n") {
		if !slices.Contains(lines, w) {
			t.Errorf("no line %s in:\n%s", w, got)
		}
	}
}
