//go:build linux

package mount

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/beneath"
	"github.com/stockade-dev/stockade/internal/gitguard"
)

// updateExclude makes the block in the info/exclude of the repository
// whose work tree is at top hold lines (none: no block).
//
// The sandboxed command can write that file and its directory while it
// runs (and could in every earlier session), so nothing there is trusted:
// top (canonical when recorded) is opened following no symlink, the git
// directory, info and exclude are resolved below it without
// following a symlink (package beneath), a ".git" file is followed only
// to a directory below top (gitguard.GitDir), and an exclude that is not
// a regular file, has another name (a hard link), or is bigger than
// maxExclude is left alone. The new content is written to the spare file
// beside it (excludeSpare), with its mode and owner, and the two are
// swapped with one rename: a reader sees the old file or the new one. If
// the file changed while it was read (the user, the command), that is
// done again.
func updateExclude(top string, lines []string) error {
	// top was recorded canonical; another session's command that can
	// write a directory above it may have made it a symlink since.
	root, err := beneath.OpenRootNoLinks(top)
	if beneath.IsLoop(err) {
		return fmt.Errorf("%s, or a directory above it, is now a symlink, which stockade does not follow", top)
	}
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
		return symlinkSaid(err)
	}
	defer info.Close()
	// Supervisors that share no records (root's and a user's sessions in
	// one repository) may rewrite it at once: two writes to the one spare
	// leave it cut or padded with zeros, and the swap puts that in place.
	// A lock on info keeps them apart; never waited for, since the
	// command can hold it too.
	dir, err := info.OpenFile(".", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer dir.Close()
	for i := range excludeTries {
		if i > 0 {
			time.Sleep(time.Duration(1<<i) * time.Millisecond)
		}
		err := unix.Flock(int(dir.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if errors.Is(err, unix.EWOULDBLOCK) {
			continue
		}
		if err != nil {
			return fmt.Errorf("locking %s: %w", info.Path(), os.NewSyscallError("flock", err))
		}
		err = rewriteExclude(info, lines)
		unix.Flock(int(dir.Fd()), unix.LOCK_UN)
		if !errors.Is(err, errExcludeRaced) {
			return err
		}
	}
	return fmt.Errorf("%s: it kept changing, or another process held %s, while stockade rewrote it", info.Join("exclude"), info.Path())
}

// excludeTries is how often updateExclude tries, waiting 2, 4, 8 and 16
// ms in between.
const excludeTries = 5

// errExcludeRaced: the file changed between its reading and the rename.
var errExcludeRaced = errors.New("changed meanwhile")

// excludeSpare is the file beside info/exclude that the new content is
// written to before the two are swapped (renameat2 RENAME_EXCHANGE): it
// then holds what exclude held, and is written over the next time. A new
// file each time, renamed over exclude, made and freed an inode per edit,
// two per run: 160 µs each on ext4, where the swap takes 5. Deleting it
// is always safe.
const excludeSpare = "exclude.stockade-spare"

// rewriteExclude is one attempt of updateExclude in the info directory.
func rewriteExclude(info *beneath.Root, lines []string) error {
	old, st, err := readExclude(info)
	missing := errors.Is(err, unix.ENOENT)
	var dirSt unix.Stat_t
	if err := unix.Fstat(info.Fd(), &dirSt); err != nil {
		return os.NewSyscallError("fstat", err)
	}
	switch {
	case missing:
		if len(lines) == 0 {
			return nil
		}
		// A new file: the info directory's owner's, as git would make it.
		st = unix.Stat_t{Mode: unix.S_IFREG | 0o644, Uid: dirSt.Uid, Gid: dirSt.Gid}
	case err != nil:
		return symlinkSaid(err)
	case st.Uid != dirSt.Uid:
		// Not the file git made: another user's, which the command can
		// move here from a directory it may write but not read. A root
		// supervisor would write it out again, with the block, as a file
		// of that owner that the command can move back.
		return fmt.Errorf("%s belongs to uid %d, not to the owner of %s (uid %d): left alone", info.Join("exclude"), st.Uid, info.Path(), dirSt.Uid)
	}
	content, err := editExclude(old, lines)
	if err != nil {
		return fmt.Errorf("%s: %w", info.Join("exclude"), err)
	}
	if !missing && bytes.Equal(content, old) {
		return nil
	}
	if err := writeSpare(info, content, st); err != nil {
		return err
	}
	// What was read must still be there: the swap would put a change
	// made meanwhile in the spare.
	now, err := info.Lstat("exclude")
	switch {
	case missing && !errors.Is(err, unix.ENOENT):
		return errExcludeRaced
	case missing:
		return info.Rename(excludeSpare, "exclude", unix.RENAME_NOREPLACE)
	case err != nil || now.Ino != st.Ino || now.Size != st.Size || now.Mtim != st.Mtim || now.Ctim != st.Ctim:
		return errExcludeRaced
	}
	return info.Rename(excludeSpare, "exclude", unix.RENAME_EXCHANGE)
}

// writeSpare makes the spare in info hold content, with the mode and
// owner of st. A spare that is not a regular file with one name and
// exactly that owner and mode (the command may have put anything there,
// and may hold it open) is removed, never written through, and a new one
// made: with no permission bits, given st's owner and mode, and only then
// written, so that no one whom st's mode and owner would refuse has it
// open when the content comes (a root supervisor reads a file the command
// could not, moved to exclude).
func writeSpare(info *beneath.Root, content []byte, st unix.Stat_t) error {
	f, err := info.OpenFile(excludeSpare, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err == nil {
		var have unix.Stat_t
		if err = unix.Fstat(int(f.Fd()), &have); err == nil && (have.Mode&unix.S_IFMT != unix.S_IFREG || have.Nlink != 1 ||
			have.Uid != st.Uid || have.Gid != st.Gid || have.Mode&0o7777 != st.Mode&0o777) {
			err = unix.EEXIST
		}
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		if !errors.Is(err, unix.ENOENT) {
			if err := info.Remove(excludeSpare); err != nil {
				return err
			}
		}
		if f, err = info.OpenFile(excludeSpare, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0); err != nil {
			return err
		}
		if st.Uid != uint32(os.Geteuid()) || st.Gid != uint32(os.Getegid()) {
			err = f.Chown(int(st.Uid), int(st.Gid)) // as root, in a user's repository
		}
		if err == nil {
			err = f.Chmod(os.FileMode(st.Mode & 0o777)) // the bits git's file has
		}
	}
	if err == nil {
		_, err = f.WriteAt(content, 0)
	}
	if err == nil {
		err = f.Truncate(int64(len(content)))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", info.Join(excludeSpare), err)
	}
	return nil
}

// symlinkSaid turns the refusal of a symlink into what it means here.
func symlinkSaid(err error) error {
	var pe *fs.PathError
	if beneath.IsLoop(err) && errors.As(err, &pe) {
		return fmt.Errorf("%s is a symlink, or lies in one, which stockade does not follow; replace it with the file it names", pe.Path)
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
