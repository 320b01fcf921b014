package gitguard

import (
	"errors"
	"fmt"
	"io"
	"path"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/beneath"
)

// maxPointer is the most of a ".git" file GitDir reads.
const maxPointer = 4 << 10

// GitDir finds the git directory of the work tree whose top is root, as a
// path below root: its ".git" directory, or the directory a ".git" file
// names ("gitdir: <path>") when that lies below root. Nothing is followed:
// a symlink at ".git" or on the way to the directory it names, or a
// pointer that leaves root, is an error, as is a git directory with a
// commondir (a linked worktree's: git reads its shared files, such as
// info/exclude, from the directory that names, which the caller would
// have to trust as well).
func GitDir(root *beneath.Root) (string, error) {
	st, err := root.Lstat(".git")
	if err != nil {
		return "", err
	}
	dir := ".git"
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
	case unix.S_IFREG:
		f, err := root.OpenFile(".git", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
		if err != nil {
			return "", err
		}
		data, err := io.ReadAll(io.LimitReader(f, maxPointer))
		f.Close()
		if err != nil {
			return "", err
		}
		target, ok := parsePointer(data)
		if !ok {
			return "", errors.New(`.git is a file that is not "gitdir: <path>"`)
		}
		in, ok := inside(path.Clean(root.Path()), ".", target)
		if !ok {
			return "", fmt.Errorf(".git names %s, outside the work tree", target)
		}
		dir = in
	default:
		return "", errors.New(".git is neither a directory nor a file")
	}
	if st, err := root.Lstat(dir); err != nil {
		return "", err
	} else if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return "", fmt.Errorf("%s is not a directory", root.Join(dir))
	}
	if _, err := root.Lstat(path.Join(dir, "commondir")); err == nil {
		return "", fmt.Errorf("%s has a commondir", root.Join(dir))
	}
	return dir, nil
}
