package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitLeavesPlaceholdersOut: git inside the sandbox neither lists the
// placeholders of missing protected paths (an empty .env, CLAUDE.md, ...)
// as untracked nor adds them with "git add -A"; a file the command writes
// is listed and added as usual; a GIT_CONFIG_COUNT the user passes in keeps
// its entries.
func TestGitLeavesPlaceholdersOut(t *testing.T) {
	requireSandbox(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is missing (scripts/test.sh installs it)")
	}
	e := newEnv(t)
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git(e.workdir, "init", "-q")
	e.write("main.go", "package main\n")
	git(e.workdir, "add", "-A")
	git(e.workdir, "commit", "-qm", "one")
	script := `git status --porcelain --untracked-files=all; echo ---
echo new >new.txt; git add -A; git diff --cached --name-only; echo ---
git config --get-all user.name`
	r := e.run("", nil, "run", "--env", "GIT_CONFIG_COUNT=1", "--env", "GIT_CONFIG_KEY_0=user.name",
		"--env", "GIT_CONFIG_VALUE_0=Kept", "--", "sh", "-c", script)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	parts := strings.Split(r.stdout, "---\n")
	if len(parts) != 3 {
		t.Fatalf("output:\n%s", r.stdout)
	}
	if parts[0] != "" {
		t.Errorf("git status inside lists:\n%s", parts[0])
	}
	want := "new.txt\n"
	if parts[1] != want {
		t.Errorf("git add -A staged:\n%swant:\n%s", parts[1], want)
	}
	if parts[2] != "Kept\n" {
		t.Errorf("the user's GIT_CONFIG entries: %q, want Kept", parts[2])
	}
	if _, err := os.Stat(filepath.Join(e.workdir, "CLAUDE.md")); err == nil {
		t.Errorf("a placeholder is left on the host")
	}
}
