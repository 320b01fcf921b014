package tripwire

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// fixMeta gives name in dirfd the owner and permission bits of want, without
// following a symlink. The owner goes first: chown clears setuid and setgid.
func fixMeta(dirfd int, name string, want *entry) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return os.NewSyscallError("fstatat", err)
	}
	if st.Uid != want.uid || st.Gid != want.gid {
		if err := unix.Fchownat(dirfd, name, int(want.uid), int(want.gid), unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("giving it back to %d:%d: %w", want.uid, want.gid, os.NewSyscallError("fchownat", err))
		}
		if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return os.NewSyscallError("fstatat", err)
		}
	}
	if want.typ != typeSymlink && st.Mode&0o7777 != want.mode {
		return chmodNoFollow(dirfd, name, want.mode)
	}
	return nil
}

// chmodNoFollow sets the permission bits of name in dirfd, and refuses if it
// is a symlink. chmod(2) would follow one, and fchmodat(AT_SYMLINK_NOFOLLOW)
// needs Linux 6.6, so it changes the mode through /proc/self/fd of an O_PATH
// descriptor of exactly the inode it checked.
func chmodNoFollow(dirfd int, name string, mode uint32) error {
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return os.NewSyscallError("openat", err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return os.NewSyscallError("fstat", err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return errors.New("setting the mode: it is a symlink")
	}
	if err := unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), mode); err != nil {
		return fmt.Errorf("setting the mode to %04o: %w", mode, os.NewSyscallError("chmod", err))
	}
	return nil
}

// maxRemoveDepth bounds the recursion of removeAll (one descriptor a level):
// a tree deeper than this, created in a protected directory, is reported
// rather than removed.
const maxRemoveDepth = 256

// removeAll removes name in dirfd and, if it is a directory, everything in
// it, without following symlinks.
func removeAll(dirfd int, name string, depth int) error {
	err := unix.Unlinkat(dirfd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	var st unix.Stat_t
	if serr := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); serr != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return os.NewSyscallError("unlinkat "+name, err)
	}
	if depth >= maxRemoveDepth {
		return fmt.Errorf("removing %s: more than %d directory levels", name, maxRemoveDepth)
	}
	if st.Mode&0o700 != 0o700 {
		if err := chmodNoFollow(dirfd, name, 0o700); err != nil {
			return err
		}
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return os.NewSyscallError("openat "+name, err)
	}
	d := os.NewFile(uintptr(fd), name)
	names, err := d.Readdirnames(-1)
	for _, n := range names {
		if err == nil {
			err = removeAll(fd, n, depth+1)
		}
	}
	d.Close()
	if err != nil {
		return err
	}
	return os.NewSyscallError("rmdir "+name, unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR))
}
