//go:build linux

package mount

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/beneath"
)

// Placeholders lie in trees the sandbox writes, so every operation on one
// goes through the directory that holds it, opened below its Root without
// following a symlink (package beneath): a link planted in place of a
// parent (".git -> ~/.aws") fails the operation instead of redirecting it.

// parents holds the directories placeholders lie in, opened once for the
// placeholders of one Create or RemovePlaceholders (most share the
// workdir): each resolved below its root without following a symlink.
type parents map[string]*beneath.Root

func newParents() parents { return parents{} }

func (ps parents) close() {
	for _, r := range ps {
		r.Close()
	}
}

// of returns the directory that holds ph, and ph's name in it.
func (ps parents) of(ph Placeholder) (*beneath.Root, string, error) {
	rel, ok := strings.CutPrefix(ph.Path, strings.TrimSuffix(ph.Root, "/")+"/")
	if ph.Root == "" || !ok {
		return nil, "", fmt.Errorf("placeholder %s is not below its root %q", ph.Path, ph.Root)
	}
	dir, name := filepath.Split(ph.Path)
	if r, ok := ps[dir]; ok {
		return r, name, nil
	}
	root, err := beneath.OpenRoot(ph.Root)
	if err != nil {
		return nil, "", err
	}
	defer root.Close()
	r, name, err := root.OpenParent(rel)
	if err != nil {
		return nil, "", err
	}
	ps[dir] = r
	return r, name, nil
}

func lstatPlaceholder(ph Placeholder, ps parents) (placeholderStat, error) {
	dir, name, err := ps.of(ph)
	if err != nil {
		return placeholderStat{}, err
	}
	return lstatAt(dir.Fd(), name, ph.Path)
}

func lstatAt(dirfd int, name, full string) (placeholderStat, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return placeholderStat{}, &fs.PathError{Op: "lstat", Path: full, Err: err}
	}
	return placeholderStat{ino: st.Ino, dir: st.Mode&unix.S_IFMT == unix.S_IFDIR, size: st.Size, nlink: uint64(st.Nlink),
		link: st.Mode&unix.S_IFMT == unix.S_IFLNK, reg: st.Mode&unix.S_IFMT == unix.S_IFREG, ctime: time.Unix(st.Ctim.Unix())}, nil
}

// madeSince reports whether the path of ph, planned in a pending record
// written at since (see Records.pendingOwn), holds a placeholder as
// stockade makes it (empty, or "{}", with one name; an empty directory)
// that is ph's: the inode that waited in the stash for it (ph.Ino, which
// Create moves into place), or any when the record names none (no stash
// on its mount), whose status changed from a second before since to
// pendingWindow after it, when it was made or moved into place. It
// returns the inode found.
func madeSince(ph Placeholder, since time.Time) (uint64, bool) {
	ps := newParents()
	defer ps.close()
	dir, name, err := ps.of(ph)
	if err != nil {
		return 0, false
	}
	fd := dir.Fd()
	st, err := lstatAt(fd, name, ph.Path)
	if err != nil {
		return 0, false
	}
	if ph.Ino != 0 && st.ino != ph.Ino {
		return 0, false
	}
	// Made, or moved into place, within seconds of the record: changed
	// since (a chmod, an attribute, a name more), it is left as it is.
	if st.ctime.Before(since.Add(-time.Second)) || st.ctime.After(since.Add(pendingWindow)) {
		return 0, false
	}
	found := ph
	found.Ino = st.ino
	if !unchangedAt(fd, name, found, st) || (!ph.Dir && st.nlink != 1) || !sameContent(fd, name, ph.Path) {
		return 0, false
	}
	return st.ino, true
}

// stock returns the inode that waits in the stash for p, made there first
// if missing, so that a pending record can name it (see intended); 0 when
// there is no stash, or it is on another mount than p's directory (a move
// from it fails, EXDEV, also from another mount of the same file system,
// and Create makes the placeholder in place).
func (s Stash) stock(p Placeholder, dirs parents) uint64 {
	sfd, sname, ok := s.at(p, true)
	if !ok {
		return 0
	}
	dir, _, err := dirs.of(p)
	if err != nil || mountID(dir.Fd()) == 0 || mountID(dir.Fd()) != mountID(sfd) {
		return 0
	}
	st, err := lstatAt(sfd, sname, p.Path)
	if err != nil {
		if makeAt(sfd, sname, p) != nil {
			return 0
		}
		if st, err = lstatAt(sfd, sname, p.Path); err != nil {
			return 0
		}
	}
	return st.ino
}

// inoAt is the inode at ph's path, 0 if none can be found there.
func inoAt(ph Placeholder) uint64 {
	ps := newParents()
	defer ps.close()
	st, err := lstatPlaceholder(ph, ps)
	if err != nil {
		return 0
	}
	return st.ino
}

// mountID is the ID of the mount that holds fd, 0 if unknown.
func mountID(fd int) uint64 {
	var stx unix.Statx_t
	if unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &stx) != nil || stx.Mask&unix.STATX_MNT_ID == 0 {
		return 0
	}
	return stx.Mnt_id
}

func createPlaceholder(p Placeholder, ps parents) (Placeholder, error) {
	dir, name, err := ps.of(p)
	if err != nil {
		return Placeholder{}, err
	}
	fd := dir.Fd()
	if err := makeAt(fd, name, p); err != nil {
		if err == unix.EEXIST {
			err = fs.ErrExist
		}
		return Placeholder{}, &fs.PathError{Op: "create", Path: p.Path, Err: err}
	}
	st, err := lstatAt(fd, name, p.Path)
	if err != nil {
		return Placeholder{}, err
	}
	return Placeholder{Path: p.Path, Root: p.Root, Dir: p.Dir, Ino: st.ino, Ctime: st.ctime.UnixNano()}, nil
}

// makeAt makes the placeholder for p at name in fd.
func makeAt(fd int, name string, p Placeholder) error {
	switch {
	case p.Dir:
		// Writable for the user outside (an editor may want it while the
		// sandbox runs; a placeholder given content is left in place), and
		// read-only inside, where it is a read-only bind.
		return unix.Mkdirat(fd, name, 0o755)
	case filepath.Ext(p.Path) == ".json":
		// Written unnamed (O_TMPFILE), then linked into place: the name
		// never exists without its content, so a reader (another stockade
		// loading a .stockade.json placeholder) never sees an empty file.
		return createLinked(fd, name, placeholderJSON)
	default:
		f, err := unix.Openat(fd, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		if err == nil {
			unix.Close(f)
		}
		return err
	}
}

// createLinked creates name in dirfd with content, atomically: an unnamed
// file in the directory is written and then linked at name (EEXIST when
// another stockade was first).
func createLinked(dirfd int, name, content string) error {
	fd, err := unix.Openat(dirfd, ".", unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
	if err == unix.EOPNOTSUPP || err == unix.EISDIR || err == unix.EINVAL {
		return createRenamed(dirfd, name, content) // no O_TMPFILE on this filesystem
	}
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, []byte(content)); err != nil {
		return err
	}
	if err := unix.Fchmod(fd, 0o644); err != nil {
		return err
	}
	return unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), dirfd, name, unix.AT_SYMLINK_FOLLOW)
}

// createRenamed is createLinked through a named temporary file.
func createRenamed(dirfd int, name, content string) error {
	tmp := ".stockade-placeholder-" + strconv.Itoa(unix.Getpid()) + "-" + name
	fd, err := unix.Openat(dirfd, tmp, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	_, err = unix.Write(fd, []byte(content))
	if err == nil {
		err = unix.Fchmod(fd, 0o644)
	}
	unix.Close(fd)
	if err == nil {
		err = unix.Linkat(dirfd, tmp, dirfd, name, 0)
	}
	unix.Unlinkat(dirfd, tmp, 0)
	return err
}

// open opens the stash's directory for a batch of moves, which then name
// their end in it (in its tree's directory, opened once a batch) instead
// of walking its path each time. The user's own state directory is not the
// sandbox's to change; a stash that cannot be opened is not used (the
// placeholders are made and removed instead).
func (s Stash) open() (Stash, func()) {
	if s.Dir == "" || s.fd > 0 {
		return s, func() {}
	}
	fd, err := unix.Open(s.Dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return Stash{}, func() {}
	}
	s.fd, s.trees = fd, map[string]int{}
	return s, func() {
		for _, t := range s.trees {
			unix.Close(t)
		}
		unix.Close(fd)
	}
}

// at is where the placeholder for p waits in the stash, for an *at call:
// the descriptor of its tree's directory, made when make is set, and its
// name there. ok is false when there is no such directory.
func (s Stash) at(p Placeholder, make bool) (fd int, name string, ok bool) {
	if s.fd <= 0 {
		return 0, "", false
	}
	tree, name := s.name(p)
	if t, ok := s.trees[tree]; ok {
		return t, name, true
	}
	if make {
		unix.Mkdirat(s.fd, tree, 0o700) // EEXIST: another run made it
	}
	t, err := unix.Openat(s.fd, tree, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, "", false
	}
	s.trees[tree] = t
	return t, name, true
}

// take moves p's placeholder from the stash into place, unless something
// is there already.
func (s Stash) take(p Placeholder, ps parents) (Placeholder, error) {
	if s.Dir == "" {
		return Placeholder{}, unix.ENOENT
	}
	dir, name, err := ps.of(p)
	if err != nil {
		return Placeholder{}, err
	}
	sfd, sname, ok := s.at(p, false)
	if !ok {
		return Placeholder{}, unix.ENOENT
	}
	if err := unix.Renameat2(sfd, sname, dir.Fd(), name, unix.RENAME_NOREPLACE); err != nil {
		if err == unix.EEXIST {
			return Placeholder{}, &fs.PathError{Op: "rename", Path: p.Path, Err: fs.ErrExist}
		}
		return Placeholder{}, err
	}
	st, err := lstatAt(dir.Fd(), name, p.Path)
	if err != nil {
		return Placeholder{}, err
	}
	return Placeholder{Path: p.Path, Root: p.Root, Dir: p.Dir, Ino: st.ino, Ctime: st.ctime.UnixNano()}, nil
}

func removePlaceholder(ph Placeholder, stash Stash, ps parents) error {
	dir, name, err := ps.of(ph)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // its directory is gone, and it with it
	}
	if err != nil {
		return fmt.Errorf("placeholder %s: %w; left in place", ph.Path, err)
	}
	fd := dir.Fd()
	st, err := lstatAt(fd, name, ph.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("placeholder %s: %w; left in place", ph.Path, err)
	}
	if !unchangedAt(fd, name, ph, st) {
		// Inside, the placeholder was read-only; what is there now was
		// put there by something else: the user, or a sandbox of an
		// enclosing project that saw it as a plain directory. It is not
		// left for a tool to read: it is moved aside.
		to := name + ".stockade-quarantine-" + rand.Text()[:8]
		if err := unix.Renameat2(fd, name, fd, to, unix.RENAME_NOREPLACE); err != nil {
			return fmt.Errorf("placeholder %s changed outside the sandbox, and could not be moved aside (%v): review it before a tool on the host reads it", ph.Path, err)
		}
		return fmt.Errorf("placeholder %s changed outside the sandbox while it ran; moved to %s: review it, and rename it back if you trust it", ph.Path, dir.Join(to))
	}
	if (ph.Dir || st.nlink == 1) && sameContent(fd, name, ph.Path) {
		if sfd, sname, ok := stash.at(ph, true); ok && unix.Renameat2(fd, name, sfd, sname, unix.RENAME_NOREPLACE) == nil {
			return nil
		}
	}
	flags := 0
	if ph.Dir {
		flags = unix.AT_REMOVEDIR // fails on a directory that is no longer empty
	}
	if err := unix.Unlinkat(fd, name, flags); err != nil && err != unix.ENOENT {
		return fmt.Errorf("removing placeholder %s: %w", ph.Path, err)
	}
	return nil
}

// unchangedAt reports whether name in dirfd (with st) is still the
// placeholder ph as stockade made it.
func unchangedAt(fd int, name string, ph Placeholder, st placeholderStat) bool {
	if st.ino != ph.Ino || st.dir != ph.Dir || (!ph.Dir && (!st.reg || st.nlink != 1 || st.size != int64(len(placeholderContent(ph.Path))))) {
		return false
	}
	// The same inode number, changed since (a chmod, an ACL, a name
	// more), or another object given the number once the placeholder was
	// removed (a FIFO): its status change time says so.
	if ph.Ctime != 0 && !sameCtime(st.ctime, ph.Ctime) {
		return false
	}
	return !ph.Dir || emptyDirAt(fd, name)
}

// sameCtime reports whether ctime is the recorded one: to the nanosecond,
// or to the second where the file system keeps whole seconds, which an
// inode read back from disk may then show (a FUSE file system, ext4 with
// small inodes).
func sameCtime(ctime time.Time, recorded int64) bool {
	if ctime.UnixNano() == recorded {
		return true
	}
	return ctime.Nanosecond() == 0 && ctime.Unix() == time.Unix(0, recorded).Unix()
}

// Unchanged reports whether the placeholder ph is still as stockade made it
// (the same inode, empty).
func Unchanged(ph Placeholder) bool {
	ps := newParents()
	defer ps.close()
	dir, name, err := ps.of(ph)
	if err != nil {
		return false
	}
	st, err := lstatAt(dir.Fd(), name, ph.Path)
	return err == nil && unchangedAt(dir.Fd(), name, ph, st)
}

// emptyDirAt reports whether name in dirfd is a directory with no entries.
func emptyDirAt(dirfd int, name string) bool {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	buf := make([]byte, 4096)
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return false
		}
		if n == 0 {
			return true
		}
		for off := 0; off < n; {
			reclen := int(buf[off+16]) | int(buf[off+17])<<8
			nm := buf[off+19 : off+reclen]
			if i := strings.IndexByte(string(nm), 0); i >= 0 {
				nm = nm[:i]
			}
			if s := string(nm); s != "." && s != ".." {
				return false
			}
			off += reclen
		}
	}
}

// sameContent reports whether the file name holds exactly what stockade
// put in a placeholder at full (a directory always does).
func sameContent(dirfd int, name, full string) bool {
	want := placeholderContent(full)
	if want == "" {
		return true
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	buf := make([]byte, len(want)+1)
	n, _ := unix.Read(fd, buf)
	return string(buf[:n]) == want
}

// renameExchange swaps the files at a and b, failing if either is missing.
func renameExchange(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
}

// renameNoReplace renames from to to, failing if to exists.
func renameNoReplace(from, to string) error {
	return unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
}
