package mount

import (
	"slices"
	"strings"
)

// Created lists what the command made, during the run, at protected or
// masked names that had no placeholder to hold them (below a missing
// directory, at any depth of a tree, a glob's match, the target of a
// link): each path that after (a scan made once the sandbox is gone) finds
// and sc, the scan made at start, did not. A path below one listed is
// left out (it goes with it), and so is anything in a .git directory or a
// .git file, which the git check judges by content (package gitguard). A
// path that holds another object (device and inode) than at start is
// created too. The list is sorted by path.
func (sc Scan) Created(after Scan) []Found {
	type id struct{ dev, ino uint64 }
	was := map[string]id{}
	for _, f := range slices.Concat(sc.Protect, sc.Mask) {
		was[f.Path] = id{f.Dev, f.Ino}
	}
	held := map[string]bool{}
	for _, m := range sc.Missing {
		held[m.Path] = true // held by a placeholder all along
	}
	seen := map[string]bool{}
	var out []Found
	for _, f := range slices.Concat(after.Protect, after.Mask) {
		// A socket the command left is not a name a host tool reads: no
		// one listens on it once the sandbox is gone.
		if held[f.Path] || seen[f.Path] || f.Socket || inGit(f.Path, f.Root) {
			continue
		}
		// The same path holding another object is new too: another
		// session moved the protected one aside, and this one's command
		// made its own in its place.
		if w, ok := was[f.Path]; ok && (w.ino == 0 || (w == id{f.Dev, f.Ino})) {
			continue
		}
		seen[f.Path] = true
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b Found) int { return strings.Compare(a.Path, b.Path) })
	var outer []Found
	for _, f := range out {
		if len(outer) > 0 && within(f.Path, outer[len(outer)-1].Path) {
			continue
		}
		outer = append(outer, f)
	}
	return outer
}

// inGit reports whether p, below root, has a .git component.
func inGit(p, root string) bool {
	rel := strings.TrimPrefix(strings.TrimPrefix(p, root), "/")
	return slices.Contains(strings.Split(rel, "/"), ".git")
}

// GitDirs are the .git entries (directories or files) the scan met in the
// workdir, relative to it: every repository in the project at start.
func (sc Scan) GitDirs() []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range sc.Protect {
		rel, ok := strings.CutPrefix(f.Path, sc.Trees.Workdir+"/")
		if !ok || f.Root != sc.Trees.Workdir {
			continue
		}
		parts := strings.Split(rel, "/")
		for i := len(parts) - 1; i >= 0; i-- {
			if parts[i] == ".git" {
				if d := strings.Join(parts[:i+1], "/"); !seen[d] {
					seen[d] = true
					out = append(out, d)
				}
				break
			}
		}
	}
	return out
}
