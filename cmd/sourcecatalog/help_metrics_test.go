package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/yachtmemory/sourcecatalog/prommetrics"
	"github.com/yachtmemory/sourcecatalog/storeheal"
)

// describing is a prometheus.Registerer that keeps the names of the metrics
// registered with it.
type describing struct{ names []string }

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (d *describing) Register(c prometheus.Collector) error {
	descs := make(chan *prometheus.Desc)
	go func() { c.Describe(descs); close(descs) }()
	for desc := range descs {
		if m := fqName.FindStringSubmatch(desc.String()); m != nil {
			d.names = append(d.names, m[1])
		}
	}
	return nil
}

func (d *describing) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = d.Register(c)
	}
}

func (d *describing) Unregister(prometheus.Collector) bool { return true }

// TestServeHelpListsEveryMetric: 'sourcecatalog help serve' names every
// metric the Prometheus observer registers, the store's included.
func TestServeHelpListsEveryMetric(t *testing.T) {
	var reg describing
	m, err := prommetrics.New(&reg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.WatchStore(func() storeheal.Status { return storeheal.Status{} }); err != nil {
		t.Fatal(err)
	}
	if len(reg.names) < 10 {
		t.Fatalf("the observer described %d metrics: %v", len(reg.names), reg.names)
	}
	help := helpText("serve")
	for _, name := range reg.names {
		if !strings.Contains(help, "  "+name+"{") && !strings.Contains(help, "  "+name+" ") {
			t.Errorf("help/serve.txt does not list the metric %s", name)
		}
	}
}
