package gitguard

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// The checks of one git directory and what it names. Each one looks at a
// path with item or at, and, unless recording, judges what changed and
// quarantines what would run a program.

// Why for the findings below.
const (
	whySymlink  = "git follows it; stockade does not check where it leads"
	whyNotFile  = "git reads this as a file: a reader blocks or fails on anything else"
	whyPointer  = "git uses the repository it names: its configuration and hooks"
	whyHook     = "git runs it at commit, checkout, merge, rebase, push and more"
	whyBigFile  = "too large to check (over 1 MiB)"
	whyBadParse = "git refuses the file, so stockade cannot tell what it would set"
	maxDepth    = 1000 // directory levels below the workdir; deeper is not checked
	maxIncludes = 10   // git's own limit on nested includes
	maxNesting  = 32   // git directories named by git directories (modules, commondir, ...)
)

// dotGit checks the entry named .git at rel: a git directory, a file
// naming one, or a symlink to one.
func (c *checker) dotGit(rel string) {
	real, cur, prev, changed := c.at(rel, true)
	switch cur.kind {
	case directory:
		c.gitdir(real, 0)
	case regular:
		c.pointer(real, cur, prev, changed)
	case symlink:
		if changed {
			c.quarantine(real, prev, Finding{What: "a symlink to " + cur.link, Why: whySymlink})
		}
	case other:
		if changed {
			c.quarantine(real, prev, Finding{What: "not a file or directory", Why: whyNotFile})
		}
	}
}

// pointer checks a ".git" file. A new or changed one that names a
// directory outside the workdir is moved aside (stockade cannot check what
// is there, and the sandbox may have written it: its HOME, a --rw tree); so
// is any change to the project's own. One naming a directory inside is
// fine if that directory is.
func (c *checker) pointer(rel string, cur, prev *state, changed bool) {
	if cur.big {
		if changed {
			c.quarantine(rel, prev, Finding{What: "a .git file", Why: whyBigFile})
		}
		return
	}
	target, ok := parsePointer(cur.data)
	if !ok {
		if changed {
			c.quarantine(rel, prev, Finding{What: "a .git file that is not \"gitdir: <path>\"", Why: whyPointer})
		}
		return
	}
	what := fmt.Sprintf("gitdir: %s", target)
	dir, in := inside(c.g.workdir, path.Dir(rel), target)
	switch {
	case changed && !in:
		c.quarantine(rel, prev, Finding{What: what + ", outside the project", Why: whyPointer})
	case changed && rel == ".git" && prev != nil && prev.kind != absent:
		c.quarantine(rel, prev, Finding{What: what + ", changed", Why: whyPointer})
	case in:
		if real, ok := c.dirAt(dir); ok {
			c.gitdir(real, 0)
		} else if changed {
			c.quarantine(rel, prev, Finding{What: what + ", through a symlink or to a non-directory", Why: whyPointer})
		}
	}
}

// dirAt resolves rel component by component with at: true with the real
// path when every component is a directory.
func (c *checker) dirAt(rel string) (string, bool) {
	real := "."
	for _, name := range strings.Split(rel, "/") {
		r, cur, _, _ := c.at(join(real, name), false)
		if cur.kind != directory {
			return "", false
		}
		real = r
	}
	return real, true
}

// subdir returns the real path of the directory rel of a git directory;
// a symlink that is new there is quarantined.
func (c *checker) subdir(rel string) (string, bool) {
	real, cur, prev, changed := c.at(rel, false)
	switch {
	case cur.kind == directory:
		return real, true
	case cur.kind == symlink && changed:
		c.quarantine(real, prev, Finding{What: "a symlink to " + cur.link + " where git keeps metadata", Why: whySymlink})
	}
	return "", false
}

// gitdir checks the git directory rel and everything it names.
func (c *checker) gitdir(rel string, depth int) {
	if c.seen["dir:"+rel] || depth > maxNesting {
		return
	}
	c.seen["dir:"+rel] = true
	cfg := c.config(join(rel, "config"), 0)
	cfg = append(cfg, c.config(join(rel, "config.worktree"), 0)...)
	c.commondir(rel, depth)
	c.hooks(join(rel, "hooks"))
	for _, e := range cfg {
		if e.Key == "core.hookspath" && e.HasValue {
			if hp, ok := inside(c.g.workdir, c.worktreeOf(rel, cfg), e.Value); ok {
				c.hooks(hp)
			}
		}
	}
	if d, ok := c.subdir(join(rel, "info")); ok {
		c.attributes(join(d, "attributes"))
	}
	c.remotes(join(rel, "remotes"), false)
	c.remotes(join(rel, "branches"), true)
	if d, ok := c.subdir(join(rel, "rebase-merge")); ok {
		c.todo(join(d, "git-rebase-todo"))
	}
	if d, ok := c.subdir(join(rel, "sequencer")); ok {
		c.todo(join(d, "todo"))
	}
	c.modules(join(rel, "modules"), depth)
	if d, ok := c.subdir(join(rel, "worktrees")); ok {
		for _, e := range c.list(d) {
			if e.kind == directory {
				c.gitdir(join(d, e.name), depth+1)
			}
		}
	}
}

// worktreeOf is where a relative core.hooksPath of the git directory g
// starts: the top of its work tree.
func (c *checker) worktreeOf(g string, cfg []entry) string {
	if path.Base(g) == ".git" {
		return path.Dir(g)
	}
	for _, e := range cfg {
		if e.Key == "core.worktree" && e.HasValue {
			if wt, ok := inside(c.g.workdir, g, e.Value); ok {
				return wt
			}
		}
	}
	return g
}

// modules checks the submodule git directories below rel; a submodule's
// name may hold slashes, so directories that are not git directories are
// descended into.
func (c *checker) modules(rel string, depth int) {
	d, ok := c.subdir(rel)
	if !ok || depth > maxNesting {
		return
	}
	for _, e := range c.list(d) {
		if e.kind != directory {
			continue
		}
		if sub := join(d, e.name); c.looksLikeGitdir(sub) {
			c.gitdir(sub, depth+1)
		} else {
			c.modules(sub, depth+1)
		}
	}
}

// looksLikeGitdir: below .git/modules, a HEAD, a config or a commondir is
// enough to check a directory as a git directory.
func (c *checker) looksLikeGitdir(rel string) bool {
	for _, e := range c.list(rel) {
		switch e.name {
		case "HEAD", "config", "commondir":
			return true
		}
	}
	return false
}

// isGitdir is git's is_git_directory, from a listing: HEAD, and objects/
// and refs/ or a commondir. git uses such a directory as a bare repository
// when started inside it.
func isGitdir(ents []dirent) bool {
	head, objects, refs, common := false, false, false, false
	for _, e := range ents {
		switch e.name {
		case "HEAD":
			head = true
		case "objects":
			objects = e.kind == directory
		case "refs":
			refs = e.kind == directory
		case "commondir":
			common = true
		}
	}
	return head && (objects && refs || common)
}

// othersUnreadable reports whether err is the refusal to read a directory
// of another user (a database volume, say) that the user's git cannot
// enter either: it holds nothing git would run. One the user may still
// search (x without r: a container gave it another id, mode 0711) is not:
// git reaches a repository below it by name, and it is a finding.
func (c *checker) othersUnreadable(rel string, err error) bool {
	if !errors.Is(err, unix.EACCES) {
		return false
	}
	st, lerr := c.root.Lstat(rel)
	if lerr != nil || int(st.Uid) == os.Geteuid() {
		return false
	}
	return unix.Faccessat(c.root.Fd(), rel, unix.X_OK, unix.AT_EACCESS|unix.AT_SYMLINK_NOFOLLOW) != nil
}

// list reads the directory rel; an error is a finding.
func (c *checker) list(rel string) []dirent {
	if c.buf == nil {
		c.buf = make([]byte, 32<<10)
	}
	ents, err := list(c.root, rel, c.buf)
	if err != nil && !c.othersUnreadable(rel, err) {
		c.unchecked(rel, err)
	}
	return ents
}
