package job

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// TestSweepSocketDirs: the socket directory of a run killed before its
// cleanup (its socket there, no one listening) goes at the next run that
// makes one; a served one, one being made, another name's and a symlink
// stay.
func TestSweepSocketDirs(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	mk := func(name string) string {
		dir := filepath.Join(tmp, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	listen := func(dir string) *net.UnixListener {
		ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "agent.sock"), Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		return ln
	}
	stale := mk("stockade-ssh-1")
	ln := listen(stale)
	ln.SetUnlinkOnClose(false) // as a SIGKILL leaves it
	ln.Close()
	served := mk("stockade-ssh-2")
	defer listen(served).Close()
	making := mk("stockade-ssh-3")
	other := mk("stockade-gh-4")
	ln = listen(other)
	ln.SetUnlinkOnClose(false)
	ln.Close()
	if err := os.Symlink(stale, filepath.Join(tmp, "stockade-ssh-5")); err != nil {
		t.Fatal(err)
	}
	keep := []string{served, making, other, filepath.Join(tmp, "stockade-ssh-5")}
	if os.Geteuid() == 0 {
		// Another user's, with a stale socket: not root's to remove.
		foreign := mk("stockade-ssh-6")
		ln = listen(foreign)
		ln.SetUnlinkOnClose(false)
		ln.Close()
		if err := os.Chown(foreign, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		keep = append(keep, foreign)
	}

	dir, l, err := socketDir("stockade-ssh-", "agent.sock")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	defer l.Close()
	if filepath.Dir(dir) != tmp {
		t.Fatalf("socket directory %s, not in TMPDIR %s", dir, tmp)
	}
	if _, err := os.Lstat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale directory is still there (%v)", err)
	}
	for _, k := range keep {
		if _, err := os.Lstat(k); err != nil {
			t.Errorf("%s was removed: %v", k, err)
		}
	}
}
