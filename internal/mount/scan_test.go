package mount

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScanLinks: the scan never resolves through a symlink, protects or
// masks a link itself, follows its target lexically into the trees the
// sandbox can write (mapped to where they appear inside), applies patterns
// at every depth, and refuses protected files with a second name.
func TestScanLinks(t *testing.T) {
	base := t.TempDir()
	wd, home, out := filepath.Join(base, "w"), filepath.Join(base, "sandbox-home"), filepath.Join(base, "real-home")
	for _, d := range []string{wd + "/docs", wd + "/apps/web/.vscode", wd + "/pkg", home + "/vsc", out + "/.aws"} {
		must(t, os.MkdirAll(d, 0o755))
	}
	for _, f := range []string{wd + "/docs/claude.md", wd + "/apps/web/.env", wd + "/secret.env", out + "/.aws/config", home + "/vsc/settings.json"} {
		must(t, os.WriteFile(f, []byte("x"), 0o644))
	}
	must(t, os.Symlink("docs/claude.md", wd+"/CLAUDE.md"))  // a protected link, target inside
	must(t, os.Symlink("../real-home/.aws", wd+"/.git"))    // a parent link, target outside
	must(t, os.Symlink(home+"/vsc", wd+"/pkg/.vscode"))     // into the sandbox HOME
	must(t, os.Symlink("secret.env", wd+"/.env"))           // a masked link
	must(t, os.Symlink("docs/missing.md", wd+"/AGENTS.md")) // dangling, inside
	sc := ScanTrees(Config{Workdir: wd, Home: "/home/u", HomeSource: home,
		Protect: []string{".git/config", ".git/hooks/", "CLAUDE.md", "AGENTS.md", ".vscode/"},
		Mask:    []string{".env"}}, OS{})
	if sc.Err != nil {
		t.Fatal(sc.Err)
	}
	got := map[string]string{}
	for _, f := range sc.Protect {
		got[f.Path] = "protect " + f.Target
		if f.Link {
			got[f.Path] += " link"
		}
	}
	for _, f := range sc.Mask {
		got[f.Path] = "mask " + f.Target
	}
	for _, m := range sc.Missing {
		got[m.Path] = "hold"
	}
	want := map[string]string{
		wd + "/CLAUDE.md":        "protect " + wd + "/CLAUDE.md link",
		wd + "/docs/claude.md":   "protect " + wd + "/docs/claude.md",
		wd + "/.git":             "protect " + wd + "/.git link",
		wd + "/pkg/.vscode":      "protect " + wd + "/pkg/.vscode link",
		home + "/vsc":            "protect /home/u/vsc",
		wd + "/apps/web/.vscode": "protect " + wd + "/apps/web/.vscode",
		wd + "/.env":             "mask " + wd + "/.env",
		wd + "/secret.env":       "mask " + wd + "/secret.env",
		wd + "/apps/web/.env":    "mask " + wd + "/apps/web/.env",
		wd + "/AGENTS.md":        "protect " + wd + "/AGENTS.md link",
		wd + "/docs/missing.md":  "hold",
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s: got %q, want %q", p, got[p], w)
		}
	}
	for p := range got {
		if strings.HasPrefix(p, out) {
			t.Errorf("the scan reached %s outside the trees", p)
		}
	}
	// A second name for a protected file refuses the start.
	must(t, os.Link(wd+"/docs/claude.md", wd+"/alias.md"))
	sc = ScanTrees(Config{Workdir: wd, Protect: []string{"CLAUDE.md"}}, OS{})
	if len(sc.Links) != 1 || sc.Links[0] != wd+"/docs/claude.md" {
		t.Errorf("Links = %v, want the link's target", sc.Links)
	}
	// A root named through a symlink inside a writable tree is refused.
	must(t, os.Symlink(out, wd+"/docs/ro"))
	if sc := ScanTrees(Config{Workdir: wd, RO: []string{wd + "/docs/ro"}}, OS{}); sc.Err == nil || !strings.Contains(sc.Err.Error(), "is a symlink inside") {
		t.Errorf("a --ro through a link in the workdir: %v", sc.Err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
