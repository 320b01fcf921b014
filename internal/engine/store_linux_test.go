package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenStore: the storage is made 0700 below the data directory,
// locked while open (a second open finds it busy, and Busy says so),
// free again once closed; a symlink on its path is refused, not followed.
func TestOpenStore(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	s, busy, err := OpenStore(data, "proj-0123456789ab")
	if err != nil || busy {
		t.Fatalf("OpenStore: busy %v, %v", busy, err)
	}
	want := filepath.Join(data, StoreDir, "proj-0123456789ab")
	if s.Path != want {
		t.Errorf("Path %s, want %s", s.Path, want)
	}
	if fi, err := os.Stat(want); err != nil || fi.Mode().Perm() != 0o700 || !fi.IsDir() {
		t.Errorf("storage: %v %v, want a directory with mode 0700", fi, err)
	}
	if _, busy, err := OpenStore(data, "proj-0123456789ab"); err != nil || !busy {
		t.Errorf("a second OpenStore while the first holds it: busy %v, %v; want busy", busy, err)
	}
	if !Busy(data, "proj-0123456789ab") {
		t.Error("Busy: false while the storage is held")
	}
	if Busy(data, "other-0123456789ab") {
		t.Error("Busy: true for a storage not made yet")
	}
	s.Close()
	if Busy(data, "proj-0123456789ab") {
		t.Error("Busy: true once the storage was closed")
	}
	s, busy, err = OpenStore(data, "proj-0123456789ab")
	if err != nil || busy {
		t.Fatalf("OpenStore after Close: busy %v, %v", busy, err)
	}
	s.Close()
	// A mode changed meanwhile (by the engine, which owns it) is set back.
	os.Chmod(want, 0o755)
	if s, _, err = OpenStore(data, "proj-0123456789ab"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if fi, _ := os.Stat(want); fi.Mode().Perm() != 0o700 {
		t.Errorf("mode %v after OpenStore, want 0700", fi.Mode().Perm())
	}
	// So is the mode of the directory of every project's storage, which
	// must be the user's too.
	os.Chmod(filepath.Join(data, StoreDir), 0o755)
	if s, _, err = OpenStore(data, "proj-0123456789ab"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if fi, _ := os.Stat(filepath.Join(data, StoreDir)); fi.Mode().Perm() != 0o700 {
		t.Errorf("the storages' directory: mode %v after OpenStore, want 0700", fi.Mode().Perm())
	}
	if os.Getuid() == 0 {
		other := filepath.Join(t.TempDir(), "data")
		os.MkdirAll(filepath.Join(other, StoreDir), 0o700)
		os.Chown(filepath.Join(other, StoreDir), 12345, 12345)
		if _, _, err := OpenStore(other, "proj-0123456789ab"); err == nil || !strings.Contains(err.Error(), "owned by uid 12345") {
			t.Errorf("OpenStore below another user's storages' directory: %v", err)
		}
	}
	// A symlink where a storage goes, or in place of the engine's
	// directory, is refused.
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(data, StoreDir, "link-0123456789ab")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := OpenStore(data, "link-0123456789ab"); err == nil || !strings.Contains(err.Error(), "a symlink or a file stands in its path") {
		t.Errorf("OpenStore through a symlink: %v", err)
	}
	data2 := filepath.Join(t.TempDir(), "data")
	os.MkdirAll(data2, 0o700)
	if err := os.Symlink(elsewhere, filepath.Join(data2, StoreDir)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := OpenStore(data2, "proj-0123456789ab"); err == nil {
		t.Error("OpenStore through a symlinked engine directory: no error")
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("OpenStore wrote through a symlink: %v", entries)
	}
}
