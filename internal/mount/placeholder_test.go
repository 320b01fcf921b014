package mount

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPlaceholders(t *testing.T) {
	wd := tree(t, ".git/config", ".claude/settings.json")
	cfg := Config{Workdir: wd, Protect: []string{".git/hooks/", ".vscode/", "CLAUDE.md", ".cursor/rules/", ".claude/", ".env.*"}}
	ps, err := CreatePlaceholders(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{wd + "/.git/hooks": true, wd + "/.vscode": true}
	if len(ps) != len(want) {
		t.Fatalf("placeholders %+v, want %v", ps, want)
	}
	for _, p := range ps {
		dir, ok := want[p.Path]
		if !ok || dir != p.Dir {
			t.Errorf("unexpected placeholder %+v", p)
		}
	}
	if _, err := os.Stat(wd + "/.cursor"); err == nil {
		t.Error(".cursor was created: placeholders must not create missing parents")
	}
	if _, err := os.Stat(wd + "/CLAUDE.md"); err == nil {
		t.Error("CLAUDE.md was created: file placeholders would break the tools that read them")
	}
	missing := Missing(cfg)
	if len(missing) != 2 || missing[0].Path != wd+"/CLAUDE.md" || missing[1].Path != wd+"/.cursor/rules" {
		t.Errorf("Missing = %+v, want CLAUDE.md and .cursor/rules", missing)
	}
	// The plan protects them now.
	plan, _ := Build(cfg, OS{})
	if m, ok := find(plan, wd+"/.vscode"); !ok || !m.ReadOnly {
		t.Errorf("placeholder .vscode not protected: %+v", m)
	}
	// Content added outside the sandbox is never removed.
	os.WriteFile(filepath.Join(wd, ".vscode", "mine.json"), []byte("{}"), 0o644)
	if err := RemovePlaceholders(ps); err == nil {
		t.Error("RemovePlaceholders reported nothing although .vscode is no longer empty")
	}
	for p := range want {
		_, err := os.Lstat(p)
		if exists := err == nil; exists != (p == wd+"/.vscode") {
			t.Errorf("%s exists=%v after removal", p, exists)
		}
	}
}
