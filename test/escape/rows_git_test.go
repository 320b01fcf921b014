package escape

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/stockade-dev/stockade/internal/mount"
)

// gitRows: git metadata that would make the user's own git run a program of
// the sandboxed command's choosing after the session (issue 9, section 2).
// Each row plants it the way an agent would, and its check then runs the
// user's git commands on the host, as the runner, in the project: the
// planted program must not leave its marker. Whether the plant is refused
// inside (a protected path) or moved aside after the run (gitguard) does
// not matter to the row, so every plant ends with "echo done".
var gitRows = []row{
	// .git/commondir: git takes config and hooks from the directory it names.
	{name: "git_commondir", setup: gitRepo(nil),
		args: sh(`cp -a {work}/.git {work}/evil && ` + monitor("{work}/evil/config") +
			` && echo ../evil > {work}/.git/commondir; echo done`),
		want: "done", check: gitStaysInert(".")},
	// A nested repository in the index as a gitlink: git status runs the
	// fsmonitor of its configuration.
	{name: "git_nested_gitlink", setup: gitRepo(nestedRepo),
		args: sh(monitor("{work}/sub/.git/config") + `; echo done`),
		want: "done", check: gitStaysInert(".")},
	// The project is a linked worktree, .git is a file: rewritten to name a
	// git directory in the sandbox HOME, which the sandbox may write.
	{name: "git_dotgit_file", setup: gitRepo(separateGitdir),
		args: sh(`mkdir -p $HOME/g/objects $HOME/g/refs/heads && echo 'ref: refs/heads/main' > $HOME/g/HEAD && ` +
			monitor("$HOME/g/config") + ` && echo 'gitdir: {sandboxhome}/g' > {work}/.git; echo done`),
		want: "done", check: gitStaysInert(".")},
	// A submodule's git directory: git status runs its fsmonitor.
	{name: "git_modules_config", setup: gitRepo(submodule),
		args: sh(monitor("{work}/.git/modules/lib/config") + `; echo done`),
		want: "done", check: gitStaysInert(".")},
	// A linked worktree's commondir, rewritten to a directory the command
	// wrote: git in that worktree takes its configuration from there.
	{name: "git_worktree_commondir", setup: gitRepo(linkedWorktree),
		args: sh(`cp -a {work}/.git {work}/evil && ` + monitor("{work}/evil/config") +
			` && echo ../../../evil > {work}/.git/worktrees/wt2/commondir; echo done`),
		want: "done", check: gitStaysInert("../wt2")},
	// config.worktree, read when extensions.worktreeConfig is set.
	{name: "git_config_worktree", setup: gitRepo(worktreeConfig),
		args: sh(monitor("{work}/.git/config.worktree") + `; echo done`),
		want: "done", check: gitStaysInert(".")},
	// info/attributes picking a driver of the user's (here: one whose clean
	// command leaves the marker, as a stand-in for the user's own program).
	{name: "git_info_attributes", setup: gitRepo(nil),
		args: sh(`echo '* filter=tool' > {work}/.git/info/attributes; echo changed > {work}/main.c; echo done`),
		want: "done", check: gitStaysInert(".")},
	// The directory core.hooksPath names is in the work tree.
	{name: "git_hookspath_dir", setup: gitRepo(hooksPathDir),
		args: sh(`printf '#!/bin/sh\ntouch {spare}/git-marker\n' > {work}/.githooks/pre-commit; echo changed > {work}/main.c; echo done`),
		want: "done", check: gitStaysInert(".")},
	// A repository made in the session below the project: git status there
	// runs its fsmonitor.
	{name: "git_new_nested_repo", setup: gitRepo(nil),
		args: sh(`mkdir -p {work}/tools/.git/objects {work}/tools/.git/refs/heads && echo 'ref: refs/heads/main' > {work}/tools/.git/HEAD && ` +
			monitor("{work}/tools/.git/config") + `; echo done`),
		want: "done", check: gitStaysInert("tools")},
	// The host's info/exclude, where stockade keeps the placeholders of
	// running sessions out of git status, replaced by a symlink to a file
	// of the user's that holds a block: at the end, stockade neither
	// reads it (its content would land in the project) nor writes through
	// it; it is left alone.
	{name: "git_exclude_symlink", setup: gitRepo(excludeVictim),
		args: sh(`rm -f {work}/.git/info/exclude && ln -s {spare}/victim {work}/.git/info/exclude; echo done`),
		want: "done", check: excludeLeftAlone(".git/info/exclude")},
	// The spare stockade writes the new exclude into, planted as a
	// symlink to a file of the user's: replaced, never written through
	// (the fixture's snapshot of {spare} says so).
	{name: "git_exclude_spare_symlink", setup: gitRepo(excludeVictim),
		args: sh(`ln -sf {spare}/victim {work}/.git/info/exclude.stockade-spare; echo done`),
		want: "done", check: excludeLeftAlone("")},
	// A file of another user in info (one the command may rename but
	// not read or write: "nobody"'s for root, root's for the user; info
	// is a mount of its own inside, so it must be there already) moved
	// to the host's info/exclude: a root supervisor would write it out
	// again, block and all, as a file of that owner; it is left as it is
	// (its owner is not the info directory's).
	{name: "git_exclude_foreign_owner", needsRoot: true, setup: gitRepo(foreignExclude),
		args: sh(`mv -f {work}/.git/info/theirs {work}/.git/info/exclude && echo done`),
		want: "done", check: foreignExcludeUnchanged},
	// A project file (a stranger's repository) protects a name with a
	// line break, "x\n/notes/todo.txt", under a directory "x\n/notes" it
	// ships: the placeholder's line in the host repository's block must
	// not become two, the second a pattern anchored at the repository's
	// top ("/notes/todo.txt"), which in a monorepo whose subdirectory is
	// the workdir hides a path outside the project from the user's git
	// status. The command reads the block while it runs, and the exclude
	// file of its own git.
	{name: "git_exclude_line_break", setup: gitRepo(lineBreakProtect),
		args: sh(`grep -qx '/notes/todo.txt' {work}/.git/info/exclude /run/stockade/git-exclude && echo INJECTED || echo clean`),
		want: "clean"},
}

// foreignContent is a file of another user's that looks like an exclude
// with stockade's block, which the end of the run would take out.
const foreignContent = mount.ExcludeBegin + "\n/CLAUDE.md\n" + mount.ExcludeEnd + "\n# another user's exclude\n/theirs\n"

func foreignExclude(fx *fixture) error {
	p := filepath.Join(fx.work, ".git", "info", "theirs")
	if err := fx.writeFile("work/.git/info/theirs", foreignContent, 0o600); err != nil {
		return err
	}
	if fx.keepOwner == nil {
		fx.keepOwner = map[string]bool{}
	}
	fx.keepOwner[p] = true
	owner := 0
	if fx.ru.uid == 0 {
		owner = 65534
	}
	return os.Chown(p, owner, owner)
}

// foreignExcludeUnchanged: the file moved to info/exclude is there as it
// was, its content and owner, and no other file of info holds it.
func foreignExcludeUnchanged(fx *fixture) error {
	ex := filepath.Join(fx.work, ".git", "info", "exclude")
	b, err := os.ReadFile(ex)
	if err != nil {
		return err
	}
	if string(b) != foreignContent {
		return fmt.Errorf("the other user's file moved to info/exclude was rewritten:\n%s", b)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(ex, &st); err != nil {
		return err
	}
	if want := map[bool]uint32{true: 65534, false: 0}[fx.ru.uid == 0]; st.Uid != want {
		return fmt.Errorf("info/exclude is now uid %d's, want %d's", st.Uid, want)
	}
	return nil
}

func lineBreakProtect(fx *fixture) error {
	if err := os.MkdirAll(filepath.Join(fx.work, "x\n", "notes"), 0o755); err != nil {
		return err
	}
	return fx.writeFile("work/.stockade.json", `{"protect": ["x\n/notes/todo.txt"]}`+"\n", 0o644)
}

// victimSecret is in a file of the user's outside the project that looks
// like an info/exclude with stockade's block.
const victimSecret = "# the user's secret\n"

func excludeVictim(fx *fixture) error {
	return fx.writeFile("spare/victim", mount.ExcludeBegin+"\n/CLAUDE.md\n"+mount.ExcludeEnd+"\n"+victimSecret, 0o644)
}

// excludeLeftAlone checks that the workdir's link, if any, is still the
// symlink the command made, and that nothing in .git/info holds what the
// user's file outside the project holds.
func excludeLeftAlone(link string) func(fx *fixture) error {
	return func(fx *fixture) error {
		if link != "" {
			if fi, err := os.Lstat(filepath.Join(fx.work, link)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				return fmt.Errorf("%s is no longer the symlink the command made (%v)", link, err)
			}
		}
		info := filepath.Join(fx.work, ".git", "info")
		ents, err := os.ReadDir(info)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if !e.Type().IsRegular() {
				continue
			}
			if b, _ := os.ReadFile(filepath.Join(info, e.Name())); strings.Contains(string(b), victimSecret) {
				return fmt.Errorf("%s holds the content of a file outside the project:\n%s", e.Name(), b)
			}
		}
		return nil
	}
}

// monitor is the shell command that adds a core.fsmonitor leaving the
// marker to the config file path.
func monitor(path string) string {
	return `printf '[core]\n\tfsmonitor = "touch {spare}/git-marker"\n' >> ` + path
}

// gitMarker is where the planted programs leave their mark (in {spare}).
func gitMarker(fx *fixture) string { return filepath.Join(fx.spare, "git-marker") }

// userGitCommands are what the user runs in the project after the session.
var userGitCommands = [][]string{
	{"status"}, {"diff"}, {"log", "-p", "-1"}, {"submodule", "update"}, {"add", "-A"},
	{"commit", "-q", "-m", "after the session"}, {"checkout", "-q", "-b", "after"},
}

// gitRepo makes the fixture's workdir a repository with one commit (git as
// root, before the fixture is handed to the runner), then runs more.
func gitRepo(more func(fx *fixture) error) func(fx *fixture) error {
	return func(fx *fixture) error {
		if err := setupGit(fx, fx.work, "init", "-q"); err != nil {
			return err
		}
		if err := setupGit(fx, fx.work, "add", "-A"); err != nil {
			return err
		}
		if err := setupGit(fx, fx.work, "commit", "-q", "-m", "fixture"); err != nil {
			return err
		}
		if more != nil {
			return more(fx)
		}
		return nil
	}
}

// setupGit runs git as the test (root) with no user or system config.
func setupGit(fx *fixture, dir string, args ...string) error {
	args = append([]string{"-c", "user.name=fixture", "-c", "user.email=fixture@example.invalid",
		"-c", "protocol.file.allow=always", "-c", "init.defaultBranch=main", "-c", "safe.directory=*"}, args...)
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + fx.base, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return nil
}

func nestedRepo(fx *fixture) error {
	sub := filepath.Join(fx.work, "sub")
	if err := fx.writeFile("work/sub/s.txt", "s\n", 0o644); err != nil {
		return err
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "sub"}} {
		if err := setupGit(fx, sub, args...); err != nil {
			return err
		}
	}
	if err := setupGit(fx, fx.work, "add", "sub"); err != nil {
		return err
	}
	return setupGit(fx, fx.work, "commit", "-q", "-m", "gitlink")
}

// separateGitdir moves the git directory out of the project, leaving a
// .git file, as git init --separate-git-dir and linked worktrees do.
func separateGitdir(fx *fixture) error {
	real := filepath.Join(fx.base, "realgit")
	if err := os.Rename(filepath.Join(fx.work, ".git"), real); err != nil {
		return err
	}
	return fx.writeFile("work/.git", "gitdir: "+real+"\n", 0o644)
}

func submodule(fx *fixture) error {
	src := filepath.Join(fx.base, "libsrc")
	if err := fx.writeFile("libsrc/l.txt", "l\n", 0o644); err != nil {
		return err
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "lib"}} {
		if err := setupGit(fx, src, args...); err != nil {
			return err
		}
	}
	if err := setupGit(fx, fx.work, "submodule", "add", "-q", src, "lib"); err != nil {
		return err
	}
	return setupGit(fx, fx.work, "commit", "-q", "-m", "lib")
}

func linkedWorktree(fx *fixture) error {
	return setupGit(fx, fx.work, "worktree", "add", "-q", filepath.Join(fx.base, "wt2"))
}

func worktreeConfig(fx *fixture) error {
	return setupGit(fx, fx.work, "config", "extensions.worktreeConfig", "true")
}

func hooksPathDir(fx *fixture) error {
	if err := fx.writeFile("work/.githooks/pre-commit", "#!/bin/sh\nexit 0\n", 0o755); err != nil {
		return err
	}
	if err := setupGit(fx, fx.work, "config", "core.hooksPath", ".githooks"); err != nil {
		return err
	}
	if err := setupGit(fx, fx.work, "add", "-A"); err != nil {
		return err
	}
	return setupGit(fx, fx.work, "commit", "-q", "-m", "hooks")
}

// gitStaysInert runs the user's git commands in the project (dir relative
// to the workdir) as the runner, with a HOME of its own whose .gitconfig
// defines a filter driver "tool" that leaves the marker (the user's own
// program, which planted attributes could pick), and fails if the marker
// appeared.
func gitStaysInert(dir string) func(fx *fixture) error {
	return func(fx *fixture) error {
		home := filepath.Join(fx.base, "githome")
		if err := fx.writeFile("githome/.gitconfig", fmt.Sprintf("[user]\n\tname = user\n\temail = user@example.invalid\n"+
			"[protocol \"file\"]\n\tallow = always\n[filter \"tool\"]\n\tclean = \"touch %s; cat\"\n", gitMarker(fx)), 0o644); err != nil {
			return err
		}
		if err := fx.chown(); err != nil {
			return err
		}
		var log []string
		for _, args := range userGitCommands {
			cmd := exec.Command("git", args...)
			cmd.Dir = filepath.Join(fx.work, dir)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "LANG=C"}
			if fx.ru.cred != nil {
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: fx.ru.cred}
			}
			out, err := cmd.CombinedOutput()
			log = append(log, fmt.Sprintf("git %s: %v\n%s", strings.Join(args, " "), err, out))
		}
		if _, err := os.Stat(gitMarker(fx)); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("the planted program ran on the host at the user's git (%s exists)\n%s", gitMarker(fx), strings.Join(log, "\n"))
		}
		return nil
	}
}
