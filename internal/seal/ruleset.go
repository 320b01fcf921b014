package seal

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stockade-dev/stockade/internal/landlock"
)

// Ruleset turns the filesystem section into a Landlock ruleset for a kernel
// of the given ABI: rights the kernel does not know are neither handled nor
// granted. It reads the filesystem to split an allow around a deny beneath
// it (see the package doc); a directory it cannot list there is an error.
// Paths are not checked for existence here: the kernel's open of each rule
// is, and a missing one fails the ruleset.
//
// Allows and denies are compared as resolved, symbolic links followed:
// the kernel follows them when it opens an allow's path, so a deny written
// through a link (/home/me/.ssh where /home is a link to /var/home), or an
// allow written through one, would otherwise miss the directory it names
// and leave the denied path granted.
func (p Policy) Ruleset(abi int) (landlock.Ruleset, error) {
	fsRights, scope := landlock.Handled(abi)
	r := landlock.Ruleset{HandledFS: fsRights, Scoped: scope}
	var deny []string
	for _, d := range p.Filesystem.Deny {
		deny = append(deny, resolve(string(d)))
	}
	grants := make(map[string]uint64)
	var order []string
	for _, a := range p.Filesystem.Allow {
		path := resolve(a.Path)
		if _, seen := grants[path]; !seen {
			order = append(order, path)
		}
		grants[path] |= landlock.Levels[a.Access] & fsRights
	}
	for _, path := range order {
		if slices.ContainsFunc(deny, func(d string) bool { return within(path, d) }) {
			continue // at or beneath a deny: the deny wins
		}
		var below []string
		for _, d := range deny {
			if within(d, path) {
				below = append(below, d)
			}
		}
		if err := split(path, grants[path], below, &r.Rules); err != nil {
			return r, err
		}
	}
	return r, nil
}

// split grants access beneath dir but not beneath any of denied, which all
// lie strictly beneath dir: with none, that is one rule on dir; otherwise a
// rule on each entry of dir that holds no denied path, and the same split
// one level down for each entry that does. Symbolic links get no rule:
// Landlock judges an access by the path it resolves to.
func split(dir string, access uint64, denied []string, rules *[]landlock.Rule) error {
	if len(denied) == 0 {
		*rules = append(*rules, landlock.Rule{Path: dir, Access: access})
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("listing %s to keep %s out of its allow: %w", dir, denied[0], err)
	}
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink != 0 {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if slices.Contains(denied, path) {
			continue
		}
		var below []string
		for _, d := range denied {
			if within(d, path) && d != path {
				below = append(below, d)
			}
		}
		if err := split(path, access, below, rules); err != nil {
			return err
		}
	}
	return nil
}

// resolve returns path with every symbolic link followed. A part of it
// that cannot be resolved (a deny of a file not created yet, a directory
// this user cannot search) is kept as written beneath the part that can:
// no allow reaches into it through a link, and an allow above it has to
// list the directories on the way, which fails if they cannot be read.
func resolve(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	parent := filepath.Dir(filepath.Clean(path))
	if parent == path || parent == filepath.Clean(path) {
		return filepath.Clean(path)
	}
	return filepath.Join(resolve(parent), filepath.Base(path))
}

// within reports whether path is dir or lies beneath it.
func within(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}
