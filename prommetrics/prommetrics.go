// Package prommetrics exports a receiver's events as Prometheus metrics:
// the metrics of `sourcecatalog serve` (their names, labels and help
// texts), for a receiver embedded in another service. It is the only
// package importing github.com/prometheus/client_golang, in a module of
// its own so that the library does not depend on it.
//
// # Wiring
//
// One Metrics, fed by two observers, counts each event once:
//
//	m, err := prommetrics.New(registry)
//	recv := finalize.NewReceiver(store, finalize.WithObserver(m.ObserveReceiver))
//	h := httpbinding.NewHandler(recv, auth, httpbinding.WithObserver(m.ObserveBinding))
//	rc := httpbinding.Reconciler{Receiver: recv, Observer: m.ObserveBinding}
//	err = m.WatchStore(handle.Status) // when the store is under storeheal
//	mux.Handle("GET /metrics", m.Handler())
//
// receiver.New does all of this for a *Metrics given as its Config's
// Metrics.
//
// The Receiver's observer counts what happened in the store (receives,
// Finalize outcomes and durations, staging usage, retries, the
// superseded_by_active gauge), wherever the call came from: the Handler,
// the Reconciler or the service's own code. The binding's observer counts
// the HTTP answers and the reconciliations; it ignores the binding's
// EventFinalize, which the Receiver's observer has counted already. Wire
// ObserveReceiver to the Receiver only, and ObserveBinding to the Handler
// and the Reconciler only: so nothing is counted twice.
package prommetrics

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/storeheal"
)

// Namespace prefixes every metric name.
const Namespace = "sourcecatalog"

// Label values of the staging gauges' bound label.
const (
	BoundIncomplete = "incomplete" // snapshots still staging
	BoundRetained   = "retained"   // finalized snapshots kept
)

// Metrics are a receiver's Prometheus metrics, registered by New. Their
// methods are safe for concurrent use and do not block, as the observer
// contracts of finalize and httpbinding require.
type Metrics struct {
	reg prometheus.Registerer

	messages   *prometheus.CounterVec   // outcome, code
	receives   *prometheus.CounterVec   // op, outcome
	finalizes  *prometheus.CounterVec   // outcome
	durations  *prometheus.HistogramVec // outcome
	retries    *prometheus.CounterVec   // op
	reconciles *prometheus.CounterVec   // result

	snapshots, snapshotsLimit *prometheus.GaugeVec // vessel, bound
	bytes, bytesLimit         *prometheus.GaugeVec // vessel, bound
	supersededByActive        *prometheus.GaugeVec // vessel
	lastActivation            *prometheus.GaugeVec // vessel
}

// New returns the metrics, registered with reg (a service's registry, or
// prometheus.DefaultRegisterer): sourcecatalog_messages_total,
// receives_total, finalize_total, finalize_duration_seconds,
// store_retries_total, reconcile_total, staging_snapshots(_limit),
// staging_bytes(_limit), superseded_by_active and
// last_activation_timestamp_seconds. The Go runtime's and the
// process's collectors are not registered: serve adds them to its own
// registry, and a service has its own. When a metric cannot be registered
// (reg has one of the same name) New returns an error wrapping
// sourcecatalog.ErrInvalidValue and the registry's error, and reg is left
// as it was.
func New(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		return nil, sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "prommetrics: a nil registerer")
	}
	m := &Metrics{
		reg: reg,
		messages: counterVec("messages_total",
			"HTTP requests answered, by outcome (receipt status, refusal class, unauthenticated, method_not_allowed, bad_request) and HTTP status code.",
			"outcome", "code"),
		receives: counterVec("receives_total",
			"Messages handed to the Receiver, by op (ReceiveManifest, ReceiveChunk) and outcome (receipt status or refusal class).",
			"op", "outcome"),
		finalizes: counterVec("finalize_total",
			"Finalize calls, after a receipt or by reconciliation, by outcome (staging, activated, already_active, superseded, rejected, or the class of an error).",
			"outcome"),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "finalize_duration_seconds",
			Help:    "Duration of Finalize calls by outcome; outcome=\"activated\" is the activation time.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"outcome"}),
		retries: counterVec("store_retries_total",
			"Store transactions run again after a transient failure such as a deadlock, by the Receiver method (op).",
			"op"),
		reconciles: counterVec("reconcile_total",
			"Reconciliations of one vessel, or failures to list the vessels, by result (ok, or the class of the error).",
			"result"),
		snapshots:      stagingGauge("staging_snapshots", "Snapshots staged, by vessel and bound (incomplete: still staging; retained: finalized and kept)."),
		snapshotsLimit: stagingGauge("staging_snapshots_limit", "The bound on staging_snapshots, by vessel and bound."),
		bytes:          stagingGauge("staging_bytes", "Bytes staged, by vessel and bound (incomplete: still staging; retained: finalized and kept)."),
		bytesLimit:     stagingGauge("staging_bytes_limit", "The bound on staging_bytes, by vessel and bound."),
		supersededByActive: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "superseded_by_active",
			Help: "Snapshots the vessel's active snapshot superseded since it was activated, as of the vessel's last finalize; growing, the vessel's revisions went backwards (a lost or restored on-board store, SPEC.md §2.4, §8.4).",
		}, []string{"vessel"}),
		lastActivation: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "last_activation_timestamp_seconds",
			Help: "When this process last activated a snapshot of the vessel, in seconds since the Unix epoch; a vessel it has not activated since it started has none.",
		}, []string{"vessel"}),
	}
	if err := register(reg,
		m.messages, m.receives, m.finalizes, m.durations, m.retries, m.reconciles,
		m.snapshots, m.snapshotsLimit, m.bytes, m.bytesLimit, m.supersededByActive, m.lastActivation,
	); err != nil {
		return nil, err
	}
	return m, nil
}

// Handler serves, in the Prometheus text format, every metric of the
// registry New was given when it is also a prometheus.Gatherer, as a
// *prometheus.Registry and prometheus.DefaultRegisterer are; otherwise it
// answers every request 500 with why. It is what receiver.Config's
// Metrics serves at GET /metrics.
func (m *Metrics) Handler() http.Handler {
	g, ok := m.reg.(prometheus.Gatherer)
	if !ok {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "prommetrics: the registerer is not a prometheus.Gatherer", http.StatusInternalServerError)
		})
	}
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{})
}

// register registers cs with reg, all or none: on a failure it
// unregisters those it registered and returns an error wrapping
// sourcecatalog.ErrInvalidValue and the registry's.
func register(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, done := range cs[:i] {
				reg.Unregister(done)
			}
			e := sourcecatalog.Wrap(sourcecatalog.ErrInvalidValue, err)
			e.Detail = "prommetrics: registering the metrics"
			return e
		}
	}
	return nil
}

func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
}

func stagingGauge(name, help string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help}, []string{"vessel", "bound"})
}

// WatchStore registers the metrics of the store's health, read from
// status (a storeheal.Handle's Status) at each scrape:
// sourcecatalog_store_state{state}, 1 for the state the store is in and 0
// for the others, sourcecatalog_store_poisonings_total,
// sourcecatalog_store_replacements_total (those poisonings whose cause
// wraps storeheal.ErrReplaced) and sourcecatalog_store_reopens_total{result}. It returns an error wrapping
// sourcecatalog.ErrInvalidValue, and registers nothing, when status is nil
// or the metrics cannot be registered (WatchStore was called before).
func (m *Metrics) WatchStore(status func() storeheal.Status) error {
	if status == nil {
		return sourcecatalog.Errorf(sourcecatalog.ErrInvalidValue, "prommetrics: a nil status function")
	}
	var cs []prometheus.Collector
	for _, state := range storeheal.States() {
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "store_state", ConstLabels: prometheus.Labels{"state": state.String()},
			Help: "1 for the state the store is in (healthy; poisoned: a failure, calls in flight finishing; reopening; closed), 0 for the others.",
		}, func() float64 { return b2f(status().State == state) }))
	}
	cs = append(cs,
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: Namespace, Name: "store_poisonings_total",
			Help: "Failures that poisoned the store handle (an I/O error, a full disk, a failed commit, a lost database connection), each followed by a reopen.",
		}, func() float64 { return float64(status().Poisonings) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: Namespace, Name: "store_replacements_total",
			Help: "Poisonings because the store was removed, replaced or moved away under its handle (a SQLite file deleted, renamed, or another file or a copy put in its place); the handle then reopens only the store it had open, so it stays reopening until that file is back or the service is restarted to accept the one now there.",
		}, func() float64 { return float64(status().Replacements) }),
		storeReopens("ok", func() int64 { return status().Reopens }),
		storeReopens("error", func() int64 { return status().FailedReopens }),
	)
	return register(m.reg, cs...)
}

func storeReopens(result string, n func() int64) prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{
		Namespace: Namespace, Name: "store_reopens_total", ConstLabels: prometheus.Labels{"result": result},
		Help: "Attempts to reopen the store after a poisoning, by result (ok, or error: the attempt failed and is retried after a backoff).",
	}, func() float64 { return float64(n()) })
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// ObserveBinding is an httpbinding.Observer, for httpbinding.WithObserver
// and Reconciler.Observer: it counts every answered request
// (messages_total) and every reconciliation (reconcile_total). It ignores
// EventFinalize: ObserveReceiver counts Finalize calls.
func (m *Metrics) ObserveBinding(e httpbinding.Event) {
	switch e.Kind {
	case httpbinding.EventMessage:
		m.messages.WithLabelValues(e.Outcome, strconv.Itoa(e.Status)).Inc()
	case httpbinding.EventReconcile:
		m.reconciles.WithLabelValues(errorName(e.Err, "ok")).Inc()
	}
}

// ObserveReceiver is a finalize.Observer, for finalize.WithObserver: it
// counts receives, Finalize outcomes and durations, and retries, and sets
// the staging gauges from the latest event that read the usage, the
// superseded_by_active gauge from the latest Finalize with an outcome,
// and last_activation_timestamp_seconds to the time of the latest
// Finalize that activated a snapshot.
func (m *Metrics) ObserveReceiver(e finalize.Event) {
	switch e.Kind {
	case finalize.EventReceive:
		m.receives.WithLabelValues(e.Op, errorName(e.Err, string(e.Receipt.Status))).Inc()
	case finalize.EventFinalize:
		outcome := FinalizeOutcome(e)
		m.finalizes.WithLabelValues(outcome).Inc()
		m.durations.WithLabelValues(outcome).Observe(e.Duration.Seconds())
		if e.Outcome.Status != "" {
			m.supersededByActive.WithLabelValues(e.Vessel.String()).Set(float64(e.Outcome.SupersededByActive))
		}
		if e.Err == nil && e.Outcome.Status == finalize.Activated {
			m.lastActivation.WithLabelValues(e.Vessel.String()).SetToCurrentTime()
		}
	case finalize.EventRetry:
		m.retries.WithLabelValues(e.Op).Inc()
	}
	if e.Usage != nil {
		m.usage(e.Vessel.String(), *e.Usage)
	}
}

// usage sets the staging gauges of vessel.
func (m *Metrics) usage(vessel string, u finalize.Usage) {
	for _, g := range []struct {
		vec   *prometheus.GaugeVec
		bound string
		value int64
	}{
		{m.snapshots, BoundIncomplete, u.IncompleteSnapshots.Used},
		{m.snapshotsLimit, BoundIncomplete, u.IncompleteSnapshots.Limit},
		{m.bytes, BoundIncomplete, u.IncompleteBytes.Used},
		{m.bytesLimit, BoundIncomplete, u.IncompleteBytes.Limit},
		{m.snapshots, BoundRetained, u.RetainedSnapshots.Used},
		{m.snapshotsLimit, BoundRetained, u.RetainedSnapshots.Limit},
		{m.bytes, BoundRetained, u.RetainedBytes.Used},
		{m.bytesLimit, BoundRetained, u.RetainedBytes.Limit},
	} {
		g.vec.WithLabelValues(vessel, g.bound).Set(float64(g.value))
	}
}

// FinalizeOutcome is the outcome label of finalize_total for a Finalize
// event: its outcome status, which a rejection has with its error, or
// else the wire name of the class of the error it failed with ("error"
// for an error of no class).
func FinalizeOutcome(e finalize.Event) string {
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
