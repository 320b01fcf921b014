//go:build linux

package mount

import (
	"fmt"
	"io/fs"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// createLinked creates p with content, atomically: an unnamed file in p's
// directory is written and then linked at p (EEXIST when another stockade
// was first).
func createLinked(p, content string) error {
	fd, err := unix.Open(filepath.Dir(p), unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
	if err == unix.EOPNOTSUPP || err == unix.EISDIR || err == unix.EINVAL {
		return createRenamed(p, content) // no O_TMPFILE on this filesystem
	}
	if err != nil {
		return &fs.PathError{Op: "open", Path: filepath.Dir(p), Err: err}
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, []byte(content)); err != nil {
		return &fs.PathError{Op: "write", Path: p, Err: err}
	}
	if err := unix.Fchmod(fd, 0o644); err != nil {
		return &fs.PathError{Op: "chmod", Path: p, Err: err}
	}
	if err := unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), unix.AT_FDCWD, p, unix.AT_SYMLINK_FOLLOW); err != nil {
		return &fs.PathError{Op: "link", Path: p, Err: err}
	}
	return nil
}

// take moves p's placeholder from the stash into place, unless something
// is there already.
func (s Stash) take(p Placeholder) (Placeholder, error) {
	if s.Dir == "" {
		return Placeholder{}, unix.ENOENT
	}
	if err := unix.Renameat2(unix.AT_FDCWD, s.key(p), unix.AT_FDCWD, p.Path, unix.RENAME_NOREPLACE); err != nil {
		if err == unix.EEXIST {
			return Placeholder{}, &fs.PathError{Op: "rename", Path: p.Path, Err: fs.ErrExist}
		}
		return Placeholder{}, err
	}
	var st unix.Stat_t
	if err := unix.Lstat(p.Path, &st); err != nil {
		return Placeholder{}, err
	}
	return Placeholder{Path: p.Path, Dir: p.Dir, Ino: st.Ino}, nil
}

// put moves a placeholder back into the stash; false if it could not.
func (s Stash) put(ph Placeholder) bool {
	return s.Dir != "" && unix.Renameat2(unix.AT_FDCWD, ph.Path, unix.AT_FDCWD, s.key(ph), unix.RENAME_NOREPLACE) == nil
}
