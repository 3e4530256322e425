package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/yachtmemory/sourcecatalog"
	"github.com/yachtmemory/sourcecatalog/envelope"
	"github.com/yachtmemory/sourcecatalog/examples"
	"github.com/yachtmemory/sourcecatalog/finalize"
	"github.com/yachtmemory/sourcecatalog/httpbinding"
	"github.com/yachtmemory/sourcecatalog/prommetrics"
	"github.com/yachtmemory/sourcecatalog/storeheal"
)

const dashboard = "grafana/sourcecatalog.json"

// Every expression of the alert rules uses only the series the receiver
// exports, with their labels and label values.
func TestAlertRulesUseExportedMetrics(t *testing.T) {
	exprs := ruleExprs(readFile(t, alertRules))
	if len(exprs) < 10 {
		t.Fatalf("%d expressions in %s", len(exprs), alertRules)
	}
	checkExprs(t, exportedSeries(t), exprs)
}

// Every query of the dashboard, its panels' and its variables', uses
// only the series the receiver exports, with their labels and label
// values.
func TestDashboardUsesExportedMetrics(t *testing.T) {
	exprs := dashboardExprs(t)
	checkExprs(t, exportedSeries(t), exprs)
}

// The dashboard's panel queries are PromQL that Prometheus parses, once
// Grafana's variables are substituted: promtool checks them as recording
// rules.
func TestDashboardQueriesParse(t *testing.T) {
	promtool := tool(t, "promtool")
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	r := strings.NewReplacer("$__rate_interval", "5m", "$__range", "1h", "$instance", ".*", "$vessel", ".*")
	for i, e := range dashboardExprs(t) {
		if strings.HasPrefix(e, "label_values(") {
			continue // Grafana's, not PromQL
		}
		q, err := json.Marshal(r.Replace(e)) // a JSON string is a YAML string
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "      - record: dashboard:query%d\n        expr: %s\n", i, q)
	}
	file := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", file).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules: %v\n%s\n%s", err, out, b.String())
	}
}

// series are the metric names a receiver exports, each with its label
// names.
type series map[string][]string

// exportedSeries returns the series of prommetrics' metrics: a registry
// with New's and WatchStore's metrics, fed one event of each kind so that
// every vector has a series. A histogram exports name_bucket (with le),
// name_sum and name_count.
func exportedSeries(t *testing.T) series {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	m, err := prommetrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.WatchStore(func() storeheal.Status { return storeheal.Status{State: storeheal.Healthy} }); err != nil {
		t.Fatal(err)
	}
	v := examples.VesselID
	usage := &finalize.Usage{IncompleteSnapshots: finalize.Gauge{Used: 1, Limit: 8}}
	m.ObserveBinding(httpbinding.Event{Kind: httpbinding.EventMessage, Vessel: v, Status: 200, Outcome: string(envelope.Staged)})
	m.ObserveBinding(httpbinding.Event{Kind: httpbinding.EventReconcile, Vessel: v})
	m.ObserveReceiver(finalize.Event{Kind: finalize.EventReceive, Op: "ReceiveChunk", Vessel: v, Receipt: envelope.Receipt{Status: envelope.Staged}, Usage: usage})
	m.ObserveReceiver(finalize.Event{Kind: finalize.EventFinalize, Op: "Finalize", Vessel: v, Outcome: finalize.Outcome{Status: finalize.Activated}, Usage: usage})
	m.ObserveReceiver(finalize.Event{Kind: finalize.EventRetry, Op: "Finalize", Vessel: v})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	s := series{}
	for _, mf := range mfs {
		var labels []string
		for _, lp := range mf.GetMetric()[0].GetLabel() {
			labels = append(labels, lp.GetName())
		}
		if mf.GetType() == dto.MetricType_HISTOGRAM {
			s[mf.GetName()+"_bucket"] = append(slices.Clone(labels), "le")
			s[mf.GetName()+"_sum"] = labels
			s[mf.GetName()+"_count"] = labels
			continue
		}
		s[mf.GetName()] = labels
	}
	if len(s) < 16 {
		t.Fatalf("only %d series exported: %v", len(s), s)
	}
	return s
}

// knownValues are the values of the labels whose values the receiver
// fixes: outcomes, results, states and bounds.
func knownValues() map[string][]string {
	classes := []string{"error"}
	for _, c := range sourcecatalog.Classes() {
		classes = append(classes, sourcecatalog.WireName(c))
	}
	outcomes := append(slices.Clone(classes),
		string(envelope.Staged), string(envelope.AlreadyReceived),
		httpbinding.OutcomeUnauthenticated, httpbinding.OutcomeMethodNotAllowed,
		httpbinding.OutcomeBadRequest, httpbinding.OutcomeDeclaration,
		string(finalize.Staging), string(finalize.Activated), string(finalize.AlreadyActive),
		string(finalize.Superseded), string(finalize.Rejected))
	var states []string
	for _, s := range storeheal.States() {
		states = append(states, s.String())
	}
	return map[string][]string{
		"outcome": outcomes,
		"result":  append(classes, "ok"),
		"state":   states,
		"bound":   {prommetrics.BoundIncomplete, prommetrics.BoundRetained},
	}
}

var (
	metricName   = regexp.MustCompile(`sourcecatalog_[a-z0-9_]+`)
	selector     = regexp.MustCompile(`(sourcecatalog_[a-z0-9_]+)\{([^}]*)\}`)
	matcher      = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"([^"]*)"`)
	grouping     = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	labelValues  = regexp.MustCompile(`label_values\((sourcecatalog_[a-z0-9_]+)(?:\{[^}]*\})?\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)`)
	plainValues  = regexp.MustCompile(`^[a-z_]+(\|[a-z_]+)*$`)
	targetLabels = []string{"job", "instance"} // the labels Prometheus adds
)

// checkExprs reports each metric name in exprs that s does not have, each
// label matched, grouped by or listed that none of the expression's
// metrics has, and each value of a fixed label that the receiver never
// exports.
func checkExprs(t *testing.T, s series, exprs []string) {
	t.Helper()
	known := knownValues()
	for _, e := range exprs {
		var labels []string // of the expression's metrics
		names := metricName.FindAllString(e, -1)
		if len(names) == 0 && !strings.HasPrefix(e, "up{") {
			t.Errorf("no sourcecatalog metric in %q", e)
		}
		for _, name := range names {
			ls, ok := s[name]
			if !ok {
				t.Errorf("%s is not a metric the receiver exports, in %q", name, e)
			}
			labels = append(labels, ls...)
		}
		for _, sel := range selector.FindAllStringSubmatch(e, -1) {
			for _, m := range matcher.FindAllStringSubmatch(sel[2], -1) {
				if _, ok := s[sel[1]]; ok && !slices.Contains(s[sel[1]], m[1]) && !slices.Contains(targetLabels, m[1]) {
					t.Errorf("%s has no label %s, in %q", sel[1], m[1], e)
				}
				if vals, fixed := known[m[1]]; fixed && plainValues.MatchString(m[3]) {
					for _, v := range strings.Split(m[3], "|") {
						if !slices.Contains(vals, v) {
							t.Errorf("%s{%s} is never %q, in %q", sel[1], m[1], v, e)
						}
					}
				}
			}
		}
		for _, g := range grouping.FindAllStringSubmatch(e, -1) {
			for _, l := range strings.Split(g[1], ",") {
				if l = strings.TrimSpace(l); !slices.Contains(labels, l) && !slices.Contains(targetLabels, l) {
					t.Errorf("no metric of %q has the label %s it groups by", e, l)
				}
			}
		}
		for _, lv := range labelValues.FindAllStringSubmatch(e, -1) {
			if !slices.Contains(s[lv[1]], lv[2]) && !slices.Contains(targetLabels, lv[2]) {
				t.Errorf("%s has no label %s, in %q", lv[1], lv[2], e)
			}
		}
	}
}

// ruleExprs returns the expressions of a rules file: each expr, on its
// line or as a block scalar on the lines below.
func ruleExprs(text string) []string {
	var exprs []string
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		_, v, ok := strings.Cut(l, "expr: ")
		if !ok || strings.TrimSpace(l[:len(l)-len(v)]) != "expr:" {
			continue
		}
		if v != "|" {
			exprs = append(exprs, v)
			continue
		}
		indent := len(l) - len(strings.TrimLeft(l, " "))
		var block []string
		for _, b := range lines[i+1:] {
			if strings.TrimSpace(b) != "" && len(b)-len(strings.TrimLeft(b, " ")) <= indent {
				break
			}
			block = append(block, strings.TrimSpace(b))
		}
		exprs = append(exprs, strings.TrimSpace(strings.Join(block, "\n")))
	}
	return exprs
}

// dashboardExprs returns the queries of the dashboard: every target's
// expr, and every query variable's query, however deep.
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	var d any
	if err := json.Unmarshal([]byte(readFile(t, dashboard)), &d); err != nil {
		t.Fatal(err)
	}
	var exprs []string
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, c := range v {
				walk(k, c)
			}
		case []any:
			for _, c := range v {
				walk(key, c)
			}
		case string:
			if key == "expr" || (key == "query" && strings.Contains(v, "(")) {
				exprs = append(exprs, v)
			}
		}
	}
	walk("", d)
	panels := d.(map[string]any)["panels"].([]any)
	for _, p := range panels {
		p := p.(map[string]any)
		targets, _ := p["targets"].([]any)
		if len(targets) == 0 {
			t.Errorf("panel %q has no query", p["title"])
		}
	}
	if len(panels) < 10 || len(exprs) < len(panels) {
		t.Fatalf("%d queries in %d panels", len(exprs), len(panels))
	}
	slices.Sort(exprs)
	return exprs
}
