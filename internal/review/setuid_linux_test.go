package review

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestStripSetuid: the bits and file capabilities made during the run are
// removed, in every directory, and nothing else is touched: a file the
// user made setuid before, a file outside reached through a link.
func TestStripSetuid(t *testing.T) {
	wd, out := t.TempDir(), t.TempDir()
	mk := func(p string, mode os.FileMode) string {
		t.Helper()
		p = filepath.Join(wd, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	old := mk("old-suid", 0o755|os.ModeSetuid)
	outside := filepath.Join(out, "suid")
	if err := os.WriteFile(outside, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(outside, 0o755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	since := time.Now()
	time.Sleep(10 * time.Millisecond)
	suid := mk("a/b/suid", 0o755|os.ModeSetuid)
	sgid := mk(".git/sgid", 0o750|os.ModeSetgid)
	plain := mk("plain", 0o755)
	if err := os.Symlink(outside, filepath.Join(wd, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(out, filepath.Join(wd, "dirlink")); err != nil {
		t.Fatal(err)
	}
	capped := ""
	if os.Geteuid() == 0 {
		// Not executable: a later chmod +x keeps the attribute.
		capped = mk("capped", 0o644)
		// struct vfs_cap_data revision 2, CAP_NET_RAW permitted and effective.
		data := []byte{0x01, 0x00, 0x00, 0x02, 0x00, 0x20, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
		if err := unix.Setxattr(capped, "security.capability", data, 0); err != nil {
			t.Fatal(err)
		}
	}
	got, err := StripSetuid(wd, since)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]Setuid{}
	for _, s := range got {
		if s.Err != nil {
			t.Errorf("%s: %v", s.Path, s.Err)
		}
		found[s.Path] = s
	}
	want := map[string]bool{"a/b/suid": true, ".git/sgid": true}
	if capped != "" {
		want["capped"] = true
	}
	for p := range want {
		if _, ok := found[p]; !ok {
			t.Errorf("%s not found (got %v)", p, got)
		}
	}
	if len(found) != len(want) {
		t.Errorf("found %v, want %v", got, want)
	}
	mode := func(p string) os.FileMode {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode()
	}
	if m := mode(suid); m != 0o755 {
		t.Errorf("a/b/suid is %v after, want -rwxr-xr-x", m)
	}
	if m := mode(sgid); m != 0o750 {
		t.Errorf(".git/sgid is %v after, want -rwxr-x---", m)
	}
	if m := mode(old); m&os.ModeSetuid == 0 {
		t.Errorf("the user's own setuid file (before the run) was changed: %v", m)
	}
	if m := mode(outside); m&os.ModeSetuid == 0 {
		t.Errorf("a file outside, reached through a link, was changed: %v", m)
	}
	if m := mode(plain); m != 0o755 {
		t.Errorf("plain is %v", m)
	}
	if capped != "" {
		if _, err := unix.Getxattr(capped, "security.capability", nil); err == nil {
			t.Error("capped keeps its file capabilities")
		}
	}
	if s := found["a/b/suid"].String(); s == "" {
		t.Error("no line")
	}
}
