package deploy

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

const (
	alertRules = "prometheus/sourcecatalog-alerts.yml"
	alertTests = "prometheus/sourcecatalog-alerts_test.yml"
)

// The alert rules are valid, and their unit tests pass: promtool check
// rules, promtool test rules.
func TestAlertRules(t *testing.T) {
	promtool := tool(t, "promtool")
	for _, args := range [][]string{{"check", "rules", alertRules}, {"test", "rules", alertTests}} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// Each alert has a for:, a severity and both annotations, and its unit
// test evaluates it at least once quiet and once firing: promtool does
// not notice an alert no test names.
func TestAlertRulesCovered(t *testing.T) {
	rules := alertBlocks(t, readFile(t, alertRules))
	if len(rules) < 10 {
		t.Fatalf("%d alerts in %s", len(rules), alertRules)
	}
	quiet, firing := map[string]int{}, map[string]int{}
	for _, eval := range strings.Split(readFile(t, alertTests), "- eval_time:")[1:] {
		m := regexp.MustCompile(`alertname: (\S+)`).FindStringSubmatch(eval)
		if m == nil {
			t.Fatalf("an evaluation without an alertname:%s", eval)
		}
		if strings.Contains(eval, "exp_alerts: []") {
			quiet[m[1]]++
		} else if strings.Contains(eval, "exp_labels:") {
			firing[m[1]]++
		}
	}
	for name, body := range rules {
		for _, want := range []string{"\n        for: ", "\n          severity: ", "\n          summary: ", "\n          description: "} {
			if !strings.Contains(body, want) {
				t.Errorf("alert %s has no %q", name, strings.TrimSpace(want))
			}
		}
		if quiet[name] == 0 || firing[name] == 0 {
			t.Errorf("alert %s: tested quiet %d times and firing %d times, want both", name, quiet[name], firing[name])
		}
	}
	for name := range firing {
		if rules[name] == "" {
			t.Errorf("the tests name an alert %s that the rules do not have", name)
		}
	}
}

// alertBlocks returns the text of each alerting rule of a rules file, by
// alert name.
func alertBlocks(t *testing.T, text string) map[string]string {
	t.Helper()
	blocks := map[string]string{}
	parts := regexp.MustCompile(`(?m)^      - alert: `).Split(text, -1)
	for _, p := range parts[1:] {
		name, body, _ := strings.Cut(p, "\n")
		if blocks[name] != "" {
			t.Errorf("alert %s twice", name)
		}
		blocks[name] = "\n" + body
	}
	return blocks
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
