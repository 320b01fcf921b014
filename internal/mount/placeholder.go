package mount

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Placeholder is an empty file or directory created on the host so that a
// protected path which does not exist yet can still be made read-only: a
// project without .vscode/ must not get a .vscode/tasks.json from the agent.
// It is removed again when the sandbox ends, unless something outside the
// sandbox has put content in it meanwhile.
type Placeholder struct {
	Path string `json:"path"`
	// Root is the tree the placeholder lies in (the workdir, a --rw
	// tree): every operation on it is resolved below Root without
	// following a symlink.
	Root string `json:"root"`
	Dir  bool   `json:"dir"`
	Ino  uint64 `json:"ino"`
	// Ctime is its status change time, in Unix nanoseconds, as made,
	// moved into place or found: a chmod, a new name, an extended
	// attribute, a write, or another object given the same inode number
	// changes it. 0 when not known (a record of an older stockade).
	Ctime int64 `json:"ctime,omitempty"`
	// Top is the top of the git work tree on the host that holds the
	// placeholder, "" when none: while it is recorded, that repository's
	// info/exclude leaves it out (see Records.Exclude).
	Top string `json:"top,omitempty"`
	// Borrowed: another sandbox of the same project made it a moment
	// earlier; that one removes it, or hands it over (see Records).
	Borrowed bool `json:"borrowed,omitempty"`
}

// Split turns the missing paths of a scan into the placeholders to make:
// an empty directory for a directory pattern (".vscode/"), an empty file
// for a file pattern ("CLAUDE.md"; "{}" for a .json file, so that the tools
// which read it still parse it). The scan lists only paths whose parent is
// a real directory in a tree the sandbox can write; paths below a missing
// directory get none (creating .git/ in a directory that is not a
// repository would break `git init`): what the command creates there is
// checked at exit instead.
func Split(missing []MissingPath) []Placeholder {
	var out []Placeholder
	for _, p := range missing {
		out = append(out, Placeholder{Path: p.Path, Root: p.Root, Dir: p.Dir})
	}
	return out
}

// Create makes the planned placeholders (see Split), taking them from
// stash when it has them. One that another sandbox of this project made a
// moment earlier is shared (Borrowed). On error, the placeholders made so
// far are removed again.
func Create(planned []Placeholder, stash Stash) ([]Placeholder, error) {
	dirs := newParents()
	defer dirs.close()
	return create(planned, stash, dirs)
}

// create is Create with the directories of the placeholders opened in
// dirs, or to be.
func create(planned []Placeholder, stash Stash, dirs parents) ([]Placeholder, error) {
	var made []Placeholder
	stash.prepare()
	stash, closeStash := stash.open()
	defer closeStash()
	for _, p := range planned {
		ph, err := stash.take(p, dirs)
		if err != nil {
			ph, err = createPlaceholder(p, dirs)
		}
		if errors.Is(err, fs.ErrExist) {
			// Another sandbox of this project was quicker: share its.
			if st, lerr := lstatPlaceholder(p, dirs); lerr == nil && st.dir == p.Dir {
				b := Placeholder{Path: p.Path, Root: p.Root, Dir: p.Dir, Top: p.Top, Ino: st.ino, Borrowed: true}
				if st.dir || st.nlink == 1 {
					// (Not a file of two names: one made without
					// O_TMPFILE, whose temporary name is yet to go.)
					b.Ctime = st.ctime.UnixNano()
				}
				made = append(made, b)
				continue
			}
		}
		if err != nil {
			RemovePlaceholders(made, stash)
			return nil, fmt.Errorf("creating placeholder for protected path %s: %w", p.Path, err)
		}
		ph.Top = p.Top
		made = append(made, ph)
	}
	return made, nil
}

// Stash keeps the placeholders of earlier runs, in a directory of the
// user's own, to be moved into place again (rename(2), never replacing
// anything) instead of being made anew. Making and deleting inodes is what
// costs on some filesystems (ext4 without a journal skips every inode freed
// in the last minute when it allocates one), and a harness or an agent may
// start many short runs in a row. A stash on another filesystem than the
// project (EXDEV), or the zero Stash, makes and removes as usual.
//
// The stash keeps one directory per tree (the workdir, a --rw tree), named
// by a hash of the tree's path, and in it one entry per placeholder: a
// run's moves then change small directories only. (One flat directory of
// every project's placeholders grew without bound, and after much churn
// the moves into its large, sparse index cost a start half a
// millisecond.)
type Stash struct {
	Dir string
	fd  int // Dir, opened for a batch of moves (open); 0 when not
	// trees are the trees' directories opened in this batch, by name.
	trees map[string]int
}

// name is where in the stash the placeholder for p waits: the directory
// of its tree, and its name there, one per path and kind.
func (s Stash) name(p Placeholder) (tree, name string) {
	kind := "f"
	if p.Dir {
		kind = "d"
	} else if filepath.Ext(p.Path) == ".json" {
		kind = "j"
	}
	h := sha256.Sum256([]byte(p.Path))
	r := sha256.Sum256([]byte(p.Root))
	return "t" + hex.EncodeToString(r[:10]), hex.EncodeToString(h[:12]) + "." + kind
}

func (s Stash) prepare() {
	if s.Dir != "" {
		os.Mkdir(s.Dir, 0o700)
	}
}

// GitExcludePath is where the sandbox finds the file of placeholders its
// git is told to leave out (Config.GitExclude).
const GitExcludePath = "/run/stockade/git-exclude"

// GitExclude returns the lines of a gitignore file, relative to top (the
// top of the work tree of the repository the workdir is in), that leave
// out exactly the placeholders ps: without it git inside the sandbox lists
// each as untracked, and an agent's "git add -A" commits an empty .env
// and CLAUDE.md. Placeholders outside top, or in a .git directory, are
// left out of it, as are those whose name holds a line break; "" when
// none is left.
func GitExclude(top string, ps []Placeholder) string {
	lines := excludeLines(top, ps)
	if len(lines) == 0 {
		return ""
	}
	return "# stockade: the placeholders of protected paths this sandbox holds.\n" + strings.Join(lines, "\n") + "\n"
}

// excludeLines are the gitignore patterns, anchored at top, of the
// placeholders ps in top's work tree (see GitExclude), in the order of ps.
func excludeLines(top string, ps []Placeholder) []string {
	var out []string
	for _, p := range ps {
		rel, err := filepath.Rel(top, p.Path)
		if err != nil || rel == "." || strings.HasPrefix(rel, "../") || rel == ".." {
			continue
		}
		if slices.Contains(strings.Split(rel, "/"), ".git") {
			continue
		}
		// gitignore cannot quote a line break: what follows one would be
		// a pattern of its own, anchored at the top (a project file's
		// protect "x\n/notes/todo.txt" hiding /notes/ of the whole
		// repository), and git drops a CR before one ("/a\r" leaves out
		// "a"). Such a placeholder stays listed.
		if strings.ContainsAny(rel, "\n\r") {
			continue
		}
		var b strings.Builder
		b.WriteString("/")
		for i := range len(rel) { // bytes: a name need not be UTF-8
			if strings.IndexByte(`\*?[!# `, rel[i]) >= 0 {
				b.WriteByte('\\')
			}
			b.WriteByte(rel[i])
		}
		if p.Dir {
			b.WriteString("/")
		}
		out = append(out, b.String())
	}
	return out
}

// placeholderContent is what a placeholder at p holds.
func placeholderContent(p string) string {
	if filepath.Ext(p) == ".json" {
		return placeholderJSON
	}
	return ""
}

// placeholderJSON is the content of a .json placeholder: valid, and empty.
const placeholderJSON = "{}\n"

// placeholderStat is what the checks need of a placeholder on disk.
type placeholderStat struct {
	ino   uint64
	dir   bool
	size  int64
	nlink uint64
	link  bool
	reg   bool
	ctime time.Time
}

// pendingWindow is how long after its pending record a placeholder made
// anew, with no stash on its file system, is taken for the record's (see
// madeSince): it is made within milliseconds, but a loaded machine may
// stall the process for a while; an empty file the user makes at the path
// within it, after a stockade was killed, is taken for a placeholder.
const pendingWindow = 5 * time.Second

// RemovePlaceholders removes each placeholder that is still the empty file or
// directory stockade made; anything else is left alone and reported. (They
// are removed one after the other: entries of one directory are changed
// under its lock anyway.)
func RemovePlaceholders(ps []Placeholder, stash Stash) error {
	var errs []error
	stash, closeStash := stash.open()
	defer closeStash()
	dirs := newParents()
	defer dirs.close()
	for _, ph := range ps {
		if !ph.Borrowed {
			errs = append(errs, removePlaceholder(ph, stash, dirs))
		}
	}
	return errors.Join(errs...)
}

// Hold returns the scan as it will be once the placeholders of its missing
// paths exist: each is protected (or masked) like a path that was there.
func (sc Scan) Hold() Scan {
	out := sc
	out.Protect, out.Mask, out.Missing = slices.Clone(sc.Protect), slices.Clone(sc.Mask), nil
	for _, m := range sc.Missing {
		f := Found{Path: m.Path, Target: m.Target, Dir: m.Dir, Mask: m.Mask, Root: m.Root, Why: m.Pattern, Held: true, Writable: true}
		if m.Mask {
			out.Mask = append(out.Mask, f)
		} else {
			out.Protect = append(out.Protect, f)
		}
	}
	return out
}

// Watched lists the host paths a tripwire watches: every protected and
// masked path, and every missing one (its creation is a change too).
func (sc Scan) Watched() []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, f := range sc.Protect {
		add(f.Path)
	}
	for _, f := range sc.Mask {
		add(f.Path)
	}
	for _, m := range append(sc.Missing, sc.Unheld...) {
		add(m.Path)
	}
	return out
}
