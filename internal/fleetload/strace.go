package fleetload

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// StraceArgs returns the arguments that make strace run name with args,
// following its threads and children, and log each fsync and fdatasync
// with its wall-clock time (-ttt) to file. Only those system calls stop
// the process (--seccomp-bpf), so the rest runs at full speed.
func StraceArgs(file, name string, args ...string) []string {
	return append([]string{"-f", "--seccomp-bpf", "-ttt", "-e", "trace=fsync,fdatasync", "-o", file, name}, args...)
}

// A Window is a span of wall-clock time.
type Window struct{ From, To time.Time }

// CountSyncs reads the log that StraceArgs asks for and returns, for each
// window, the number of fsync and fdatasync calls that began within it.
// A call another thread interrupted is logged twice, "fsync(3 <unfinished
// ...>" and "<... fsync resumed>": it counts once, where it began.
func CountSyncs(r io.Reader, windows []Window) ([]int, error) {
	counts := make([]int, len(windows))
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) < 3 || !(strings.HasPrefix(f[2], "fsync(") || strings.HasPrefix(f[2], "fdatasync(")) {
			continue // a signal, an exit, a resumed call
		}
		at, err := parseUnix(f[1])
		if err != nil {
			return nil, fmt.Errorf("fleetload: strace log line %d: %w", n, err)
		}
		for i, w := range windows {
			if !at.Before(w.From) && !at.After(w.To) {
				counts[i]++
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("fleetload: %w", err)
	}
	return counts, nil
}

// parseUnix parses "SECONDS.MICROSECONDS", strace's -ttt time.
func parseUnix(s string) (time.Time, error) {
	sec, frac, ok := strings.Cut(s, ".")
	if !ok || len(frac) != 6 {
		return time.Time{}, fmt.Errorf("not a -ttt time: %q", s)
	}
	a, err1 := strconv.ParseInt(sec, 10, 64)
	b, err2 := strconv.ParseInt(frac, 10, 64)
	if err1 != nil || err2 != nil || a < 0 || b < 0 {
		return time.Time{}, fmt.Errorf("not a -ttt time: %q", s)
	}
	return time.Unix(a, b*1000), nil
}
