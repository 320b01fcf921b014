package review

import (
	"os"
	"path/filepath"
	"strings"
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
	since := Start()
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

// TestStripSetuidGoesOn: nothing in the tree ends the sweep early: not a
// directory it cannot read (the rest is swept, the directory named), not
// a chain of directories deeper than the descriptors it may hold, and a
// root that is a file (--rw FILE) is swept itself.
func TestStripSetuidGoesOn(t *testing.T) {
	wd := t.TempDir()
	since := Start()
	suid := func(p string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o755|os.ModeSetuid); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var files []string
	for _, n := range []string{"a", "b", "c", "x", "y", "z"} {
		files = append(files, suid(filepath.Join(wd, n)))
	}
	locked := filepath.Join(wd, "m-locked")
	if err := os.Mkdir(locked, 0o755); err != nil {
		t.Fatal(err)
	}
	// A chain deeper than the descriptors the test leaves it.
	deep := wd
	for i := 0; i < 300; i++ {
		deep = filepath.Join(deep, "d")
	}
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	files = append(files, suid(filepath.Join(deep, "bottom")))
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(locked, 0o755)
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	low := lim
	low.Cur = 64
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	got, err := StripSetuid(wd, since)
	unix.Setrlimit(unix.RLIMIT_NOFILE, &lim)
	if os.Geteuid() != 0 && (err == nil || !strings.Contains(err.Error(), "m-locked")) {
		t.Errorf("the unreadable directory is not named: %v", err)
	}
	if os.Geteuid() == 0 && err != nil {
		t.Errorf("root reads every directory: %v", err)
	}
	for _, p := range files {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&os.ModeSetuid != 0 {
			t.Errorf("%s keeps its setuid bit (found %d: %v)", p, len(got), err)
		}
	}
	// A root that is a file.
	f := suid(filepath.Join(t.TempDir(), "rw-file"))
	got, err = StripSetuid(f, since)
	if err != nil || len(got) != 1 {
		t.Errorf("StripSetuid(a file) = %v, %v", got, err)
	}
	if fi, _ := os.Lstat(f); fi.Mode()&os.ModeSetuid != 0 {
		t.Errorf("the file root keeps its setuid bit")
	}
}

// TestSweepShared: what other users may write, made during the run, is
// taken back: the root's own mode (chmod 777 .), a directory's, a file's,
// and their ACLs; a file the user had so before is left alone.
func TestSweepShared(t *testing.T) {
	wd := t.TempDir()
	old := filepath.Join(wd, "old-shared")
	if err := os.WriteFile(old, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(old, 0o666); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	since := Start()
	time.Sleep(10 * time.Millisecond)
	dir := filepath.Join(wd, "d")
	file := filepath.Join(wd, "Makefile")
	aclDir := filepath.Join(wd, "acl")
	for _, d := range []string{dir, aclDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(file, []byte("all:\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for p, m := range map[string]uint32{wd: 0o777, dir: 0o1777, file: 0o666} {
		if err := unix.Chmod(p, m); err != nil {
			t.Fatal(err)
		}
	}
	// A default ACL granting every user rwx (struct posix_acl_xattr:
	// version 2, then user::rwx, group::rwx, other::rwx).
	acl := []byte{2, 0, 0, 0,
		1, 0, 7, 0, 0xff, 0xff, 0xff, 0xff,
		4, 0, 7, 0, 0xff, 0xff, 0xff, 0xff,
		0x20, 0, 7, 0, 0xff, 0xff, 0xff, 0xff}
	if err := unix.Setxattr(aclDir, "system.posix_acl_default", acl, 0); err != nil {
		t.Skipf("no ACLs on %s: %v", wd, err) // tmpfs without ACLs
	}
	got, err := Sweep(wd, since, SweepShared)
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]bool{}
	for _, s := range got {
		if s.Err != nil {
			t.Errorf("%s: %v", s.Path, s.Err)
		}
		paths[s.Path] = true
	}
	for _, p := range []string{".", "d", "Makefile", "acl"} {
		if !paths[p] {
			t.Errorf("%s not found (got %v)", p, got)
		}
	}
	// Other users' write bit only: a group's is a umask of 002's every
	// file (user private groups).
	for p, want := range map[string]os.FileMode{wd: 0o775 | os.ModeDir, dir: 0o775 | os.ModeDir | os.ModeSticky, file: 0o664, old: 0o666} {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s is %v after, want %v", p, fi.Mode(), want)
		}
	}
	if _, err := unix.Getxattr(aclDir, "system.posix_acl_default", nil); err == nil {
		t.Error("the default ACL is still there")
	}
	if !OthersReach("/tmp/x") {
		t.Error("OthersReach(/tmp/x) = false")
	}
	if OthersReach(filepath.Join(t.TempDir(), "x")) { // below a 0700 directory
		t.Error("OthersReach(below a 0700 directory) = true")
	}
}

// TestSweepRootThroughLink: a tree whose parent has become a symlink (a
// --rw tree in the workdir whose parent the sandbox replaced) is not
// swept through the link, and the refusal is an error.
func TestSweepRootThroughLink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real", "tree")
	if err := os.MkdirAll(real, 0o755); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(real, "f")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	since := time.Now().Add(-time.Second)
	if err := unix.Chmod(f, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := Sweep(filepath.Join(dir, "link", "tree"), since, SweepShared); err == nil {
		t.Error("Sweep through a symlinked parent = nil error")
	}
	if fi, _ := os.Lstat(f); fi.Mode().Perm() != 0o666 {
		t.Errorf("the file behind the link was changed: %v", fi.Mode())
	}
}
