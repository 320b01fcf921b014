package proc

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestStartTime(t *testing.T) {
	me := StartTime(os.Getpid())
	if me == "" || !Alive(os.Getpid(), me) {
		t.Fatalf("StartTime(self) = %q", me)
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if got := StartTime(cmd.Process.Pid); got != "" {
		t.Errorf("StartTime of a reaped process = %q, want empty", got)
	}
	if Alive(os.Getpid(), "1") || Alive(0, me) {
		t.Error("Alive with a wrong start time or pid 0 is true")
	}
}

// TestZombieNotAlive: a process that exited and was not reaped runs
// nothing again; what it recorded is another's to clean up.
func TestZombieNotAlive(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	pid := cmd.Process.Pid
	start := StartTime(pid)
	for i := 0; ; i++ {
		if state, _ := stat(pid); state == "Z" {
			break
		}
		if i > 2000 {
			t.Fatal("the child did not exit")
		}
		time.Sleep(time.Millisecond)
	}
	if start == "" || StartTime(pid) != start {
		t.Fatalf("StartTime of the zombie = %q, want %q", StartTime(pid), start)
	}
	if Alive(pid, start) {
		t.Error("Alive is true for a zombie")
	}
}
