package sandboxhome

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// trust is the edit the tests make: Claude Code's trust mark for /p.
func trust(doc map[string]any) bool {
	projects, _ := doc["projects"].(map[string]any)
	if projects == nil {
		projects = map[string]any{}
		doc["projects"] = projects
	}
	if projects["/p"] == true {
		return false
	}
	projects["/p"] = true
	return true
}

// TestEditJSON: the edit keeps every other key (numbers as written), makes
// a missing file, and leaves alone, with a warning, what is not a regular
// file holding a JSON object: a symlink (whose target, the user's file,
// keeps its content), a FIFO (which must not hang the start), a list,
// garbage, a file too large. A hard link is replaced by a new file, its
// other name keeping its content.
func TestEditJSON(t *testing.T) {
	const userFile = `{"theme": "mine"}`
	for _, tt := range []struct {
		name  string
		plant func(t *testing.T, u *user, p string)
		want  string // the file afterwards ("" unchanged)
		warn  string
	}{
		{"missing", nil, "{\n  \"projects\": {\n    \"/p\": true\n  }\n}\n", ""},
		{"empty", func(t *testing.T, u *user, p string) { write(t, p, "\n") }, "{\n  \"projects\": {\n    \"/p\": true\n  }\n}\n", ""},
		{"other keys", func(t *testing.T, u *user, p string) {
			write(t, p, `{"big": 12345678901234567890, "html": "<a&b>", "projects": {"/q": {"x": 1.50}}}`)
		}, "{\n  \"big\": 12345678901234567890,\n  \"html\": \"<a&b>\",\n  \"projects\": {\n    \"/p\": true,\n    \"/q\": {\n      \"x\": 1.50\n    }\n  }\n}\n", ""},
		{"already there", func(t *testing.T, u *user, p string) { write(t, p, `{"projects": {"/p": true}, "z": 1}`) }, "", ""},
		{"symlink", func(t *testing.T, u *user, p string) {
			write(t, filepath.Join(u.home, ".claude.json"), userFile)
			os.Symlink(filepath.Join(u.home, ".claude.json"), p)
		}, "", "is a symlink"},
		{"fifo", func(t *testing.T, u *user, p string) {
			if err := mkfifo(p); err != nil {
				t.Fatal(err)
			}
		}, "", "is not a regular file"},
		{"list", func(t *testing.T, u *user, p string) { write(t, p, `[1, 2]`) }, "", "does not hold a JSON object"},
		{"garbage", func(t *testing.T, u *user, p string) { write(t, p, `{"a": 1} trailing`) }, "", "does not hold a JSON object"},
		{"too large", func(t *testing.T, u *user, p string) {
			write(t, p, `{"a": "`+strings.Repeat("x", maxJSON)+`"}`)
		}, "", "is larger than 16 MiB"},
		{"hard link", func(t *testing.T, u *user, p string) {
			write(t, filepath.Join(u.home, ".claude.json"), userFile)
			if err := os.Link(filepath.Join(u.home, ".claude.json"), p); err != nil {
				t.Fatal(err)
			}
		}, "{\n  \"projects\": {\n    \"/p\": true\n  },\n  \"theme\": \"mine\"\n}\n", "had 2 names (a hard link)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u := newUser(t)
			h := u.open(t)
			p := filepath.Join(h.Path, ".claude.json")
			var before unix.Stat_t
			if tt.plant != nil {
				tt.plant(t, u, p)
				unix.Lstat(p, &before)
			}
			if err := h.EditJSON(".claude.json", trust); err != nil {
				t.Fatal(err)
			}
			var after unix.Stat_t
			if err := unix.Lstat(p, &after); err != nil {
				t.Fatal(err)
			}
			if tt.want == "" {
				if after.Ino != before.Ino || after.Mtim != before.Mtim {
					t.Errorf("%s was rewritten", p)
				}
			} else if got := read(t, p); got != tt.want {
				t.Errorf("%s:\n%s\nwant\n%s", p, got, tt.want)
			} else if after.Mode&0o777 != 0o600 {
				t.Errorf("%s has mode %o", p, after.Mode&0o777)
			}
			if tt.plant != nil && (tt.name == "symlink" || tt.name == "hard link") {
				if got := read(t, filepath.Join(u.home, ".claude.json")); got != userFile {
					t.Errorf("the user's ~/.claude.json was written through the %s: %q", tt.name, got)
				}
			}
			warned := strings.Join(u.warnings, "\n")
			if tt.warn == "" && warned != "" || !strings.Contains(warned, tt.warn) {
				t.Errorf("warnings:\n%s\nwant one with %q", warned, tt.warn)
			}
		})
	}
}
