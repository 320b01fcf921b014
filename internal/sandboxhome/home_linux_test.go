package sandboxhome

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// user is a host with a real ~/.codex the sandbox must never reach, and
// stockade's data directory below it.
type user struct {
	home, data string
	warnings   []string
}

func newUser(t *testing.T) *user {
	u := &user{home: t.TempDir()}
	u.data = filepath.Join(u.home, ".local", "share", "stockade")
	write(t, filepath.Join(u.home, ".codex", "AGENTS.md"), "the user's own instructions\n")
	return u
}

func (u *user) open(t *testing.T) *Home {
	t.Helper()
	h, err := Open(u.data, Rel("codex", "proj-0123456789ab", false), func(s string) { u.warnings = append(u.warnings, s) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// snapshot lists the user's home, but for stockade's data directory.
func (u *user) snapshot(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(u.home, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if p == filepath.Join(u.home, ".local") {
			return filepath.SkipDir
		}
		b.WriteString(p)
		if d.Type().IsRegular() {
			b.WriteString(" " + read(t, p))
		}
		b.WriteString("\n")
		return nil
	})
	return b.String()
}

func write(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustDir(t *testing.T, p string) {
	t.Helper()
	if fi, err := os.Lstat(p); err != nil || !fi.IsDir() {
		t.Errorf("%s is not a directory: %v %v", p, fi, err)
	}
}

var codexSeed = map[string]string{".codex/config.toml": "model_provider = \"stockade\""}

// TestPlanted: what a sandboxed command leaves in its HOME never makes
// stockade write outside it. Each case plants, then prepares the HOME as
// `stockade codex` does, then checks the user's real ~/.codex.
func TestPlanted(t *testing.T) {
	cases := []struct {
		name  string
		plant func(t *testing.T, u *user, home string)
		warn  string // a warning must name this ("" none)
		after func(t *testing.T, u *user, home string)
	}{
		{"nothing", func(*testing.T, *user, string) {}, "", nil},
		{"symlinked parent", func(t *testing.T, u *user, home string) {
			os.Symlink(filepath.Join(u.home, ".codex"), filepath.Join(home, ".codex"))
		}, "a symlink (-> " + "{home}/.codex) at {sandbox}/.codex", nil},
		{"symlinked grandparent of a seed file", func(t *testing.T, u *user, home string) {
			os.Symlink(u.home, filepath.Join(home, ".codex"))
		}, "a symlink", nil},
		{"file where a directory belongs", func(t *testing.T, u *user, home string) {
			write(t, filepath.Join(home, ".codex"), "x")
		}, "replaced a file at {sandbox}/.codex", nil},
		{"fifo where a directory belongs", func(t *testing.T, u *user, home string) {
			if err := mkfifo(filepath.Join(home, ".codex")); err != nil {
				t.Fatal(err)
			}
		}, "a special file", nil},
		{"symlinked guide", func(t *testing.T, u *user, home string) {
			os.MkdirAll(filepath.Join(home, ".codex"), 0o700)
			os.Symlink(filepath.Join(u.home, ".codex", "AGENTS.md"), filepath.Join(home, ".codex", "AGENTS.md"))
		}, "a symlink (-> {home}/.codex/AGENTS.md) at {sandbox}/.codex/AGENTS.md", nil},
		{"hard-linked guide", func(t *testing.T, u *user, home string) {
			os.MkdirAll(filepath.Join(home, ".codex"), 0o700)
			if err := os.Link(filepath.Join(u.home, ".codex", "AGENTS.md"), filepath.Join(home, ".codex", "AGENTS.md")); err != nil {
				t.Fatal(err)
			}
		}, "had 2 names (a hard link)", nil},
		// A seed file is written only where nothing is: a link there is
		// left alone, and not written through.
		{"symlinked seed file", func(t *testing.T, u *user, home string) {
			os.MkdirAll(filepath.Join(home, ".codex"), 0o700)
			os.Symlink(filepath.Join(u.home, ".codex", "config.toml"), filepath.Join(home, ".codex", "config.toml"))
		}, "", func(t *testing.T, u *user, home string) {
			if fi, err := os.Lstat(filepath.Join(home, ".codex", "config.toml")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the planted link was not left alone: %v %v", fi, err)
			}
		}},
		{"hard-linked seed file", func(t *testing.T, u *user, home string) {
			write(t, filepath.Join(u.home, ".codex", "config.toml"), "the user's own config\n")
			os.MkdirAll(filepath.Join(home, ".codex"), 0o700)
			if err := os.Link(filepath.Join(u.home, ".codex", "config.toml"), filepath.Join(home, ".codex", "config.toml")); err != nil {
				t.Fatal(err)
			}
		}, "", func(t *testing.T, u *user, home string) {
			if got := read(t, filepath.Join(u.home, ".codex", "config.toml")); got != "the user's own config\n" {
				t.Errorf("the user's config.toml was written through a hard link: %q", got)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := newUser(t)
			h := u.open(t)
			c.plant(t, u, h.Path)
			before := u.snapshot(t)
			if err := h.WriteGuide(".codex/AGENTS.md", "GUIDE"); err != nil {
				t.Fatal(err)
			}
			if err := h.Seed(codexSeed); err != nil {
				t.Fatal(err)
			}
			if got := read(t, filepath.Join(u.home, ".codex", "AGENTS.md")); got != "the user's own instructions\n" {
				t.Errorf("the user's ~/.codex/AGENTS.md was overwritten: %q", got)
			}
			if c.after == nil {
				if _, err := os.Lstat(filepath.Join(u.home, ".codex", "config.toml")); err == nil {
					t.Error("a config.toml was created in the user's ~/.codex")
				}
				if got := read(t, filepath.Join(h.Path, ".codex", "config.toml")); !strings.Contains(got, "stockade") {
					t.Errorf("seed file = %q", got)
				}
			} else {
				c.after(t, u, h.Path)
			}
			if after := u.snapshot(t); after != before {
				t.Errorf("the user's home changed:\n%s\n=>\n%s", before, after)
			}
			mustDir(t, filepath.Join(h.Path, ".codex"))
			if got := read(t, filepath.Join(h.Path, ".codex", "AGENTS.md")); got != "GUIDE" {
				t.Errorf("guide = %q", got)
			}
			warned := strings.Join(u.warnings, "\n")
			want := strings.NewReplacer("{home}", u.home, "{sandbox}", h.Path).Replace(c.warn)
			if c.warn == "" && warned != "" || !strings.Contains(warned, want) {
				t.Errorf("warnings:\n%s\nwant one with %q", warned, want)
			}
		})
	}
}

// TestGuideOverDirectory: a directory where the guide goes may hold the
// user's work; it is refused, with the fix.
func TestGuideOverDirectory(t *testing.T) {
	u := newUser(t)
	h := u.open(t)
	write(t, filepath.Join(h.Path, ".codex", "AGENTS.md", "notes"), "work")
	err := h.WriteGuide(".codex/AGENTS.md", "GUIDE")
	if err == nil || !strings.Contains(err.Error(), "is a directory") || !strings.Contains(err.Error(), "rm -r ") {
		t.Errorf("guide over a directory: %v", err)
	}
	if got := read(t, filepath.Join(h.Path, ".codex", "AGENTS.md", "notes")); got != "work" {
		t.Errorf("the directory's content changed: %q", got)
	}
}

// TestSeedKeeps: a seed file the user (or the agent) changed is kept.
func TestSeedKeeps(t *testing.T) {
	u := newUser(t)
	h := u.open(t)
	write(t, filepath.Join(h.Path, ".codex", "config.toml"), "mine")
	if err := h.Seed(codexSeed); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(h.Path, ".codex", "config.toml")); got != "mine" {
		t.Errorf("config.toml = %q", got)
	}
	if len(u.warnings) > 0 {
		t.Errorf("warnings: %q", u.warnings)
	}
}

// TestOpen: the HOME is created below the data directory, 0700, and a
// symlink in its path (which no sandbox can plant there) is refused.
func TestOpen(t *testing.T) {
	u := newUser(t)
	h := u.open(t)
	want := filepath.Join(u.data, "project-home", "codex", "proj-0123456789ab")
	if h.Path != want {
		t.Errorf("Path = %s, want %s", h.Path, want)
	}
	if fi, err := os.Stat(want); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("HOME: %v %v", fi, err)
	}
	for _, rel := range []string{"project-home/gemini", "home/gemini"} {
		os.MkdirAll(filepath.Join(u.data, filepath.Dir(rel)), 0o700)
		if err := os.Symlink(filepath.Join(u.home, ".codex"), filepath.Join(u.data, rel)); err != nil {
			t.Fatal(err)
		}
	}
	for _, shared := range []bool{false, true} {
		_, err := Open(u.data, Rel("gemini", "proj-0123456789ab", shared), func(string) {})
		if err == nil || !strings.Contains(err.Error(), "a symlink or a file stands in its path") {
			t.Errorf("shared=%v: a symlinked HOME was opened: %v", shared, err)
		}
	}
}

func mkfifo(p string) error { return unix.Mkfifo(p, 0o600) }

// BenchmarkPlace is what every start pays to find and open an existing
// HOME: the workdir's key, then the HOME's directory.
func BenchmarkPlace(b *testing.B) {
	data, work := b.TempDir(), b.TempDir()
	for b.Loop() {
		key, err := Key(work)
		if err != nil {
			b.Fatal(err)
		}
		h, err := Open(data, Rel("run", key, false), func(string) {})
		if err != nil {
			b.Fatal(err)
		}
		h.Close()
	}
}
