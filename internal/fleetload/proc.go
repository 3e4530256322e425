package fleetload

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// userHZ is the unit of the CPU times in /proc/PID/stat: clock ticks of
// USER_HZ, which Linux fixes at 100 for user space.
const userHZ = 100

// CPUTime returns the CPU time process pid has used so far, user and
// system (utime + stime of /proc/PID/stat), to the clock tick (10 ms).
func CPUTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("fleetload: %w", err)
	}
	return parseStat(b)
}

// parseStat reads utime and stime, fields 14 and 15, of a /proc/PID/stat
// line. The command name, field 2, is in parentheses and may hold spaces
// and parentheses itself: the fields are counted after its last ')'.
func parseStat(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("fleetload: a stat line without ')': %q", b)
	}
	f := bytes.Fields(b[i+1:]) // fields 3 onwards
	if len(f) < 13 {
		return 0, fmt.Errorf("fleetload: a stat line of %d fields", len(f)+2)
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("fleetload: a stat line with CPU time %q", s)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// PeakRSS returns the peak resident set size of process pid in bytes:
// VmHWM of /proc/PID/status.
func PeakRSS(pid int) (int64, error) { return statusKB(pid, "VmHWM") }

// RSS returns the resident set size of process pid now, in bytes: VmRSS
// of /proc/PID/status.
func RSS(pid int) (int64, error) { return statusKB(pid, "VmRSS") }

// statusKB returns field of /proc/PID/status, a size in kB, in bytes.
func statusKB(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("fleetload: %w", err)
	}
	return parseKB(b, field)
}

// parseHWM reads the line "VmHWM:   N kB" of a /proc/PID/status file.
func parseHWM(b []byte) (int64, error) { return parseKB(b, "VmHWM") }

// parseKB reads the line "FIELD:   N kB" of a /proc/PID/status file.
func parseKB(b []byte, field string) (int64, error) {
	for line := range bytes.Lines(b) {
		rest, ok := bytes.CutPrefix(line, []byte(field+":"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, fmt.Errorf("fleetload: a %s line %q", field, line)
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil || kb < 0 {
			return 0, fmt.Errorf("fleetload: a %s line %q", field, line)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("fleetload: no %s line in the status file", field)
}
