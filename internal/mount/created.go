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
// .git file, which the git check judges by content (package gitguard). The
// list is sorted by path.
func (sc Scan) Created(after Scan) []Found {
	was := map[string]bool{}
	for _, f := range slices.Concat(sc.Protect, sc.Mask) {
		was[f.Path] = true
	}
	for _, m := range sc.Missing {
		was[m.Path] = true // held by a placeholder all along
	}
	var out []Found
	for _, f := range slices.Concat(after.Protect, after.Mask) {
		if was[f.Path] || inGit(f.Path, f.Root) {
			continue
		}
		was[f.Path] = true
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
