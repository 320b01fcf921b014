package mount

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// TestScanMasksSockets: a unix socket anywhere the walk goes in a tree the
// sandbox sees is masked (something on the host may listen on it), unless
// --unmask names it; one the command leaves is no finding at exit.
func TestScanMasksSockets(t *testing.T) {
	wd := t.TempDir()
	for _, p := range []string{"tmp/dev.sock", "deep/er/tmux.sock", "node_modules/x/ipc.sock", "kept.sock"} {
		full := filepath.Join(wd, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("unix", full)
		if err != nil {
			t.Fatal(err)
		}
		l.(*net.UnixListener).SetUnlinkOnClose(false)
		defer l.Close()
	}
	sc := ScanTrees(Config{Workdir: wd, Unmask: []string{"kept.sock"}}, OS{})
	if sc.Err != nil {
		t.Fatal(sc.Err)
	}
	masked := map[string]bool{}
	for _, f := range sc.Mask {
		if f.Socket {
			masked[f.Path] = true
		}
	}
	for p, want := range map[string]bool{"tmp/dev.sock": true, "deep/er/tmux.sock": true, "node_modules/x/ipc.sock": false, "kept.sock": false} {
		if masked[filepath.Join(wd, p)] != want {
			t.Errorf("%s masked = %v, want %v", p, !want, want)
		}
	}
	// A socket made while the sandbox ran is not a name to move aside.
	l, err := net.Listen("unix", filepath.Join(wd, "tmp", "new.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	after := ScanTrees(Config{Workdir: wd, Unmask: []string{"kept.sock"}}, OS{})
	if created := sc.Created(after); len(created) != 0 {
		t.Errorf("created: %+v, want none", created)
	}
}
