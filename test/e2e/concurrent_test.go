package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSharedProtect: two sandboxes of one project share
// the placeholders of its missing protected paths. Whichever ends first,
// and however each was started (a detached session or a foreground run),
// the one still running can create none of them, and after both no
// placeholder and nothing planted is left on the host.
//
// Each sandbox waits on FIFOs in the project, so the host decides exactly
// when it starts its attempt and when it ends.
func TestSharedProtect(t *testing.T) {
	requireSandbox(t)
	protected := []string{"CLAUDE.md", "AGENTS.md", ".mcp.json", ".vscode/tasks.json", ".claude/settings.json", ".gitmodules"}
	attempt := "for p in " + strings.Join(protected, " ") + `; do (echo evil > "$p") 2>/dev/null && echo "WROTE $p"; done; ` +
		`mkdir .idea 2>/dev/null && echo "MADE .idea"; echo done`
	for _, tc := range []struct {
		name         string // d: a session (run -d), f: a foreground run; which ends first
		aFore, bFore bool
		aEndsFirst   bool
	}{
		// Short names: the session's socket path must fit in sun_path.
		{"dd-first", false, false, true},
		{"dd-second", false, false, false},
		{"fd-first", true, false, true},
		{"df-first", false, true, true},
		{"ff-second", true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			for _, f := range []string{"up-a", "go-a", "up-b", "go-b"} {
				if err := unix.Mkfifo(filepath.Join(e.workdir, f), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			// Each sandbox says it is up, waits for its go, then (the one
			// that ends last) attempts the writes.
			script := func(me string, tries bool) string {
				s := "echo up > up-" + me + "; cat go-" + me + " >/dev/null; "
				if tries {
					s += "(" + attempt + ") > result-" + me + " 2>&1"
				}
				return s
			}
			first, last := "a", "b"
			if !tc.aEndsFirst {
				first, last = "b", "a"
			}
			ended := map[string]func(){}
			start := func(me string, fore bool) {
				args := []string{"/bin/sh", "-c", script(me, me == last)}
				if fore {
					var wg sync.WaitGroup
					wg.Add(1)
					go func() {
						defer wg.Done()
						if r := e.run("", nil, append([]string{"run", "--log-level", "error", "--"}, args...)...); r.code != 0 {
							t.Errorf("%s: exit %d\n%s", me, r.code, r.stderr)
						}
					}()
					ended[me] = wg.Wait
				} else {
					id := e.startSession(args...)
					pid := e.session(id).PID
					ended[me] = func() { waitExit(t, pid) }
				}
				readFIFO(t, filepath.Join(e.workdir, "up-"+me)) // it is running
			}
			start("a", tc.aFore)
			start("b", tc.bFore)
			writeFIFO(t, filepath.Join(e.workdir, "go-"+first))
			ended[first]() // its supervisor is gone: its placeholders are released
			writeFIFO(t, filepath.Join(e.workdir, "go-"+last))
			ended[last]()
			got, err := os.ReadFile(filepath.Join(e.workdir, "result-"+last))
			if err != nil || strings.TrimSpace(string(got)) != "done" {
				t.Errorf("the sandbox still running after the other ended could write protected paths: %q %v", got, err)
			}
			for _, p := range append(protected, ".vscode", ".claude", ".idea") {
				if _, err := os.Lstat(filepath.Join(e.workdir, p)); err == nil {
					t.Errorf("%s is on the host after both sandboxes ended", p)
				}
			}
		})
	}
}

// readFIFO blocks until a writer has written a line to the FIFO at p.
func readFIFO(t *testing.T, p string) {
	t.Helper()
	if _, err := os.ReadFile(p); err != nil {
		t.Fatal(err)
	}
}

// writeFIFO blocks until a reader has the FIFO at p open, and writes a line.
func writeFIFO(t *testing.T, p string) {
	t.Helper()
	if err := os.WriteFile(p, []byte("go\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestSharedSwap: one sandbox's exit check moves aside a path another, still
// running, protects (the other's protection moves with it); the other's
// command then makes its own at the freed name. Its exit check sees another
// object at a protected path and moves that aside too.
func TestSharedSwap(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	for _, f := range []string{"up-a", "go-a", "up-b", "go-b"} {
		if err := unix.Mkfifo(filepath.Join(e.workdir, f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	id := e.startSession("/bin/sh", "-c", "mkdir -p sub/.vscode && echo '{}' > sub/.vscode/tasks.json && echo up > up-b; cat go-b >/dev/null")
	pid := e.session(id).PID
	readFIFO(t, filepath.Join(e.workdir, "up-b"))
	done := make(chan result, 1)
	go func() {
		done <- e.run("", nil, "run", "--log-level", "error", "--", "/bin/sh", "-c",
			"echo up > up-a; cat go-a >/dev/null; mkdir sub/.vscode && echo EVIL > sub/.vscode/tasks.json && echo planted")
	}()
	readFIFO(t, filepath.Join(e.workdir, "up-a")) // A protects sub/.vscode, B's
	writeFIFO(t, filepath.Join(e.workdir, "go-b"))
	waitExit(t, pid) // B moved sub/.vscode aside
	writeFIFO(t, filepath.Join(e.workdir, "go-a"))
	r := <-done
	if !strings.Contains(r.stdout, "planted") {
		t.Fatalf("A could not plant (the test no longer tests the swap): exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(e.workdir, "sub/.vscode/tasks.json")); err == nil {
		t.Errorf("sub/.vscode/tasks.json is on the host after both ended: %q\nA's stderr: %s", b, r.stderr)
	}
	if !strings.Contains(r.stderr, "QUARANTINED: "+filepath.Join(e.workdir, "sub/.vscode")) {
		t.Errorf("A's exit did not report sub/.vscode:\n%s", r.stderr)
	}
}

// TestNestedProjects: a sandbox of an enclosing project sees the
// placeholder an inner project's sandbox made as a plain directory, and
// writes into it; what it wrote is moved aside, not left for the editor.
func TestNestedProjects(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	inner := filepath.Join(e.workdir, "proj")
	if err := os.MkdirAll(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"up-x", "go-x", "proj/up-y", "proj/go-y"} {
		if err := unix.Mkfifo(filepath.Join(e.workdir, f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	outer := make(chan result, 1)
	go func() {
		outer <- e.run("", nil, "run", "--log-level", "error", "--", "/bin/sh", "-c",
			"echo up > up-x; cat go-x >/dev/null; echo EVIL > proj/.vscode/tasks.json && echo planted")
	}()
	readFIFO(t, filepath.Join(e.workdir, "up-x"))
	innerDone := make(chan result, 1)
	go func() {
		innerDone <- e.run("", nil, "run", "--log-level", "error", "--workdir", inner, "--", "/bin/sh", "-c",
			"echo up > up-y; cat go-y >/dev/null")
	}()
	readFIFO(t, filepath.Join(inner, "up-y")) // proj/.vscode is the inner one's placeholder
	writeFIFO(t, filepath.Join(e.workdir, "go-x"))
	rx := <-outer
	if !strings.Contains(rx.stdout, "planted") {
		t.Fatalf("the outer sandbox could not write the placeholder (the test no longer tests it): %s%s", rx.stdout, rx.stderr)
	}
	writeFIFO(t, filepath.Join(inner, "go-y"))
	<-innerDone
	if b, err := os.ReadFile(filepath.Join(inner, ".vscode/tasks.json")); err == nil {
		t.Errorf("proj/.vscode/tasks.json is on the host after both ended: %q", b)
	}
}
