package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/beneath"
)

// Store is a project's engine storage on the host (StoreDir/<key> below
// stockade's data directory), held open and locked: one engine at a time
// uses it. The lock is an flock of the directory, held by the process
// that opened it (a session's supervisor) and released with it, a killed
// one included.
//
// Nothing below the directory is ever opened on the host side: what an
// engine wrote there is the sandbox's, hostile to the next session, and
// only init touches the directory itself, to clone it with no symlink on
// the way (mount.Plan.Store).
type Store struct {
	// Path is the directory's canonical path, for the plan and messages.
	Path string
	// Dev and Ino identify the directory locked (mount.Plan.StoreIno).
	Dev, Ino uint64
	dir      *os.File
}

// OpenStore opens the storage of the project key below data, stockade's
// data directory, making what is missing (mode 0700, no symlink followed
// below data), and takes its lock. busy: another engine holds it, and
// nothing is returned.
func OpenStore(data, key string) (s *Store, busy bool, err error) {
	rel := path.Join(StoreDir, key)
	where := filepath.Join(data, StoreDir, key)
	fail := func(err error) (*Store, bool, error) {
		if beneath.IsLoop(err) || errors.Is(err, unix.ENOTDIR) {
			return nil, false, fmt.Errorf("opening the engine's storage %s: %w; a symlink or a file stands in its path: move it away", where, err)
		}
		return nil, false, fmt.Errorf("opening the engine's storage %s: %w", where, err)
	}
	if err := os.MkdirAll(data, 0o700); err != nil {
		return fail(err)
	}
	canon, err := filepath.EvalSymlinks(data)
	if err != nil {
		return fail(err)
	}
	top, err := beneath.OpenRoot(canon)
	if err != nil {
		return fail(err)
	}
	defer top.Close()
	if err := top.MkdirAll(rel, 0o700); err != nil {
		return fail(err)
	}
	// The directory of every project's storage is the user's and 0700 as
	// well: an engine's root may have opened its own storage to all (it
	// owns it), and what is in it (an image's setuid programs, owned by
	// the user on the host disk) must stay out of other users' reach.
	parent, err := top.OpenFile(StoreDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return fail(err)
	}
	err = ownPrivate(parent)
	parent.Close()
	if err != nil {
		return fail(err)
	}
	dir, err := top.OpenFile(rel, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return fail(err)
	}
	if err := ownPrivate(dir); err != nil {
		dir.Close()
		return fail(err)
	}
	if err := unix.Flock(int(dir.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		dir.Close()
		if err == unix.EWOULDBLOCK {
			return nil, true, nil
		}
		return fail(os.NewSyscallError("flock", err))
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(dir.Fd()), &st); err != nil {
		dir.Close()
		return fail(err)
	}
	return &Store{Path: filepath.Join(canon, StoreDir, key), Dev: st.Dev, Ino: st.Ino, dir: dir}, false, nil
}

// ownPrivate checks that dir is the user's and makes its mode 0700.
func ownPrivate(dir *os.File) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(dir.Fd()), &st); err != nil {
		return err
	}
	if int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%s is owned by uid %d, not by you; remove it", dir.Name(), st.Uid)
	}
	if st.Mode&0o7777 != 0o700 {
		return unix.Fchmod(int(dir.Fd()), 0o700)
	}
	return nil
}

// MakeStoreDir makes the directory of the projects' storages below data,
// stockade's data directory, following no symlink below data: a tree
// the sandbox sees that holds it masks it (cli), and a mask needs a
// directory to cover, lest the command make one and plant a project's
// storage in it.
func MakeStoreDir(data string) error {
	top, err := beneath.OpenRoot(data)
	if err != nil {
		return err
	}
	defer top.Close()
	return top.MkdirAll(StoreDir, 0o700)
}

// Busy reports whether another engine holds the storage of key below
// data now; a storage not made yet is not. A start line's word only: the
// lock is taken later, by OpenStore, which has the last word.
func Busy(data, key string) bool {
	top, err := beneath.OpenRoot(data)
	if err != nil {
		return false
	}
	defer top.Close()
	dir, err := top.OpenFile(path.Join(StoreDir, key), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) || err != nil {
		return false
	}
	defer dir.Close()
	// A shared lock: it keeps no OpenStore out but one that starts in
	// the same instant, which then runs on a storage of its own.
	if err := unix.Flock(int(dir.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
		return err == unix.EWOULDBLOCK
	}
	return false
}

// Close releases the lock.
func (s *Store) Close() error {
	if s == nil || s.dir == nil {
		return nil
	}
	err := s.dir.Close()
	s.dir = nil
	return err
}
