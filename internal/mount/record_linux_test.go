package mount

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/proc"
)

// claimKilledProtect is what the child of TestClaimKilled protects.
var claimKilledProtect = []string{"CLAUDE.md", ".vscode/", ".mcp.json", ".env"}

// TestClaimKilled: a process killed after it made its placeholders and
// before it recorded them (SIGKILL there, from testHookMade) leaves its
// pending record, and the next sweep removes what it made, whether the
// placeholders were made anew or came from the stash. Without the record
// written first, they stayed in the project for good.
func TestClaimKilled(t *testing.T) {
	if records := os.Getenv("STOCKADE_TEST_CLAIM_RECORDS"); records != "" {
		wd := os.Getenv("STOCKADE_TEST_CLAIM_WORKDIR")
		testHookMade = func() { unix.Kill(os.Getpid(), unix.SIGKILL) }
		Records{Dir: records}.Claim("killed", planned(Config{Workdir: wd, Protect: claimKilledProtect}))
		os.Exit(3) // not killed: the parent says so
	}
	for _, c := range []struct {
		name    string
		stashed bool // an earlier run left the placeholders in the stash
		other   bool // the records, and the stash, on another mount (a tmpfs)
	}{{"anew", false, false}, {"stashed", true, false}, {"stash on another mount", false, true}} {
		t.Run(c.name, func(t *testing.T) {
			wd := tree(t, "src/")
			rs := Records{Dir: t.TempDir()}
			if c.other {
				dir, err := os.MkdirTemp("/dev/shm", "stockade-records-")
				if err != nil {
					t.Fatalf("a records directory on /dev/shm, another mount than %s: %v", wd, err)
				}
				t.Cleanup(func() { os.RemoveAll(dir) })
				rs.Dir = dir
			}
			cfg := Config{Workdir: wd, Protect: claimKilledProtect}
			if c.stashed {
				_, release, err := rs.Claim("earlier", planned(cfg))
				if err != nil {
					t.Fatal(err)
				}
				if err := release(); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestClaimKilled$")
			cmd.Env = append(os.Environ(), "STOCKADE_TEST_CLAIM_RECORDS="+rs.Dir, "STOCKADE_TEST_CLAIM_WORKDIR="+wd)
			out, err := cmd.CombinedOutput()
			if cmd.ProcessState == nil {
				t.Fatal(err)
			}
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("child ended %v, not by SIGKILL after making the placeholders: %s", err, out)
			}
			ents, _ := os.ReadDir(wd)
			if len(ents) != len(claimKilledProtect)+1 {
				t.Fatalf("the child left %d entries in the project, want its %d placeholders and src", len(ents), len(claimKilledProtect))
			}
			// What an older stockade's sweep reads: every entry borrowed,
			// so that it removes none (it knows no pending record).
			r, err := rs.read("killed")
			if err != nil || !r.Pending || len(r.Placeholders) != len(claimKilledProtect) {
				t.Fatalf("the killed process's record = %+v, %v; want it pending, with what it planned", r, err)
			}
			for _, ph := range r.Placeholders {
				if !ph.Borrowed || (ph.Ino == 0) != c.other {
					t.Errorf("pending entry %+v: want it borrowed, with the stash's inode unless the stash is on another mount", ph)
				}
			}
			if err := rs.Sweep(); err != nil {
				t.Fatal(err)
			}
			for _, p := range claimKilledProtect {
				if _, err := os.Lstat(filepath.Join(wd, p)); err == nil {
					t.Errorf("placeholder %s of the killed process survived the sweep", p)
				}
			}
			if left, _ := filepath.Glob(filepath.Join(rs.Dir, "*.json")); len(left) != 0 {
				t.Errorf("record survived the sweep: %v", left)
			}
		})
	}
}

// TestSweepPending: the sweep of a pending record of a dead process
// removes only what that process made. Not a placeholder another live
// sandbox owns at the same path, not a file given content or a second
// name, even with the recorded inode, and not an empty file of another
// inode than the one recorded.
func TestSweepPending(t *testing.T) {
	wd := tree(t, "src/", "user.txt")
	rs := Records{Dir: t.TempDir()}
	live, release, err := rs.Claim("live", planned(Config{Workdir: wd, Protect: []string{".vscode/"}}))
	if err != nil || len(live) != 1 {
		t.Fatalf("Claim = %v, %v", live, err)
	}
	defer release()
	at := func(name string) string { return filepath.Join(wd, name) }
	os.WriteFile(at("CLAUDE.md"), nil, 0o644)            // the dead process's placeholder
	os.WriteFile(at("AGENTS.md"), []byte("mine"), 0o644) // given content since
	os.Link(at("user.txt"), at("GEMINI.md"))             // a second name of a user's file
	os.Truncate(at("GEMINI.md"), 0)
	os.WriteFile(at("NOTES.md"), nil, 0o644) // empty, but not of the inode recorded
	ino := func(name string) uint64 {
		var st unix.Stat_t
		if err := unix.Lstat(at(name), &st); err != nil {
			t.Fatal(err)
		}
		return st.Ino
	}
	r := record{PID: 999999999, Pending: true, Since: time.Now().UnixNano()}
	for _, name := range []string{".vscode", "CLAUDE.md", "AGENTS.md", "GEMINI.md", "NOTES.md", ".mcp.json"} {
		ph := Placeholder{Path: at(name), Root: wd, Dir: name == ".vscode"}
		switch name {
		case "NOTES.md":
			ph.Ino = ino(name) + 1000
		case ".mcp.json":
		default:
			ph.Ino = ino(name)
		}
		r.Placeholders = append(r.Placeholders, ph)
	}
	if err := rs.write("dead", r); err != nil {
		t.Fatal(err)
	}
	if err := rs.Sweep(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(at("CLAUDE.md")); err == nil {
		t.Error("CLAUDE.md, the dead process's placeholder, survived the sweep")
	}
	for _, keep := range []string{".vscode", "AGENTS.md", "GEMINI.md", "NOTES.md", "user.txt"} {
		if _, err := os.Lstat(at(keep)); err != nil {
			t.Errorf("the sweep removed %s, which the dead process did not make", keep)
		}
	}
	if b, _ := os.ReadFile(at("AGENTS.md")); string(b) != "mine" {
		t.Errorf("AGENTS.md holds %q after the sweep", b)
	}
	if left, _ := filepath.Glob(filepath.Join(rs.Dir, "dead.json")); len(left) != 0 {
		t.Error("the dead process's record survived the sweep")
	}
	if m, _ := filepath.Glob(at("*quarantine*")); len(m) != 0 {
		t.Errorf("the sweep moved aside what was not the dead process's: %v", m)
	}
}

// TestSweepTemporary: the temporary file of a record that a killed
// process left (it is renamed into place under the lock) goes at the next
// sweep.
func TestSweepTemporary(t *testing.T) {
	rs := Records{Dir: t.TempDir()}
	os.WriteFile(filepath.Join(rs.Dir, ".abc123.tmp"), []byte("{"), 0o600)
	os.WriteFile(filepath.Join(rs.Dir, "def456.json"), []byte(`{"pid":999999999}`), 0o600)
	if err := rs.Sweep(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(rs.Dir, ".abc123.tmp")); err == nil {
		t.Error("the killed write's temporary file survived the sweep")
	}
}

// TestSweepPendingWindow: a pending record's entry is taken for its
// process's only if it changed from a second before the record to
// pendingWindow after it (made, or moved into place, then), with the
// inode the record names, or any where it names none (no stash on the
// placeholder's mount).
func TestSweepPendingWindow(t *testing.T) {
	for name, c := range map[string]struct {
		since time.Duration // of the record, from now
		ino   bool          // the record names the inode
		taken bool
	}{
		"just made":                    {0, false, true},
		"within the window":            {-pendingWindow + time.Second, false, true},
		"after the window":             {-pendingWindow - time.Second, false, false},
		"before the record":            {2 * time.Second, false, false},
		"its inode, just made":         {0, true, true},
		"its inode, changed after it":  {-pendingWindow - time.Second, true, false},
		"its inode, before the record": {2 * time.Second, true, false},
	} {
		t.Run(name, func(t *testing.T) {
			wd := tree(t, "src/")
			rs := Records{Dir: t.TempDir()}
			os.WriteFile(filepath.Join(wd, "CLAUDE.md"), nil, 0o644)
			ph := Placeholder{Path: filepath.Join(wd, "CLAUDE.md"), Root: wd, Borrowed: true}
			if c.ino {
				var st unix.Stat_t
				unix.Lstat(ph.Path, &st)
				ph.Ino = st.Ino
			}
			r := record{PID: 999999999, Pending: true, Since: time.Now().Add(c.since).UnixNano(),
				Placeholders: []Placeholder{ph}}
			if got := rs.pendingOwn("dead", r); (len(got) == 1) != c.taken {
				t.Errorf("pendingOwn = %+v, want taken %v", got, c.taken)
			}
		})
	}
}

// liveProcess starts a process that stays alive for the test, for a
// record of another live sandbox.
func liveProcess(t *testing.T) (int, string) {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	for range 100 {
		if proc.Alive(pid, proc.StartTime(pid)) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	return pid, proc.StartTime(pid)
}

// TestSweepOrder: one sweep meets a dead owner D of a placeholder that a
// live sandbox C borrowed, and a dead pending record A that planned the
// same path (A's Create borrowed it, as it was D's). Swept in the order of
// their names, A comes first: it must take the placeholder for D's, since
// D's record says D made it, dead or not. (With only live records'
// placeholders taken as owned, A took it for its own and handed it to C;
// then D's release found no borrower and removed it from under C.)
func TestSweepOrder(t *testing.T) {
	wd := tree(t, "src/")
	rs := Records{Dir: t.TempDir()}
	pl := planned(Config{Workdir: wd, Protect: []string{"CLAUDE.md"}})
	ps, err := Create(pl, Stash{})
	if err != nil {
		t.Fatal(err)
	}
	x := ps[0]
	cpid, cstart := liveProcess(t)
	borrowed := x
	borrowed.Borrowed = true
	rs.write("c-live", record{PID: cpid, Start: cstart, Placeholders: []Placeholder{borrowed}})
	rs.write("d-dead", record{PID: 999999998, Start: "1", Placeholders: []Placeholder{x}})
	a := pl[0]
	a.Borrowed = true
	rs.write("a-dead", record{PID: 999999997, Start: "1", Pending: true, Since: time.Now().UnixNano(), Placeholders: []Placeholder{a}})
	if err := rs.Sweep(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(x.Path); err != nil {
		t.Fatalf("the placeholder was removed from under the live borrower: %v", err)
	}
	r, err := rs.read("c-live")
	if err != nil || len(r.Placeholders) != 1 || r.Placeholders[0].Borrowed {
		t.Errorf("the live borrower's record = %+v, %v; want the placeholder its own", r, err)
	}
	for _, id := range []string{"a-dead", "d-dead"} {
		if _, err := rs.read(id); err == nil {
			t.Errorf("record %s survived the sweep", id)
		}
	}
}

// TestSweepPendingUserMade: what the user makes at a planned path after a
// stockade was killed before it made its placeholder (an empty directory,
// an empty file) is the user's: the pending record names the inode in the
// stash, and the sweep leaves what has another.
func TestSweepPendingUserMade(t *testing.T) {
	wd := tree(t, "src/")
	rs := Records{Dir: t.TempDir()}
	pl := planned(Config{Workdir: wd, Protect: []string{".vscode/", ".env"}})
	stash := rs.Stash()
	stash.prepare()
	stash, closeStash := stash.open()
	dirs := newParents()
	r := record{PID: 999999997, Start: "1", Pending: true, Since: time.Now().UnixNano(), Placeholders: intended(pl, stash, dirs)}
	dirs.close()
	closeStash()
	for _, ph := range r.Placeholders {
		if ph.Ino == 0 {
			t.Fatalf("no stash inode recorded for %s: the stash is on the project's file system", ph.Path)
		}
	}
	if err := rs.write("killed", r); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(wd, ".vscode"), 0o755)
	os.WriteFile(filepath.Join(wd, ".env"), nil, 0o600)
	if err := rs.Sweep(); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{".vscode", ".env"} {
		if _, err := os.Lstat(filepath.Join(wd, n)); err != nil {
			t.Errorf("the user's %s was removed by the sweep of a record whose process never made it", n)
		}
	}
}

// TestReleaseAfterHandOvers: two sandboxes hand their placeholders to a
// third in turn, each rewriting its record; the third's release reads what
// its record says then, and removes both. (Record files are recycled, so
// after two hand-overs the record can be the file it was written in, of
// the same size: a stamp of inode, size and ctime took it for unchanged on
// a file system of whole-second times, and the release left both
// placeholders, as borrowed, with no record naming them. With this
// kernel's fine-grained times the ctime told them apart: this passes with
// the stamp too, and fails with the release using what it wrote.)
func TestReleaseAfterHandOvers(t *testing.T) {
	wd := tree(t, "src/")
	rs := Records{Dir: t.TempDir()}
	cfg := Config{Workdir: wd, Protect: []string{"CLAUDE.md", ".vscode/"}}
	_, first, err := rs.Claim("first", planned(cfg))
	if err != nil {
		t.Fatal(err)
	}
	first() // the spares exist
	pl := planned(cfg)
	ps, err := Create(pl, Stash{})
	if err != nil {
		t.Fatal(err)
	}
	bpid, bstart := liveProcess(t)
	dpid, dstart := liveProcess(t)
	rb := record{PID: bpid, Start: bstart, Placeholders: []Placeholder{ps[0]}}
	rd := record{PID: dpid, Start: dstart, Placeholders: []Placeholder{ps[1]}}
	rs.write("b", rb)
	rs.write("d", rd)
	got, release, err := rs.Claim("c", pl)
	if err != nil || len(got) != 2 || !got[0].Borrowed || !got[1].Borrowed {
		t.Fatalf("Claim = %+v, %v; want both borrowed", got, err)
	}
	unlock, err := rs.lock()
	if err != nil {
		t.Fatal(err)
	}
	rs.release("b", rb)
	rs.release("d", rd)
	unlock()
	if err := release(); err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if _, err := os.Lstat(p.Path); err == nil {
			t.Errorf("%s left behind by the release of the sandbox it was handed to", p.Path)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(rs.Dir, "*.json")); len(left) != 0 {
		t.Errorf("records left: %v", left)
	}
}

// TestStockOtherMount: a project reached through a bind mount of the
// stash's file system (same device, another mount) gets no stash inode in
// the pending record: a move from the stash fails there (EXDEV), Create
// makes the placeholder anew, and a record naming the stash's inode would
// make the sweep leave it for good. Run in a user and mount namespace of
// its own (unshare -rm), where the test may bind.
func TestStockOtherMount(t *testing.T) {
	if base := os.Getenv("STOCKADE_TEST_BIND_BASE"); base != "" {
		src, proj := filepath.Join(base, "src"), filepath.Join(base, "proj")
		if err := unix.Mount(src, proj, "", unix.MS_BIND, ""); err != nil {
			t.Fatal(err)
		}
		for _, wd := range []string{src, proj} {
			stash := Records{Dir: filepath.Join(base, "records")}.Stash()
			stash.prepare()
			stash, closeStash := stash.open()
			dirs := newParents()
			got := intended(planned(Config{Workdir: wd, Protect: []string{"CLAUDE.md"}}), stash, dirs)
			dirs.close()
			closeStash()
			if len(got) != 1 {
				t.Fatalf("intended = %+v", got)
			}
			fmt.Printf("%s %d\n", filepath.Base(wd), got[0].Ino)
		}
		return
	}
	base := t.TempDir()
	for _, d := range []string{"src", "proj", "records"} {
		if err := os.Mkdir(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("unshare", "-rm", os.Args[0], "-test.run=^TestStockOtherMount$", "-test.v")
	cmd.Env = append(os.Environ(), "STOCKADE_TEST_BIND_BASE="+base)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("unshare -rm: %v\n%s", err, out)
	}
	var srcIno, projIno uint64
	for _, line := range strings.Split(string(out), "\n") {
		fmt.Sscanf(line, "src %d", &srcIno)
		fmt.Sscanf(line, "proj %d", &projIno)
	}
	if srcIno == 0 {
		t.Errorf("no stash inode for a project on the stash's own mount:\n%s", out)
	}
	if projIno != 0 {
		t.Errorf("stash inode %d recorded for a project on a bind mount, where a move from the stash fails:\n%s", projIno, out)
	}
}

// TestReleaseRecordGone: a run whose record another stockade removed
// (it took the run for dead: another PID namespace) releases nothing at
// its end, and says so: that stockade released the placeholders, and what
// is at their paths now may be another run's.
func TestReleaseRecordGone(t *testing.T) {
	wd := tree(t, "src/")
	rs := Records{Dir: t.TempDir()}
	ps, release, err := rs.Claim("gone", planned(Config{Workdir: wd, Protect: []string{"CLAUDE.md"}}))
	if err != nil || len(ps) != 1 {
		t.Fatalf("Claim = %v, %v", ps, err)
	}
	// The other stockade's sweep, then another run that took the
	// placeholder back into place.
	r, _ := rs.read("gone")
	rs.release("gone", r)
	other, releaseOther, err := rs.Claim("other", planned(Config{Workdir: wd, Protect: []string{"CLAUDE.md"}}))
	if err != nil || len(other) != 1 || other[0].Ino != ps[0].Ino {
		t.Fatalf("the other run's Claim = %+v, %v; want the same inode back from the stash", other, err)
	}
	defer releaseOther()
	if err := release(); err == nil || !strings.Contains(err.Error(), "was removed while it ran") {
		t.Errorf("release = %v, want it to say the record was removed", err)
	}
	if _, err := os.Lstat(ps[0].Path); err != nil {
		t.Errorf("the release removed the other run's placeholder: %v", err)
	}
}

// TestReleaseHandOverFails: a release whose hand-over of one placeholder
// fails (the borrower's record cannot be written) keeps its record, with
// that placeholder alone; a later release of it (the next sweep) hands it
// over, and removes none of what was handed over or released already,
// even where another run has since taken the same inode back from the
// stash. (The record kept as it was made the next release remove both,
// from under their new owners.)
func TestReleaseHandOverFails(t *testing.T) {
	wd := tree(t, "src/")
	rs := Records{Dir: t.TempDir()}
	at := func(name string) string { return filepath.Join(wd, name) }
	ps, releaseA, err := rs.Claim("a", planned(Config{Workdir: wd, Protect: []string{"CLAUDE.md", ".vscode/", "AGENTS.md"}}))
	if err != nil || len(ps) != 3 {
		t.Fatalf("Claim = %v, %v", ps, err)
	}
	byName := map[string]Placeholder{}
	for _, ph := range ps {
		b := ph
		b.Borrowed = true
		byName[filepath.Base(ph.Path)] = b
	}
	bpid, bstart := liveProcess(t)
	cpid, cstart := liveProcess(t)
	rs.write("b", record{PID: bpid, Start: bstart, Placeholders: []Placeholder{byName["CLAUDE.md"]}})
	rs.write("c", record{PID: cpid, Start: cstart, Placeholders: []Placeholder{byName[".vscode"]}})
	// C's record cannot be written: its temporary file's name is taken.
	block := filepath.Join(rs.Dir, ".c.tmp")
	if err := os.MkdirAll(filepath.Join(block, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := releaseA(); err == nil || !strings.Contains(err.Error(), "left in place") {
		t.Fatalf("release = %v, want the failed hand-over said", err)
	}
	if r, err := rs.read("a"); err != nil || len(r.Placeholders) != 1 || r.Placeholders[0].Path != at(".vscode") {
		t.Fatalf("a's record after the failed hand-over = %+v, %v; want .vscode alone", r, err)
	}
	// Another run takes AGENTS.md back from the stash, the same inode.
	d, releaseD, err := rs.Claim("d", planned(Config{Workdir: wd, Protect: []string{"AGENTS.md"}}))
	if err != nil || len(d) != 1 || d[0].Ino != byName["AGENTS.md"].Ino {
		t.Fatalf("d's Claim = %+v, %v; want AGENTS.md's inode back from the stash", d, err)
	}
	defer releaseD()
	os.RemoveAll(block)
	// a's process is gone: the next sweep releases what its record holds.
	r, _ := rs.read("a")
	r.PID = 999999999
	rs.write("a", r)
	if err := rs.Sweep(); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"CLAUDE.md", ".vscode", "AGENTS.md"} {
		if _, err := os.Lstat(at(n)); err != nil {
			t.Errorf("%s was removed from under the run that owns it now: %v", n, err)
		}
	}
	if r, err := rs.read("c"); err != nil || len(r.Placeholders) != 1 || r.Placeholders[0].Borrowed {
		t.Errorf("c's record = %+v, %v; want .vscode handed over", r, err)
	}
	if _, err := rs.read("a"); err == nil {
		t.Error("a's record survived the sweep")
	}
}

// TestReleaseSparesOwned: a record of a dead process that names a
// placeholder another live record says it made (a record wrongly judged
// dead, left behind, or stale) never removes it from under that one.
func TestReleaseSparesOwned(t *testing.T) {
	wd := tree(t, "src/")
	rs := Records{Dir: t.TempDir()}
	ps, release, err := rs.Claim("live", planned(Config{Workdir: wd, Protect: []string{"CLAUDE.md"}}))
	if err != nil || len(ps) != 1 {
		t.Fatalf("Claim = %v, %v", ps, err)
	}
	defer release()
	rs.write("stale", record{PID: 999999999, Start: "1", Placeholders: ps})
	if err := rs.Sweep(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(ps[0].Path); err != nil {
		t.Errorf("the sweep of a stale record removed a live run's placeholder: %v", err)
	}
}

// TestLiveDead: the placeholders of a record whose process is gone count
// as owned until a sweep releases them, whether the record is pending or
// not: a start whose sweep ran before that process was killed finds them
// as existing paths, and must borrow them, so that the next sweep hands
// them to it rather than remove them from under its bind.
func TestLiveDead(t *testing.T) {
	wd := tree(t, "src/")
	rs := Records{Dir: t.TempDir()}
	ps, err := Create(planned(Config{Workdir: wd, Protect: []string{"CLAUDE.md", "AGENTS.md"}}), Stash{})
	if err != nil || len(ps) != 2 {
		t.Fatalf("Create = %v, %v", ps, err)
	}
	rs.write("final", record{PID: 999999998, Start: "1", Placeholders: ps[:1]})
	pending := ps[1]
	pending.Ino, pending.Borrowed = 0, true
	rs.write("pending", record{PID: 999999997, Start: "1", Pending: true, Since: time.Now().UnixNano(), Placeholders: []Placeholder{pending}})
	live := rs.Live()
	for _, ph := range ps {
		if got := live[ph.Path]; len(got) != 1 || got[0].Ino != ph.Ino || got[0].Borrowed {
			t.Errorf("Live()[%s] = %+v; want the dead process's placeholder, owned", ph.Path, got)
		}
	}
}

// TestReleaseHandOverRewriteFails: when the releasing record cannot be
// rewritten either, after a failed hand-over, it stays as it was: the
// next sweep passes over what another run owns now and removes the rest,
// rather than leave the held placeholder with no record that owns it.
func TestReleaseHandOverRewriteFails(t *testing.T) {
	wd := tree(t, "src/")
	rs := Records{Dir: t.TempDir()}
	at := func(name string) string { return filepath.Join(wd, name) }
	ps, releaseA, err := rs.Claim("a", planned(Config{Workdir: wd, Protect: []string{"CLAUDE.md", ".vscode/", "AGENTS.md"}}))
	if err != nil || len(ps) != 3 {
		t.Fatalf("Claim = %v, %v", ps, err)
	}
	byName := map[string]Placeholder{}
	for _, ph := range ps {
		b := ph
		b.Borrowed = true
		byName[filepath.Base(ph.Path)] = b
	}
	bpid, bstart := liveProcess(t)
	cpid, cstart := liveProcess(t)
	rs.write("b", record{PID: bpid, Start: bstart, Placeholders: []Placeholder{byName["CLAUDE.md"]}})
	rc := record{PID: cpid, Start: cstart, Placeholders: []Placeholder{byName[".vscode"]}}
	rs.write("c", rc)
	for _, tmp := range []string{".c.tmp", ".a.tmp"} {
		if err := os.MkdirAll(filepath.Join(rs.Dir, tmp, "x"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := releaseA(); err == nil {
		t.Fatal("release = nil, want the failed hand-over said")
	}
	if r, err := rs.read("a"); err != nil || len(r.Placeholders) != 3 {
		t.Fatalf("a's record = %+v, %v; want it kept as it was", r, err)
	}
	os.RemoveAll(filepath.Join(rs.Dir, ".c.tmp"))
	os.RemoveAll(filepath.Join(rs.Dir, ".a.tmp"))
	// a and c are gone; b still runs.
	for _, id := range []string{"a", "c"} {
		r, _ := rs.read(id)
		r.PID = 999999999
		rs.write(id, r)
	}
	if err := rs.Sweep(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(at("CLAUDE.md")); err != nil {
		t.Errorf("CLAUDE.md, b's now, was removed: %v", err)
	}
	for _, n := range []string{".vscode", "AGENTS.md"} {
		if _, err := os.Lstat(at(n)); err == nil {
			t.Errorf("%s left in the project with no record that owns it", n)
		}
	}
	for _, id := range []string{"a", "c"} {
		if _, err := rs.read(id); err == nil {
			t.Errorf("record %s survived the sweep", id)
		}
	}
}

// TestReleaseStaleOwner: a live record E names a placeholder that is no
// longer there (the user removed it); a later run A made the path anew and
// F borrowed A's. A's release hands it to F, E's stale entry
// notwithstanding, and E's release passes over it, F's now, rather than
// move it aside from under F's bind.
func TestReleaseStaleOwner(t *testing.T) {
	wd := tree(t, "src/")
	rs := Records{Dir: t.TempDir()}
	pl := planned(Config{Workdir: wd, Protect: []string{"CLAUDE.md"}})
	old, err := Create(pl, Stash{})
	if err != nil {
		t.Fatal(err)
	}
	epid, estart := liveProcess(t)
	re := record{PID: epid, Start: estart, Placeholders: old}
	rs.write("e", re)
	keep, _ := os.CreateTemp(t.TempDir(), "") // the old inode stays taken
	os.Link(old[0].Path, keep.Name()+".link")
	os.Remove(old[0].Path) // the user
	made, err := Create(pl, Stash{})
	if err != nil || made[0].Ino == old[0].Ino {
		t.Fatalf("Create = %+v, %v; want another inode", made, err)
	}
	fpid, fstart := liveProcess(t)
	borrowed := made[0]
	borrowed.Borrowed = true
	rs.write("f", record{PID: fpid, Start: fstart, Placeholders: []Placeholder{borrowed}})
	unlock, err := rs.lock()
	if err != nil {
		t.Fatal(err)
	}
	rs.release("a", record{Placeholders: made})
	if r, err := rs.read("f"); err != nil || r.Placeholders[0].Borrowed {
		unlock()
		t.Fatalf("f's record = %+v, %v; want CLAUDE.md handed over", r, err)
	}
	err = rs.release("e", re)
	unlock()
	if err != nil {
		t.Errorf("e's release: %v", err)
	}
	if _, err := os.Lstat(made[0].Path); err != nil {
		t.Errorf("f's placeholder was moved from under it: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(wd, "*quarantine*")); len(m) != 0 {
		t.Errorf("moved aside: %v", m)
	}
}

// TestUnchangedCtime: a placeholder given another mode, a second name or
// an extended attribute is no longer the one stockade made, although its
// inode, kind and size are the same.
func TestUnchangedCtime(t *testing.T) {
	for name, change := range map[string]func(p string) error{
		"chmod": func(p string) error { return os.Chmod(p, 0o777) },
		"link":  func(p string) error { return os.Link(p, p+".2") },
		"xattr": func(p string) error { return unix.Lsetxattr(p, "user.x", []byte("1"), 0) },
	} {
		t.Run(name, func(t *testing.T) {
			wd := tree(t, "src/")
			ps, err := Create(planned(Config{Workdir: wd, Protect: []string{"CLAUDE.md"}}), Stash{})
			if err != nil || len(ps) != 1 {
				t.Fatalf("Create = %v, %v", ps, err)
			}
			if !Unchanged(ps[0]) {
				t.Fatal("a placeholder just made is changed")
			}
			time.Sleep(10 * time.Millisecond) // a coarse clock's tick
			if err := change(ps[0].Path); err != nil {
				t.Fatal(err)
			}
			if Unchanged(ps[0]) {
				t.Errorf("Unchanged after %s", name)
			}
		})
	}
}

// TestLiveEveryRecord: where a stale record and a live one name the same
// path, Live gives both, so that the exit check finds the placeholder that
// is there (one entry per path, in the records' random order, could be the
// stale one, and the live sandbox's placeholder was then taken for the
// command's doing).
func TestLiveEveryRecord(t *testing.T) {
	wd := tree(t, "src/")
	rs := Records{Dir: t.TempDir()}
	pl := planned(Config{Workdir: wd, Protect: []string{"CLAUDE.md"}})
	ps, release, err := rs.Claim("live", pl)
	if err != nil || len(ps) != 1 {
		t.Fatalf("Claim = %v, %v", ps, err)
	}
	defer release()
	stale := ps[0]
	stale.Ino++
	rs.write("stale", record{PID: 999999999, Start: "1", Placeholders: []Placeholder{stale}})
	live := rs.Live()[ps[0].Path]
	if len(live) != 2 || !slices.ContainsFunc(live, Unchanged) {
		t.Errorf("Live()[CLAUDE.md] = %+v; want both records' entries, the live one unchanged", live)
	}
}

// TestSameCtime: a recorded status change time matches to the
// nanosecond, or to the second when the file system gives whole seconds.
func TestSameCtime(t *testing.T) {
	rec := time.Unix(1700000000, 123456789).UnixNano()
	for _, c := range []struct {
		ctime time.Time
		same  bool
	}{
		{time.Unix(1700000000, 123456789), true},
		{time.Unix(1700000000, 0), true}, // read back from whole seconds
		{time.Unix(1700000000, 123456790), false},
		{time.Unix(1700000001, 0), false},
		{time.Unix(1699999999, 0), false},
	} {
		if got := sameCtime(c.ctime, rec); got != c.same {
			t.Errorf("sameCtime(%v) = %v, want %v", c.ctime, got, c.same)
		}
	}
}
