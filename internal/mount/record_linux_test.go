package mount

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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
	for _, stashed := range []bool{false, true} {
		name := "anew"
		if stashed {
			name = "stashed"
		}
		t.Run(name, func(t *testing.T) {
			wd := tree(t, "src/")
			rs := Records{Dir: t.TempDir()}
			cfg := Config{Workdir: wd, Protect: claimKilledProtect}
			if stashed {
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
// inode made outside the record's window.
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
	os.WriteFile(at("NOTES.md"), nil, 0o644) // empty, of another inode, made after the window
	ino := func(name string) uint64 {
		var st unix.Stat_t
		if err := unix.Lstat(at(name), &st); err != nil {
			t.Fatal(err)
		}
		return st.Ino
	}
	r := record{PID: 999999999, Pending: true, Since: time.Now().Add(-time.Hour).UnixNano()}
	for _, name := range []string{".vscode", "CLAUDE.md", "AGENTS.md", "GEMINI.md", "NOTES.md", ".mcp.json"} {
		ph := Placeholder{Path: at(name), Root: wd, Dir: name == ".vscode"}
		if name != "NOTES.md" && name != ".mcp.json" {
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
