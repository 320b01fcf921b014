package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/stockade-dev/stockade/internal/mount"
	"github.com/stockade-dev/stockade/internal/policy"
	"github.com/stockade-dev/stockade/internal/rcfile"
)

// privateDirs are the directories stockade keeps for itself on the host,
// and what each holds. None may be seen from inside a sandbox: the state
// directory holds every session's control socket (whose owner may widen
// the session's network policy), the audit logs and the placeholders'
// stash; the data directory every project's sandbox HOME and container
// storage; the configuration directory the user's own config.json and
// stockaderc, which loosen the next session as the user's word.
func privateDirs(home string) []privateKind {
	dirs := []privateKind{
		{filepath.Join(stateHome(home), "stockade"), "XDG_STATE_HOME", "where stockade keeps its sessions' records and control sockets, the audit logs and the placeholders", true},
		{stockadeData(home), "XDG_DATA_HOME", "where stockade keeps every project's sandbox HOME and container storage", false},
	}
	if p := policy.DefaultPaths(os.Getenv).User; p != "" {
		dirs = append(dirs, privateKind{filepath.Dir(p), "XDG_CONFIG_HOME", "where stockade reads your own configuration", false})
	}
	return dirs
}

type privateKind struct {
	dir, env, what string
	state          bool // the state directory: a Slurm job's run may be given its job directory in it, read-only
}

// privateDir is one of privateDirs that a tree the sandbox sees holds: it is
// masked there.
type privateDir struct {
	dir     string // canonical
	shownBy string // the workdir, --rw or --ro path that holds it
}

// privateExposure checks p's trees and the sandbox HOME (sandboxHome, its
// host path) against privateDirs, before anything is made. Refused: a
// directory reached through a symlink inside a tree the sandbox can write
// (which the command could replace with a directory of its own, which
// stockade would use from then on); one in a system tree every sandbox
// sees read-only, or in the sandbox HOME; a tree that is one of them or
// lies in one. Listed, to be masked: one that a tree holds. A Slurm job's
// run on its node is the one exception: it is given its own job directory,
// below the chaperon's in the state directory, read-only.
func privateExposure(home string, p policy.Policy, sandboxHome string) ([]privateDir, error) {
	canon := canons{}
	writable := []string{canon.of(p.Workdir)}
	for _, d := range p.RW {
		writable = append(writable, canon.of(d))
	}
	homeCanon := ""
	if sandboxHome != "" {
		homeCanon = canon.of(sandboxHome)
		writable = append(writable, homeCanon)
	}
	if err := trustedFilesExposed(p, writable, canon); err != nil {
		return nil, err
	}
	jobs := canon.of(slurmState(home))
	systemDirs := make([]string, len(mount.SystemDirs))
	for i, sys := range mount.SystemDirs {
		systemDirs[i] = canon.of(sys)
	}
	var out []privateDir
	for _, k := range privateDirs(home) {
		dir, err := mount.Resolve(mount.OS{}, k.dir, writable)
		if err != nil {
			return nil, fmt.Errorf("%s, %s: %w; or set %s to a directory no sandbox can write", k.dir, k.what, err, k.env)
		}
		dir = canon.of(dir)
		for i, sys := range mount.SystemDirs {
			if canonWithin(dir, systemDirs[i]) {
				return nil, fmt.Errorf("%s, %s, lies in %s, which every sandbox sees: set %s to a directory in your home", dir, k.what, sys, k.env)
			}
		}
		if homeCanon != "" && (canonWithin(dir, homeCanon) || canonWithin(homeCanon, dir) && dir != canon.of(stockadeData(home))) {
			return nil, fmt.Errorf("%s, %s, overlaps the sandbox HOME %s, which the sandbox writes: set %s to a directory outside it", dir, k.what, sandboxHome, k.env)
		}
		q := p
		if k.state {
			q.RO = slices.DeleteFunc(slices.Clone(p.RO), func(v string) bool { return canonWithin(canon.of(v), jobs) })
		}
		// Every tree is looked at: one that holds the directory must not
		// hide another that lies in it, which would be mounted over the
		// mask.
		holder := ""
		for _, d := range append(append([]string{q.Workdir}, q.RW...), q.RO...) {
			c := canon.of(d)
			switch {
			case canonWithin(c, dir):
				return nil, fmt.Errorf("%s is or lies in %s, %s, which the sandbox must not see: name a directory outside it", d, dir, k.what)
			case canonWithin(dir, c) && holder == "":
				holder = d
			}
		}
		if holder != "" {
			out = append(out, privateDir{dir: dir, shownBy: holder})
		}
	}
	return out, nil
}

// canons is existingCanon for the paths of one check, each resolved once:
// the same few trees and system directories are compared against each of
// stockade's own directories.
type canons map[string]string

func (m canons) of(p string) string {
	c, ok := m[p]
	if !ok {
		c = existingCanon(p)
		m[p] = c
	}
	return c
}

// make creates d if it is missing (mode 0700), below the tree that holds it
// and through no symlink: that tree is one the sandbox may have written.
func (d privateDir) make() error {
	root := existingCanon(d.shownBy)
	rel, err := filepath.Rel(root, d.dir)
	if err != nil || !filepath.IsLocal(rel) {
		return fmt.Errorf("%s does not lie in %s", d.dir, root)
	}
	return mkdirBelow(root, filepath.ToSlash(rel))
}

// trustedFiles are the files stockade reads as the user's or the
// administrator's own word: the configuration that may loosen a session,
// and the stockaderc files that hold the real API keys.
func trustedFiles() []string {
	files := []string{policy.AdminPath, "/etc/stockade/stockaderc"}
	if p := policy.DefaultPaths(os.Getenv).User; p != "" {
		files = append(files, p)
	}
	if p, err := rcfile.GlobalPath(); err == nil {
		files = append(files, p)
	}
	return files
}

// trustedFilesExposed refuses a trusted file (trustedFiles) that the
// sandbox could write or read some other way than by its name, which
// privateExposure keeps out of view: a symlink to a file in a tree the
// sandbox sees, or through a link inside a tree it writes (which it could
// retarget), or a file with more than one hard link (another name may lie
// in such a tree). writable are the canonical trees the sandbox writes;
// canon resolves the others.
func trustedFilesExposed(p policy.Policy, writable []string, canon canons) error {
	visible := slices.Clone(writable)
	for _, d := range p.RO {
		visible = append(visible, canon.of(d))
	}
	for _, f := range trustedFiles() {
		fi, err := os.Lstat(f)
		if err != nil {
			continue // missing (or unreadable: reading it fails later, with its own error)
		}
		c, err := mount.Resolve(mount.OS{}, f, writable)
		if err != nil {
			return fmt.Errorf("%s, which stockade reads as your own word: %w", f, err)
		}
		for _, v := range visible {
			if canonWithin(c, v) {
				return fmt.Errorf("%s is a link to %s, in %s, which the sandbox sees: stockade reads it as your own word (settings that loosen a session, API keys); make it a file of its own outside every tree the sandbox sees", f, c, v)
			}
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			if fi, err = os.Stat(f); err != nil {
				continue
			}
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && fi.Mode().IsRegular() && st.Nlink > 1 {
			return fmt.Errorf("%s has %d hard links, and one may lie in a tree the sandbox writes: stockade reads it as your own word (settings that loosen a session, API keys); give it a name of its own (cp %s %s.new && mv %s.new %s)", c, st.Nlink, c, c, c, c)
		}
	}
	return nil
}
