//go:build linux

package mount

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/beneath"
	"github.com/stockade-dev/stockade/internal/gitguard"
)

var excludeSeq atomic.Uint64

// updateExclude makes the block in the info/exclude of the repository
// whose work tree is at top hold lines (none: no block).
//
// The sandboxed command can write that file and its directory while it
// runs (and could in every earlier session), so nothing there is trusted:
// the git directory, info and exclude are resolved below top without
// following a symlink (package beneath), a ".git" file is followed only
// to a directory below top (gitguard.GitDir), and an exclude that is not
// a regular file, has another name (a hard link), or is bigger than
// maxExclude is left alone. The new content is written to a new file
// beside it, with its mode and owner, and renamed over it: a reader
// sees the old file or the new one. If the file changed while it was
// read (the user, the command), that is done again.
func updateExclude(top string, lines []string) error {
	root, err := beneath.OpenRoot(top)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrExcludeSkipped, err)
	}
	defer root.Close()
	gitdir, err := gitguard.GitDir(root)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrExcludeSkipped, err)
	}
	info, err := root.OpenRoot(path.Join(gitdir, "info"))
	if errors.Is(err, unix.ENOENT) {
		// git makes it with the repository; without it, git reads no
		// exclude file, and stockade makes none.
		return fmt.Errorf("%w: %s has no info directory", ErrExcludeSkipped, root.Join(gitdir))
	}
	if err != nil {
		return err
	}
	defer info.Close()
	for range 3 {
		err := rewriteExclude(info, lines)
		if !errors.Is(err, errExcludeRaced) {
			return err
		}
	}
	return fmt.Errorf("%s: it kept changing while stockade rewrote it", info.Join("exclude"))
}

// errExcludeRaced: the file changed between its reading and the rename.
var errExcludeRaced = errors.New("changed meanwhile")

// rewriteExclude is one attempt of updateExclude in the info directory.
func rewriteExclude(info *beneath.Root, lines []string) error {
	var dirSt unix.Stat_t
	if err := unix.Fstat(info.Fd(), &dirSt); err != nil {
		return os.NewSyscallError("fstat", err)
	}
	old, st, err := readExclude(info)
	if errors.Is(err, unix.ENOENT) {
		if len(lines) == 0 {
			return nil
		}
		// A new file: the info directory's owner's, as git would make it.
		st = unix.Stat_t{Mode: unix.S_IFREG | 0o644, Uid: dirSt.Uid, Gid: dirSt.Gid}
	} else if err != nil {
		return err
	}
	content, err := editExclude(old, lines)
	if err != nil {
		return fmt.Errorf("%s: %w", info.Join("exclude"), err)
	}
	if st.Ino != 0 && bytes.Equal(content, old) {
		return nil
	}
	tmp := "exclude.stockade-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(excludeSeq.Add(1), 10) + ".tmp"
	f, err := info.OpenFile(tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(content)
	if err == nil && (st.Uid != uint32(os.Geteuid()) || st.Gid != uint32(os.Getegid())) {
		err = f.Chown(int(st.Uid), int(st.Gid)) // as root, in a user's repository
	}
	if err == nil {
		err = f.Chmod(os.FileMode(st.Mode & 0o7777)) // after chown, which drops setgid
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// What was read must still be there: the rename would drop a
		// change made meanwhile.
		now, serr := info.Lstat("exclude")
		switch {
		case st.Ino == 0 && !errors.Is(serr, unix.ENOENT):
			err = errExcludeRaced
		case st.Ino != 0 && (serr != nil || now.Ino != st.Ino || now.Size != st.Size || now.Mtim != st.Mtim || now.Ctim != st.Ctim):
			err = errExcludeRaced
		}
	}
	if err == nil {
		err = info.Rename(tmp, "exclude", 0)
	}
	if err != nil {
		info.Remove(tmp)
	}
	return err
}

// readExclude reads the exclude file in info, refusing what stockade must
// not replace.
func readExclude(info *beneath.Root) ([]byte, unix.Stat_t, error) {
	var st unix.Stat_t
	// O_NONBLOCK: a FIFO planted there must not block the open.
	f, err := info.OpenFile("exclude", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, st, err
	}
	defer f.Close()
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, st, os.NewSyscallError("fstat", err)
	}
	name := info.Join("exclude")
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return nil, st, fmt.Errorf("%s is not a regular file; left alone", name)
	case st.Nlink > 1:
		return nil, st, fmt.Errorf("%s has %d names (hard links); left alone", name, st.Nlink)
	case st.Size > maxExclude:
		return nil, st, fmt.Errorf("%s is bigger than %d bytes; left alone", name, maxExclude)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxExclude+1))
	if err != nil {
		return nil, st, err
	}
	if len(b) > maxExclude {
		return nil, st, fmt.Errorf("%s is bigger than %d bytes; left alone", name, maxExclude)
	}
	return b, st, nil
}
