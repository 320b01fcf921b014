//go:build linux

package job

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/policy"
)

// TestHoldHome: the mount points a run needed in the sandbox HOME go when
// it ends, each empty directory up to the HOME; nothing the HOME's owner
// (the sandbox) planted leads the removal out of it; nothing else goes;
// and nothing at all while another run holds the HOME.
func TestHoldHome(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")        // the user's home on the host
	src := filepath.Join(base, "sandbox-home") // the persistent sandbox HOME
	victim := filepath.Join(home, "victim")    // the user's own, outside src
	for _, d := range []string{"proj", "a/b", "kept/sub", "w.moved/proj"} {
		if err := os.MkdirAll(filepath.Join(src, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(src, "kept/sub/file"), []byte("the agent's"), 0o644)
	os.MkdirAll(filepath.Join(victim, "proj"), 0o755)
	// The sandbox moved a parent aside and left a symlink to the user's
	// directory in its place, for the tidy-up to follow.
	if err := os.Symlink(victim, filepath.Join(src, "w")); err != nil {
		t.Fatal(err)
	}
	j := Job{Home: home, HomeSource: src, Policy: policy.Policy{
		Workdir: filepath.Join(home, "proj"),
		RO:      []string{filepath.Join(home, "a/b"), filepath.Join(home, "kept/sub"), "/usr/lib", filepath.Join(home, "w/proj")},
		RW:      []string{home + "2/x"},
	}}
	if got := homePoints(j); len(got) != 4 {
		t.Errorf("homePoints = %q, want proj, a/b, kept/sub, w/proj", got)
	}

	// Another run of the project holds the HOME: nothing is removed.
	other, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(other.Fd()), unix.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	holdHome(j)()
	if _, err := os.Stat(filepath.Join(src, "proj")); err != nil {
		t.Errorf("a run removed a mount point while another held the HOME: %v", err)
	}
	other.Close()

	holdHome(j)()
	for _, gone := range []string{"proj", "a"} {
		if _, err := os.Lstat(filepath.Join(src, gone)); err == nil {
			t.Errorf("%s stays in the sandbox HOME", gone)
		}
	}
	for _, kept := range []string{filepath.Join(src, "kept/sub/file"), filepath.Join(victim, "proj"), filepath.Join(src, "w")} {
		if _, err := os.Lstat(kept); err != nil {
			t.Errorf("%s was removed: %v", kept, err)
		}
	}
}
