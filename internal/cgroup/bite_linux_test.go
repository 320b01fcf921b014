package cgroup

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// These tests check that enforced limits bite; where a limit is not enforced
// they check the report says why (see cgroup_linux_test.go).

// TestPidsLimit checks that forks beyond pids.max fail with EAGAIN.
func TestPidsLimit(t *testing.T) {
	g, rep := newGroup(t, Limits{Pids: 10})
	if _, ok := enforced(t, rep, "pids"); !ok {
		return
	}
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	sh := exec.CommandContext(withTimeout(t, 20*time.Second), "sh", "-c", `read go; for i in $(seq 30); do sleep 3 & done; wait`)
	sh.Stderr = stderr
	startInGroup(t, g, sh).wait(t, 15*time.Second)
	out, _ := os.ReadFile(stderr.Name())
	events, _ := os.ReadFile(filepath.Join(dirWith(g, "pids.events"), "pids.events"))
	t.Logf("shell: %v; stderr: %q; pids.events: %q", sh.ProcessState, out, events)
	var refused int
	if _, err := fmt.Sscanf(string(events), "max %d", &refused); err != nil || refused == 0 {
		t.Errorf("pids.events = %q: want forks refused at the limit", events)
	}
	if !regexp.MustCompile(`(?i)cannot fork|can't fork|resource temporarily unavailable`).Match(out) {
		t.Errorf("shell stderr %q does not show a fork refused", out)
	}
}

// TestMemoryLimit checks that a process going over the limit is OOM-killed.
func TestMemoryLimit(t *testing.T) {
	g, rep := newGroup(t, Limits{Memory: 64 << 20})
	line, ok := enforced(t, rep, "memory")
	if !ok {
		return
	}
	if swaps, _ := os.ReadFile("/proc/swaps"); strings.Contains(line, "swap not capped") && strings.Count(string(swaps), "\n") > 1 {
		t.Skipf("%s, and swap is on: the helper would swap instead of dying", line)
	}
	alloc := helperCmd(t, "alloc", 30*time.Second)
	var out strings.Builder
	alloc.Stdout, alloc.Stderr = &out, &out
	ws := startInGroup(t, g, alloc).wait(t, 25*time.Second)
	var oom []byte
	for _, f := range []string{"memory.oom_control", "memory.events"} {
		if d := dirWith(g, f); d != "" {
			oom, _ = os.ReadFile(filepath.Join(d, f))
		}
	}
	t.Logf("helper allocating 256 MiB: %v; output %q; %q", alloc.ProcessState, out.String(), oom)
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("helper ended with %v, want OOM-killed by SIGKILL", alloc.ProcessState)
	}
}

// TestCPULimit checks that a busy process is throttled to its quota.
func TestCPULimit(t *testing.T) {
	g, rep := newGroup(t, Limits{CPUs: 0.1})
	if _, ok := enforced(t, rep, "cpus"); !ok {
		return
	}
	spin := helperCmd(t, "spin", 30*time.Second)
	if ws := startInGroup(t, g, spin).wait(t, 25*time.Second); ws.ExitStatus() != 0 {
		t.Fatalf("spinning helper: %v", spin.ProcessState)
	}
	stat, err := os.ReadFile(filepath.Join(dirWith(g, "cpu.stat"), "cpu.stat"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("helper spinning 500 ms: %v; cpu.stat %q", spin.ProcessState, stat)
	var throttled int
	for line := range strings.Lines(string(stat)) {
		if n, err := fmt.Sscanf(line, "nr_throttled %d", &throttled); n == 1 && err == nil {
			break
		}
	}
	if throttled == 0 {
		t.Errorf("cpu.stat = %q: want nr_throttled > 0", stat)
	}
}
