package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitConfig: --gitconfig gives the command the user's identity and git
// aliases, read-only, and none of the keys that hold a credential, run a
// program or include a file; it is a printed loosening recorded in the
// audit log; the next run without it has no identity; a project file
// cannot ask for it.
func TestGitConfig(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	inc := e.write(filepath.Join(e.home, ".gitconfig-inc"), "[user]\n\temail = jo@example.com\n[core]\n\tpager = MARK-pager-inc\n")
	e.write(filepath.Join(e.home, ".gitconfig"), `[user]
	name = Jo Tester
	signingKey = MARK-signingkey
[include]
	path = `+inc+`
[core]
	pager = MARK-pager
	fsmonitor = MARK-fsmonitor
	sshCommand = MARK-ssh
	hooksPath = MARK-hooks
	editor = MARK-editor
[credential]
	helper = MARK-helper
[credential "https://example.com"]
	helper = !MARK-helper-url
[http]
	extraHeader = Authorization: Bearer MARK-token
[url "https://MARK-token@github.com/"]
	insteadOf = https://github.com/
[filter "lfs"]
	clean = MARK-clean
	smudge = MARK-smudge
[diff]
	external = MARK-diff
[gpg]
	program = MARK-gpg
[alias]
	co = checkout
	sh = !MARK-shell
`)
	script := `git config user.name; git config user.email; git config --global --list; git config --show-origin --list | grep -c MARK
git config --global user.name Evil 2>/dev/null && echo CHANGED; echo x >>$HOME/.gitconfig 2>/dev/null && echo WROTE; true`
	r := e.run("", nil, "run", "--gitconfig", "--", "sh", "-c", script)
	if r.code != 0 {
		t.Fatalf("run --gitconfig: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	want := "Jo Tester\njo@example.com\nuser.name=Jo Tester\nuser.email=jo@example.com\nalias.co=checkout\n0\n"
	if r.stdout != want {
		t.Errorf("inside:\n%s\nwant:\n%s", r.stdout, want)
	}
	if !strings.Contains(r.stderr, "LOOSENED: gitconfig: your git identity") {
		t.Errorf("no loosening printed:\n%s", r.stderr)
	}
	id := e.list(true)[0].ID
	if logs := e.run("", nil, "logs", "-s", id).stdout; !strings.Contains(logs, "gitconfig: your git identity") {
		t.Errorf("the audit log does not record the loosening:\n%s", logs)
	}
	// The copy was staged, never written to the sandbox HOME on the host.
	homes, _ := filepath.Glob(filepath.Join(e.home, ".local/share/stockade/project-home/run/*/.gitconfig"))
	for _, h := range homes {
		if b, _ := os.ReadFile(h); len(b) != 0 {
			t.Errorf("the sandbox HOME keeps the copy in %s:\n%s", h, b)
		}
	}
	if r := e.run("", nil, "run", "--log-level", "error", "--", "sh", "-c", "git config user.name || echo NONE"); r.stdout != "NONE\n" {
		t.Errorf("a run without --gitconfig: %q\n%s", r.stdout, r.stderr)
	}

	e.write(".stockade.json", `{"gitconfig": true}`)
	if r := e.run("", nil, "run", "--", "true"); r.code == 0 || !strings.Contains(r.stderr, "gitconfig") {
		t.Errorf("a project file asked for gitconfig: exit %d\n%s", r.code, r.stderr)
	}
	os.Remove(filepath.Join(e.workdir, ".stockade.json"))

	// A directory where the copy goes (the command's, from an earlier
	// session): one line that names it, nothing run.
	for _, h := range homes {
		os.Remove(h)
		os.Mkdir(h, 0o755)
		r := e.run("", nil, "run", "--gitconfig", "--", "sh", "-c", "echo RAN")
		if r.code != 125 || strings.Contains(r.stdout, "RAN") || !strings.Contains(r.stderr, h+" is a directory") {
			t.Errorf("--gitconfig over a directory: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		os.Remove(h)
	}
	if len(homes) != 1 {
		t.Errorf("sandbox HOMEs with a .gitconfig: %v", homes)
	}

	// Nothing to hand over: one line that says so, nothing run.
	os.Remove(filepath.Join(e.home, ".gitconfig"))
	if r := e.run("", nil, "run", "--gitconfig", "--", "sh", "-c", "echo RAN"); r.code == 0 || strings.Contains(r.stdout, "RAN") ||
		!strings.Contains(r.stderr, "--gitconfig") {
		t.Errorf("--gitconfig without a git config: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
