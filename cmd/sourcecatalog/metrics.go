package main

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/storeheal"
)

// serveMetrics are serve's Prometheus metrics, in a registry of their own
// (never the global one). They are fed by the two observers: the
// Handler's and the Reconciler's (httpbinding.Observer) count the HTTP
// answers, the Receiver's (finalize.Observer) count what happened in the
// store — receives, finalize outcomes and their duration, staging usage,
// retries — where it happened. Each event is counted by one observer only.
//
// The methods are safe for concurrent use and do not block, as both
// observer contracts require.
type serveMetrics struct {
	reg *prometheus.Registry

	messages   *prometheus.CounterVec   // outcome, code
	receives   *prometheus.CounterVec   // op, outcome
	finalizes  *prometheus.CounterVec   // outcome
	durations  *prometheus.HistogramVec // outcome
	retries    *prometheus.CounterVec   // op
	reconciles *prometheus.CounterVec   // result

	snapshots, snapshotsLimit *prometheus.GaugeVec // vessel, bound
	bytes, bytesLimit         *prometheus.GaugeVec // vessel, bound
	supersededByActive        *prometheus.GaugeVec // vessel
}

// Label values of the staging gauges' bound label.
const (
	boundIncomplete = "incomplete" // snapshots still staging
	boundRetained   = "retained"   // finalized snapshots kept
)

// newServeMetrics returns the metrics, registered with the Go runtime's
// and the process's collectors in a new registry.
func newServeMetrics() *serveMetrics {
	const ns = "sourcecatalog"
	m := &serveMetrics{
		reg: prometheus.NewRegistry(),
		messages: counterVec(ns, "messages_total",
			"HTTP requests answered, by outcome (receipt status, refusal class, unauthenticated, method_not_allowed, bad_request) and HTTP status code.",
			"outcome", "code"),
		receives: counterVec(ns, "receives_total",
			"Messages handed to the Receiver, by op (ReceiveManifest, ReceiveChunk) and outcome (receipt status or refusal class).",
			"op", "outcome"),
		finalizes: counterVec(ns, "finalize_total",
			"Finalize calls, after a receipt or by reconciliation, by outcome (staging, activated, already_active, superseded, rejected, or the class of an error).",
			"outcome"),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Name: "finalize_duration_seconds",
			Help:    "Duration of Finalize calls by outcome; outcome=\"activated\" is the activation time.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"outcome"}),
		retries: counterVec(ns, "store_retries_total",
			"Store transactions run again after a transient failure such as a deadlock, by the Receiver method (op).",
			"op"),
		reconciles: counterVec(ns, "reconcile_total",
			"Reconciliations of one vessel, or failures to list the vessels, by result (ok, or the class of the error).",
			"result"),
		snapshots:      stagingGauge(ns, "staging_snapshots", "Snapshots staged, by vessel and bound (incomplete: still staging; retained: finalized and kept)."),
		snapshotsLimit: stagingGauge(ns, "staging_snapshots_limit", "The bound on staging_snapshots, by vessel and bound."),
		bytes:          stagingGauge(ns, "staging_bytes", "Bytes staged, by vessel and bound (incomplete: still staging; retained: finalized and kept)."),
		bytesLimit:     stagingGauge(ns, "staging_bytes_limit", "The bound on staging_bytes, by vessel and bound."),
		supersededByActive: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ns, Name: "superseded_by_active",
			Help: "Snapshots the vessel's active snapshot superseded since it was activated, as of the vessel's last finalize; growing, the vessel's revisions went backwards (a lost or restored on-board store, SPEC.md §2.4, §8.4).",
		}, []string{"vessel"}),
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.messages, m.receives, m.finalizes, m.durations, m.retries, m.reconciles,
		m.snapshots, m.snapshotsLimit, m.bytes, m.bytesLimit, m.supersededByActive,
	)
	return m
}

func counterVec(ns, name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help}, labels)
}

func stagingGauge(ns, name, help string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: name, Help: help}, []string{"vessel", "bound"})
}

// store registers the metrics of the store's health, read from status at
// each scrape: sourcecatalog_store_state, 1 for the state the store is in
// and 0 for the others, and the counts of poisonings and reopens.
func (m *serveMetrics) store(status func() storeheal.Status) {
	const ns = "sourcecatalog"
	for _, state := range storeheal.States() {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: ns, Name: "store_state", ConstLabels: prometheus.Labels{"state": state.String()},
			Help: "1 for the state the store is in (healthy; poisoned: a failure, calls in flight finishing; reopening; closed), 0 for the others.",
		}, func() float64 { return b2f(status().State == state) }))
	}
	m.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: ns, Name: "store_poisonings_total",
			Help: "Failures that poisoned the store handle (an I/O error, a full disk, a failed commit, a lost database connection), each followed by a reopen.",
		}, func() float64 { return float64(status().Poisonings) }),
		storeReopens(ns, "ok", func() int64 { return status().Reopens }),
		storeReopens(ns, "error", func() int64 { return status().FailedReopens }),
	)
}

func storeReopens(ns, result string, n func() int64) prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{
		Namespace: ns, Name: "store_reopens_total", ConstLabels: prometheus.Labels{"result": result},
		Help: "Attempts to reopen the store after a poisoning, by result (ok, or error: the attempt failed and is retried after a backoff).",
	}, func() float64 { return float64(n()) })
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// handler serves the registry in the Prometheus text format.
func (m *serveMetrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// binding counts what the Handler and the Reconciler report: every
// answered request, and every reconciliation. Their Finalize events are
// counted from the Receiver's observer instead.
func (m *serveMetrics) binding(e httpbinding.Event) {
	switch e.Kind {
	case httpbinding.EventMessage:
		m.messages.WithLabelValues(e.Outcome, strconv.Itoa(e.Status)).Inc()
	case httpbinding.EventReconcile:
		m.reconciles.WithLabelValues(errorName(e.Err, "ok")).Inc()
	}
}

// receiver counts what the Receiver reports.
func (m *serveMetrics) receiver(e finalize.Event) {
	switch e.Kind {
	case finalize.EventReceive:
		m.receives.WithLabelValues(e.Op, errorName(e.Err, string(e.Receipt.Status))).Inc()
	case finalize.EventFinalize:
		outcome := finalizeOutcome(e)
		m.finalizes.WithLabelValues(outcome).Inc()
		m.durations.WithLabelValues(outcome).Observe(e.Duration.Seconds())
		if e.Outcome.Status != "" {
			m.supersededByActive.WithLabelValues(e.Vessel.String()).Set(float64(e.Outcome.SupersededByActive))
		}
	case finalize.EventRetry:
		m.retries.WithLabelValues(e.Op).Inc()
	}
	if e.Usage != nil {
		m.usage(e.Vessel.String(), *e.Usage)
	}
}

// usage sets the staging gauges of vessel.
func (m *serveMetrics) usage(vessel string, u finalize.Usage) {
	for _, g := range []struct {
		vec   *prometheus.GaugeVec
		bound string
		value int64
	}{
		{m.snapshots, boundIncomplete, u.IncompleteSnapshots.Used},
		{m.snapshotsLimit, boundIncomplete, u.IncompleteSnapshots.Limit},
		{m.bytes, boundIncomplete, u.IncompleteBytes.Used},
		{m.bytesLimit, boundIncomplete, u.IncompleteBytes.Limit},
		{m.snapshots, boundRetained, u.RetainedSnapshots.Used},
		{m.snapshotsLimit, boundRetained, u.RetainedSnapshots.Limit},
		{m.bytes, boundRetained, u.RetainedBytes.Used},
		{m.bytesLimit, boundRetained, u.RetainedBytes.Limit},
	} {
		g.vec.WithLabelValues(vessel, g.bound).Set(float64(g.value))
	}
}

// finalizeOutcome names what a Finalize call ended in: its outcome
// status, which a rejection has with its error, or else the class of the
// error it failed with.
func finalizeOutcome(e finalize.Event) string {
	if e.Err == nil || e.Outcome.Status == finalize.Rejected {
		return string(e.Outcome.Status)
	}
	return errorName(e.Err, "")
}

// errorName is the wire name of err's class, "error" for an error of no
// class, or ok when err is nil.
func errorName(err error, ok string) string {
	if err == nil {
		return ok
	}
	if name := sourcecatalog.WireName(sourcecatalog.Class(err)); name != "" {
		return name
	}
	return "error"
}
