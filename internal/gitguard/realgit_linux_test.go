package gitguard

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repo drives the host's git with a HOME of its own, as the user would.
type repo struct {
	t                  *testing.T
	git                string
	dir                string // the project (workdir)
	base, home, marker string
}

func newRepo(t *testing.T, git string) *repo {
	base := t.TempDir()
	r := &repo{t: t, git: git, base: base, dir: filepath.Join(base, "proj"),
		home: filepath.Join(base, "home"), marker: filepath.Join(base, "MARKER")}
	must(t, os.MkdirAll(r.dir, 0o755))
	must(t, os.MkdirAll(r.home, 0o755))
	must(t, os.WriteFile(filepath.Join(r.home, ".gitconfig"), []byte(
		"[user]\n\tname = U\n\temail = u@example.com\n[init]\n\tdefaultBranch = main\n[protocol \"file\"]\n\tallow = always\n"), 0o644))
	return r
}

// run runs git in dir (relative to base, or absolute) and returns its output.
func (r *repo) run(dir string, args ...string) (string, error) {
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(r.dir, dir)
	}
	cmd := exec.Command(r.git, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + r.home, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0", "LANG=C"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// must runs git and fails the test if it fails.
func (r *repo) must(dir string, args ...string) {
	r.t.Helper()
	if out, err := r.run(dir, args...); err != nil {
		r.t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
}

func (r *repo) write(path, content string, mode os.FileMode) {
	r.t.Helper()
	if !filepath.IsAbs(path) {
		path = filepath.Join(r.dir, path)
	}
	must(r.t, os.MkdirAll(filepath.Dir(path), 0o755))
	must(r.t, os.WriteFile(path, []byte(content), mode))
	must(r.t, os.Chmod(path, mode))
}

func (r *repo) appendTo(path, content string) {
	r.t.Helper()
	if !filepath.IsAbs(path) {
		path = filepath.Join(r.dir, path)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	must(r.t, err)
	_, err = f.WriteString(content)
	must(r.t, err)
	must(r.t, f.Close())
}

// copyDir copies a git directory as the agent would (cp -a).
func (r *repo) copyDir(from, to string) {
	r.t.Helper()
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		r.t.Fatalf("cp -a %s %s: %v\n%s", from, to, err, out)
	}
}

// committed makes the project a repository with one commit.
func (r *repo) committed() {
	r.must(".", "init", "-q")
	r.write("a.txt", "a\n", 0o644)
	r.must(".", "add", "-A")
	r.must(".", "commit", "-q", "-m", "one")
}

// withSubmodule adds a submodule "lib" from a repository outside.
func (r *repo) withSubmodule() {
	src := filepath.Join(r.base, "libsrc")
	must(r.t, os.MkdirAll(src, 0o755))
	r.must(src, "init", "-q")
	r.write(filepath.Join(src, "l.txt"), "l\n", 0o644)
	r.must(src, "add", "-A")
	r.must(src, "commit", "-q", "-m", "lib")
	r.must(".", "submodule", "add", "-q", src, "lib")
	r.must(".", "commit", "-q", "-m", "add lib")
}

// program is the command the planted metadata runs, quoted for a config
// file: it leaves the marker.
func (r *repo) program() string { return `"touch ` + r.marker + `; false"` }

// userCommands are what the user runs in the project after the session.
var userCommands = [][]string{
	{"status"}, {"diff"}, {"log", "-p", "-1"}, {"submodule", "update"}, {"add", "-A"},
	{"commit", "-q", "-m", "after"}, {"checkout", "-q", "-b", "x"},
}

var realGitCases = []struct {
	name  string
	setup func(r *repo) // the project before the session
	plant func(r *repo) // what the sandboxed command writes
	where string        // where the user runs git: relative to the project, or <base>/...
	// bare: with its config moved aside, the directory is a bare
	// repository, where git status refuses to run.
	bare bool
}{
	{name: "commondir", setup: (*repo).committed, plant: func(r *repo) {
		r.copyDir(filepath.Join(r.dir, ".git"), filepath.Join(r.dir, "evil"))
		r.appendTo("evil/config", "[core]\n\tfsmonitor = "+r.program()+"\n")
		r.write("evil/hooks/pre-commit", "#!/bin/sh\ntouch "+r.marker+"\n", 0o755)
		r.write(".git/commondir", "../evil\n", 0o644)
	}},
	{name: "nested repository added as a gitlink", setup: func(r *repo) {
		r.committed()
		r.must(".", "init", "-q", "sub")
		r.write("sub/s.txt", "s\n", 0o644)
		r.must("sub", "add", "-A")
		r.must("sub", "commit", "-q", "-m", "sub")
		r.must(".", "add", "sub")
		r.must(".", "commit", "-q", "-m", "gitlink")
	}, plant: func(r *repo) {
		r.appendTo("sub/.git/config", "[core]\n\tfsmonitor = "+r.program()+"\n")
	}},
	{name: "the .git file of a linked worktree rewritten", setup: func(r *repo) {
		main := filepath.Join(r.base, "main")
		must(r.t, os.MkdirAll(main, 0o755))
		r.must(main, "init", "-q")
		r.write(filepath.Join(main, "m.txt"), "m\n", 0o644)
		r.must(main, "add", "-A")
		r.must(main, "commit", "-q", "-m", "main")
		must(r.t, os.Remove(r.dir))
		r.must(main, "worktree", "add", "-q", r.dir)
	}, plant: func(r *repo) {
		// The sandbox HOME is writable inside and lives outside the project.
		sandboxHome := filepath.Join(r.base, "sandbox-home")
		must(r.t, os.MkdirAll(sandboxHome, 0o755))
		r.copyDir(filepath.Join(r.base, "main", ".git"), filepath.Join(sandboxHome, "g"))
		r.appendTo(filepath.Join(sandboxHome, "g", "config"), "[core]\n\tfsmonitor = "+r.program()+"\n")
		r.write(".git", "gitdir: "+filepath.Join(sandboxHome, "g")+"\n", 0o644)
	}},
	{name: "modules/*/config", setup: func(r *repo) { r.committed(); r.withSubmodule() }, plant: func(r *repo) {
		r.appendTo(".git/modules/lib/config", "[core]\n\tfsmonitor = "+r.program()+"\n")
	}},
	{name: "modules/*/hooks", setup: func(r *repo) { r.committed(); r.withSubmodule() }, plant: func(r *repo) {
		r.must("lib", "commit", "-q", "--allow-empty", "-m", "moved on") // so that submodule update checks out
		r.write(".git/modules/lib/hooks/post-checkout", "#!/bin/sh\ntouch "+r.marker+"\n", 0o755)
	}},
	{name: "worktrees/*/commondir", setup: func(r *repo) {
		r.committed()
		r.must(".", "worktree", "add", "-q", filepath.Join(r.base, "wt2"))
	}, plant: func(r *repo) {
		r.copyDir(filepath.Join(r.dir, ".git"), filepath.Join(r.dir, "evil"))
		r.appendTo("evil/config", "[core]\n\tfsmonitor = "+r.program()+"\n")
		r.write(".git/worktrees/wt2/commondir", "../../../evil\n", 0o644)
	}, where: "<base>/wt2"},
	{name: "config.worktree", setup: func(r *repo) {
		r.committed()
		r.must(".", "config", "extensions.worktreeConfig", "true")
	}, plant: func(r *repo) {
		r.write(".git/config.worktree", "[core]\n\tfsmonitor = "+r.program()+"\n", 0o644)
	}},
	{name: "info/attributes picking the user's own filter", setup: func(r *repo) {
		r.committed()
		r.appendTo(filepath.Join(r.home, ".gitconfig"), "[filter \"tool\"]\n\tclean = \"touch "+r.marker+"; cat\"\n")
	}, plant: func(r *repo) {
		r.write(".git/info/attributes", "* filter=tool\n", 0o644)
		r.write("a.txt", "changed\n", 0o644)
	}},
	{name: "the core.hooksPath directory", setup: func(r *repo) {
		r.committed()
		r.write(".githooks/pre-commit", "#!/bin/sh\nexit 0\n", 0o755)
		r.must(".", "config", "core.hooksPath", ".githooks")
		r.must(".", "add", "-A")
		r.must(".", "commit", "-q", "-m", "hooks")
	}, plant: func(r *repo) {
		r.write(".githooks/pre-commit", "#!/bin/sh\ntouch "+r.marker+"\n", 0o755)
		r.write("a.txt", "changed\n", 0o644)
	}},
	{name: "a repository in a subdirectory that git finds from there", setup: (*repo).committed, plant: func(r *repo) {
		r.copyDir(filepath.Join(r.dir, ".git"), filepath.Join(r.dir, "tools.git"))
		r.appendTo("tools.git/config", "[core]\n\tworktree = ..\n\tfsmonitor = "+r.program()+"\n")
	}, where: "tools.git", bare: true},
	{name: "git init in a project without git", setup: func(r *repo) {
		r.write("a.txt", "a\n", 0o644)
	}, plant: func(r *repo) {
		r.must(".", "init", "-q")
		r.appendTo(".git/config", "[core]\n\tfsmonitor = "+r.program()+"\n")
	}},
}

// TestRealGit plants each case in a real repository and runs the user's git
// commands after it: without After the marker appears (the case is a real
// attack), after After it does not, and git still works.
func TestRealGit(t *testing.T) {
	git := hostGit(t)
	for _, tc := range realGitCases {
		for _, guarded := range []bool{false, true} {
			name := tc.name + "/unguarded"
			if guarded {
				name = tc.name + "/guarded"
			}
			t.Run(name, func(t *testing.T) {
				r := newRepo(t, git)
				tc.setup(r)
				g, err := Before(r.dir, "s1")
				must(t, err)
				tc.plant(r)
				var found []Finding
				if guarded {
					found, err = g.After()
					must(t, err)
				}
				where := strings.ReplaceAll(tc.where, "<base>", r.base)
				if where == "" {
					where = "."
				}
				var log []string
				for _, args := range userCommands {
					out, err := r.run(where, args...)
					log = append(log, "git "+strings.Join(args, " ")+": "+errString(err)+"\n"+out)
				}
				_, marked := os.Stat(r.marker)
				switch {
				case !guarded && marked != nil:
					t.Fatalf("the planted program did not run without the guard: the case proves nothing\n%s", strings.Join(log, "\n"))
				case guarded && marked == nil:
					t.Fatalf("the planted program ran after After, which found:\n%s\n%s", lines(found), strings.Join(log, "\n"))
				case guarded && len(found) == 0:
					t.Fatalf("After found nothing")
				}
				if guarded && !tc.bare {
					if out, err := r.run(where, "status"); err != nil {
						t.Errorf("git status after the quarantine: %v\n%s", err, out)
					}
				}
			})
		}
	}
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func lines(fs []Finding) string {
	var s []string
	for _, f := range fs {
		s = append(s, f.String())
	}
	return strings.Join(s, "\n")
}
