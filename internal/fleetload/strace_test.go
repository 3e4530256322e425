package fleetload

import (
	"strings"
	"testing"
	"time"
)

func TestCountSyncs(t *testing.T) {
	log := `101 1000.000100 fsync(7) = 0
102 1000.500000 fdatasync(8 <unfinished ...>
101 1000.600000 fsync(9) = 0
102 1000.700000 <... fdatasync resumed>) = 0
103 1001.000000 --- SIGURG {si_signo=SIGURG, si_code=SI_TKILL} ---
101 1002.000000 fsync(7) = 0
101 1002.999999 fdatasync(7) = 0
101 1005.000000 fsync(7) = 0
101 1006.000000 +++ exited with 0 +++
`
	at := func(s float64) time.Time { return time.Unix(0, int64(s*1e9)) }
	windows := []Window{{at(1000), at(1001)}, {at(1002), at(1003)}, {at(1003.5), at(1004)}}
	got, err := CountSyncs(strings.NewReader(log), windows)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{3, 2, 0}; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("counts %v, want %v", got, want)
	}
	if _, err := CountSyncs(strings.NewReader("101 1000.5 fsync(7) = 0\n"), windows); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("a time of another form: %v, want an error at line 1", err)
	}
}

func TestStraceArgs(t *testing.T) {
	got := strings.Join(StraceArgs("/tmp/log", "/bin/serve", "serve", "--listen", "x"), " ")
	want := "-f --seccomp-bpf -ttt -e trace=fsync,fdatasync -o /tmp/log /bin/serve serve --listen x"
	if got != want {
		t.Errorf("StraceArgs: %q, want %q", got, want)
	}
}
