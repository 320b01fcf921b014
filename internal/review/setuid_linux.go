//go:build linux

package review

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Setuid is a file below the workdir that was made setuid or setgid, or
// given file capabilities, during the run.
type Setuid struct {
	Path string // relative to the workdir
	Mode uint32 // its permission bits as found
	Caps bool   // it had a security.capability attribute
	// Err is why the bits or the attribute could not be removed (nil:
	// they were). A file the supervisor does not own (a container's
	// subordinate id) cannot be changed by it.
	Err error
}

func (s Setuid) String() string { return s.Path + ": " + s.Detail() }

// Detail is what was found and done, without the path.
func (s Setuid) Detail() string {
	var what string
	switch {
	case s.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 && s.Caps:
		what = fmt.Sprintf("mode %04o and file capabilities", s.Mode)
	case s.Caps:
		what = "file capabilities"
	default:
		what = fmt.Sprintf("mode %04o", s.Mode)
	}
	if s.Err != nil {
		return fmt.Sprintf("%s, set during the run; could not remove them (%v): do so before anyone runs it (chmod ug-s, setcap -r)", what, s.Err)
	}
	return fmt.Sprintf("%s, set during the run (by a container): removed, since a setuid program in the project runs as its owner for whoever runs it", what)
}

// StripSetuid walks the whole tree below root (the workdir, a --rw tree,
// the sandbox HOME) without following a symlink, and removes from every
// regular file whose status changed at or after since the setuid and
// setgid bits and the security.capability attribute. The sandbox's own
// processes cannot set them (seccomp.Sandbox); a container can, on a file
// of the workdir it binds or on any file the command hands it a
// descriptor of. A file whose status did not change since is the user's
// own.
func StripSetuid(root string, since time.Time) ([]Setuid, error) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", root, err)
	}
	var out []Setuid
	err = stripDir(fd, "", since.UnixNano(), &out)
	return out, err
}

// stripDir handles the directory open at fd (closed on return), rel below
// the workdir.
func stripDir(fd int, rel string, since int64, out *[]Setuid) error {
	dir := os.NewFile(uintptr(fd), rel)
	defer dir.Close()
	for {
		names, err := dir.Readdirnames(512)
		for _, name := range names {
			p := path.Join(rel, name)
			var st unix.Stat_t
			if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				if errors.Is(err, unix.ENOENT) {
					continue
				}
				return fmt.Errorf("%s: %w", p, err)
			}
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFDIR:
				sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				if err != nil {
					return fmt.Errorf("%s: %w", p, err)
				}
				if err := stripDir(sub, p, since, out); err != nil {
					return err
				}
			case unix.S_IFREG:
				if st.Ctim.Nano() < since {
					continue
				}
				if s, ok := stripFile(fd, name, p, &st); ok {
					*out = append(*out, s)
				}
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("listing %s: %w", rel, err)
		}
	}
}

// stripFile checks and mends one regular file, through a descriptor of its
// own (O_PATH, no link followed) that is the inode fstatat saw.
func stripFile(dirfd int, name, p string, st *unix.Stat_t) (Setuid, bool) {
	suid := st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0
	// Whatever the mode: a later chmod +x keeps the attribute.
	_, err := unix.Lgetxattr(atPath(dirfd, name), "security.capability", nil)
	caps := err == nil
	if !suid && !caps {
		return Setuid{}, false
	}
	s := Setuid{Path: p, Mode: st.Mode & 0o7777, Caps: caps}
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		s.Err = err
		return s, true
	}
	defer unix.Close(fd)
	var now unix.Stat_t
	if err := unix.Fstat(fd, &now); err != nil || now.Dev != st.Dev || now.Ino != st.Ino || now.Mode&unix.S_IFMT != unix.S_IFREG {
		s.Err = errors.New("replaced while it was checked")
		return s, true
	}
	// The magic link of an O_PATH descriptor names the inode itself.
	self := "/proc/self/fd/" + strconv.Itoa(fd)
	if caps {
		if err := unix.Removexattr(self, "security.capability"); err != nil && !errors.Is(err, unix.ENODATA) {
			s.Err = err
		}
	}
	if suid && s.Err == nil {
		if err := unix.Chmod(self, now.Mode&0o7777&^(unix.S_ISUID|unix.S_ISGID)); err != nil {
			s.Err = err
		}
	}
	return s, true
}

// atPath names name in the directory open at dirfd, for the calls that
// take no descriptor (getxattr): the directory's magic link, which the
// kernel resolves to the directory itself, then the name, with no link
// followed at the end (lgetxattr).
func atPath(dirfd int, name string) string {
	return "/proc/self/fd/" + strconv.Itoa(dirfd) + "/" + name
}
