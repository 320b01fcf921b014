package slurm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckJobDir: the wrapper entry starts a job only in the directory
// the chaperon made, never through a link put in its path since.
func TestCheckJobDir(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	made := filepath.Join(root, "state", "jobs", "s1-1")
	os.MkdirAll(made, 0o700)
	if err := checkJobDir(made); err != nil {
		t.Errorf("the chaperon's own directory: %v", err)
	}
	// An earlier sandbox swapped "jobs" for a link to a directory of its own.
	other := filepath.Join(root, "proj", "fake")
	os.MkdirAll(filepath.Join(other, "s1-1"), 0o700)
	os.Rename(filepath.Join(root, "state", "jobs"), filepath.Join(root, "state", "old"))
	os.Symlink(other, filepath.Join(root, "state", "jobs"))
	if err := checkJobDir(made); err == nil || !strings.Contains(err.Error(), "leads to "+filepath.Join(other, "s1-1")) {
		t.Errorf("through a link: %v, want it refused naming where it leads", err)
	}
	if err := checkJobDir(filepath.Join(root, "gone")); err == nil {
		t.Error("a missing directory was taken")
	}
}
