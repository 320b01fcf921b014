package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/internal/testenv"
)

func TestRunBasics(t *testing.T) {
	requireSandbox(t)
	tests := []struct {
		name     string
		in       string
		env      []string
		args     []string
		wantCode int
		wantOut  string
	}{
		{"stdin passes through", "hello\n", nil, []string{"run", "--", "cat"}, 0, "hello\n"},
		{"exit status", "", nil, []string{"run", "--", "sh", "-c", "exit 42"}, 42, ""},
		{"killed by signal", "", nil, []string{"run", "--", "sh", "-c", "kill -KILL $$"}, 137, ""},
		{"not found", "", nil, []string{"run", "--", "no-such-command-xyz"}, 127, ""},
		{"cwd is the workdir", "", nil, []string{"run", "--", "sh", "-c", "pwd | grep -c /proj$"}, 0, "1\n"},
		{"HOME is the user's path", "", nil, []string{"run", "--", "sh", "-c", `test "$HOME" = "$(cat /proc/self/environ | tr '\0' '\n' | sed -n 's/^HOME=//p')" && echo ok`}, 0, "ok\n"},
		{"credentials dropped", "", []string{"GITHUB_TOKEN=ghp_secret", "AWS_SECRET_ACCESS_KEY=aws", "MY_API_KEY=k"},
			[]string{"run", "--", "sh", "-c", "env | grep -c -e ghp_secret -e aws -e MY_API_KEY || true"}, 0, "0\n"},
		{"--env passes one", "", []string{"GITHUB_TOKEN=ghp_secret"}, []string{"run", "--env", "GITHUB_TOKEN", "--", "sh", "-c", "echo $GITHUB_TOKEN"}, 0, "ghp_secret\n"},
		{"--env sets one", "", nil, []string{"run", "--env", "FOO=bar", "--", "sh", "-c", "echo $FOO"}, 0, "bar\n"},
		{"no inherited fds", "", nil, []string{"run", "--", "sh", "-c", "ls /proc/self/fd | sort -n | tr '\n' ' '"}, 0, "0 1 2 3 "}, // 3: ls's own directory fd
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			r := e.run(tt.in, tt.env, tt.args...)
			if r.code != tt.wantCode {
				t.Errorf("exit status %d, want %d\nstderr: %s", r.code, tt.wantCode, r.stderr)
			}
			if tt.wantOut != "" && r.stdout != tt.wantOut {
				t.Errorf("stdout %q, want %q", r.stdout, tt.wantOut)
			}
		})
	}
}

// TestStartLine: one line names the active layers, and loosenings are loud.
func TestStartLine(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	r := e.run("", nil, "run", "--allow-hooks", "--", "true")
	for _, want := range []string{"namespaces user,mount,pid,net,ipc,uts,cgroup", "landlock ABI", "seccomp", "no_new_privs", "capabilities none", "LOOSENED: allow_hooks"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if r = e.run("", nil, "run", "--log-level", "error", "--", "true"); strings.Contains(r.stderr, "landlock ABI") {
		t.Errorf("--log-level error still prints the start line:\n%s", r.stderr)
	}
}

// TestFloorLoosened: an allow rule whose range holds a floor address is a
// LOOSENED line in policy show and at run's start; a review found
// --agent-allow 169.0.0.0/8, which holds the metadata address, silent.
func TestFloorLoosened(t *testing.T) {
	e := newEnv(t)
	for _, tt := range []struct {
		rule string
		want bool
	}{{"169.0.0.0/8", true}, {"64:ff9b::a9fe:a9fe", true}, {"93.184.216.0/24", false}} {
		line := "LOOSENED: agent_allow " + tt.rule + ": lifts the floor"
		r := e.run("", nil, "policy", "show", "--agent-allow", tt.rule)
		if r.code != 0 || strings.Contains(r.stdout, line) != tt.want {
			t.Errorf("policy show --agent-allow %s: exit %d, want the line %q: %v\n%s%s", tt.rule, r.code, line, tt.want, r.stdout, r.stderr)
		}
	}
	requireSandbox(t)
	r := e.run("", nil, "run", "--agent-allow", "169.0.0.0/8", "--", "true")
	if r.code != 0 || !strings.Contains(r.stderr, "stockade: LOOSENED: agent_allow 169.0.0.0/8: lifts the floor") {
		t.Errorf("run --agent-allow 169.0.0.0/8: exit %d, no LOOSENED line:\n%s", r.code, r.stderr)
	}
}

func TestPolicyShowJSON(t *testing.T) {
	e := newEnv(t)
	e.write(".stockade.json", `{"memory": "1g", "mask": ["secrets/"]}`)
	r := e.run("", []string{"STOCKADE_PIDS=100"}, "policy", "show", "--json", "--memory", "512m")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var out struct {
		Policy      struct{ Memory, Pids int64 }
		Sources     map[string]string
		ListSources map[string][]struct{ Value, Source string } `json:"list_sources"`
		Enforcement struct {
			Layers []struct {
				Name   string
				Active bool
			}
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("policy show --json is not JSON: %v\n%s", err, r.stdout)
	}
	if out.Policy.Memory != 512<<20 || out.Sources["memory"] != "flag --memory" || out.Sources["pids"] != "env STOCKADE_PIDS" {
		t.Errorf("memory %d from %q, pids from %q", out.Policy.Memory, out.Sources["memory"], out.Sources["pids"])
	}
	found := false
	for _, m := range out.ListSources["mask"] {
		found = found || (m.Value == "secrets/" && strings.HasSuffix(m.Source, ".stockade.json"))
	}
	if !found {
		t.Errorf("mask secrets/ from the project file missing: %+v", out.ListSources["mask"])
	}
	names := map[string]bool{}
	for _, l := range out.Enforcement.Layers {
		names[l.Name] = true
	}
	for _, n := range []string{"namespaces", "landlock", "seccomp", "no_new_privs", "capabilities"} {
		if !names[n] {
			t.Errorf("enforcement layer %q missing", n)
		}
	}
}

func TestDoctorAndVersion(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	r := e.run("", nil, "doctor")
	if r.code != 0 || !strings.Contains(r.stdout, "stockade can run on this machine") || !strings.Contains(r.stdout, "landlock") {
		t.Errorf("doctor: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "ok    capture ") {
		t.Errorf("doctor does not report transparent capture working:\n%s", r.stdout)
	}
	if r = e.run("", nil, "version"); r.code != 0 || !strings.HasPrefix(r.stdout, "stockade ") {
		t.Errorf("version: exit %d %q", r.code, r.stdout)
	}
}

// TestDoctorBrokenConfig: doctor with a config file that does not parse
// says that the configuration is broken, where and why, and exits 1; it
// does not blame the machine (issue 14).
func TestDoctorBrokenConfig(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	path := e.write(filepath.Join(e.home, ".config/stockade/config.json"), "{\n  \"memory\": \n}")
	r := e.run("", nil, "doctor")
	for _, w := range []string{"stockade's configuration is broken: " + path + ":3:1: invalid JSON", "fix the syntax"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("doctor lacks %q:\n%s%s", w, r.stdout, r.stderr)
		}
	}
	if r.code != 1 || strings.Contains(r.stdout, "cannot run on this machine") {
		t.Errorf("doctor: exit %d; want 1 and the machine not blamed:\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// start runs stockade in the background and waits for the command to print
// its first line.
func start(t *testing.T, e *env, args ...string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = e.workdir
	cmd.Env = e.vars
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	r := bufio.NewReader(out)
	line, err := r.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("first line %q, %v; want ready", line, err)
	}
	return cmd, r
}

// TestSignalsForwarded: SIGTERM to stockade reaches the command.
func TestSignalsForwarded(t *testing.T) {
	requireSandbox(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			e := newEnv(t)
			cmd, out := start(t, e, "run", "--", "sh", "-c", fmt.Sprintf(`trap 'echo got; exit 7' %d; echo ready; while :; do sleep 0.05; done`, sig))
			cmd.Process.Signal(sig)
			line, _ := out.ReadString('\n')
			err := cmd.Wait()
			if line != "got\n" || cmd.ProcessState.ExitCode() != 7 {
				t.Errorf("after %v: line %q, exit %v; want got and 7", sig, line, err)
			}
		})
	}
}

// TestNothingOutlivesKill: kill -9 of stockade takes the sandbox with it.
func TestNothingOutlivesKill(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	marker := "stockade-orphan-" + filepath.Base(e.home[:len(e.home)-5])
	cmd, _ := start(t, e, "run", "--", "bash", "-c", "(exec -a "+marker+" sleep 1000) & echo ready; wait")
	if !waitFor(func() bool { return processWithArg0(marker) }) {
		t.Fatal("the marker process never appeared")
	}
	groups := cgroupsOf(t, marker)
	if os.Getuid() == 0 && testenv.MustWork() && len(groups) == 0 {
		t.Fatal("STOCKADE_MUST_WORK=1: root's sandbox is in no cgroup of its own")
	}
	// The record that says whose the group is is written once the command
	// runs, beside it.
	id := strings.TrimPrefix(filepath.Base(firstOr(groups, "stockade-")), "stockade-")
	record := filepath.Join(e.home, ".local/state/stockade/sessions", id, "session.json")
	if len(groups) > 0 && !waitFor(func() bool { _, err := os.Stat(record); return err == nil }) {
		t.Fatalf("no record %s", record)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if !waitFor(func() bool { return !processWithArg0(marker) }) {
		t.Fatalf("%s outlived a SIGKILLed stockade", marker)
	}
	// A stockade killed so cannot remove its cgroup: the next run does,
	// once the group is empty. The marker can be gone while the shell
	// beside it, killed with it, has yet to leave the group: on a busy
	// machine that takes longer than the next run takes to sweep.
	for _, g := range groups {
		if _, err := os.Stat(g); err != nil {
			t.Logf("%s: %v (the kernel removed it?)", g, err)
			continue
		}
		if !waitFor(func() bool { b, err := os.ReadFile(filepath.Join(g, "cgroup.procs")); return err == nil && len(b) == 0 }) {
			b, _ := os.ReadFile(filepath.Join(g, "cgroup.procs"))
			t.Fatalf("the cgroup %s of the killed run still holds %q", g, b)
		}
	}
	if r := e.run("", nil, "run", "--", "true"); r.code != 0 {
		t.Fatalf("the next run: exit %d\n%s", r.code, r.stderr)
	}
	for _, g := range groups {
		if _, err := os.Stat(g); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the cgroup %s of the killed run is still there after the next run (%v)", g, err)
		}
	}
}

// TestInterruptedStartLeavesNothing: a stockade stopped by SIGINT or
// SIGKILL at any moment of its start (before it relays signals, while it
// makes the placeholders, before it records them) leaves nothing in the
// project once the next run has swept: every placeholder is recorded
// before it is made. The stops land in the first 60 % of a whole run's
// time, and enough of them between the first record and the release (each
// leaves a record of its own for the next run to sweep), or the test
// proves nothing. (A stop lands between making and recording in a few runs in a
// hundred: the loop found the leak in five trials of five without the
// record written first; internal/mount's TestClaimKilled kills there each
// time.)
func TestInterruptedStartLeavesNothing(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	// A run killed after it made its cgroup and before its record leaves
	// the group, by design (docs/sandbox.md): the runs go in a group of
	// the test's own, removed with what they left in it.
	procs := testCgroups(t)
	command := func(args ...string) *exec.Cmd {
		cmd := exec.Command("sh", append([]string{"-c", `for f in $STOCKADE_TEST_CGROUPS; do echo $$ > "$f" || exit 1; done; exec "$@"`, "sh", bin}, args...)...)
		cmd.Dir, cmd.Env = e.workdir, append(slices.Clone(e.vars), "STOCKADE_TEST_CGROUPS="+strings.Join(procs, " "))
		return cmd
	}
	var whole time.Duration
	for range 3 {
		t0 := time.Now()
		if out, err := command("run", "--", "true").CombinedOutput(); err != nil {
			t.Fatalf("run: %v\n%s", err, out)
		}
		whole = max(whole, time.Since(t0))
	}
	records := filepath.Join(e.home, ".local/state/stockade/placeholders")
	recorded := map[string]bool{} // the stops that left a record
	const stops = 240
	for i := range stops {
		sig := syscall.SIGINT
		if i%3 == 2 {
			sig = syscall.SIGKILL
		}
		cmd := command("run", "--", "sleep", "10")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rand.Int64N(int64(whole) * 6 / 10))) // the start, and a little more
		cmd.Process.Signal(sig)
		cmd.Wait()
		left, _ := filepath.Glob(filepath.Join(records, "*.json"))
		for _, r := range left {
			recorded[filepath.Base(r)] = true
		}
	}
	if len(recorded) < 5 {
		t.Fatalf("only %d of %d stops came after the placeholders were recorded (a whole run takes %v): the loop tests nothing", len(recorded), stops, whole)
	}
	if out, err := command("run", "--", "true").CombinedOutput(); err != nil {
		t.Fatalf("the next run: %v\n%s", err, out)
	}
	if ents, _ := os.ReadDir(e.workdir); len(ents) != 0 {
		var names []string
		for _, d := range ents {
			names = append(names, d.Name())
		}
		t.Errorf("the project holds %v after the interrupted runs and the next one", names)
	}
	if left, _ := filepath.Glob(filepath.Join(records, "*.json")); len(left) != 0 {
		t.Errorf("placeholder records left: %v", left)
	}
	t.Logf("%d of %d stops left a record for the next run to sweep (a whole run: %v)", len(recorded), stops, whole)
}

// testCgroups makes a cgroup of the test's own beside the test's, in
// each cgroup hierarchy root may write, and returns their cgroup.procs
// files (none for a user); the cleanup removes them with the groups made
// in them, once they are empty.
func testCgroups(t *testing.T) []string {
	t.Helper()
	if os.Getuid() != 0 {
		return nil
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	var dirs, procs []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || strings.HasPrefix(f[1], "name=") {
			continue
		}
		mnt := "/sys/fs/cgroup/" + f[1]
		if f[1] == "" {
			mnt = "/sys/fs/cgroup/unified"
			if _, err := os.Stat(filepath.Join(mnt, "cgroup.procs")); err != nil {
				mnt = "/sys/fs/cgroup"
			}
		}
		dir := filepath.Join(mnt, f[2], fmt.Sprintf("stockade-e2e-%d", os.Getpid()))
		if os.Mkdir(dir, 0o755) != nil {
			continue // not a hierarchy root may write here
		}
		// One a process cannot join as it is (cpuset, before its cpus
		// and mems are set) is left out.
		if exec.Command("sh", "-c", `echo $$ > "$1"`, "sh", filepath.Join(dir, "cgroup.procs")).Run() != nil {
			waitFor(func() bool { return syscall.Rmdir(dir) == nil })
			continue
		}
		dirs, procs = append(dirs, dir), append(procs, filepath.Join(dir, "cgroup.procs"))
	}
	t.Cleanup(func() {
		for _, d := range dirs {
			waitFor(func() bool {
				subs, _ := filepath.Glob(filepath.Join(d, "stockade-*"))
				for _, s := range subs {
					syscall.Rmdir(s)
				}
				return syscall.Rmdir(d) == nil
			})
			if _, err := os.Stat(d); err == nil {
				t.Errorf("the test's cgroup %s is still there", d)
			}
		}
	})
	return procs
}

// cgroupsOf returns the directories of the stockade cgroups the process
// whose argv[0] is arg0 is in, one per hierarchy.
func cgroupsOf(t *testing.T, arg0 string) []string {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.HasPrefix(string(b), arg0+"\x00") {
			continue
		}
		cg, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		if err != nil {
			t.Fatal(err)
		}
		var dirs []string
		for line := range strings.Lines(string(cg)) {
			// hierarchy-ID:controllers:path
			f := strings.SplitN(strings.TrimSpace(line), ":", 3)
			if len(f) != 3 || !strings.Contains(f[2], "/stockade-") {
				continue
			}
			mount := "/sys/fs/cgroup/unified"
			if f[1] != "" {
				mount = "/sys/fs/cgroup/" + strings.TrimPrefix(strings.Split(f[1], ",")[0], "name=")
			}
			if _, err := os.Stat(mount); err != nil {
				mount = "/sys/fs/cgroup"
			}
			dirs = append(dirs, filepath.Join(mount, f[2]))
		}
		return dirs
	}
	t.Fatalf("no process %s", arg0)
	return nil
}

func firstOr(s []string, or string) string {
	if len(s) == 0 {
		return or
	}
	return s[0]
}

// waitFor polls cond for up to 5s: the kernel tears a PID namespace down
// asynchronously, so there is no event to wait on from outside.
func waitFor(cond func() bool) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return false
}

func processWithArg0(arg0 string) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.HasPrefix(string(b), arg0+"\x00") {
			return true
		}
	}
	return false
}

// TestLimits: a limit is enforced, or stockade says it is not.
func TestLimits(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	alloc := []string{"python3", "-c", "b = bytearray(300 << 20); print('survived')"}
	before := snapshot(t, e.home)
	r := e.run("", nil, append([]string{"run", "--memory", "64m", "--"}, alloc...)...)
	switch {
	case strings.Contains(r.stderr, "cannot be enforced"):
		// A limit asked for on purpose that this user cannot have refuses
		// the start (issue 9 §10); it used to be a warning, and the command
		// ran unlimited.
		if os.Getuid() == 0 {
			t.Errorf("root on this machine should get a memory cgroup:\n%s", r.stderr)
		}
		if r.code != 125 || r.stdout != "" || len(stderrLines(r.stderr)) != 1 ||
			!strings.Contains(r.stderr, "flag --memory") || !strings.Contains(r.stderr, "drop --memory") {
			t.Errorf("unenforceable --memory: exit %d, stdout %q; want 125 and one line naming the flag and the fix\n%s", r.code, r.stdout, r.stderr)
		}
		if after := snapshot(t, e.home); after != before {
			t.Errorf("a refused start left something behind:\n%s", after)
		}
	case r.code != 137 || strings.Contains(r.stdout, "survived"):
		t.Errorf("a 300 MiB allocation under --memory 64m: exit %d, stdout %q; want 137 (OOM kill)\n%s", r.code, r.stdout, r.stderr)
	}
	// 30 forks under a limit of 20 tasks: some must fail with EAGAIN.
	forks := "import os, time\nok = fail = 0\nfor i in range(30):\n    try:\n        pid = os.fork()\n    except OSError:\n        fail += 1\n        continue\n    if pid == 0:\n        time.sleep(2)\n        os._exit(0)\n    ok += 1\nprint(ok, fail)\n"
	r = e.run("", nil, "run", "--pids", "20", "--", "python3", "-c", forks)
	var ok, failed int
	if _, err := fmt.Sscan(r.stdout, &ok, &failed); err != nil || r.code != 0 {
		t.Fatalf("exit %d, stdout %q: %s", r.code, r.stdout, r.stderr)
	}
	if failed == 0 || ok >= 20 {
		t.Errorf("under --pids 20: %d forks succeeded, %d failed; want some refused\n%s", ok, failed, r.stderr)
	}
}

// TestROFile: --ro takes a file as well as a directory: it reads inside,
// and only reads. (Landlock refuses directory rights on a file; the rule
// keeps the rights a file can have.)
func TestROFile(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	f := filepath.Join(filepath.Dir(e.home), "notes.txt")
	if err := os.WriteFile(f, []byte("read me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := e.run("", nil, "run", "--ro", f, "--", "sh", "-c", "cat "+f+"; echo x >> "+f+" || echo denied")
	if r.code != 0 || r.stdout != "read me\ndenied\n" {
		t.Fatalf("status %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
	}
	if b, _ := os.ReadFile(f); string(b) != "read me\n" {
		t.Errorf("the file was written: %q", b)
	}
}

// TestInitHoldsNoSecrets: the sandbox's init is a fork of the supervisor,
// but it keeps neither the supervisor's environment nor its command line:
// a key in stockade's environment is not in init's memory, and ps shows
// stockade-init.
func TestInitHoldsNoSecrets(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	const secret = "sk-ant-not-for-init-0123456789"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--log-level", "error", "--", "sh", "-c", "echo up; read x")
	cmd.Dir = e.workdir
	cmd.Env = append(append([]string{}, e.vars...), "ANTHROPIC_API_KEY="+secret)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "up\n" {
		t.Fatalf("the command did not start: %q %v", line, err)
	}
	init := childOf(cmd.Process.Pid)
	if init == "" {
		t.Fatal("the supervisor has no child")
	}
	if b, err := os.ReadFile("/proc/" + init + "/cmdline"); err != nil || strings.TrimRight(string(b), "\x00") != "stockade-init" {
		t.Errorf("init's command line = %q, %v; want stockade-init", b, err)
	}
	// Init is not dumpable: only root can read its environment, and then
	// the key must not be there.
	if b, err := os.ReadFile("/proc/" + init + "/environ"); err == nil && strings.Contains(string(b), secret) {
		t.Errorf("init's environment holds the supervisor's key")
	} else if err != nil && os.Getuid() == 0 {
		t.Errorf("reading init's environment as root: %v", err)
	}
}

// childOf is the pid of a child process of pid, or "".
func childOf(pid int) string {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		i := strings.LastIndexByte(string(b), ')')
		if err != nil || i < 0 {
			continue
		}
		// After the comm: state, ppid, ...
		if fs := strings.Fields(string(b[i+1:])); len(fs) > 1 && fs[1] == fmt.Sprint(pid) {
			return filepath.Base(filepath.Dir(f))
		}
	}
	return ""
}
