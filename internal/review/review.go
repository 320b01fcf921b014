// Package review names, at the end of a run, the files in the project that
// the user will soon run and that the sandboxed command may legitimately
// write: CI workflows (run with the repository's secrets at the next push), a
// virtualenv's startup hooks and scripts, node_modules/.bin, build wrappers.
// Protecting them would stop the agent's ordinary work, so they stay
// writable; instead each one the command created, changed or removed gets
// one line at exit, to review before it runs.
//
// Before takes a snapshot of the watched paths below the workdir, After
// compares the workdir with it:
//
//	s, err := review.Before(workdir, review.Watched)
//	... run the command ...
//	changes, err := s.After()
//	for _, line := range review.Lines(changes) {
//		fmt.Fprintln(os.Stderr, "stockade: REVIEW:", line)
//	}
//
// Paths are resolved from a descriptor of the workdir without following any
// symlink (internal/beneath): a link the command planted is reported as a
// link, never walked. The snapshot records type, size, mode, inode, change
// time and link target of each watched file, not its content, so it costs a
// stat per file: the change time catches a rewrite that restored the
// modification time.
//
// Limitations: patterns are matched from the workdir's top level only (a
// nested package's node_modules is not watched), and a file that was
// rewritten and then put back exactly, inode and all, within the same change
// time cannot be told apart (the kernel's change time has nanoseconds).
package review

import (
	"fmt"
	"path"
	"sort"
	"strings"
)

// Watch is one watched pattern, relative to the workdir, slash-separated.
// Each element is a name, a glob (path.Match), or "**" for any number of
// directories.
type Watch struct {
	Pattern string
	Why     string // who runs it, and when
	// LinksInside, when set, is a directory (relative to the workdir): a
	// symlink created or removed here whose target stays inside it is
	// routine (npm links every package's commands), and is counted in one
	// line instead of listed. A changed target, or anything that is not
	// such a link, is listed.
	LinksInside string
}

// Watched are the files the user runs soon after an agent may have written
// them.
var Watched = []Watch{
	{Pattern: ".github/workflows/*", Why: "GitHub Actions runs them with the repository's secrets at the next push"},
	{Pattern: ".github/actions/**", Why: "local actions that the workflows run"},
	{Pattern: ".gitlab-ci.yml", Why: "GitLab CI runs it with the project's variables at the next push"},
	{Pattern: ".circleci/**", Why: "CircleCI runs it at the next push"},
	{Pattern: ".buildkite/**", Why: "Buildkite runs it at the next push"},
	{Pattern: "Jenkinsfile", Why: "Jenkins runs it at the next push"},
	{Pattern: "azure-pipelines.yml", Why: "Azure Pipelines runs it at the next push"},
	{Pattern: "bitbucket-pipelines.yml", Why: "Bitbucket Pipelines runs it at the next push"},
	{Pattern: ".venv/bin/activate*", Why: "the user's shell sources it to enter the virtualenv"},
	{Pattern: ".venv/bin/python*", Why: "a symlink to the base interpreter; a script or another target runs in its place"},
	{Pattern: ".venv/bin/pip*", Why: "the user runs it to install into the virtualenv"},
	{Pattern: ".venv/pyvenv.cfg", Why: "names the base interpreter (home, executable) that the virtualenv runs"},
	{Pattern: ".venv/lib/*/site-packages/*.pth", Why: "python runs the import lines of every .pth file in site-packages at each start"},
	{Pattern: ".venv/lib/*/site-packages/sitecustomize.py", Why: "python imports it at each start"},
	{Pattern: ".venv/lib/*/site-packages/usercustomize.py", Why: "python imports it at each start"},
	{Pattern: "node_modules/.bin/*", LinksInside: "node_modules",
		Why: "npm run, npx and the user's shell (with node_modules/.bin on PATH) run these commands"},
	{Pattern: ".pnp.cjs", Why: "yarn's Plug'n'Play loader: every yarn run and yarn node loads it"},
	{Pattern: ".pnp.loader.mjs", Why: "yarn's Plug'n'Play ESM loader: every yarn run and yarn node loads it"},
	{Pattern: "gradle/wrapper/*", Why: "./gradlew downloads the distribution these name and runs the wrapper jar"},
	{Pattern: ".mvn/wrapper/*", Why: "./mvnw downloads the distribution these name and runs the wrapper jar"},
}

// Kinds of change.
const (
	Created = "created"
	Changed = "changed"
	Removed = "removed"
)

// Change is one watched file that differs from the snapshot.
type Change struct {
	Path string // relative to the workdir
	Kind string // Created, Changed or Removed
	// Now and Was describe the file after and before the run ("" when it
	// did not exist).
	Now, Was string
	Watch    Watch
	routine  bool // a link LinksInside allows, created or removed
}

func (c Change) String() string {
	switch c.Kind {
	case Created:
		return fmt.Sprintf("%s: created (%s)", c.Path, c.Now)
	case Removed:
		return fmt.Sprintf("%s: removed (was %s)", c.Path, c.Was)
	}
	return fmt.Sprintf("%s: changed (%s; was %s)", c.Path, c.Now, c.Was)
}

// Lines are the report of changes, one line a path, sorted, with routine
// links counted in one line per directory.
func Lines(changes []Change) []string {
	var out []string
	type count struct {
		inside           string
		created, removed int
	}
	routine := map[string]*count{}
	for _, c := range changes {
		if !c.routine {
			out = append(out, c.String())
			continue
		}
		dir := path.Dir(c.Path)
		n := routine[dir]
		if n == nil {
			n = &count{inside: c.Watch.LinksInside}
			routine[dir] = n
		}
		if c.Kind == Created {
			n.created++
		} else {
			n.removed++
		}
	}
	for dir, n := range routine {
		var parts []string
		if n.created > 0 {
			parts = append(parts, fmt.Sprintf("%d created", n.created))
		}
		if n.removed > 0 {
			parts = append(parts, fmt.Sprintf("%d removed", n.removed))
		}
		out = append(out, fmt.Sprintf("%s/*: %s (symlinks into %s/)", dir, strings.Join(parts, ", "), n.inside))
	}
	sort.Strings(out)
	return out
}

// entry is what the snapshot keeps of one file.
type entry struct {
	mode   uint32 // type and permission bits
	size   int64
	ino    uint64
	ctime  [2]int64 // seconds, nanoseconds
	target string   // a symlink's target
}

func (e entry) same(o entry) bool { return e == o }

// describe is the summary of a file in a report line.
func (e entry) describe() string {
	switch e.mode & sIFMT {
	case sIFLNK:
		return "symlink to " + e.target
	case sIFREG:
		s := fmt.Sprintf("file, %d bytes", e.size)
		if e.mode&0o111 != 0 {
			s += ", executable"
		}
		if e.mode&0o6000 != 0 {
			s += ", setuid/setgid"
		}
		return s
	}
	return fmt.Sprintf("special file, mode %o", e.mode)
}

// File type bits, as in stat(2); kept here so the pure part builds anywhere.
const (
	sIFMT  = 0o170000
	sIFLNK = 0o120000
	sIFREG = 0o100000
	sIFDIR = 0o040000
)

// compare lists the differences between two walks of the same watches.
func compare(before, after map[string]entry, watchOf map[string]Watch) []Change {
	var out []Change
	for p, a := range after {
		w := watchOf[p]
		b, ok := before[p]
		switch {
		case !ok:
			out = append(out, Change{Path: p, Kind: Created, Now: a.describe(), Watch: w, routine: routineLink(p, a, w)})
		case !a.same(b):
			out = append(out, Change{Path: p, Kind: Changed, Now: a.describe(), Was: b.describe(), Watch: w})
		}
	}
	for p, b := range before {
		if _, ok := after[p]; !ok {
			w := watchOf[p]
			out = append(out, Change{Path: p, Kind: Removed, Was: b.describe(), Watch: w, routine: routineLink(p, b, w)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// routineLink reports whether e at p is a symlink whose target stays inside
// w.LinksInside.
func routineLink(p string, e entry, w Watch) bool {
	if w.LinksInside == "" || e.mode&sIFMT != sIFLNK || path.IsAbs(e.target) {
		return false
	}
	t := path.Join(path.Dir(p), e.target)
	return strings.HasPrefix(t, w.LinksInside+"/")
}
