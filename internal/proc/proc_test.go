package proc

import (
	"os"
	"os/exec"
	"testing"
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
