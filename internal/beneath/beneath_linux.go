//go:build linux

package beneath

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Strict are the resolve flags of every lookup below a Root.
const Strict = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// Root is a directory held open. Paths given to its methods are relative to
// it ("" or "." is the directory itself) and slash-separated.
type Root struct {
	fd   int
	path string
}

// OpenRoot opens the directory dir. dir itself is resolved as usual (it is
// the caller's, not the sandbox's); it must be a directory.
func OpenRoot(dir string) (*Root, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	return &Root{fd: fd, path: dir}, nil
}

// OpenRootNoLinks opens the directory dir, an absolute path, following no
// symlink in any of its components: for a path that was canonical when it
// was recorded, which a sandbox that can write one of its parents may
// since have replaced with a link (ELOOP).
func OpenRootNoLinks(dir string) (*Root, error) {
	if !filepath.IsAbs(dir) {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: unix.EINVAL}
	}
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	for {
		fd, err := unix.Openat2(unix.AT_FDCWD, dir, &how)
		if err == unix.EAGAIN || err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
		}
		return &Root{fd: fd, path: dir}, nil
	}
}

// Close releases the directory.
func (r *Root) Close() error {
	if r == nil || r.fd < 0 {
		return nil
	}
	err := unix.Close(r.fd)
	r.fd = -1
	return err
}

// Path is the host path of the root, for messages.
func (r *Root) Path() string { return r.path }

// Fd is the root's descriptor (O_PATH), valid until Close.
func (r *Root) Fd() int { return r.fd }

// Join is the host path of rel, for messages.
func (r *Root) Join(rel string) string { return filepath.Join(r.path, filepath.FromSlash(rel)) }

func (r *Root) err(op, rel string, err error) error {
	return &fs.PathError{Op: op, Path: r.Join(rel), Err: err}
}

// clean turns rel into the form openat2 takes: "." for the root itself. A
// ".." or an absolute path is left for the kernel to refuse (EXDEV).
func clean(rel string) string {
	if rel == "" {
		return "."
	}
	return path.Clean(rel)
}

// openat2 opens rel below dirfd strictly, retrying on EAGAIN (the kernel
// asks for a retry when a rename raced with the lookup) and EINTR.
func openat2(dirfd int, rel string, flags uint64, mode uint64) (int, error) {
	how := unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Mode: mode, Resolve: Strict}
	for {
		fd, err := unix.Openat2(dirfd, rel, &how)
		if err == unix.EAGAIN || err == unix.EINTR {
			continue
		}
		return fd, err
	}
}

// OpenFile opens rel with flags (O_* of package unix; O_CLOEXEC is always
// added) and, with O_CREAT, permission bits perm. The last component is not
// followed either: a symlink there fails with ELOOP (EEXIST with O_EXCL).
func (r *Root) OpenFile(rel string, flags int, perm uint32) (*os.File, error) {
	rel = clean(rel)
	var mode uint64
	if flags&(unix.O_CREAT|unix.O_TMPFILE) != 0 {
		mode = uint64(perm)
	}
	fd, err := openat2(r.fd, rel, uint64(flags), mode)
	if err != nil {
		return nil, r.err("open", rel, err)
	}
	return os.NewFile(uintptr(fd), r.Join(rel)), nil
}

// Open opens rel for reading.
func (r *Root) Open(rel string) (*os.File, error) { return r.OpenFile(rel, unix.O_RDONLY, 0) }

// OpenRoot opens the directory rel as a Root of its own.
func (r *Root) OpenRoot(rel string) (*Root, error) {
	rel = clean(rel)
	fd, err := openat2(r.fd, rel, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, r.err("open", rel, err)
	}
	return &Root{fd: fd, path: r.Join(rel)}, nil
}

// parent opens the directory that holds rel and returns it with rel's last
// component. The caller closes the descriptor.
func (r *Root) parent(rel string) (int, string, error) {
	rel = clean(rel)
	if rel == "." {
		return -1, "", r.err("lookup", rel, unix.EINVAL)
	}
	dir, name := path.Split(rel)
	fd, err := openat2(r.fd, clean(dir), unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, "", r.err("open", dir, err)
	}
	return fd, name, nil
}

// OpenParent opens the directory that holds rel, as a Root, and returns it
// with rel's last component, for the *at system calls of package unix on
// its Fd.
func (r *Root) OpenParent(rel string) (*Root, string, error) {
	fd, name, err := r.parent(rel)
	if err != nil {
		return nil, "", err
	}
	return &Root{fd: fd, path: r.Join(path.Dir(clean(rel)))}, name, nil
}

// Lstat describes rel itself: a symlink as a symlink. No component before
// the last is followed.
func (r *Root) Lstat(rel string) (unix.Stat_t, error) {
	var st unix.Stat_t
	c := clean(rel)
	if c == "." {
		return st, r.fstat(r.fd, rel, &st)
	}
	// A name in the root itself is looked up in the root's descriptor
	// directly: fstatat with AT_SYMLINK_NOFOLLOW resolves nothing but the
	// name, as it would in the root opened again (the review stats some
	// twenty such names twice a run, at three system calls each).
	dfd, name := r.fd, c
	if strings.Contains(c, "/") || c == ".." {
		pfd, n, err := r.parent(rel)
		if err != nil {
			return st, err
		}
		defer unix.Close(pfd)
		dfd, name = pfd, n
	}
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return st, r.err("lstat", rel, err)
	}
	return st, nil
}

func (r *Root) fstat(fd int, rel string, st *unix.Stat_t) error {
	if err := unix.Fstat(fd, st); err != nil {
		return r.err("fstat", rel, err)
	}
	return nil
}

// Mkdir creates the directory rel.
func (r *Root) Mkdir(rel string, perm uint32) error {
	dfd, name, err := r.parent(rel)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	if err := unix.Mkdirat(dfd, name, perm); err != nil {
		return r.err("mkdir", rel, err)
	}
	return nil
}

// MkdirAll creates rel and its missing parents, one component at a time. A
// component that exists and is not a directory (a symlink among them) is an
// error: nothing is created through it.
func (r *Root) MkdirAll(rel string, perm uint32) error {
	rel = clean(rel)
	if rel == "." {
		return nil
	}
	parts := strings.Split(rel, "/")
	for i := range parts {
		p := strings.Join(parts[:i+1], "/")
		err := r.Mkdir(p, perm)
		if err == nil || !errors.Is(err, fs.ErrExist) {
			if err != nil {
				return err
			}
			continue
		}
		st, serr := r.Lstat(p)
		if serr != nil {
			return serr
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return r.err("mkdir", p, unix.ENOTDIR)
		}
	}
	return nil
}

var tmpSeq atomic.Uint64

// WriteFile replaces rel with a file holding data, atomically: the content
// is written to a new file in rel's directory, which is then renamed over
// rel. Whatever was at rel (a symlink among them) is replaced, never
// written through. rel's directory must exist.
func (r *Root) WriteFile(rel string, data []byte, perm uint32) error {
	dfd, name, err := r.parent(rel)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	tmp := ".stockade-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(tmpSeq.Add(1), 10) + ".tmp"
	fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		return r.err("create", path.Join(path.Dir(clean(rel)), tmp), err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(fs.FileMode(perm)) // umask
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dfd, tmp, dfd, name)
	}
	if err != nil {
		unix.Unlinkat(dfd, tmp, 0)
		return r.err("write", rel, err)
	}
	return nil
}

// CreateFile creates rel with data, failing with EEXIST if anything (a
// symlink among them) is there already.
func (r *Root) CreateFile(rel string, data []byte, perm uint32) error {
	f, err := r.OpenFile(rel, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return r.err("write", rel, err)
	}
	return nil
}

// ReadFile reads rel.
func (r *Root) ReadFile(rel string) ([]byte, error) {
	f, err := r.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return b, r.err("read", rel, err)
	}
	return b, nil
}

// Remove removes rel itself: a file, a symlink (not its target) or an
// empty directory.
func (r *Root) Remove(rel string) error {
	dfd, name, err := r.parent(rel)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	err = unix.Unlinkat(dfd, name, 0)
	if err == unix.EISDIR || err == unix.EPERM {
		var st unix.Stat_t
		if unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			err = unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR)
		}
	}
	if err != nil {
		return r.err("remove", rel, err)
	}
	return nil
}

// Rename renames oldrel to newrel, both below r, with renameat2 flags
// (unix.RENAME_NOREPLACE, RENAME_EXCHANGE or 0). Neither name is followed.
func (r *Root) Rename(oldrel, newrel string, flags uint) error {
	return RenameBetween(r, oldrel, r, newrel, flags)
}

// RenameBetween renames from one root to another (on the same filesystem).
func RenameBetween(from *Root, oldrel string, to *Root, newrel string, flags uint) error {
	ofd, oname, err := from.parent(oldrel)
	if err != nil {
		return err
	}
	defer unix.Close(ofd)
	nfd, nname, err := to.parent(newrel)
	if err != nil {
		return err
	}
	defer unix.Close(nfd)
	if err := unix.Renameat2(ofd, oname, nfd, nname, flags); err != nil {
		return &os.LinkError{Op: "rename", Old: from.Join(oldrel), New: to.Join(newrel), Err: err}
	}
	return nil
}

// ReadDir lists the directory rel, sorted by name, with types from
// getdents (no stat of the entries).
func (r *Root) ReadDir(rel string) ([]fs.DirEntry, error) {
	f, err := r.OpenFile(rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, r.err("readdir", rel, err)
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, nil
}

// Readlink reads the symlink rel itself.
func (r *Root) Readlink(rel string) (string, error) {
	dfd, name, err := r.parent(rel)
	if err != nil {
		return "", err
	}
	defer unix.Close(dfd)
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dfd, name, buf)
	if err != nil {
		return "", r.err("readlink", rel, err)
	}
	return string(buf[:n]), nil
}

// IsLoop reports whether err is the refusal of a symlink in a path (ELOOP)
// or of a path that leaves its root (EXDEV).
func IsLoop(err error) bool {
	return errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV)
}
