package tripwire

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// watchMask is every event that can mean a change. IN_ACCESS and
// IN_CLOSE_NOWRITE (reads) are left out; IN_CLOSE_WRITE is in so that a write
// that began before an earlier check is looked at again when it is done.
const watchMask = unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE |
	unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_DONT_FOLLOW

// selfEvents say that the watched inode itself went away.
const selfEvents = unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_IGNORED

// Watch watches the snapshot's paths with inotify until ctx is done or a
// change is confirmed. It calls onChange once, with the first change that
// Diff confirms (sorted by path), and then returns nil; it returns nil too
// when ctx is done. An error means that it could not watch (inotify
// unavailable, fs.inotify.max_user_watches reached, more directories than
// Limits.MaxEntries): the tripwire is then blind, and the session should
// treat that as it treats a change.
//
// What it watches: for every path, the directory it is in (events filtered
// by name), or, for a path that does not exist, its nearest existing ancestor
// (filtered by the next name on the way, and moved down as the directories
// appear); the path itself; and every directory below it, including those
// created while it watches. inotify watches inodes, not paths, so a write
// through another mount of them, such as the sandbox's bind mount of the
// workdir, is seen. Changes made between Take and Watch are reported too:
// Watch compares once after its watches are in place.
func (s *Snapshot) Watch(ctx context.Context, onChange func(Change)) error {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		if errors.Is(err, unix.EMFILE) {
			err = fmt.Errorf("%w, EMFILE (%s)", err, userLimit("max_inotify_instances", "max_user_instances",
				"the user's inotify instances may all be taken (or this process's descriptors): close what holds them (editors' file watchers, tail -f)"))
		}
		return fmt.Errorf("starting the tripwire: %w", os.NewSyscallError("inotify_init1", err))
	}
	// A non-blocking descriptor in an os.File is read through the runtime's
	// poller: Read sleeps in epoll, and a deadline in the past wakes it.
	f := os.NewFile(uintptr(fd), "inotify")
	defer f.Close()
	stop := context.AfterFunc(ctx, func() { f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()

	w := &watcher{s: s, fd: fd, wds: map[int32]map[target]bool{}}
	for _, r := range s.roots {
		if err := w.arm(r); err != nil {
			return err
		}
	}
	changes, err := s.Diff()
	if err != nil {
		return err
	}
	if len(changes) > 0 {
		onChange(changes[0])
		return nil
	}
	if s.watching != nil {
		s.watching()
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading tripwire events: %w", err)
		}
		dirty, err := w.handle(buf[:n])
		if err != nil {
			return err
		}
		for _, r := range s.roots {
			if !dirty[r] {
				continue
			}
			changes, err := s.diffRoot(r)
			if err != nil {
				return err
			}
			if len(changes) > 0 {
				onChange(changes[0])
				return nil
			}
		}
		if s.checked != nil {
			s.checked()
		}
	}
}

// target is what a watch descriptor stands for.
type target struct {
	r    *root
	name string // a watch on the directory holding r (or its nearest ancestor): only this name matters
	dir  string // a watch on a directory of r's tree or on r itself: its path
}

type watcher struct {
	s   *Snapshot
	fd  int
	wds map[int32]map[target]bool
	n   int // targets added
}

func (w *watcher) add(path string, t target, onlyDir bool) error {
	mask := uint32(watchMask)
	if onlyDir {
		mask |= unix.IN_ONLYDIR
	}
	wd, err := unix.InotifyAddWatch(w.fd, path, mask)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil // gone again: its parent's watch has seen that
	}
	if err != nil {
		if errors.Is(err, unix.ENOSPC) {
			err = fmt.Errorf("%w, ENOSPC (%s)", err, userLimit("max_inotify_watches", "max_user_watches",
				"the user's inotify watches are all taken: close what holds them (editors' file watchers)"))
		}
		return fmt.Errorf("watching %s: %w", path, os.NewSyscallError("inotify_add_watch", err))
	}
	if w.wds[int32(wd)] == nil {
		w.wds[int32(wd)] = map[target]bool{}
	}
	if !w.wds[int32(wd)][t] {
		if w.n++; w.n > w.s.lim.MaxEntries+4*len(w.s.roots) {
			return fmt.Errorf("watching %s: more than %d watches", path, w.s.lim.MaxEntries)
		}
		w.wds[int32(wd)][t] = true
	}
	return nil
}

// arm puts the watches for r in place: on the nearest existing directory on
// the way to it (filtered by the next name), and on r and its tree if r
// exists. Adding a watch that exists is harmless, so arm is called again
// whenever something on the way to r changes.
func (w *watcher) arm(r *root) error {
	dir, name := filepath.Dir(r.real), filepath.Base(r.real)
	for {
		fi, err := os.Lstat(dir)
		if err == nil && fi.IsDir() {
			break
		}
		if dir == "/" {
			return nil
		}
		dir, name = filepath.Dir(dir), filepath.Base(dir)
	}
	if err := w.add(dir, target{r: r, name: name}, true); err != nil {
		return err
	}
	if filepath.Join(dir, name) != r.real {
		return nil // r cannot exist yet
	}
	fi, err := os.Lstat(r.real)
	if err != nil {
		return nil
	}
	if !fi.IsDir() {
		// The inode itself too: a write through a hard link elsewhere
		// reaches it, not the directory above.
		return w.add(r.real, target{r: r, dir: r.real}, false)
	}
	return w.armTree(r, r.real, 0)
}

// armTree watches dir and every directory below it.
func (w *watcher) armTree(r *root, dir string, depth int) error {
	if depth > w.s.lim.MaxDepth {
		return fmt.Errorf("watching %s: more than %d directory levels", dir, w.s.lim.MaxDepth)
	}
	if err := w.add(dir, target{r: r, dir: dir}, true); err != nil {
		return err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil // changed under us: the watch just added, or its parent's, has seen it
	}
	for _, e := range ents {
		if e.IsDir() { // from the directory entry: a symlink is not followed
			if err := w.armTree(r, filepath.Join(dir, e.Name()), depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// handle reads a buffer of inotify events, adds the watches they call for,
// and returns the roots that need a look.
func (w *watcher) handle(buf []byte) (map[*root]bool, error) {
	dirty := map[*root]bool{}
	for len(buf) >= unix.SizeofInotifyEvent {
		wd := int32(binary.NativeEndian.Uint32(buf[0:]))
		mask := binary.NativeEndian.Uint32(buf[4:])
		nameLen := int(binary.NativeEndian.Uint32(buf[12:]))
		end := min(unix.SizeofInotifyEvent+nameLen, len(buf))
		name := string(bytes.TrimRight(buf[unix.SizeofInotifyEvent:end], "\x00"))
		buf = buf[end:]

		if mask&unix.IN_Q_OVERFLOW != 0 { // events were lost: look at everything
			for _, r := range w.s.roots {
				dirty[r] = true
			}
			continue
		}
		for t := range w.wds[wd] {
			rearm, err := w.event(t, mask, name, dirty)
			if err != nil {
				return nil, err
			}
			if rearm {
				if err := w.arm(t.r); err != nil {
					return nil, err
				}
			}
		}
		if mask&unix.IN_IGNORED != 0 { // the kernel dropped the watch
			w.n -= len(w.wds[wd])
			delete(w.wds, wd)
		}
	}
	return dirty, nil
}

// event applies one event to the target of its watch and reports whether
// the watches of the target's root must be put in place again.
func (w *watcher) event(t target, mask uint32, name string, dirty map[*root]bool) (bool, error) {
	if t.dir == "" { // the directory on the way to t.r
		switch {
		case name == t.name:
			// A new inode under the name needs its own watches.
			dirty[t.r] = true
			return mask&(unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_DELETE|unix.IN_MOVED_FROM) != 0, nil
		case name == "" && mask&selfEvents != 0:
			dirty[t.r] = true
			return true, nil
		}
		return false, nil
	}
	dirty[t.r] = true
	if name != "" && mask&unix.IN_ISDIR != 0 && mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 {
		return false, w.armTree(t.r, filepath.Join(t.dir, name), 0)
	}
	return t.dir == t.r.real && mask&selfEvents != 0, nil
}

// userLimit names the user's limit that an inotify call ran into: the file
// of /proc/sys/user with its value, and the sysctl that raises it.
func userLimit(file, sysctl, what string) string {
	path := "/proc/sys/user/" + file
	val := "unknown"
	if b, err := os.ReadFile(path); err == nil {
		val = strings.TrimSpace(string(b))
	}
	return fmt.Sprintf("%s, or raise the limit %s = %s: sysctl fs.inotify.%s=N", what, path, val, sysctl)
}
