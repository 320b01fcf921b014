package gitguard

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/stockade-dev/stockade/internal/beneath"
	"golang.org/x/sys/unix"
)

// Guard is the git metadata of a project as it was before a session.
type Guard struct {
	// AllowHooks leaves hooks directories alone (--allow-hooks): the user
	// let the command install hooks. Set it before After.
	AllowHooks bool

	workdir string // absolute, clean
	id      string
	before  map[string]*state // paths Before looked at, relative to workdir
	kept    int64             // bytes of content in before
}

// Before records the git metadata of the project's repository in workdir,
// and of the nested repositories whose .git entries (relative paths) are
// given:
// its .git (or the gitdir its ".git" file names, when that is inside the
// workdir), the modules and worktrees there, the files its configuration
// includes and its core.hooksPath directory, when inside the workdir. It
// must run before the sandboxed command starts. id names the session in
// the names of quarantined files. With an error about a path below the
// workdir (one that could not be read), the Guard is still returned, and
// After works: it reports that path again if it still cannot read it.
func Before(workdir, id string, nested ...string) (*Guard, error) {
	abs, err := filepath.Abs(workdir)
	if err != nil {
		return nil, fmt.Errorf("checking git metadata of %s: %w", workdir, err)
	}
	g := &Guard{workdir: filepath.Clean(abs), id: id, before: map[string]*state{}}
	root, err := beneath.OpenRoot(g.workdir)
	if err != nil {
		return nil, fmt.Errorf("checking git metadata of %s: %w", workdir, err)
	}
	defer root.Close()
	c := &checker{g: g, root: root, recording: true, seen: map[string]bool{}}
	c.dotGit(".git")
	if isGitdir(c.list(".")) {
		c.gitdir(".", 0)
	}
	// The nested repositories that exist at start (the planner's scan found
	// their .git): what After finds in a git directory that was not
	// recorded is judged by its content, whatever its change time says.
	for _, rel := range nested {
		if rel != ".git" && filepath.Base(rel) == ".git" && !strings.HasPrefix(rel, "../") {
			c.dotGit(rel)
		}
	}
	if len(c.findings) > 0 { // only errors while recording: nothing is judged
		return g, fmt.Errorf("recording git metadata: %s", c.findings[0].What)
	}
	return g, nil
}

// After checks every git directory below the workdir and moves aside what
// the session put there that would run a program at the user's next git
// command. It runs on the host once the sandbox is gone. The error is
// about the workdir as a whole (it could not be opened); what could not be
// checked below it is a Finding.
func (g *Guard) After() ([]Finding, error) {
	root, err := beneath.OpenRoot(g.workdir)
	if err != nil {
		return nil, fmt.Errorf("checking git metadata of %s: %w", g.workdir, err)
	}
	defer root.Close()
	c := &checker{g: g, root: root, seen: map[string]bool{}}
	c.walk(".", 0)
	return c.findings, nil
}

// checker looks at one workdir, for Before (recording) or After (judging).
type checker struct {
	g         *Guard
	root      *beneath.Root
	recording bool
	seen      map[string]bool // git directories and config files looked at
	findings  []Finding
	buf       []byte // for getdents
}

// item looks at rel and says whether it changed during the session. While
// recording, it stores what it saw and nothing has changed.
func (c *checker) item(rel string, withData bool) (cur, prev *state, changed bool) {
	cur, err := look(c.root, rel, withData)
	if err != nil {
		c.unchecked(rel, err)
		return &state{kind: absent}, nil, false
	}
	if c.recording {
		if _, ok := c.g.before[rel]; !ok {
			c.keep(rel, cur)
		}
		return cur, nil, false
	}
	prev = c.g.before[rel]
	switch {
	case prev != nil:
		changed = !same(prev, cur)
	case cur.kind == absent:
	default:
		// Not recorded at start: new, or moved in (a directory renamed
		// into place keeps the change times of what is in it).
		changed = true
	}
	return cur, prev, changed
}

func (c *checker) keep(rel string, s *state) {
	k := *s
	if c.g.kept+int64(len(k.data)) > maxKept {
		k.data, k.big = nil, k.kind == regular
	}
	c.g.kept += int64(len(k.data))
	c.g.before[rel] = &k
}

// at is item for a path git reaches by following symlinks: a symlink that
// was there before the session, and leads to a path inside the workdir, is
// followed (lexically, then looked at without following anything), up to
// 8 times. A new or changed symlink is returned as it is, for the caller
// to judge; so is one that leads outside.
func (c *checker) at(rel string, withData bool) (real string, cur, prev *state, changed bool) {
	for range 8 {
		cur, prev, changed = c.item(rel, withData)
		if cur.kind != symlink || changed {
			return rel, cur, prev, changed
		}
		next, ok := inside(c.g.workdir, path.Dir(rel), cur.link)
		if !ok {
			return rel, cur, prev, changed
		}
		rel = next
	}
	return rel, cur, prev, changed
}

// quarantine renames rel to a name git does not read, puts back the
// content from before the session when Before kept it, and records the
// findings about rel.
func (c *checker) quarantine(rel string, prev *state, found ...Finding) (restored bool) {
	dst, err := c.moveAside(rel)
	if err == nil && prev != nil && prev.kind == regular && prev.data != nil {
		restored = c.putBack(rel, prev) == nil
	}
	for _, f := range found {
		f.Path = c.root.Join(rel)
		if err != nil {
			f.Err = err
		} else {
			f.Moved, f.Restored = c.root.Join(dst), restored
		}
		c.findings = append(c.findings, f)
	}
	return restored
}

func (c *checker) moveAside(rel string) (string, error) {
	base := rel + QuarantineInfix + c.g.id
	dst := base
	for n := 2; ; n++ {
		err := c.root.Rename(rel, dst, unix.RENAME_NOREPLACE)
		if !errors.Is(err, unix.EEXIST) || n > 100 {
			return dst, err
		}
		dst = base + "-" + strconv.Itoa(n)
	}
}

// putBack creates rel with the content and mode it had before.
func (c *checker) putBack(rel string, prev *state) error {
	f, err := c.root.OpenFile(rel, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, prev.mode&0o777)
	if err != nil {
		return err
	}
	_, err = f.Write(prev.data)
	if err == nil {
		err = f.Chmod(os.FileMode(prev.mode & 0o777)) // not the umask's
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// unchecked records that rel could not be looked at.
func (c *checker) unchecked(rel string, err error) {
	c.findings = append(c.findings, Finding{Path: c.root.Join(rel), What: "could not be checked: " + errText(err),
		Why: "it is where git looks for configuration or hooks"})
}

func errText(err error) string {
	var errno unix.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return err.Error()
}
