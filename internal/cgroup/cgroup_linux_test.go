package cgroup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/testenv"
)

// These tests use the real kernel. As root they create groups and check that
// the limits bite; as another user they check that every limit the machine
// will not let them set is reported with a reason and a fix. Either way they
// check that Probe predicted what New did and that no group is left behind.
// STOCKADE_MUST_WORK=1 as root makes a limit not enforced, where its
// controller is mounted, a failure instead of a log line.

func mustWork() bool { return testenv.MustWork() && os.Geteuid() == 0 }

var controllerOf = map[string]string{"memory": "memory", "cpus": "cpu", "pids": "pids"}

// controllerMounted reports whether some hierarchy offers controller c.
func controllerMounted(t *testing.T, c string) bool {
	lay, err := detect()
	if err != nil {
		t.Fatal(err)
	}
	h := lay.find(c)
	if h == nil || h.Version == 1 {
		return h != nil
	}
	top, _ := readWords(filepath.Join(h.Mount, "cgroup.controllers"))
	return slices.Contains(top, c)
}

// enforced returns the report line of limit, or checks that the report says
// why it is not enforced and returns false.
func enforced(t *testing.T, rep Report, limit string) (string, bool) {
	t.Helper()
	for _, e := range rep.Enforced {
		if strings.HasPrefix(e, limit+" ") {
			return e, true
		}
	}
	for _, p := range rep.NotEnforced {
		if p.Limit != limit {
			continue
		}
		if p.Reason == "" || p.Fix == "" {
			t.Errorf("%s is not enforced, without a reason and a fix: %+v", limit, p)
		}
		if mustWork() && controllerMounted(t, controllerOf[limit]) {
			t.Fatalf("STOCKADE_MUST_WORK=1: %s", p)
		}
		t.Logf("uid %d: not enforced: %s", os.Geteuid(), p)
		return "", false
	}
	t.Fatalf("%s is neither enforced nor reported: %+v", limit, rep)
	return "", false
}

func limitNames(lines []string) []string {
	var ns []string
	for _, l := range lines {
		ns = append(ns, strings.Fields(l)[0])
	}
	return ns
}

func testName(t *testing.T) string {
	return fmt.Sprintf("stockade-test-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "_"))
}

// assertGone checks that no hierarchy has a group called name.
func assertGone(t *testing.T, name string) {
	t.Helper()
	lay, err := detect()
	if err != nil {
		t.Fatal(err)
	}
	hs := lay.V1
	if lay.V2 != nil {
		hs = append(hs, *lay.V2)
	}
	for _, h := range hs {
		if h.Dir == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(h.Dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is left behind (stat: %v)", filepath.Join(h.Dir, name), err)
		}
	}
}

// newGroup creates a group for the test, checks that Probe predicted what New
// enforced, and closes the group when the test ends, checking it is gone.
func newGroup(t *testing.T, l Limits) (*Group, Report) {
	t.Helper()
	name := testName(t)
	probe := Probe(l)
	g, rep, err := New(name, l)
	if err != nil {
		t.Fatalf("New(%q, %+v): %v", name, l, err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		assertGone(t, name)
	})
	if a, b := limitNames(probe.Enforced), limitNames(rep.Enforced); !slices.Equal(a, b) {
		t.Errorf("Probe said %v would be enforced, New enforced %v", probe.Enforced, rep.Enforced)
	}
	for _, e := range rep.Enforced {
		t.Logf("uid %d: enforced: %s", os.Geteuid(), e)
	}
	return g, rep
}

// dirWith returns the group directory that has file, or "".
func dirWith(g *Group, file string) string {
	for _, d := range g.Paths() {
		if exists(filepath.Join(d, file)) {
			return d
		}
	}
	return ""
}

// started is a child process whose exit is collected as soon as it happens.
type started struct {
	cmd  *exec.Cmd
	done chan error
}

// start starts cmd and reaps it in the background; it dies with the test.
func start(t *testing.T, cmd *exec.Cmd) *started {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &started{cmd, make(chan error, 1)}
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return s
}

// wait returns the process's wait status, failing the test after d.
func (s *started) wait(t *testing.T, d time.Duration) syscall.WaitStatus {
	t.Helper()
	select {
	case <-s.done:
		return s.cmd.ProcessState.Sys().(syscall.WaitStatus)
	case <-time.After(d):
		t.Fatalf("%v still running after %v", s.cmd.Args, d)
	}
	return 0
}

// withTimeout bounds a test's child processes.
func withTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// startInGroup starts cmd, moves it into g and then lets it go on by writing a
// line to its stdin, which it waits for (see main_test.go).
func startInGroup(t *testing.T, g *Group, cmd *exec.Cmd) *started {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, cmd)
	if err := g.Add(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	return s
}

// helperCmd re-executes the test binary as the helper called role.
func helperCmd(t *testing.T, role string, d time.Duration) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(withTimeout(t, d), exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+role)
	return cmd
}

func TestNewAddClose(t *testing.T) {
	l := Limits{Memory: 64 << 20, CPUs: 0.5, Pids: 20}
	g, rep := newGroup(t, l)
	files := []struct {
		limit    string
		version  int
		file     string
		want     string
		optional bool
	}{
		{"memory", 1, "memory.limit_in_bytes", "67108864", false},
		{"memory", 1, "memory.memsw.limit_in_bytes", "67108864", true},
		{"cpus", 1, "cpu.cfs_period_us", "100000", false},
		{"cpus", 1, "cpu.cfs_quota_us", "50000", false},
		{"pids", 1, "pids.max", "20", false},
		{"memory", 2, "memory.max", "67108864", false},
		{"memory", 2, "memory.swap.max", "0", true},
		{"cpus", 2, "cpu.max", "50000 100000", false},
		{"pids", 2, "pids.max", "20", false},
	}
	for _, limit := range []string{"memory", "cpus", "pids"} {
		line, ok := enforced(t, rep, limit)
		if !ok {
			continue
		}
		v := 1
		if strings.Contains(line, "(cgroup v2 ") {
			v = 2
		}
		for _, f := range files {
			if f.limit != limit || f.version != v {
				continue
			}
			dir := dirWith(g, f.file)
			if dir == "" {
				if !f.optional {
					t.Errorf("%s: no group directory in %v has %s", line, g.Paths(), f.file)
				}
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, f.file))
			if got := strings.TrimSpace(string(b)); err != nil || got != f.want {
				t.Errorf("%s/%s = %q (%v), want %q", dir, f.file, got, err, f.want)
			}
		}
	}

	sleep := start(t, exec.CommandContext(withTimeout(t, 20*time.Second), "sleep", "30"))
	pid := sleep.cmd.Process.Pid
	if err := g.Add(pid); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	in := 0
	for line := range strings.Lines(string(b)) {
		if strings.HasSuffix(strings.TrimSpace(line), "/"+testName(t)) {
			in++
		}
	}
	if in != len(g.Paths()) {
		t.Errorf("/proc/%d/cgroup shows the group in %d hierarchies, want %d (%v):\n%s", pid, in, len(g.Paths()), g.Paths(), b)
	}
	if len(g.Paths()) == 0 {
		t.Logf("uid %d: no group was created, so there is nothing to kill", os.Geteuid())
		return
	}
	t.Logf("pid %d is in %v", pid, g.Paths())

	if err := g.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if ws := sleep.wait(t, 10*time.Second); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("sleep ended with %v, want killed by SIGKILL", sleep.cmd.ProcessState)
	}
	assertGone(t, testName(t))
	if err := g.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestNewRollsBack makes each limit write fail in turn and checks that New
// returns the error and leaves no group behind.
func TestNewRollsBack(t *testing.T) {
	l := Limits{Memory: 64 << 20, CPUs: 0.5, Pids: 20}
	orig := writeFile
	t.Cleanup(func() { writeFile = orig })
	var written []string
	writeFile = func(p, v string) error {
		if b := filepath.Base(p); !strings.HasPrefix(b, "cgroup.") && !slices.Contains(written, b) {
			written = append(written, b)
		}
		return orig(p, v)
	}
	g, rep := newGroup(t, l)
	writeFile = orig
	if len(g.Paths()) == 0 {
		if mustWork() {
			t.Fatalf("STOCKADE_MUST_WORK=1: no group created: %v", rep.NotEnforced)
		}
		t.Skipf("uid %d can create no group here, so there is nothing to roll back; reported: %v", os.Geteuid(), rep.NotEnforced)
	}
	for _, file := range written {
		t.Run(file, func(t *testing.T) {
			name := testName(t)
			writeFile = func(p, v string) error {
				if filepath.Base(p) == file && filepath.Base(filepath.Dir(p)) == name {
					return fmt.Errorf("writing %q to %s: %w", v, p, unix.EINVAL)
				}
				return orig(p, v)
			}
			defer func() { writeFile = orig }()
			g, rep, err := New(name, l)
			if g != nil {
				t.Cleanup(func() { _ = g.Close() })
			}
			if err == nil || !errors.Is(err, unix.EINVAL) || g != nil {
				t.Fatalf("New with %s failing = %v, %v; want no group and the EINVAL", file, g, err)
			}
			if len(rep.Enforced) != 0 || len(rep.NotEnforced) < 1 {
				t.Errorf("report %+v: want nothing enforced after a rollback", rep)
			}
			assertGone(t, name)
			t.Logf("New: %v", err)
		})
	}
}

// TestNewLeavesOthersGroups checks that a group of the same name, left by
// someone else, is reported and neither used nor removed.
func TestNewLeavesOthersGroups(t *testing.T) {
	lay, err := detect()
	if err != nil {
		t.Fatal(err)
	}
	h, name := lay.find("pids"), testName(t)
	if h == nil || h.Dir == "" || accessible(h.Dir, unix.W_OK|unix.X_OK) != nil {
		t.Skipf("uid %d cannot create groups for pids here: TestProbeExplainsV1Access checks the report", os.Geteuid())
	}
	other := filepath.Join(h.Dir, name)
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(other) })
	g, rep, err := New(name, Limits{Pids: 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	if len(rep.Enforced) != 0 || len(rep.NotEnforced) != 1 || !strings.Contains(rep.NotEnforced[0].Reason, "file exists") ||
		len(g.Paths()) != 0 || !exists(other) {
		t.Errorf("report %+v, paths %v: want pids not enforced, and %s kept", rep, g.Paths(), other)
	}
	t.Logf("reported: %s", rep.NotEnforced)
}

func TestNewRefusesBadNames(t *testing.T) {
	for _, name := range []string{"", ".", "..", "a/b", "../x", "a\x00b"} {
		if g, _, err := New(name, Limits{Pids: 20}); err == nil {
			_ = g.Close()
			t.Errorf("New(%q) succeeded, want an error", name)
		}
	}
}

// TestNewValidatesFirst checks that out-of-range limits are reported and
// create nothing.
func TestNewValidatesFirst(t *testing.T) {
	g, rep := newGroup(t, Limits{Memory: 1000, Pids: 1})
	if len(rep.Enforced) != 0 || len(rep.NotEnforced) != 2 || len(g.Paths()) != 0 {
		t.Errorf("New: %+v, paths %v; want two problems and no group", rep, g.Paths())
	}
}

// TestProbeExplainsV1Access checks the reason given for a v1 hierarchy the
// user cannot write: this is what an unprivileged user sees on a v1 or hybrid
// machine, and the test asserts it rather than skipping.
func TestProbeExplainsV1Access(t *testing.T) {
	lay, err := detect()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, r := range (Limits{Memory: 64 << 20, CPUs: 0.5, Pids: 20}).requests() {
		h := lay.find(r.Controller)
		if h == nil || h.Version != 1 || h.Lost != "" {
			continue
		}
		checked++
		rep := Probe(Limits{Memory: 64 << 20, CPUs: 0.5, Pids: 20})
		line, ok := enforced(t, rep, r.Limit)
		if err := accessible(h.Dir, unix.W_OK|unix.X_OK); err == nil {
			if !ok || !strings.Contains(line, "(cgroup v1 "+r.Controller) {
				t.Errorf("%s is writable, but Probe says %q", h.Dir, line)
			}
			continue
		}
		want := Problem{r.Limit, fmt.Sprintf("cgroup v1 %s hierarchy at %s is not writable by uid %d", r.Controller, h.Dir, os.Geteuid()), fixDelegate}
		if !slices.Contains(rep.NotEnforced, want) {
			t.Errorf("Probe reports %v, want %v", rep.NotEnforced, want)
		}
	}
	t.Logf("uid %d: checked %d limits held by cgroup v1", os.Geteuid(), checked)
}

// TestNewNoLimits checks that asking for no limit creates nothing and
// reports nothing, as for a user other than root by default.
func TestNewNoLimits(t *testing.T) {
	g, rep := newGroup(t, Limits{})
	if len(rep.Enforced) != 0 || len(rep.NotEnforced) != 0 || len(g.Paths()) != 0 {
		t.Errorf("New: %+v, paths %v; want no report and no group", rep, g.Paths())
	}
	if p := Probe(Limits{}); len(p.Enforced) != 0 || len(p.NotEnforced) != 0 {
		t.Errorf("Probe: %+v, want no report", p)
	}
}

func TestCloseNil(t *testing.T) {
	var g *Group
	if err := g.Close(); err != nil {
		t.Error(err)
	}
	if err := g.Add(1); err != nil {
		t.Error(err)
	}
}

// TestSweep leaves groups beside a run's own, as stockades killed with
// SIGKILL do, and checks that Sweep removes exactly the empty ones stale
// names, never its own, one that holds a process, or one stale does not
// name.
func TestSweep(t *testing.T) {
	l := Limits{Pids: 20}
	g, _ := newGroup(t, l)
	if len(g.Paths()) == 0 {
		if mustWork() {
			t.Fatal("STOCKADE_MUST_WORK=1: no group was created")
		}
		t.Skipf("uid %d can create no group here: there is nothing to sweep", os.Geteuid())
	}
	prefix := testName(t) + "-"
	left := func(suffix string) *Group {
		t.Helper()
		o, _, err := New(prefix+suffix, l)
		if err != nil || len(o.Paths()) != len(g.Paths()) {
			t.Fatalf("New(%s): %v, paths %v", prefix+suffix, err, o.Paths())
		}
		t.Cleanup(func() { _ = o.Close() })
		return o
	}
	dead, busy, live := left("dead"), left("busy"), left("live")
	sleep := start(t, exec.CommandContext(withTimeout(t, 20*time.Second), "sleep", "30"))
	if err := busy.Add(sleep.cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	want := []string{prefix + "busy", prefix + "dead", prefix + "live"}
	var asked []string
	// The group's own is never asked about; were it, it would go (it is
	// empty), and nothing else does here.
	g.Sweep(testName(t), func(name string, made time.Time) bool {
		asked = append(asked, name)
		return name == testName(t)
	})
	slices.Sort(asked)
	if !slices.Equal(asked, want) {
		t.Errorf("stale was asked about %v, want %v (never the group's own)", asked, want)
	}
	for _, d := range g.Paths() {
		if !exists(d) {
			t.Errorf("Sweep removed its own %s", d)
		}
	}
	// A short command's run has removed its own group by the time its
	// sweep, in the background, begins: the sweep looks beside it all
	// the same.
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	asked = nil
	removed := g.Sweep(prefix, func(name string, made time.Time) bool {
		asked = append(asked, name)
		if d := time.Since(made); d < 0 || d > time.Minute {
			t.Errorf("%s was made %v ago, the sweep says", name, d)
		}
		return name != prefix+"live"
	})
	slices.Sort(asked)
	if !slices.Equal(asked, want) {
		t.Errorf("after Close, stale was asked about %v, want %v", asked, want)
	}
	if !slices.Equal(removed, dead.Paths()) {
		t.Errorf("Sweep removed %v, want %v", removed, dead.Paths())
	}
	for _, d := range dead.Paths() {
		if exists(d) {
			t.Errorf("%s is still there", d)
		}
	}
	for _, o := range []*Group{busy, live} {
		for _, d := range o.Paths() {
			if !exists(d) {
				t.Errorf("Sweep removed %s", d)
			}
		}
	}
	var none *Group
	if got := none.Sweep(prefix, func(string, time.Time) bool { return true }); got != nil {
		t.Errorf("a nil group swept %v", got)
	}
}

// TestBeginThen: Begin's then runs in the background once the group is
// made, not before (a foreground run registers its signals there, after
// the group the start needs first).
func TestBeginThen(t *testing.T) {
	pc := make(chan *Pending, 1)
	made := make(chan bool, 1)
	p := Begin(testName(t), Limits{}, func() {
		p := <-pc
		made <- p.g != nil || p.err != nil
	})
	pc <- p
	select {
	case ok := <-made:
		if !ok {
			t.Error("then ran before the group was made")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("then never ran")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}
