package dbtest

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// recorder is a testing.TB that records Skipf and Fatalf and, like the
// real ones, stops the calling goroutine.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Skipf(format string, args ...any) {
	r.skipped = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// env runs Env on a recorder in a goroutine of its own.
func env(name string) (value string, r *recorder) {
	r = &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		value = Env(r, name, "the example tests", "start one")
	}()
	<-done
	return value, r
}

func TestEnv(t *testing.T) {
	const name = "SOURCECATALOG_DBTEST_EXAMPLE"
	cases := []struct {
		value, ci       string
		want            string
		skipped, failed bool
		message         string
	}{
		{value: "dsn", ci: "true", want: "dsn"},
		{value: "dsn", ci: "", want: "dsn"},
		{ci: "", skipped: true, message: name + " is not set: skipping the example tests (start one)"},
		{ci: "false", skipped: true, message: name + " is not set: skipping the example tests (start one)"},
		{ci: "true", failed: true, message: name + " is not set; under CI=true the example tests must run (start one)"},
	}
	for _, tc := range cases {
		t.Setenv(name, tc.value)
		t.Setenv("CI", tc.ci)
		got, r := env(name)
		if got != tc.want || (r.skipped != "") != tc.skipped || (r.failed != "") != tc.failed {
			t.Errorf("value %q, CI=%q: got %q, skipped %q, failed %q", tc.value, tc.ci, got, r.skipped, r.failed)
		}
		if tc.message != "" && !strings.Contains(r.skipped+r.failed, tc.message) {
			t.Errorf("value %q, CI=%q: message %q, want %q", tc.value, tc.ci, r.skipped+r.failed, tc.message)
		}
	}
}
