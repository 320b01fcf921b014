package sandboxhome

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

func TestKey(t *testing.T) {
	base := t.TempDir()
	proj := filepath.Join(base, "my proj")
	if err := os.Mkdir(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(proj, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	k, err := Key(proj)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^my_proj-[0-9a-f]{12}$`).MatchString(k) {
		t.Errorf("Key(%s) = %q", proj, k)
	}
	if k2, _ := Key(filepath.Join(base, "link")); k2 != k {
		t.Errorf("the same project through a symlink: %q, %q", k2, k)
	}
	if _, err := Key(filepath.Join(base, "missing")); err == nil {
		t.Error("Key of a missing workdir: no error")
	}
	cases := map[string]*regexp.Regexp{
		"/srv/a/proj":                      regexp.MustCompile(`^proj-[0-9a-f]{12}$`),
		"/srv/.dotfiles":                   regexp.MustCompile(`^dotfiles-[0-9a-f]{12}$`),
		"/srv/...":                         regexp.MustCompile(`^project-[0-9a-f]{12}$`),
		"/srv/" + string(make([]byte, 80)): regexp.MustCompile(`^_{32}-[0-9a-f]{12}$`),
		"/srv/é/ü":                         regexp.MustCompile(`^_-[0-9a-f]{12}$`),
	}
	for in, want := range cases {
		if got := keyOf(in); !want.MatchString(got) {
			t.Errorf("keyOf(%q) = %q, want %v", in, got, want)
		}
	}
	if keyOf("/a/proj") == keyOf("/b/proj") {
		t.Error("two projects of the same name share a key")
	}
}

func TestRel(t *testing.T) {
	if got := Rel("codex", "proj-0123456789ab", false); got != "project-home/codex/proj-0123456789ab" {
		t.Errorf("per project: %s", got)
	}
	if got := Rel("codex", "proj-0123456789ab", true); got != "home/codex" {
		t.Errorf("shared: %s", got)
	}
}
