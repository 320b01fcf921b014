//go:build linux

package mount

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const userExclude = "# git ls-files --others --exclude-from=.git/info/exclude\n*.log\n"

// repo makes a work tree at a new directory with a .git/info/exclude
// holding userExclude.
func repo(t *testing.T) string {
	t.Helper()
	top := t.TempDir()
	if err := os.MkdirAll(filepath.Join(top, ".git", "info"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(top, ".git", "info", "exclude"), []byte(userExclude), 0o640); err != nil {
		t.Fatal(err)
	}
	return top
}

func readString(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestUpdateExclude: the block goes into a repository's info/exclude and
// out again, the file keeps its mode, owner and every other byte; a
// ".git" file is followed to a git directory inside the work tree.
func TestUpdateExclude(t *testing.T) {
	block := ExcludeBegin + "\n/.env\n/CLAUDE.md\n" + ExcludeEnd + "\n"
	for _, gitFile := range []bool{false, true} {
		top := repo(t)
		gitdir := filepath.Join(top, ".git")
		if gitFile {
			gitdir = filepath.Join(top, "sub", "gd")
			os.MkdirAll(filepath.Join(top, "sub"), 0o755)
			if err := os.Rename(filepath.Join(top, ".git"), gitdir); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(top, ".git"), []byte("gitdir: sub/gd\n"), 0o644)
		}
		ex := filepath.Join(gitdir, "info", "exclude")
		uid := os.Getuid()
		if uid == 0 {
			uid = 12345 // as root, in a user's repository: the file stays the user's
			os.Chown(filepath.Dir(ex), uid, uid)
			os.Chown(ex, uid, uid)
		}
		if err := updateExclude(top, []string{"/.env", "/CLAUDE.md"}); err != nil {
			t.Fatal(err)
		}
		if got := readString(t, ex); got != block+userExclude {
			t.Errorf("exclude = %q, want the block and the user's lines", got)
		}
		var st unix.Stat_t
		unix.Stat(ex, &st)
		if st.Mode&0o7777 != 0o640 || int(st.Uid) != uid {
			t.Errorf("exclude mode %o owner %d, want 640 and %d", st.Mode&0o7777, st.Uid, uid)
		}
		if err := updateExclude(top, nil); err != nil {
			t.Fatal(err)
		}
		if got := readString(t, ex); got != userExclude {
			t.Errorf("after removal: %q, want the user's lines as they were", got)
		}
		if ents, _ := os.ReadDir(filepath.Dir(ex)); len(ents) != 2 || ents[1].Name() != excludeSpare {
			t.Errorf("info holds %v, want exclude and the spare", ents)
		}
	}
}

// TestUpdateExcludeSpare: whatever the command left at the spare's name
// is replaced, never written through: a symlink, another name of a file
// (a hard link), a directory.
func TestUpdateExcludeSpare(t *testing.T) {
	for name, setup := range map[string]func(spare, victim string) error{
		"symlink":   func(spare, victim string) error { return os.Symlink(victim, spare) },
		"hard link": func(spare, victim string) error { return os.Link(victim, spare) },
		"directory": func(spare, victim string) error { return os.Mkdir(spare, 0o755) },
		"FIFO":      func(spare, victim string) error { return unix.Mkfifo(spare, 0o644) },
	} {
		t.Run(name, func(t *testing.T) {
			top := repo(t)
			ex := filepath.Join(top, ".git", "info", "exclude")
			victim := filepath.Join(top, "victim")
			if name == "symlink" {
				victim = filepath.Join(t.TempDir(), "victim")
			}
			os.WriteFile(victim, []byte("mine\n"), 0o644)
			if err := setup(filepath.Join(top, ".git", "info", excludeSpare), victim); err != nil {
				t.Fatal(err)
			}
			if err := updateExclude(top, []string{"/.env"}); err != nil {
				t.Fatal(err)
			}
			if got := readString(t, ex); got != ExcludeBegin+"\n/.env\n"+ExcludeEnd+"\n"+userExclude {
				t.Errorf("exclude = %q", got)
			}
			if got := readString(t, victim); got != "mine\n" {
				t.Errorf("the file the spare named now holds %q", got)
			}
		})
	}
}

// TestUpdateExcludeMissing: a missing exclude is made (the info
// directory's owner's, mode 644) and left empty; a missing info
// directory gets nothing, and says so as no fault.
func TestUpdateExcludeMissing(t *testing.T) {
	top := repo(t)
	ex := filepath.Join(top, ".git", "info", "exclude")
	os.Remove(ex)
	if err := updateExclude(top, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(ex); err == nil {
		t.Fatal("an exclude was made with nothing to put in it")
	}
	if err := updateExclude(top, []string{"/.env"}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(ex); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("new exclude: %v %v", fi, err)
	}
	if err := updateExclude(top, nil); err != nil || readString(t, ex) != "" {
		t.Fatalf("after removal: %q %v", readString(t, ex), err)
	}
	os.RemoveAll(filepath.Join(top, ".git", "info"))
	if err := updateExclude(top, []string{"/.env"}); !errors.Is(err, ErrExcludeSkipped) {
		t.Fatalf("no info directory: %v, want ErrExcludeSkipped", err)
	}
	if _, err := os.Lstat(filepath.Join(top, ".git", "info")); err == nil {
		t.Fatal("info was made")
	}
}

// TestUpdateExcludeRefuses: what the sandboxed command could have put in
// place of the git directory, info or exclude is neither followed nor
// replaced: each row fails (skipped: no fault, only a debug line) and
// leaves every file as it was.
func TestUpdateExcludeRefuses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, top, outside string)
		skipped bool
		at      string // the work tree's top below top, when not top
	}{
		{name: "symlinked exclude", setup: func(t *testing.T, top, outside string) {
			ex := filepath.Join(top, ".git", "info", "exclude")
			os.Remove(ex)
			os.Symlink(filepath.Join(outside, "file"), ex)
		}},
		{name: "hard-linked exclude", setup: func(t *testing.T, top, outside string) {
			if err := os.Link(filepath.Join(top, ".git", "info", "exclude"), filepath.Join(top, "other")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "symlinked info", setup: func(t *testing.T, top, outside string) {
			info := filepath.Join(top, ".git", "info")
			os.RemoveAll(info)
			os.Mkdir(filepath.Join(outside, "info"), 0o755)
			os.WriteFile(filepath.Join(outside, "info", "exclude"), []byte(userExclude), 0o644)
			os.Symlink(filepath.Join(outside, "info"), info)
		}},
		{name: "FIFO exclude", setup: func(t *testing.T, top, outside string) {
			ex := filepath.Join(top, ".git", "info", "exclude")
			os.Remove(ex)
			if err := unix.Mkfifo(ex, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "directory exclude", setup: func(t *testing.T, top, outside string) {
			ex := filepath.Join(top, ".git", "info", "exclude")
			os.Remove(ex)
			os.Mkdir(ex, 0o755)
		}},
		{name: "too big", setup: func(t *testing.T, top, outside string) {
			os.WriteFile(filepath.Join(top, ".git", "info", "exclude"), []byte(strings.Repeat("#\n", maxExclude)), 0o644)
		}},
		{name: "tampered markers", setup: func(t *testing.T, top, outside string) {
			os.WriteFile(filepath.Join(top, ".git", "info", "exclude"), []byte(ExcludeBegin+"\n"+userExclude), 0o644)
		}},
		{name: "symlinked .git", skipped: true, setup: func(t *testing.T, top, outside string) {
			os.Rename(filepath.Join(top, ".git"), filepath.Join(outside, "g"))
			os.Symlink(filepath.Join(outside, "g"), filepath.Join(top, ".git"))
		}},
		{name: ".git file naming a directory outside", skipped: true, setup: func(t *testing.T, top, outside string) {
			os.Rename(filepath.Join(top, ".git"), filepath.Join(outside, "g"))
			os.WriteFile(filepath.Join(top, ".git"), []byte("gitdir: "+filepath.Join(outside, "g")+"\n"), 0o644)
		}},
		{name: ".git file naming ..", skipped: true, setup: func(t *testing.T, top, outside string) {
			os.WriteFile(filepath.Join(top, "sub", ".git"), []byte("gitdir: ../.git\n"), 0o644)
		}},
		{name: ".git file through a symlink", skipped: true, setup: func(t *testing.T, top, outside string) {
			os.Rename(filepath.Join(top, ".git"), filepath.Join(outside, "g"))
			os.Symlink(outside, filepath.Join(top, "link"))
			os.WriteFile(filepath.Join(top, ".git"), []byte("gitdir: link/g\n"), 0o644)
		}},
		{name: "linked worktree (commondir)", skipped: true, setup: func(t *testing.T, top, outside string) {
			os.WriteFile(filepath.Join(top, ".git", "commondir"), []byte("../..\n"), 0o644)
		}},
		// The top itself, recorded canonical, since replaced by a symlink
		// to another repository: by the command of a session whose
		// workdir holds this one's and started before it was made, so
		// that nothing of it is pinned in its view (mv p p2; ln -s
		// /root/repo p), before this one's release or the sweep of its
		// record (test/e2e TestHostGitExcludeTopSwapped).
		{name: "symlinked top", at: "sub/p", setup: func(t *testing.T, top, outside string) {
			os.MkdirAll(filepath.Join(outside, ".git", "info"), 0o755)
			os.WriteFile(filepath.Join(outside, ".git", "info", "exclude"), []byte(userExclude), 0o644)
			os.Symlink(outside, filepath.Join(top, "sub", "p"))
		}},
		{name: "symlink above the top", at: "sub/l/p", setup: func(t *testing.T, top, outside string) {
			os.MkdirAll(filepath.Join(outside, "p", ".git", "info"), 0o755)
			os.WriteFile(filepath.Join(outside, "p", ".git", "info", "exclude"), []byte(userExclude), 0o644)
			os.Symlink(outside, filepath.Join(top, "sub", "l"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			top, outside := repo(t), t.TempDir()
			os.Mkdir(filepath.Join(top, "sub"), 0o755)
			os.WriteFile(filepath.Join(outside, "file"), []byte(userExclude), 0o644)
			tc.setup(t, top, outside)
			wtop := top
			if tc.name == ".git file naming .." {
				wtop = filepath.Join(top, "sub")
			}
			if tc.at != "" {
				wtop = filepath.Join(top, tc.at)
			}
			before := snapshot(t, top, outside)
			done := make(chan error, 1)
			go func() { done <- updateExclude(wtop, []string{"/.env"}) }()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("updateExclude blocks")
			}
			switch {
			case err == nil:
				t.Fatal("updateExclude succeeded")
			case tc.skipped != errors.Is(err, ErrExcludeSkipped):
				t.Errorf("updateExclude: %v; skipped (no fault) = %v, want %v", err, !tc.skipped, tc.skipped)
			}
			if after := snapshot(t, top, outside); after != before {
				t.Errorf("files changed:\n%s\nwant:\n%s", after, before)
			}
		})
	}
}

// snapshot describes every file below the dirs: name, type, content.
func snapshot(t *testing.T, dirs ...string) string {
	var b strings.Builder
	for _, d := range dirs {
		filepath.Walk(d, func(p string, fi os.FileInfo, err error) error {
			if err != nil {
				return nil
			}
			b.WriteString(p + " " + fi.Mode().String())
			if fi.Mode().IsRegular() && fi.Size() < 1<<10 {
				c, _ := os.ReadFile(p)
				b.WriteString(" " + strings.ReplaceAll(string(c), "\n", `\n`))
			}
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				b.WriteString(" ino " + strconv.FormatUint(st.Ino, 10))
			}
			b.WriteString("\n")
			return nil
		})
	}
	return b.String()
}

// TestRecordsExclude: the block mirrors the records. Two sandboxes of one
// repository: after the first ends, the block lists what the second still
// holds; after both, it is gone; the sweep of a killed one repairs it.
func TestRecordsExclude(t *testing.T) {
	top := repo(t)
	ex := filepath.Join(top, ".git", "info", "exclude")
	rs := Records{Dir: t.TempDir(), ExcludeProblem: func(err error) { t.Errorf("exclude: %v", err) }}
	withTop := func(ps []Placeholder) []Placeholder {
		for i := range ps {
			ps[i].Top = top
		}
		return ps
	}
	block := func(lines ...string) string {
		if len(lines) == 0 {
			return userExclude
		}
		return ExcludeBegin + "\n" + strings.Join(lines, "\n") + "\n" + ExcludeEnd + "\n" + userExclude
	}
	a, releaseA, err := rs.Claim("a1", withTop(planned(Config{Workdir: top, Protect: []string{"CLAUDE.md", ".vscode/"}})))
	if err != nil {
		t.Fatal(err)
	}
	rs.Exclude(a)
	if got := readString(t, ex); got != block("/CLAUDE.md") {
		t.Errorf("one sandbox: %q", got)
	}
	b, releaseB, err := rs.Claim("b1", withTop(planned(Config{Workdir: top, Protect: []string{"AGENTS.md"}})))
	if err != nil {
		t.Fatal(err)
	}
	rs.Exclude(b)
	if got := readString(t, ex); got != block("/AGENTS.md", "/CLAUDE.md") {
		t.Errorf("two sandboxes: %q", got)
	}
	if err := releaseA(); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, ex); got != block("/AGENTS.md") {
		t.Errorf("after the first ended: %q", got)
	}
	// The second is killed: its record stays, with a dead PID, until
	// the next start's sweep.
	r, _ := rs.read("b1")
	r.PID = 999999999
	rs.write("b1", r)
	if err := rs.Sweep(); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, ex); got != userExclude {
		t.Errorf("after the sweep: %q, want the user's lines alone", got)
	}
	_ = releaseB
}

// BenchmarkRecordsExclude: what the block costs a run: one claim, its
// block written, and the release that removes both, against the same
// without a repository (bench/README.md has the start-up budget).
func BenchmarkRecordsExclude(b *testing.B) {
	for _, inRepo := range []bool{false, true} {
		b.Run(map[bool]string{false: "no-repo", true: "repo"}[inRepo], func(b *testing.B) {
			top := b.TempDir()
			os.MkdirAll(filepath.Join(top, ".git", "info"), 0o755)
			os.WriteFile(filepath.Join(top, ".git", "info", "exclude"), []byte(userExclude), 0o644)
			rs := Records{Dir: b.TempDir(), ExcludeProblem: func(err error) { b.Fatal(err) }}
			ps := Split(ScanTrees(Config{Workdir: top, Protect: []string{"CLAUDE.md", "AGENTS.md", ".env", ".vscode/"}}, OS{}).Missing)
			if inRepo {
				for i := range ps {
					ps[i].Top = top
				}
			}
			for b.Loop() {
				made, release, err := rs.Claim("bench1", ps)
				if err != nil {
					b.Fatal(err)
				}
				rs.Exclude(made)
				if err := release(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestUpdateExcludeForeignOwner: an exclude of an owner other than its
// info directory's is another user's file the command moved there (one in
// a directory it may write but not read): a root supervisor leaves it as it
// is, rather than write it out again, block and all, as a file of that
// owner that the command can move back.
func TestUpdateExcludeForeignOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root can make a file of another user; the root pass runs this")
	}
	const secret = "# not for the command\n"
	top := repo(t)
	ex := filepath.Join(top, ".git", "info", "exclude")
	if err := os.WriteFile(ex, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(ex, 0o600)
	os.Chown(ex, 12345, 12345)
	before := snapshot(t, top)
	err := updateExclude(top, []string{"/.env"})
	if err == nil || !strings.Contains(err.Error(), "belongs to uid 12345") {
		t.Errorf("updateExclude: %v, want it left alone for its owner", err)
	}
	if after := snapshot(t, top); after != before {
		t.Errorf("files changed:\n%s\nwant:\n%s", after, before)
	}
}

// TestUpdateExcludeSparePreopened: a spare the command made and holds
// open, readable, is not written with what exclude holds when exclude is
// not as readable (another mode, another owner: a root supervisor reads
// any file the command can move to info/exclude): the content goes to a
// new spare, given exclude's owner and mode before it is written.
func TestUpdateExcludeSparePreopened(t *testing.T) {
	const secret = "# not for the command\n"
	top := repo(t)
	ex := filepath.Join(top, ".git", "info", "exclude")
	if err := os.WriteFile(ex, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(ex, 0o600)
	// (As root, a file of another user moved there is left alone:
	// TestUpdateExcludeForeignOwner.)
	spare := filepath.Join(top, ".git", "info", excludeSpare)
	if err := os.WriteFile(spare, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	held, err := os.Open(spare)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := updateExclude(top, []string{"/.env"}); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, ex); got != ExcludeBegin+"\n/.env\n"+ExcludeEnd+"\n"+secret {
		t.Errorf("exclude = %q", got)
	}
	var st unix.Stat_t
	unix.Stat(ex, &st)
	if st.Mode&0o7777 != 0o600 {
		t.Errorf("exclude mode %o, want 600", st.Mode&0o7777)
	}
	b := make([]byte, 4096)
	n, _ := held.ReadAt(b, 0)
	if strings.Contains(string(b[:n]), secret) {
		t.Errorf("the spare the command holds open got exclude's content: %q", b[:n])
	}
}

// TestUpdateExcludeConcurrent: two supervisors that share no records
// (root's and a user's, in one repository) rewrite the block at once:
// whichever wins, the user's lines are kept whole, never cut or padded by
// the other's write to the same spare.
func TestUpdateExcludeConcurrent(t *testing.T) {
	top := repo(t)
	ex := filepath.Join(top, ".git", "info", "exclude")
	long := make([]string, 40)
	for i := range long {
		long[i] = "/placeholder-with-a-long-name-" + strconv.Itoa(i)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 3000 {
			updateExclude(top, long)
			updateExclude(top, nil)
		}
	}()
	for range 3000 {
		updateExclude(top, []string{"/.env"})
	}
	<-done
	b := readString(t, ex)
	if !strings.HasSuffix(b, userExclude) || strings.Contains(b, "\x00") {
		t.Fatalf("exclude after concurrent rewrites:\n%q", b)
	}
	if _, err := editExclude([]byte(b), nil); err != nil {
		t.Fatalf("exclude after concurrent rewrites: %v\n%q", err, b)
	}
}

// TestUpdateExcludeLocked: while another process holds the lock on info
// (another supervisor's rewrite, or the command), nothing is written, and
// stockade does not wait for it past a few tries.
func TestUpdateExcludeLocked(t *testing.T) {
	top := repo(t)
	info := filepath.Join(top, ".git", "info")
	f, err := os.Open(info)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, top)
	start := time.Now()
	if err := updateExclude(top, []string{"/.env"}); err == nil || errors.Is(err, ErrExcludeSkipped) {
		t.Errorf("updateExclude with info locked: %v, want a warning", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("updateExclude waited %v for the lock", d)
	}
	if after := snapshot(t, top); after != before {
		t.Errorf("files changed while info was locked:\n%s\nwant:\n%s", after, before)
	}
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	if err := updateExclude(top, []string{"/.env"}); err != nil {
		t.Errorf("updateExclude once the lock is free: %v", err)
	}
}
