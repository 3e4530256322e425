package main

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/yachtmemory/sourcecatalog/prommetrics"
)

// serveMetrics are serve's Prometheus metrics, prommetrics' with the Go
// runtime's and the process's collectors, in a registry of their own
// (never the global one). They are wired as prommetrics documents:
// ObserveReceiver to the Receiver, ObserveBinding to the Handler and the
// Reconciler, WatchStore to the store's storeheal.Handle.
type serveMetrics struct {
	*prommetrics.Metrics
	reg *prometheus.Registry
}

func newServeMetrics() *serveMetrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m, err := prommetrics.New(reg)
	if err != nil {
		panic(err) // a new registry has none of its names
	}
	return &serveMetrics{m, reg}
}

// handler serves the registry in the Prometheus text format.
func (m *serveMetrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
