package main

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/yachtmemory/sourcecatalog/prommetrics"
)

// newServeMetrics returns serve's Prometheus metrics: prommetrics' with
// the Go runtime's and the process's collectors, in a registry of their
// own (never the global one), which their Handler serves.
func newServeMetrics() *prommetrics.Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m, err := prommetrics.New(reg)
	if err != nil {
		panic(err) // a new registry has none of its names
	}
	return m
}
