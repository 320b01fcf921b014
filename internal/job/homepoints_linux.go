//go:build linux

package job

import (
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/beneath"
)

// holdHome takes a shared lock on the persistent sandbox HOME for as long
// as a sandbox may have it mounted, and returns what to call once the
// sandbox is gone: it removes the mount points the run needed in the HOME
// (a workdir or a --ro tree below the user's home is mounted on an empty
// directory made there), so that ~/proj from one run does not show up,
// empty, in every later one.
//
// Two things make that removal dangerous, and how each is met:
//   - The HOME is the sandbox's to write: a component of a mount point's
//     path may be a symlink it planted, to a directory of the user's. Every
//     rmdir goes through a descriptor resolved with beneath (no symlink in
//     any component, never out of the HOME), and rmdir removes nothing
//     that is not an empty directory.
//   - The HOME is shared by every run of the project: removing a directory
//     that is a mount point in another sandbox's mount namespace detaches
//     that mount there (Linux ≥ 3.18), pulling a running session's workdir
//     from under it. So the removal runs only when an exclusive lock on the
//     HOME is free, i.e. no other run holds its shared one; a run takes the
//     shared one before its sandbox makes any mount point and keeps it until
//     its sandbox is gone. The last run out tidies.
func holdHome(j Job) func() {
	rels := homePoints(j)
	if j.HomeSource == "" || len(rels) == 0 {
		return func() {}
	}
	// stockade's own directory, opened by its path: trusted. The lock needs
	// a descriptor that is not O_PATH, which beneath's Root is.
	lock, err := unix.Open(j.HomeSource, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return func() {}
	}
	if unix.Flock(lock, unix.LOCK_SH) != nil {
		unix.Close(lock)
		return func() {}
	}
	return func() {
		defer unix.Close(lock)
		if unix.Flock(lock, unix.LOCK_EX|unix.LOCK_NB) != nil {
			return // another sandbox has this HOME mounted
		}
		root, err := beneath.OpenRoot(j.HomeSource)
		if err != nil {
			return
		}
		defer root.Close()
		for _, rel := range rels {
			removeEmptyDirs(root, rel)
		}
	}
}

// homePoints are the mount points the plan may make in the sandbox HOME:
// the workdir and the bound trees below the user's home, relative to it.
func homePoints(j Job) []string {
	if j.Home == "" {
		return nil
	}
	var out []string
	for _, p := range append(append([]string{j.Policy.Workdir}, j.Policy.RO...), j.Policy.RW...) {
		rel, err := filepath.Rel(j.Home, p)
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
			continue
		}
		if !slices.Contains(out, rel) {
			out = append(out, rel)
		}
	}
	return out
}

// removeEmptyDirs removes rel and then each parent below root, as long as
// each is an empty directory reached without a symlink.
func removeEmptyDirs(root *beneath.Root, rel string) {
	for ; rel != "." && rel != "/" && rel != ""; rel = filepath.Dir(rel) {
		parent, name, err := root.OpenParent(rel)
		if err != nil {
			return
		}
		err = unix.Unlinkat(parent.Fd(), name, unix.AT_REMOVEDIR)
		parent.Close()
		if err != nil {
			return
		}
	}
}
