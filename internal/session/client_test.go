package session

import (
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/proc"
)

// TestOpenSupervisor: stop's pidfd is of the recorded supervisor only; a
// process with the PID but another start time (a reused PID) or a process
// gone is refused, so stop never signals a stranger.
func TestOpenSupervisor(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	start := proc.StartTime(pid)
	if start == "" {
		t.Fatalf("no start time for pid %d", pid)
	}
	for _, tt := range []struct {
		name   string
		start  string
		wantOK bool
	}{
		{"the recorded process", start, true},
		{"a reused pid", start + "1", false},
		{"no start time recorded", "", false},
	} {
		fd, err := openSupervisor(Session{PID: pid, PIDStart: tt.start})
		if err == nil {
			unix.Close(fd)
		}
		if (err == nil) != tt.wantOK {
			t.Errorf("%s: openSupervisor: %v, want ok=%v", tt.name, err, tt.wantOK)
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	if fd, err := openSupervisor(Session{PID: pid, PIDStart: start}); err == nil {
		unix.Close(fd)
		t.Error("openSupervisor of an exited process succeeded")
	}
}
