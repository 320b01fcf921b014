package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestHomeMountPointsTidied: a workdir below the user's home needs a mount
// point in the persistent sandbox HOME; it is gone once the last sandbox
// using that HOME is, so that ~/proj does not appear, empty, in every later
// run (issue 14). While another session of the project runs, it stays: its
// removal would pull that session's workdir from under it.
func TestHomeMountPointsTidied(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	runHome := func() string {
		t.Helper()
		found, _ := filepath.Glob(filepath.Join(e.home, ".local/share/stockade/project-home/run/proj-*"))
		if len(found) != 1 {
			t.Fatalf("the sandbox HOME of run in proj: found %q", found)
		}
		return found[0]
	}
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }

	if r := e.run("", nil, "run", "--", "sh", "-c", "test -d $HOME/proj && echo MOUNTED"); r.code != 0 || r.stdout != "MOUNTED\n" {
		t.Fatalf("run: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	home := runHome()
	if exists(filepath.Join(home, "proj")) {
		t.Errorf("the workdir's mount point stays in the sandbox HOME after the run:\n%s", listTree(t, home))
	}

	// A nested workdir: each directory made for it goes.
	nested := filepath.Join(e.home, "a", "b")
	os.MkdirAll(nested, 0o755)
	if r := e.run("", nil, "run", "--workdir", nested, "--", "true"); r.code != 0 {
		t.Fatalf("run --workdir %s: exit %d\n%s", nested, r.code, r.stderr)
	}
	found, _ := filepath.Glob(filepath.Join(e.home, ".local/share/stockade/project-home/run/b-*"))
	for _, h := range found {
		if exists(filepath.Join(h, "a")) {
			t.Errorf("the nested workdir's mount points stay in %s:\n%s", h, listTree(t, h))
		}
	}

	// A session of the project outlives a foreground run in it: the run
	// leaves the mount point alone, the session still sees its workdir,
	// and the session, last out, removes it.
	id := e.startSession("sh", "-c", "while [ ! -e go ]; do sleep 0.05; done; echo alive > seen")
	defer e.run("", nil, "stop", "-s", id)
	if r := e.run("", nil, "run", "--", "true"); r.code != 0 {
		t.Fatalf("run beside the session: exit %d\n%s", r.code, r.stderr)
	}
	if !exists(filepath.Join(home, "proj")) {
		t.Errorf("a run removed the mount point of a session that still runs")
	}
	e.write("go", "")
	deadline := time.Now().Add(30 * time.Second)
	for e.session(id).Effective == "running" && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // polls the session's state; nothing to wait on
	}
	if s := e.session(id); s.Effective == "running" || !exists(filepath.Join(e.workdir, "seen")) {
		t.Fatalf("the session did not see its workdir after the run beside it ended: state %s", s.Effective)
	}
	if exists(filepath.Join(home, "proj")) {
		t.Errorf("the session, last out, left the mount point in the sandbox HOME:\n%s", listTree(t, home))
	}
}
