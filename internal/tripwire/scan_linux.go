package tripwire

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Take snapshots paths (absolute host paths; files, directory trees, symlinks,
// or paths that do not exist) within the limits l. The paths must be
// canonical (as mount.ScanTrees makes them): nothing on the way to them is
// followed, at Take or later, so a symlink planted in place of a directory
// above one is a change, never a way to snapshot or restore somewhere else.
func (l Limits) Take(paths []string) (*Snapshot, error) {
	clean, err := cleanRoots(paths)
	if err != nil {
		return nil, err
	}
	s := &Snapshot{lim: l}
	sc := &scanner{lim: l, keep: true}
	for _, p := range clean {
		r := &root{path: p, real: p}
		r.entries, err = sc.scanRoot(r, nil)
		if err != nil {
			return nil, fmt.Errorf("snapshotting %s: %w", p, err)
		}
		s.roots = append(s.roots, r)
	}
	return s, nil
}

// Diff compares the current state of the snapshot's paths with the snapshot
// and returns the changes, sorted by path.
func (s *Snapshot) Diff() ([]Change, error) {
	var out []Change
	for _, r := range s.roots {
		cs, err := s.diffRoot(r)
		if err != nil {
			return out, err
		}
		out = append(out, cs...)
	}
	return out, nil
}

// diffRoot compares one path of the snapshot with its current state. Files
// whose size is unchanged are hashed again; so Diff never hashes more than
// Take did, whatever was written meanwhile.
func (s *Snapshot) diffRoot(r *root) ([]Change, error) {
	sc := &scanner{lim: s.lim}
	cur, err := sc.scanRoot(r, r.entries)
	var le *limitError
	switch {
	case errors.As(err, &le):
		return []Change{{r.path, Modified, "it now exceeds a limit: " + le.Error()}}, nil
	case errors.Is(err, errSymlinkParent):
		if len(r.entries) > 0 {
			return []Change{{r.path, Replaced, "a directory above it is now a symlink"}}, nil
		}
		if _, err := os.Lstat(r.real); err == nil {
			return []Change{{r.path, Created, "reached through a directory above it that is now a symlink"}}, nil
		}
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("checking %s: %w", r.path, err)
	}
	return compareRoot(r, cur), nil
}

// errSymlinkParent: a directory on the way to a path is now a symlink.
var errSymlinkParent = errors.New("a directory on the path is a symlink")

// openDir opens the directory dir (absolute) as an O_PATH descriptor without
// following any symlink on the way, so that what Restore and the scanner do
// there cannot be redirected by a symlink planted in place of a directory.
// It fails with ENOENT or ENOTDIR if a component is missing or not a
// directory, and with errSymlinkParent if one is a symlink.
func openDir(dir string) (int, error) {
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, os.NewSyscallError("open /", err)
	}
	for _, name := range strings.Split(strings.TrimPrefix(dir, "/"), "/") {
		if name == "" {
			continue
		}
		next, err := unix.Openat(fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			unix.Close(fd)
			return -1, &os.PathError{Op: "openat", Path: dir, Err: err}
		}
		unix.Close(fd)
		fd = next
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, &os.PathError{Op: "fstat", Path: dir, Err: err}
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
		case unix.S_IFLNK:
			unix.Close(fd)
			return -1, errSymlinkParent
		default:
			unix.Close(fd)
			return -1, &os.PathError{Op: "openat", Path: dir, Err: unix.ENOTDIR}
		}
	}
	return fd, nil
}

// limitError is a Limits bound that was exceeded.
type limitError struct{ what string }

func (e *limitError) Error() string { return e.what }

// scanner reads the state of paths. With prev set (Diff) it hashes only the
// regular files whose size matches prev, and it keeps no content.
type scanner struct {
	lim     Limits
	keep    bool // keep content (Take)
	entries int
	hashed  int64
	kept    int64
}

// scanRoot returns the entries of r as they are now; none if r is absent.
func (sc *scanner) scanRoot(r *root, prev map[string]*entry) (map[string]*entry, error) {
	out := map[string]*entry{}
	dirfd, err := openDir(filepath.Dir(r.real))
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	err = sc.add(dirfd, filepath.Base(r.real), "", 0, r, prev, out)
	return out, err
}

// add records the entry name in dirfd (at rel) and, for a directory, what is below it.
func (sc *scanner) add(dirfd int, name, rel string, depth int, r *root, prev, out map[string]*entry) error {
	var st unix.Stat_t
	err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return &os.PathError{Op: "lstat", Path: r.abs(rel), Err: err}
	}
	if sc.entries++; sc.entries > sc.lim.MaxEntries {
		return &limitError{fmt.Sprintf("more than %d entries (under %s)", sc.lim.MaxEntries, r.path)}
	}
	e := &entry{mode: st.Mode & 0o7777, uid: st.Uid, gid: st.Gid, size: st.Size}
	out[rel] = e
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		e.typ = typeRegular
		if prev == nil || (prev[rel] != nil && prev[rel].typ == typeRegular && prev[rel].size == e.size) {
			return sc.hash(dirfd, name, rel, &st, r, prev == nil, e)
		}
	case unix.S_IFLNK:
		e.typ, e.size = typeSymlink, 0
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil && prev != nil {
			e.readErr, n = err.Error(), 0 // replaced since fstatat: a change
		} else if err != nil {
			return &os.PathError{Op: "readlink", Path: r.abs(rel), Err: err}
		}
		e.target = string(buf[:n])
	case unix.S_IFDIR:
		e.typ, e.size = typeDir, 0
		if depth >= sc.lim.MaxDepth {
			return &limitError{fmt.Sprintf("more than %d directory levels (at %s)", sc.lim.MaxDepth, r.abs(rel))}
		}
		err := sc.addDir(dirfd, name, rel, depth, r, prev, out)
		var le *limitError
		if err != nil && prev != nil && !errors.As(err, &le) {
			// Diff: a directory that cannot be listed (any more, or right
			// now: it is being removed) is a change; what was below it and
			// was not seen is taken as it was, rather than as removed.
			e.readErr = err.Error()
			for k, v := range prev {
				if _, seen := out[k]; !seen && (rel == "" && k != "" || strings.HasPrefix(k, rel+"/")) {
					out[k] = v
				}
			}
			return nil
		}
		return err
	default:
		e.typ, e.size = typeOther, 0
	}
	return nil
}

func (sc *scanner) addDir(dirfd int, name, rel string, depth int, r *root, prev, out map[string]*entry) error {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: r.abs(rel), Err: err}
	}
	d := os.NewFile(uintptr(fd), r.abs(rel))
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("reading directory %s: %w", r.abs(rel), err)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := sc.add(fd, n, filepath.Join(rel, n), depth+1, r, prev, out); err != nil {
			return err
		}
	}
	return nil
}

// hash sets the hash (and, at Take, the kept content) of the regular file
// name in dirfd, which fstatat described as st.
func (sc *scanner) hash(dirfd int, name, rel string, st *unix.Stat_t, r *root, take bool, e *entry) error {
	fail := func(err error) error {
		if take {
			return fmt.Errorf("reading %s: %w", r.abs(rel), err)
		}
		e.readErr = err.Error() // a file that cannot be read as before is a change
		return nil
	}
	if take {
		if sc.hashed += e.size; sc.hashed > sc.lim.MaxHashed {
			return &limitError{fmt.Sprintf("more than %d MiB of files to hash (at %s)", sc.lim.MaxHashed>>20, r.abs(rel))}
		}
	}
	// O_NONBLOCK: should a fifo have been swapped in since fstatat, the open
	// must not hang; the check below then rejects it.
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail(err)
	}
	f := os.NewFile(uintptr(fd), r.abs(rel))
	defer f.Close()
	var now unix.Stat_t
	if err := unix.Fstat(fd, &now); err != nil {
		return fail(err)
	}
	if now.Mode&unix.S_IFMT != unix.S_IFREG || now.Ino != st.Ino || now.Dev != st.Dev {
		return fail(errors.New("it was replaced while being read"))
	}
	h := sha256.New()
	src := io.Reader(io.LimitReader(f, e.size+1)) // a file that grows is read to one byte more: a change
	keep := take && e.size <= sc.lim.MaxKeptFile && sc.kept+e.size <= sc.lim.MaxKept
	var buf bytes.Buffer
	if keep {
		src = io.TeeReader(src, &buf)
	}
	n, err := io.Copy(h, src)
	if err != nil {
		return fail(err)
	}
	if n != e.size {
		if take {
			return fail(fmt.Errorf("it changed size while being read (%d → %d bytes)", e.size, n))
		}
		e.size = n
	}
	h.Sum(e.sum[:0])
	e.hashed = true
	if keep {
		e.content, e.kept = buf.Bytes(), true
		sc.kept += n
	}
	return nil
}
