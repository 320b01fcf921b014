package tripwire

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stockade-dev/stockade/internal/testenv"
)

// These tests write to a watched host file through another mount of it, as
// the agent does through the sandbox's bind mount of the workdir: inotify
// watches inodes, so the watch on the host path must see the write.

// watchHook takes a snapshot of the fixture's .git/hooks and starts watching.
func watchHook(t *testing.T) (dir string, w *watching) {
	t.Helper()
	dir, _ = fixture(t)
	s, err := Take([]string{filepath.Join(dir, ".git/hooks")})
	must(t, err)
	return dir, startWatch(t, s)
}

func wantHookChange(t *testing.T, dir string, w *watching) {
	t.Helper()
	hook := filepath.Join(dir, ".git/hooks/pre-commit")
	if c := w.next(t); c.Path != hook || c.Kind != Modified {
		t.Fatalf("Watch reported %v, want %s modified", c, hook)
	}
}

// TestWatchThroughBindMount binds the project elsewhere in a private mount
// namespace (a user namespace too, when not root) and appends to the hook
// through that mount.
func TestWatchThroughBindMount(t *testing.T) {
	for _, tool := range []string{"sh", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.SkipOrFail(t, "needs %s: %v", tool, err)
		}
	}
	dir, w := watchHook(t)
	other := t.TempDir()
	cmd := exec.Command("sh", "-ec", `mount --make-rprivate /; mount --bind "$1" "$2"; echo 'curl evil' >>"$2/.git/hooks/pre-commit"`, "sh", dir, other)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS}
	if os.Geteuid() != 0 {
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER
		cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}
		cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		if cmd.ProcessState == nil { // could not create the namespaces
			testenv.SkipOrFail(t, "no private mount namespace: %v", err)
		}
		t.Fatalf("writing through the bind mount: %v\n%s", err, out)
	}
	wantHookChange(t, dir, w)
}

// TestWatchThroughSandbox runs the stockade binary, whose sandbox binds the
// workdir, and appends to the hook from inside (--allow-hooks leaves
// .git/hooks writable). STOCKADE_BIN names the binary; otherwise it is built.
func TestWatchThroughSandbox(t *testing.T) {
	bin := stockadeBinary(t)
	probe := exec.Command(bin, "run", "--", "true")
	probe.Dir = t.TempDir()
	if out, err := probe.CombinedOutput(); err != nil {
		testenv.SkipOrFail(t, "the stockade binary cannot run a sandbox here: %v\n%s", err, out)
	}

	dir, w := watchHook(t)
	cmd := exec.Command(bin, "run", "--allow-hooks", "--", "sh", "-c", "echo 'curl evil' >> .git/hooks/pre-commit")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("stockade run: %v\n%s", err, out)
	}
	wantHookChange(t, dir, w)
	if b, _ := os.ReadFile(filepath.Join(dir, ".git/hooks/pre-commit")); !bytes.HasSuffix(b, []byte("curl evil\n")) {
		t.Fatalf("the hook was not written from inside: %q", b)
	}
}

func stockadeBinary(t *testing.T) string { return testenv.Stockade(t) }
