//go:build linux

package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/mount"
)

// TestStore: the plan's Store reaches the supervisor as a detached mount
// of the directory, nosuid and nodev, beside the Feed file; the command's
// view does not have it, and init keeps neither descriptor once the
// command may start.
func TestStore(t *testing.T) {
	requireSandbox(t)
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(base, "the-kept-store")
	if err := os.Mkdir(store, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(store, "marker"), []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	const at = "/run/stockade/denials"
	spec, err := NewSpec(Config{ID: "store01", Workdir: t.TempDir(), Home: "/nonexistent-home", DenialsAt: at,
		Argv: []string{"sh", "-c", "cat " + store + "/marker 2>/dev/null || echo UNSEEN; grep -c " + filepath.Base(store) + " /proc/self/mountinfo; read x; true"},
		Env:  []string{"PATH=/usr/bin:/bin"}}, mount.OS{})
	if err != nil {
		t.Fatal(err)
	}
	spec.Plan.Store = store
	var st unix.Stat_t
	if err := unix.Stat(store, &st); err != nil {
		t.Fatal(err)
	}
	spec.Plan.StoreDev, spec.Plan.StoreIno = st.Dev, st.Ino
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()
	// The command waits on its stdin until init's descriptors are read:
	// an ended command takes init with it (CI once read none).
	inR, inW, _ := os.Pipe()
	defer inR.Close()
	defer inW.Close()
	outR, outW, _ := os.Pipe()
	var out bytes.Buffer
	done := make(chan struct{})
	go func() { out.ReadFrom(outR); close(done) }()
	var tree, feed *os.File
	var initPID int
	var initFDs []string
	code, err := Run(spec, Options{Stdin: inR, Stdout: outW, Stderr: devnull,
		OnStart: func(pid int) error { initPID = pid; return nil },
		OnFeed:  func(f *os.File) error { feed = f; return nil },
		OnStore: func(f *os.File) error { tree = f; return nil },
		OnCommand: func() {
			ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", initPID))
			if err != nil {
				initFDs = []string{err.Error()}
			}
			for _, e := range ents {
				l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", initPID, e.Name()))
				initFDs = append(initFDs, e.Name()+"="+l)
			}
			inW.Close()
		},
	})
	outW.Close()
	<-done
	if feed != nil {
		feed.Close()
	}
	if code != 0 || err != nil {
		t.Fatalf("status %d, err %v, output %q", code, err, out.String())
	}
	if out.String() != "UNSEEN\n0\n" {
		t.Errorf("the command's view: %q, want the store unseen and unmounted", out.String())
	}
	if tree == nil {
		t.Fatal("no store descriptor")
	}
	defer tree.Close()
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/fd/%d/marker", tree.Fd()))
	if err != nil || string(b) != "kept" {
		t.Errorf("the store through its descriptor: %q, %v", b, err)
	}
	var sf unix.Statfs_t
	if err := unix.Fstatfs(int(tree.Fd()), &sf); err != nil {
		t.Fatal(err)
	}
	if sf.Flags&unix.ST_NOSUID == 0 || sf.Flags&unix.ST_NODEV == 0 {
		t.Errorf("the store's mount flags %#x, want nosuid and nodev", sf.Flags)
	}
	switch {
	case os.Geteuid() != 0:
		if len(initFDs) != 1 || !strings.Contains(initFDs[0], "permission denied") {
			t.Errorf("as a user, init's descriptors: %q, want permission denied", initFDs)
		}
	case len(initFDs) != 5 || !strings.HasSuffix(initFDs[4], "[signalfd]"):
		t.Errorf("init holds %q, want stdio, the sync socket and the signalfd", initFDs)
	}
}

// TestStoreReplaced: a directory put in the place of the one the
// supervisor locked (another inode at the Store's path) is not cloned:
// the start fails, and nothing is sent.
func TestStoreReplaced(t *testing.T) {
	requireSandbox(t)
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(base, "the-kept-store")
	if err := os.Mkdir(store, 0o700); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(store, &st); err != nil {
		t.Fatal(err)
	}
	// The locked one is renamed away and another made in its place.
	if err := os.Rename(store, store+".locked"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(store, 0o700); err != nil {
		t.Fatal(err)
	}
	spec, err := NewSpec(Config{ID: "store02", Workdir: t.TempDir(), Home: "/nonexistent-home", DenialsAt: "/run/stockade/denials",
		Argv: []string{"true"}, Env: []string{"PATH=/usr/bin:/bin"}}, mount.OS{})
	if err != nil {
		t.Fatal(err)
	}
	spec.Plan.Store, spec.Plan.StoreDev, spec.Plan.StoreIno = store, st.Dev, st.Ino
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()
	var tree *os.File
	code, err := Run(spec, Options{Stdin: devnull, Stdout: devnull, Stderr: devnull,
		OnFeed:  func(f *os.File) error { return f.Close() },
		OnStore: func(f *os.File) error { tree = f; return nil },
	})
	if tree != nil {
		tree.Close()
		t.Error("the replaced directory was cloned and sent")
	}
	var se *StepError
	if err == nil || !errors.As(err, &se) || !strings.Contains(err.Error(), "replaced") {
		t.Errorf("status %d, err %v; want a step error saying the storage was replaced", code, err)
	}
}
