//go:build linux

package review

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/beneath"
)

// Snapshot is the state of the watched files before a run.
type Snapshot struct {
	root    string
	watches []Watch
	files   map[string]entry
}

// Before records the watched files below root (the workdir).
func Before(root string, watches []Watch) (*Snapshot, error) {
	files, _, err := walk(root, watches)
	if err != nil {
		return nil, err
	}
	return &Snapshot{root: root, watches: watches, files: files}, nil
}

// After lists the watched files that were created, changed or removed
// since Before, sorted by path.
func (s *Snapshot) After() ([]Change, error) {
	files, watchOf, err := walk(s.root, s.watches)
	if err != nil {
		return nil, err
	}
	for p := range s.files {
		if _, ok := watchOf[p]; !ok {
			watchOf[p] = matching(p, s.watches)
		}
	}
	return compare(s.files, files, watchOf), nil
}

// matching is the first watch whose pattern matches p.
func matching(p string, watches []Watch) Watch {
	for _, w := range watches {
		if match(strings.Split(w.Pattern, "/"), strings.Split(p, "/")) {
			return w
		}
	}
	return Watch{}
}

// match reports whether the path elements name match the pattern elements
// pat ("**" matches any number of elements).
func match(pat, name []string) bool {
	if len(pat) == 0 {
		return len(name) == 0
	}
	if pat[0] == "**" {
		for i := 0; i <= len(name); i++ {
			if match(pat[1:], name[i:]) {
				return true
			}
		}
		return false
	}
	if len(name) == 0 {
		return false
	}
	if ok, _ := path.Match(pat[0], name[0]); !ok {
		return false
	}
	return match(pat[1:], name[1:])
}

// walk finds the files that match watches below root, without following a
// symlink anywhere: a symlink is recorded as itself, and never descended.
func walk(root string, watches []Watch) (map[string]entry, map[string]Watch, error) {
	r, err := beneath.OpenRoot(root)
	if err != nil {
		return nil, nil, fmt.Errorf("opening the workdir to review: %w", err)
	}
	defer r.Close()
	w := walker{root: r, files: map[string]entry{}, watchOf: map[string]Watch{}, dirs: map[string][]string{}}
	for _, wt := range watches {
		w.watch = wt
		if err := w.elems("", strings.Split(wt.Pattern, "/")); err != nil {
			return nil, nil, fmt.Errorf("reviewing %s in %s: %w", wt.Pattern, root, err)
		}
	}
	return w.files, w.watchOf, nil
}

type walker struct {
	root    *beneath.Root
	watch   Watch
	files   map[string]entry
	watchOf map[string]Watch
	dirs    map[string][]string // names per directory, read once per walk
}

// elems matches the pattern elements pat below the directory dir.
func (w *walker) elems(dir string, pat []string) error {
	if len(pat) == 0 {
		return nil
	}
	elem, rest := pat[0], pat[1:]
	if elem == "**" {
		// No directory at all, then each subdirectory in turn; a "**" at
		// the end matches every file below dir.
		if len(rest) > 0 {
			if err := w.elems(dir, rest); err != nil {
				return err
			}
		}
		return w.each(dir, nil, func(name string, st *unix.Stat_t) error {
			p := path.Join(dir, name)
			if st.Mode&unix.S_IFMT == unix.S_IFDIR {
				return w.elems(p, pat)
			}
			if len(rest) == 0 {
				w.add(p, st)
			}
			return nil
		})
	}
	if !strings.ContainsAny(elem, "*?[") {
		return w.one(dir, elem, rest)
	}
	matches := func(name string) bool {
		ok, _ := path.Match(elem, name)
		return ok
	}
	return w.each(dir, matches, func(name string, st *unix.Stat_t) error {
		return w.found(path.Join(dir, name), st, rest)
	})
}

// one looks up the single name elem in dir.
func (w *walker) one(dir, elem string, rest []string) error {
	p := path.Join(dir, elem)
	st, err := w.root.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, unix.ENOTDIR), beneath.IsLoop(err):
		return nil // absent, or behind a symlink: nothing to watch there
	case err != nil:
		return err
	}
	return w.found(p, &st, rest)
}

// found handles p, which matched one pattern element, with rest to go.
func (w *walker) found(p string, st *unix.Stat_t, rest []string) error {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if len(rest) > 0 {
			return w.elems(p, rest)
		}
	case unix.S_IFLNK:
		// Never walked, but recorded: a .venv or node_modules/.bin
		// swapped for a link elsewhere is news too.
		w.add(p, st)
	default:
		if len(rest) == 0 {
			w.add(p, st)
		}
	}
	return nil
}

// each calls fn for every entry of the directory dir that want accepts
// (every entry if want is nil), with its lstat: only those are stat'ed.
func (w *walker) each(dir string, want func(name string) bool, fn func(name string, st *unix.Stat_t) error) error {
	names, err := w.list(dir)
	if err != nil {
		return err
	}
	for _, name := range names {
		if want != nil && !want(name) {
			continue
		}
		p := path.Join(dir, name)
		st, err := w.root.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile
		}
		if err != nil {
			return err
		}
		if err := fn(name, &st); err != nil {
			return err
		}
	}
	return nil
}

// list returns the names in the directory dir, read once per walk: several
// patterns look into the same directory (the workdir's top level).
func (w *walker) list(dir string) ([]string, error) {
	if names, ok := w.dirs[dir]; ok {
		return names, nil
	}
	f, err := w.root.OpenFile(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, unix.ENOTDIR), beneath.IsLoop(err):
		w.dirs[dir] = nil
		return nil, nil
	case err != nil:
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	w.dirs[dir] = names
	return names, nil
}

// add records the file p.
func (w *walker) add(p string, st *unix.Stat_t) {
	if _, ok := w.files[p]; ok {
		return // an earlier watch matched it already
	}
	e := entry{mode: st.Mode, size: st.Size, ino: st.Ino, ctime: [2]int64{st.Ctim.Sec, st.Ctim.Nsec}}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		if t, err := w.root.Readlink(p); err == nil {
			e.target = t
		}
	}
	w.files[p] = e
	w.watchOf[p] = w.watch
}
