//go:build linux

package review

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/beneath"
)

// Setuid is a file below the workdir that was made setuid or setgid, or
// given file capabilities, during the run; or (SweepShared) a file or
// directory made writable by every user, or given an access control list.
type Setuid struct {
	Path string // relative to the workdir
	Mode uint32 // its permission bits as found
	Caps bool   // it had a security.capability attribute
	ACL  bool   // it had an access or default ACL
	// Err is why the bits or the attribute could not be removed (nil:
	// they were). A file the supervisor does not own (a container's
	// subordinate id) cannot be changed by it.
	Err error
}

func (s Setuid) String() string { return s.Path + ": " + s.Detail() }

// Detail is what was found and done, without the path.
func (s Setuid) Detail() string {
	var what []string
	if s.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
		what = append(what, fmt.Sprintf("mode %04o", s.Mode))
	} else if s.Mode&0o002 != 0 {
		what = append(what, fmt.Sprintf("mode %04o (writable by every user)", s.Mode))
	}
	if s.Caps {
		what = append(what, "file capabilities")
	}
	if s.ACL {
		what = append(what, "an access control list")
	}
	w := strings.Join(what, " and ")
	if s.Err != nil {
		return fmt.Sprintf("%s, set during the run; could not remove them (%v): do so before anyone runs it (chmod ug-s,o-w; setcap -r; setfacl -b)", w, s.Err)
	}
	return fmt.Sprintf("%s, set during the run: removed, since another user of the host could run it as its owner, or change what you run", w)
}

// Strip says what a sweep removes.
type Strip uint8

const (
	// SweepSetuid: the setuid and setgid bits and file capabilities of
	// regular files.
	SweepSetuid Strip = 1 << iota
	// SweepShared: the write permission of other users and ACLs, of
	// regular files and directories (one in the project let another user
	// of the host put a Makefile there that the user then ran).
	SweepShared
)

// Start is the time to give Sweep for a run that starts now: the kernel's
// coarse clock, which stamps a file's status change (or lies below a
// fine-grained stamp). time.Now can be up to a tick ahead of it, and a
// file the command changed in that tick would then look older than the
// run.
func Start() time.Time {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_REALTIME_COARSE, &ts); err != nil {
		return time.Now().Add(-time.Second)
	}
	return time.Unix(ts.Unix())
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
	return Sweep(root, since, SweepSetuid)
}

// Sweep is StripSetuid for what: the same walk, removing what says, from
// the root itself too.
func Sweep(root string, since time.Time, what Strip) ([]Setuid, error) {
	w := sweep{since: since.UnixNano(), what: what}
	// The root is opened from its parent, itself opened with no symlink
	// followed (a --rw tree inside the workdir has a parent the sandbox
	// may have replaced with a link since the start resolved it).
	dir, base := filepath.Dir(root), filepath.Base(root)
	pr, err := beneath.OpenRootNoLinks(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", root, err)
	}
	defer pr.Close()
	parent := pr.Fd()
	var st unix.Stat_t
	if err := unix.Fstatat(parent, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, fmt.Errorf("%s: %w", root, err)
	}
	// The root itself: a file (--rw FILE), or a directory's own mode
	// (chmod 777 .).
	if t := st.Mode & unix.S_IFMT; (t == unix.S_IFREG || t == unix.S_IFDIR) && st.Ctim.Nano() >= w.since {
		if s, ok := w.strip(parent, base, ".", &st); ok {
			w.found = append(w.found, s)
		}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return w.found, nil
	}
	fd, err := unix.Openat(parent, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return w.found, fmt.Errorf("opening %s: %w", root, err)
	}
	w.walk(fd)
	return w.found, w.err()
}

// sweep is one walk of StripSetuid. It goes on past what it cannot read
// (a directory made unreadable, an entry gone), recording each, so that
// nothing can end it early; and it holds at most two descriptors whatever
// the depth (a directory is left for its child, and found again through
// the child's "..", checked to be the same inode), so that no depth of
// directories makes it fail.
type sweep struct {
	since int64
	what  Strip
	found []Setuid
	errs  []error
	nerrs int
}

// maxErrs bounds the errors a sweep keeps (their number is still told).
const maxErrs = 8

func (w *sweep) fail(rel string, err error) {
	w.nerrs++
	if len(w.errs) < maxErrs {
		if len(rel) > 200 {
			rel = "…" + rel[len(rel)-200:]
		}
		w.errs = append(w.errs, fmt.Errorf("%s: %w", rel, err))
	}
}

func (w *sweep) err() error {
	if w.nerrs == 0 {
		return nil
	}
	err := errors.Join(w.errs...)
	if w.nerrs > len(w.errs) {
		err = fmt.Errorf("%w (and %d more)", err, w.nerrs-len(w.errs))
	}
	return err
}

// frame is one directory on the way down: its entries, read whole when
// it was opened, and the next to look at.
type frame struct {
	rel      string
	names    []string
	next     int
	dev, ino uint64
}

// walk sweeps the tree whose top is open at fd (closed on return).
func (w *sweep) walk(fd int) {
	top, ok := w.enter(fd, "")
	if !ok {
		unix.Close(fd)
		return
	}
	stack := []*frame{top}
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		if f.next == len(f.names) {
			// Done here: up to the parent, through "..".
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				break
			}
			parent := stack[len(stack)-1]
			up, err := unix.Openat(fd, "..", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			unix.Close(fd)
			var st unix.Stat_t
			if err == nil {
				if err = unix.Fstat(up, &st); err == nil && (st.Dev != parent.dev || st.Ino != parent.ino) {
					err = errors.New("moved while it was swept")
				}
				if err != nil {
					unix.Close(up)
				}
			}
			if err != nil {
				w.fail(parent.rel, err)
				return
			}
			fd = up
			continue
		}
		name := f.names[f.next]
		f.next++
		p := path.Join(f.rel, name)
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if !errors.Is(err, unix.ENOENT) {
				w.fail(p, err)
			}
			continue
		}
		if t := st.Mode & unix.S_IFMT; (t == unix.S_IFREG || t == unix.S_IFDIR) && st.Ctim.Nano() >= w.since {
			if s, ok := w.strip(fd, name, p, &st); ok {
				w.found = append(w.found, s)
			}
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				w.fail(p, err)
				continue
			}
			child, ok := w.enter(sub, p)
			if !ok {
				unix.Close(sub)
				continue
			}
			unix.Close(fd)
			fd = sub
			stack = append(stack, child)
		}
	}
	unix.Close(fd)
}

// enter reads the names of the directory open at fd, rel below the top.
func (w *sweep) enter(fd int, rel string) (*frame, bool) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		w.fail(rel, err)
		return nil, false
	}
	dup, err := unix.Dup(fd)
	if err != nil {
		w.fail(rel, err)
		return nil, false
	}
	dir := os.NewFile(uintptr(dup), rel)
	names, err := dir.Readdirnames(-1)
	dir.Close()
	if err != nil {
		w.fail(rel, err)
	}
	return &frame{rel: rel, names: names, dev: uint64(st.Dev), ino: st.Ino}, true
}

// strip checks and mends one regular file or directory, name in the
// directory open at dirfd, through a descriptor of its own (O_PATH, no
// link followed) that is the inode fstatat saw.
func (w *sweep) strip(dirfd int, name, p string, st *unix.Stat_t) (Setuid, bool) {
	reg := st.Mode&unix.S_IFMT == unix.S_IFREG
	has := func(attr string) bool {
		_, err := unix.Lgetxattr(atPath(dirfd, name), attr, nil)
		return err == nil
	}
	var suid, caps, shared, acl bool
	if w.what&SweepSetuid != 0 && reg {
		suid = st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0
		// Whatever the mode: a later chmod +x keeps the attribute.
		caps = has("security.capability")
	}
	if w.what&SweepShared != 0 {
		shared = st.Mode&0o002 != 0
		acl = has("system.posix_acl_access") || !reg && has("system.posix_acl_default")
	}
	if !suid && !caps && !shared && !acl {
		return Setuid{}, false
	}
	s := Setuid{Path: p, Mode: st.Mode & 0o7777, Caps: caps, ACL: acl}
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		s.Err = err
		return s, true
	}
	defer unix.Close(fd)
	var now unix.Stat_t
	if err := unix.Fstat(fd, &now); err != nil || now.Dev != st.Dev || now.Ino != st.Ino || now.Mode&unix.S_IFMT != st.Mode&unix.S_IFMT {
		s.Err = errors.New("replaced while it was checked")
		return s, true
	}
	// The magic link of an O_PATH descriptor names the inode itself.
	self := "/proc/self/fd/" + strconv.Itoa(fd)
	var attrs []string
	if caps {
		attrs = append(attrs, "security.capability")
	}
	if acl {
		attrs = append(attrs, "system.posix_acl_access", "system.posix_acl_default")
	}
	for _, a := range attrs {
		if err := unix.Removexattr(self, a); err != nil && !errors.Is(err, unix.ENODATA) && s.Err == nil {
			s.Err = err
		}
	}
	mode := now.Mode & 0o7777
	if suid {
		mode &^= unix.S_ISUID | unix.S_ISGID
	}
	if shared {
		mode &^= 0o002
	}
	if mode != now.Mode&0o7777 && s.Err == nil {
		if err := unix.Chmod(self, mode); err != nil {
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

// OthersReach tells whether another user of the host may reach p: every
// directory above it can be searched by others, or by its group (which
// may have other members: a team's directory), or has an ACL (which may
// let someone). What p itself allows is the sandbox's to change; the
// directories above it are not in the sandbox's view.
func OthersReach(p string) bool {
	for d := filepath.Dir(filepath.Clean(p)); ; d = filepath.Dir(d) {
		var st unix.Stat_t
		if err := unix.Stat(d, &st); err != nil {
			return true // cannot tell: assume it can
		}
		if st.Mode&0o011 == 0 {
			if _, err := unix.Getxattr(d, "system.posix_acl_access", nil); err != nil {
				return false
			}
		}
		if d == "/" {
			return true
		}
	}
}
