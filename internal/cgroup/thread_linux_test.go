package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// TestJoinCPU: a thread of this process joins the group's cgroup v1 cpu
// group (its TID is in tasks), leaves it, and joins again; Close then
// moves it out before it removes the group, which a task inside would make
// fail with EBUSY. As a user who may not create v1 groups there is no cpu
// group to join, and JoinCPU says so.
func TestJoinCPU(t *testing.T) {
	name := fmt.Sprintf("stockade-jointest-%d", os.Getpid())
	g, rep, err := New(name, Limits{CPUs: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	line, ok := enforced(t, rep, "cpus")
	v1 := ok && slices.Contains(g.Paths(), g.cpu) && g.cpu != ""
	if g.CPUThreads() != v1 {
		t.Fatalf("CPUThreads() = %v, want %v (enforced: %q, dirs %v)", g.CPUThreads(), v1, line, g.Paths())
	}
	if !v1 {
		if _, err := g.JoinCPU(); err == nil {
			t.Fatal("JoinCPU without a cgroup v1 cpu group succeeded")
		}
		if mustWork() && controllerMounted(t, "cpu") {
			if lay, _ := detect(); lay.find("cpu").Version == 1 {
				t.Fatalf("STOCKADE_MUST_WORK=1: the cpu limit is not enforced with cgroup v1 as root: %+v", rep)
			}
		}
		t.Skipf("the cpu limit is not enforced with cgroup v1 here (%q)", line)
	}
	dir := g.cpu
	tasks := func() []string {
		w, err := readWords(filepath.Join(dir, "tasks"))
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	type result struct {
		tid              string
		in, out, inAgain bool
		err              error
	}
	done := make(chan result)
	closed := make(chan struct{})
	go func() {
		runtime.LockOSThread() // not unlocked: the thread ends with the goroutine
		r := result{tid: strconv.Itoa(unix.Gettid())}
		defer func() { done <- r }()
		leave, err := g.JoinCPU()
		if r.err = err; err != nil {
			return
		}
		r.in = slices.Contains(tasks(), r.tid)
		if r.err = leave(); r.err != nil {
			return
		}
		r.out = !slices.Contains(tasks(), r.tid)
		if _, r.err = g.JoinCPU(); r.err != nil {
			return
		}
		r.inAgain = slices.Contains(tasks(), r.tid)
		done <- r
		<-closed // in the group while Close runs
	}()
	r := <-done
	if r.err != nil || !r.in || !r.out || !r.inAgain {
		t.Fatalf("thread %s: in after JoinCPU %v, out after leave %v, in again %v, err %v", r.tid, r.in, r.out, r.inAgain, r.err)
	}
	if err := g.Close(); err != nil {
		t.Fatalf("Close with a thread of this process in the cpu group: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s is still there after Close: %v", dir, err)
	}
	if g.CPUThreads() {
		t.Error("CPUThreads() is true after Close removed the group")
	}
	close(closed)
	<-done
}
