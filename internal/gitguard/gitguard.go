// Package gitguard finds, after a session, the git metadata that would make
// the user's own git run a program the sandboxed command chose, and moves it
// aside before the user's next git status.
//
// Protecting .git/config and .git/hooks is not enough: git also takes its
// configuration and hooks from a .git/commondir that names another
// directory, from the gitdir named in a ".git" file, from the git directory
// of every submodule (.git/modules/*) and linked worktree
// (.git/worktrees/*), from config.worktree, from files that config includes,
// from the directory core.hooksPath names, and from every nested repository
// below the project (git status runs the fsmonitor of a submodule's
// configuration; a directory holding HEAD, objects and refs is a bare
// repository to a git started inside it). Some of these cannot be made
// read-only at start: a missing commondir cannot get a placeholder (git
// refuses an empty one), and nested repositories are wherever the command
// puts them. So the supervisor checks them all on the host once the sandbox
// is gone:
//
//	g, err := gitguard.Before(workdir, sessionID) // before the command starts
//	// ... the sandbox runs and is gone ...
//	findings, err := g.After()                   // one Finding per thing moved aside
//
// Before records the git metadata of the project's own repository (its
// .git, the gitdir a ".git" file names, modules, worktrees, included files,
// the core.hooksPath directory), and the time. After walks the whole
// workdir for git directories and ".git" entries, without following a
// symlink anywhere (every path is resolved with package beneath), and
// judges what changed:
//
//   - a config file (config, config.worktree, an included file) with a key
//     that is not on a short list of inert keys (user.name, remote URLs of
//     ordinary schemes, branch tracking, core format keys, ...): a key that
//     runs a program (core.fsmonitor, core.hooksPath, core.sshCommand,
//     filter and diff drivers, credential helpers, aliases, includes,
//     url.*.insteadOf, submodule.*.update = !cmd, ...) or any key this
//     package does not know; a file it cannot parse;
//   - a commondir (except a linked worktree's "../.."), a ".git" file that
//     names a directory outside the project, a changed top-level ".git";
//   - an executable file or a symlink in a hooks directory, other than a
//     "*.sample";
//   - info/attributes naming a filter, diff or merge driver; a rebase or
//     sequencer todo list with exec lines; a legacy remotes/ or branches/
//     file with a URL that runs a program;
//   - a symlink where git metadata should be (.git, config, hooks, info,
//     modules, ...): git follows it, stockade does not.
//
// Only what changed during the session counts: a user's own core.fsmonitor
// that was there before is left alone. Before records the project's
// repository and every nested repository the planner's scan met at start;
// what After finds in a git directory that was not recorded is judged by
// its content alone (change times say nothing: a directory renamed into
// place keeps those of its files). A config file is judged key by key
// against its content before the session.
//
// What is found is renamed in place, with rename(2) and RENAME_NOREPLACE,
// to "<name>.stockade-quarantine-<session>", a name git never reads; when
// Before kept the file's earlier content, that is put back. Nothing is
// deleted. Each Finding says what was found (file, key, value), why it
// matters, where it went and how to undo it.
//
// gitguard never runs git or any other program. Linux only: elsewhere
// Before returns ErrNotSupported.
package gitguard

import (
	"errors"
	"fmt"
)

// ErrNotSupported is returned by Before on systems other than Linux.
var ErrNotSupported = errors.New("checking git metadata is not supported on this system")

// QuarantineInfix is what the name of a moved-aside file has between its
// old name and the session: config.stockade-quarantine-<session>.
const QuarantineInfix = ".stockade-quarantine-"

// Finding is one thing in the git metadata that would run a program on the
// host, or could not be checked.
type Finding struct {
	Path string `json:"path"` // the host path of what was found
	What string `json:"what"` // what it is: a key and value, a hook, a pointer
	Why  string `json:"why"`  // what git would do with it
	// Moved is where it is now ("" if it was not moved); Restored says that
	// the content from before the session is back at Path.
	Moved    string `json:"moved,omitempty"`
	Restored bool   `json:"restored,omitempty"`
	// Err is why it could not be moved aside; it is still in place.
	Err error `json:"-"`
}

// Quarantined reports whether the thing was moved aside.
func (f Finding) Quarantined() bool { return f.Moved != "" }

// String is the line for the user, without the "stockade: " prefix:
//
//	QUARANTINED: /p/.git/config.worktree: core.fsmonitor = "x" (runs a program at every git status, ...); moved to ...; to undo: mv ...
func (f Finding) String() string {
	return fmt.Sprintf("%s: %s: %s (%s); %s", f.Verdict(), f.Path, f.What, f.Why, f.Action())
}

// Verdict is QUARANTINED, NOT QUARANTINED (moving it failed) or NOT
// CHECKED.
func (f Finding) Verdict() string {
	switch {
	case f.Moved != "":
		return "QUARANTINED"
	case f.Err != nil:
		return "NOT QUARANTINED"
	}
	return "NOT CHECKED"
}

// Action says what was done and what the user may do.
func (f Finding) Action() string {
	switch {
	case f.Moved != "" && f.Restored:
		return fmt.Sprintf("moved to %s and the version from before the session put back; to undo: mv '%s' '%s'", f.Moved, f.Moved, f.Path)
	case f.Moved != "":
		return fmt.Sprintf("moved to %s; to undo: mv '%s' '%s'", f.Moved, f.Moved, f.Path)
	case f.Err != nil:
		return fmt.Sprintf("moving it aside failed (%v): remove it before you run git there", f.Err)
	}
	return "review it before you run git there"
}
