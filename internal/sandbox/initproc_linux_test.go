//go:build linux

package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"
)

// TestInitProc: the supervisor's handle on init reaps it with its status,
// signals it through a pidfd while it lives, and refuses to signal it once
// it is reaped (its pid may belong to another process by then).
func TestInitProc(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := newInitProc(cmd.Process.Pid)
	if p.fd < 0 {
		t.Fatal("no pidfd for a child of ours")
	}
	if err := p.Signal(unix.SIGTERM); err != nil {
		t.Fatalf("Signal: %v", err)
	}
	ws, err := p.Wait()
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if !ws.Signaled() || ws.Signal() != unix.SIGTERM {
		t.Fatalf("status %v, want killed by SIGTERM", ws)
	}
	if err := p.Kill(); !errors.Is(err, os.ErrProcessDone) {
		t.Fatalf("Kill after Wait = %v, want ErrProcessDone", err)
	}

	cmd = exec.Command("sh", "-c", "exit 7")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ws, err = newInitProc(cmd.Process.Pid).Wait()
	if err != nil || ws.ExitStatus() != 7 {
		t.Fatalf("Wait = %v, %v; want exit status 7", ws, err)
	}
}

// TestInitProcNoPidfd: where pidfd_open is refused, signals go by pid, and
// none is sent once init has exited: it is not reaped before Signal refuses,
// so its pid cannot belong to another process while a signal may be sent.
func TestInitProcNoPidfd(t *testing.T) {
	cmd := exec.Command("sh", "-c", "exit 5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &initProc{pid: cmd.Process.Pid, fd: -1}
	ws, err := p.Wait()
	if err != nil || ws.ExitStatus() != 5 {
		t.Fatalf("Wait = %v, %v; want exit status 5", ws, err)
	}
	if err := p.Signal(unix.SIGTERM); !errors.Is(err, os.ErrProcessDone) {
		t.Fatalf("Signal after Wait = %v, want ErrProcessDone", err)
	}
}
