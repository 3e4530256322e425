package fleetload

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	// Fields 3 to 15: state ppid pgrp session tty tpgid flags minflt
	// cminflt majflt cmajflt utime stime.
	const tail = " S 1 2 3 4 5 6 7 8 9 10 %s 99 98"
	for _, tc := range []struct {
		name, line string
		want       time.Duration
		err        string
	}{
		{"plain", "42 (serve)" + strings.Replace(tail, "%s", "150 25", 1), 1750 * time.Millisecond, ""},
		{"a name with ') ' and spaces", "42 (a) b (c d)" + strings.Replace(tail, "%s", "1 2", 1), 30 * time.Millisecond, ""},
		{"no parenthesis", "42 serve S 1", 0, "without ')'"},
		{"short", "42 (serve) S 1 2 3", 0, "fields"},
		{"not a number", "42 (serve)" + strings.Replace(tail, "%s", "x 2", 1), 0, "CPU time"},
		{"negative", "42 (serve)" + strings.Replace(tail, "%s", "1 -2", 1), 0, "CPU time"},
	} {
		got, err := parseStat([]byte(tc.line))
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one with %q", tc.name, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}

func TestParseHWM(t *testing.T) {
	for _, tc := range []struct {
		name, status string
		want         int64
		ok           bool
	}{
		{"present", "Name:\tserve\nVmPeak:\t  900 kB\nVmHWM:\t   37120 kB\nVmRSS:\t 30000 kB\n", 37120 << 10, true},
		{"last line without LF", "Name:\tserve\nVmHWM:\t 8 kB", 8 << 10, true},
		{"absent", "Name:\tserve\nVmRSS:\t 30000 kB\n", 0, false},
		{"another unit", "VmHWM:\t 30 MB\n", 0, false},
		{"not a number", "VmHWM:\t x kB\n", 0, false},
	} {
		got, err := parseHWM([]byte(tc.status))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%s: %d, %v; want %d (ok %v)", tc.name, got, err, tc.want, tc.ok)
		}
	}
}

// VmRSS is read from its own line, not VmHWM's.
func TestParseRSS(t *testing.T) {
	status := "Name:\tagent\nVmHWM:\t   37120 kB\nVmRSS:\t 30000 kB\n"
	if got, err := parseKB([]byte(status), "VmRSS"); err != nil || got != 30000<<10 {
		t.Errorf("VmRSS %d, %v; want %d", got, err, 30000<<10)
	}
	if _, err := parseKB([]byte("VmHWM:\t 8 kB\n"), "VmRSS"); err == nil {
		t.Error("no VmRSS line: no error")
	}
}

// The readers on this process: CPU time grows while it computes, and the
// peak RSS covers memory it touched.
func TestProcSelf(t *testing.T) {
	pid := os.Getpid()
	before, err := CPUTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	x := 0
	for now := before; now < before+50*time.Millisecond; now, err = CPUTime(pid) {
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("CPU time %v after %v and 30 s of computing: %v", now, before, err)
		}
		for i := range 1_000_000 {
			x += i
		}
	}
	buf := make([]byte, 64<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = byte(x)
	}
	rss, err := PeakRSS(pid)
	if err != nil || rss < int64(len(buf)) {
		t.Errorf("peak RSS %d after touching %d bytes: %v", rss, len(buf), err)
	}
	if now, err := RSS(pid); err != nil || now < int64(len(buf)) {
		t.Errorf("RSS %d while holding %d bytes touched: %v", now, len(buf), err)
	}
	if _, err := RSS(-1); err == nil {
		t.Error("RSS of no process: no error")
	}
	if _, err := CPUTime(-1); err == nil {
		t.Error("CPUTime of no process: no error")
	}
	if _, err := PeakRSS(-1); err == nil {
		t.Error("PeakRSS of no process: no error")
	}
	_ = buf[len(buf)-1]
}
