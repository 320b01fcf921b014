package escape

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A fixture some rows change (a file removed, a repository made, a link
// in place of a directory) is not the fixture of the others: rows share a
// sandbox only when no row's setup changes a path another row touches. The
// rows are placed in order into the first group they can share, so a
// new row finds its place without a list to keep.

// rowPaths are the fixture paths a row's setup changes, and those it names
// (its setup's and its arguments'), relative to the fixture's base.
type rowPaths struct {
	changed, touched []string
}

// fixturePaths matches a fixture path in a row's arguments.
var fixturePaths = regexp.MustCompile(`\{(work|home|other|spare|sandboxhome|data)\}(/[^\s'";|&<>)]*)?`)

// containerGroups splits rows into groups that can share one fixture and
// one sandbox. A row whose setup fails on a scratch fixture goes into a
// group of its own, where its setup fails again and says why.
func containerGroups(t *testing.T, ru runner, host *hostSide, rows []row) [][]row {
	base := treeOf(t, newFixture(t, ru, host, "scratch"))
	paths := make([]rowPaths, len(rows))
	alone := make([]bool, len(rows))
	for i, r := range rows {
		if r.setup != nil && (!r.needsRoot || os.Geteuid() == 0) {
			paths[i].changed, alone[i] = setupChanges(t, ru, host, r, base)
		}
		paths[i].touched = append(paths[i].touched, paths[i].changed...)
		for _, a := range r.args {
			for _, m := range fixturePaths.FindAllStringSubmatch(a, -1) {
				root := m[1]
				if root == "sandboxhome" || root == "data" {
					root = "home" // both below the real HOME of the fixture
				}
				paths[i].touched = append(paths[i].touched, filepath.Clean(root+m[2]))
			}
		}
	}
	var groups [][]int
	for i := range rows {
		placed := false
		for g, members := range groups {
			if alone[i] || (len(members) > 0 && alone[members[0]]) {
				continue
			}
			clash := false
			for _, j := range members {
				if conflict(paths[i], paths[j]) || conflict(paths[j], paths[i]) {
					clash = true
					break
				}
			}
			if !clash {
				groups[g] = append(members, i)
				placed = true
				break
			}
		}
		if !placed {
			groups = append(groups, []int{i})
		}
	}
	out := make([][]row, len(groups))
	for g, members := range groups {
		for _, i := range members {
			out[g] = append(out[g], rows[i])
		}
	}
	return out
}

// setupChanges runs r's setup on a scratch fixture and lists the paths it
// changed from base; failed says the setup failed.
func setupChanges(t *testing.T, ru runner, host *hostSide, r row, base map[string]string) (changed []string, failed bool) {
	fx := newFixture(t, ru, host, "scratch")
	defer os.RemoveAll(fx.base)
	failed = r.setup(fx) != nil
	after := treeOf(t, fx)
	for p, d := range after {
		if base[p] != d {
			changed = append(changed, p)
		}
	}
	for p := range base {
		if _, ok := after[p]; !ok {
			changed = append(changed, p)
		}
	}
	return changed, failed
}

// conflict: a's setup changes a path b touches, itself, above or below it.
// A row that names a fixture's top directory ({work} as a mount point, or
// a shell's cd before relative names) clashes with every change in it.
func conflict(a, b rowPaths) bool {
	for _, p := range a.changed {
		for _, q := range b.touched {
			if p == q || strings.HasPrefix(p, q+"/") || strings.HasPrefix(q, p+"/") {
				return true
			}
		}
	}
	return false
}

// treeOf describes every path of a fixture, relative to its base.
func treeOf(t *testing.T, fx *fixture) map[string]string {
	tree := map[string]string{}
	err := filepath.WalkDir(fx.base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(fx.base, p)
		tree[rel], err = describe(p, d)
		return err
	})
	if err != nil {
		t.Fatalf("describing the scratch fixture: %v", err)
	}
	return tree
}
