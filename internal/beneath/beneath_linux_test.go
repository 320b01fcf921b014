package beneath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// tree makes a root with a secret outside it and the links an agent would
// plant: a symlinked directory, a symlinked file, a link leaving the root.
func tree(t *testing.T) (root, outside string) {
	base := t.TempDir()
	root, outside = filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, d := range []string{root + "/dir", outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must(t, os.WriteFile(outside+"/secret", []byte("secret"), 0o600))
	must(t, os.WriteFile(root+"/dir/file", []byte("file"), 0o644))
	must(t, os.Symlink("../outside", root+"/out"))     // leaves the root
	must(t, os.Symlink("dir", root+"/inside"))         // stays inside
	must(t, os.Symlink("dir/file", root+"/filelink"))  // a file link
	must(t, os.Symlink("/proc/self/root", root+"/pr")) // a magic link's way in
	return root, outside
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestResolveRefusesLinks(t *testing.T) {
	root, outside := tree(t)
	r, err := OpenRoot(root)
	must(t, err)
	defer r.Close()
	cases := []struct {
		name string
		op   func() error
		want error // the errno the kernel must answer
	}{
		{"open through a link leaving the root", func() error { _, err := r.Open("out/secret"); return err }, unix.ELOOP},
		{"open through a link staying inside", func() error { _, err := r.Open("inside/file"); return err }, unix.ELOOP},
		{"open a file link", func() error { _, err := r.Open("filelink"); return err }, unix.ELOOP},
		{"open through /proc/self/root", func() error { _, err := r.Open("pr/etc/passwd"); return err }, unix.ELOOP},
		{"open dotdot", func() error { _, err := r.Open("../outside/secret"); return err }, unix.EXDEV},
		{"create below a link", func() error { return r.CreateFile("out/planted", nil, 0o644) }, unix.ELOOP},
		{"create at a link", func() error { return r.CreateFile("filelink", nil, 0o644) }, unix.EEXIST},
		{"mkdir below a link", func() error { return r.Mkdir("out/d", 0o755) }, unix.ELOOP},
		{"mkdirall through a link", func() error { return r.MkdirAll("out/a/b", 0o755) }, unix.ENOTDIR},
		{"write below a link", func() error { return r.WriteFile("out/secret", []byte("x"), 0o644) }, unix.ELOOP},
		{"lstat below a link", func() error { _, err := r.Lstat("out/secret"); return err }, unix.ELOOP},
		{"remove below a link", func() error { return r.Remove("out/secret") }, unix.ELOOP},
		{"rename below a link", func() error { return r.Rename("out/secret", "stolen", 0) }, unix.ELOOP},
		{"readdir through a link", func() error { _, err := r.ReadDir("out"); return err }, unix.ELOOP},
	}
	for _, c := range cases {
		err := c.op()
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	if b, _ := os.ReadFile(outside + "/secret"); string(b) != "secret" {
		t.Fatalf("the secret outside changed: %q", b)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Fatalf("something was created outside: %v", ents)
	}
}

func TestWriteReplacesALinkInsteadOfFollowing(t *testing.T) {
	root, outside := tree(t)
	r, err := OpenRoot(root)
	must(t, err)
	defer r.Close()
	must(t, os.Symlink("../outside/secret", root+"/dir/conf"))
	must(t, r.WriteFile("dir/conf", []byte("mine"), 0o600))
	st, err := r.Lstat("dir/conf")
	must(t, err)
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Mode&0o777 != 0o600 {
		t.Fatalf("dir/conf mode %o, want a regular 0600 file", st.Mode)
	}
	if b, _ := os.ReadFile(outside + "/secret"); string(b) != "secret" {
		t.Fatalf("written through the link: %q", b)
	}
	b, err := r.ReadFile("dir/conf")
	if err != nil || string(b) != "mine" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	// Remove takes the link, not its target.
	must(t, r.Remove("filelink"))
	if _, err := os.Stat(root + "/dir/file"); err != nil {
		t.Fatalf("the link's target went: %v", err)
	}
}

func TestMkdirAllAndRemove(t *testing.T) {
	root, _ := tree(t)
	r, err := OpenRoot(root)
	must(t, err)
	defer r.Close()
	must(t, r.MkdirAll("a/b/c", 0o700))
	must(t, r.MkdirAll("a/b/c", 0o700)) // again: exists
	st, err := r.Lstat("a/b/c")
	must(t, err)
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		t.Fatal("a/b/c is not a directory")
	}
	if err := r.MkdirAll("dir/file/x", 0o700); !errors.Is(err, unix.ENOTDIR) {
		t.Fatalf("MkdirAll through a file: %v", err)
	}
	must(t, r.Remove("a/b/c"))
	if _, err := r.Lstat("a/b/c"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a/b/c still there: %v", err)
	}
	sub, err := r.OpenRoot("a")
	must(t, err)
	defer sub.Close()
	must(t, sub.CreateFile("b/f", []byte("x"), 0o644))
	if _, err := sub.Open("../dir/file"); !errors.Is(err, unix.EXDEV) {
		t.Fatalf("a sub-root reached its parent: %v", err)
	}
	ents, err := r.ReadDir(".")
	must(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if want := "a dir filelink inside out pr"; join(names) != want {
		t.Fatalf("ReadDir = %q, want %q", join(names), want)
	}
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}

// TestOpenRootNoLinks: a path with a symlink in any component is refused,
// the last one or one before it; a path without is opened.
func TestOpenRootNoLinks(t *testing.T) {
	root, _ := tree(t)
	root, err := filepath.EvalSymlinks(root)
	must(t, err)
	r, err := OpenRootNoLinks(root + "/dir")
	must(t, err)
	r.Close()
	for _, p := range []string{root + "/inside", root + "/out", root + "/inside/."} {
		if r, err := OpenRootNoLinks(p); !errors.Is(err, unix.ELOOP) {
			r.Close()
			t.Errorf("OpenRootNoLinks(%s): %v, want ELOOP", p, err)
		}
	}
	if _, err := OpenRootNoLinks("dir"); err == nil {
		t.Error("OpenRootNoLinks took a relative path")
	}
}
