package fleetload

import (
	"strings"
	"testing"
)

func TestProcess(t *testing.T) {
	const listen = `echo '{"msg":"listening","addr":"127.0.0.1:1"}' >&2; echo '{"msg":"admin listening","addr":"127.0.0.1:2"}' >&2; `
	// A server that exits 0 on SIGTERM.
	p, err := Start("/bin/sh", []string{"-c", `trap 'exit 0' TERM; ` + listen + `echo more >&2; while :; do sleep 0.05; done`}, StartOptions{Admin: true})
	if err != nil {
		t.Fatal(err)
	}
	if p.Addr != "127.0.0.1:1" || p.Admin != "127.0.0.1:2" || p.Pid() <= 0 {
		t.Errorf("addresses %q %q, pid %d", p.Addr, p.Admin, p.Pid())
	}
	if err := p.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
	// One that dies of it: Stop says so.
	p, err = Start("/bin/sh", []string{"-c", listen + `exec sleep 60`}, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(); err == nil || !strings.Contains(err.Error(), "terminated") {
		t.Errorf("Stop of a process killed by SIGTERM: %v", err)
	}
	// One that exits before listening: its log is in the error.
	if _, err := Start("/bin/sh", []string{"-c", `echo cannot start >&2; exit 1`}, StartOptions{}); err == nil || !strings.Contains(err.Error(), "cannot start") {
		t.Errorf("a process that exits: %v", err)
	}
	// A traced server: Pid is the tracer's one child.
	p, err = Start("/bin/sh", []string{"-c", `/bin/sh -c "trap 'exit 0' TERM; ` + strings.ReplaceAll(listen, `"`, `\"`) + `while :; do sleep 0.05; done"; exit $?`}, StartOptions{Traced: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	if p.Pid() == p.cmd.Process.Pid {
		t.Errorf("traced: Pid %d is the tracer's", p.Pid())
	}
	if err := p.Stop(); err != nil {
		t.Errorf("Stop of a traced server: %v", err)
	}
}
