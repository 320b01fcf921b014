package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/mount"
)

// TestGitLeavesPlaceholdersOut: git inside the sandbox neither lists the
// placeholders of missing protected paths (an empty .env, CLAUDE.md, ...)
// as untracked nor adds them with "git add -A"; a file the command writes
// is listed and added as usual; a GIT_CONFIG_COUNT the user passes in keeps
// its entries.
func TestGitLeavesPlaceholdersOut(t *testing.T) {
	requireSandbox(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is missing (scripts/test.sh installs it)")
	}
	e := newEnv(t)
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git(e.workdir, "init", "-q")
	e.write("main.go", "package main\n")
	git(e.workdir, "add", "-A")
	git(e.workdir, "commit", "-qm", "one")
	script := `git status --porcelain --untracked-files=all; echo ---
echo new >new.txt; git add -A; git diff --cached --name-only; echo ---
git config --get-all user.name`
	r := e.run("", nil, "run", "--env", "GIT_CONFIG_COUNT=1", "--env", "GIT_CONFIG_KEY_0=user.name",
		"--env", "GIT_CONFIG_VALUE_0=Kept", "--", "sh", "-c", script)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	parts := strings.Split(r.stdout, "---\n")
	if len(parts) != 3 {
		t.Fatalf("output:\n%s", r.stdout)
	}
	if parts[0] != "" {
		t.Errorf("git status inside lists:\n%s", parts[0])
	}
	want := "new.txt\n"
	if parts[1] != want {
		t.Errorf("git add -A staged:\n%swant:\n%s", parts[1], want)
	}
	if parts[2] != "Kept\n" {
		t.Errorf("the user's GIT_CONFIG entries: %q, want Kept", parts[2])
	}
	if _, err := os.Stat(filepath.Join(e.workdir, "CLAUDE.md")); err == nil {
		t.Errorf("a placeholder is left on the host")
	}
}

// TestHostGitLeavesPlaceholdersOut: while sessions run, git status on the
// host lists none of their placeholders: the repository's info/exclude
// holds a block naming them. Two sessions, the second with one more
// protected path: when the first ends, the block still names what the
// second holds; when both have ended, the block is gone and info/exclude
// is byte for byte what it was. A supervisor killed with SIGKILL leaves
// its block, which the next start removes with its placeholders.
func TestHostGitLeavesPlaceholdersOut(t *testing.T) {
	requireSandbox(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is missing (scripts/test.sh installs it)")
	}
	e := newEnv(t)
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		cmd.Dir = e.workdir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	git("init", "-q")
	e.write("main.go", "package main\n")
	e.write(".gitignore", "fifo-*\n")
	git("add", "-A")
	git("commit", "-qm", "one")
	exclude := filepath.Join(e.workdir, ".git", "info", "exclude")
	// The user's own lines, the last without a newline after it.
	e.write(exclude, "# mine\n*.log\ntmp/")
	before, _ := os.ReadFile(exclude)
	for _, f := range []string{"fifo-up-a", "fifo-go-a", "fifo-up-b", "fifo-go-b", "fifo-up-c"} {
		if err := unix.Mkfifo(filepath.Join(e.workdir, f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	block := func() []string {
		t.Helper()
		b, _ := os.ReadFile(exclude)
		s, ok := strings.CutSuffix(string(b), string(before))
		if !ok {
			t.Fatalf("the user's lines changed:\n%s", b)
		}
		lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
		if len(lines) < 3 || lines[0] != mount.ExcludeBegin || lines[len(lines)-1] != mount.ExcludeEnd {
			t.Fatalf("info/exclude has no block at its top:\n%s", b)
		}
		for _, l := range lines[1 : len(lines)-1] {
			if fi, err := os.Lstat(filepath.Join(e.workdir, l)); err != nil || !fi.Mode().IsRegular() {
				t.Errorf("the block names %s, which is no placeholder file: %v", l, err)
			}
		}
		return lines[1 : len(lines)-1]
	}
	clean := func(when string) {
		t.Helper()
		if st := git("status", "--porcelain", "--untracked-files=all"); st != "" {
			t.Errorf("%s, git status on the host lists:\n%s", when, st)
		}
	}
	script := func(me string) string { return "echo up > fifo-up-" + me + "; cat fifo-go-" + me + " >/dev/null" }

	id := e.startSession("sh", "-c", script("a"))
	aPID := e.session(id).PID
	readFIFO(t, filepath.Join(e.workdir, "fifo-up-a"))
	clean("while a session runs")
	a := block()
	if !slices.Contains(a, "/CLAUDE.md") || !slices.Contains(a, "/.env") {
		t.Errorf("the block %q lacks /CLAUDE.md or /.env", a)
	}
	var fg sync.WaitGroup
	fg.Go(func() {
		if r := e.run("", nil, "run", "--log-level", "error", "--protect", "EXTRA.md", "--", "sh", "-c", script("b")); r.code != 0 {
			t.Errorf("b: exit %d\n%s", r.code, r.stderr)
		}
	})
	readFIFO(t, filepath.Join(e.workdir, "fifo-up-b"))
	clean("while two sessions run")
	both := append(slices.Clone(a), "/EXTRA.md")
	slices.Sort(both)
	if b := block(); !slices.Equal(b, both) {
		t.Errorf("with two sessions, the block is %q, want %q", b, both)
	}
	writeFIFO(t, filepath.Join(e.workdir, "fifo-go-a"))
	waitExit(t, aPID)
	clean("after the first session ended")
	if b := block(); !slices.Equal(b, both) {
		t.Errorf("after the first ended, the block is %q, want what the second holds, %q", b, both)
	}
	writeFIFO(t, filepath.Join(e.workdir, "fifo-go-b"))
	fg.Wait()
	if got, _ := os.ReadFile(exclude); string(got) != string(before) {
		t.Errorf("after both ended, info/exclude is:\n%q\nwant:\n%q", got, before)
	}
	clean("after both ended")

	// kill -9 of the supervisor: its block stays until the next start.
	id = e.startSession("sh", "-c", "echo up > fifo-up-c; sleep 1000")
	s := e.session(id)
	readFIFO(t, filepath.Join(e.workdir, "fifo-up-c"))
	block()
	syscall.Kill(s.PID, syscall.SIGKILL)
	if !waitFor(func() bool { return syscall.Kill(s.InitPID, 0) != nil }) {
		t.Fatalf("init %d outlived its supervisor", s.InitPID)
	}
	block()
	if r := e.run("", nil, "run", "--log-level", "error", "--", "true"); r.code != 0 {
		t.Fatalf("run after the kill: exit %d\n%s", r.code, r.stderr)
	}
	if got, _ := os.ReadFile(exclude); string(got) != string(before) {
		t.Errorf("after the next start, info/exclude is:\n%q\nwant:\n%q", got, before)
	}
	clean("after the killed session's placeholders were swept")
}

// TestHostGitExcludeRW: a --rw tree in a repository of its own gets the
// block in that repository's info/exclude while the run holds
// placeholders there, and loses it at the end; a workdir in no
// repository gets none.
func TestHostGitExcludeRW(t *testing.T) {
	requireSandbox(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is missing (scripts/test.sh installs it)")
	}
	e := newEnv(t)
	rw := filepath.Join(filepath.Dir(e.home), "other")
	if err := os.MkdirAll(rw, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "init", "-q", rw)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	exclude := filepath.Join(rw, ".git", "info", "exclude")
	before, err := os.ReadFile(exclude)
	if err != nil {
		t.Fatal(err)
	}
	r := e.run("", nil, "run", "--log-level", "error", "--rw", rw, "--", "sh", "-c", "cat "+exclude+"; git -C "+rw+" status --porcelain --untracked-files=all")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if !strings.HasPrefix(r.stdout, mount.ExcludeBegin+"\n/") || !strings.Contains(r.stdout, "\n/CLAUDE.md\n") ||
		!strings.HasSuffix(r.stdout, mount.ExcludeEnd+"\n"+string(before)) {
		t.Errorf("during the run, the --rw tree's info/exclude was:\n%s", r.stdout)
	}
	if got, _ := os.ReadFile(exclude); string(got) != string(before) {
		t.Errorf("after the run, info/exclude is:\n%q\nwant:\n%q", got, before)
	}
	if _, err := os.Lstat(filepath.Join(e.workdir, ".git")); err == nil {
		t.Error("a .git appeared in the workdir")
	}
}

// TestHostGitExcludeTopSwapped: a session whose workdir holds another
// session's repository (started before that repository was made, so that
// nothing of it is pinned in its view) swaps a directory on the way to it
// for a symlink to a repository outside every sandbox. When the other
// session ends while a third still holds placeholders there, the block is
// not written into the repository the link names: the top is opened
// following no symlink.
func TestHostGitExcludeTopSwapped(t *testing.T) {
	requireSandbox(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is missing (scripts/test.sh installs it)")
	}
	e := newEnv(t)
	gitInit := func(dir string) {
		t.Helper()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
			t.Fatalf("git init %s: %v\n%s", dir, err, out)
		}
	}
	victim := filepath.Join(filepath.Dir(e.home), "victim")
	gitInit(filepath.Join(victim, "p"))
	victimExclude := filepath.Join(victim, "p", ".git", "info", "exclude")
	e.write(victimExclude, "# the victim's own\n")
	for _, f := range []string{"fifo-up-b", "fifo-go-b"} {
		if err := unix.Mkfifo(filepath.Join(e.workdir, f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		r := e.run("", nil, "run", "--log-level", "error", "--", "sh", "-c",
			"echo up > fifo-up-b; cat fifo-go-b >/dev/null; mv d d2 && ln -s "+victim+" d")
		if r.code != 0 {
			t.Errorf("the swapping session: exit %d\n%s", r.code, r.stderr)
		}
	})
	readFIFO(t, filepath.Join(e.workdir, "fifo-up-b"))
	p := filepath.Join(e.workdir, "d", "p")
	gitInit(p)
	for _, f := range []string{"fifo-up-a", "fifo-go-a", "fifo-up-c", "fifo-go-c"} {
		if err := unix.Mkfifo(filepath.Join(p, f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ended := map[string]chan struct{}{"a": make(chan struct{}), "c": make(chan struct{})}
	for _, me := range []string{"a", "c"} {
		wg.Go(func() {
			defer close(ended[me])
			e.run("", nil, "run", "--log-level", "error", "--workdir", p, "--protect", "EXTRA-"+me+".md", "--",
				"sh", "-c", "echo up > fifo-up-"+me+"; cat fifo-go-"+me+" >/dev/null")
		})
		readFIFO(t, filepath.Join(p, "fifo-up-"+me))
	}
	writeFIFO(t, filepath.Join(e.workdir, "fifo-go-b"))
	if !waitFor(func() bool {
		fi, err := os.Lstat(filepath.Join(e.workdir, "d"))
		return err == nil && fi.Mode()&os.ModeSymlink != 0
	}) {
		t.Fatal("the swapping session did not swap")
	}
	moved := filepath.Join(e.workdir, "d2", "p")
	writeFIFO(t, filepath.Join(moved, "fifo-go-a"))
	// a's end rewrites the block of d/p with what c holds; c goes last.
	select {
	case <-ended["a"]:
	case <-time.After(30 * time.Second):
		t.Fatal("the first session did not end")
	}
	if got, _ := os.ReadFile(victimExclude); string(got) != "# the victim's own\n" {
		t.Errorf("the info/exclude of the repository the link names was written:\n%s", got)
	}
	if _, err := os.Lstat(filepath.Join(victim, "p", ".git", "info", "exclude.stockade-spare")); err == nil {
		t.Error("a spare was made in the repository the link names")
	}
	writeFIFO(t, filepath.Join(moved, "fifo-go-c"))
	wg.Wait()
}
