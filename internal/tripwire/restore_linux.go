package tripwire

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// Restore puts every path of the snapshot back as it was at Take: it removes
// what was created, recreates what was removed or replaced (files from the
// content kept in the snapshot), rewrites modified files and symlinks, and
// resets owner and permission bits. It returns the changes it undid, and an
// error that joins one error per path it could not restore (a file whose
// content was too large to keep wraps ErrTooLarge).
//
// The caller must stop the sandbox first: Restore is safe against symlinks
// planted before it runs (it never follows one: directories are opened
// component by component with O_NOFOLLOW, entries are replaced by writing a
// temporary file in the same directory and renaming it over them), but a
// process still writing could undo its work behind it. Restore then checks
// the result with Diff, so what it reports as restored is.
//
// Restore as root restores owners too; as the user it cannot give a file to
// someone else and reports that instead.
func (s *Snapshot) Restore() ([]Change, error) {
	var restored []Change
	var errs []error
	for _, r := range s.roots {
		before, err := s.diffRoot(r)
		if err != nil {
			errs = append(errs, fmt.Errorf("restoring %s: %w", r.path, err))
			continue
		}
		if len(before) == 0 {
			continue
		}
		rs := &restorer{s: s, r: r, failed: map[string]bool{}, children: children(r.entries)}
		rs.restoreRoot()
		after, err := s.diffRoot(r)
		if err != nil {
			errs = append(errs, rs.errs...)
			errs = append(errs, fmt.Errorf("checking %s after restoring it: %w", r.path, err))
			continue
		}
		for _, c := range before {
			if !slices.ContainsFunc(after, func(a Change) bool { return a.Path == c.Path && a.Kind == c.Kind }) {
				restored = append(restored, c)
			}
		}
		errs = append(errs, rs.errs...)
		for _, c := range after {
			if !rs.failed[c.Path] {
				errs = append(errs, fmt.Errorf("restoring %s: still %s after restoring (%s)", c.Path, c.Kind, c.Detail))
			}
		}
	}
	return restored, errors.Join(errs...)
}

// children lists the names recorded in each directory of entries.
func children(entries map[string]*entry) map[string][]string {
	out := map[string][]string{}
	for rel := range entries {
		if rel != "" {
			dir := filepath.Dir(rel)
			if dir == "." {
				dir = ""
			}
			out[dir] = append(out[dir], filepath.Base(rel))
		}
	}
	return out
}

// restorer makes the tree of one root match the snapshot.
type restorer struct {
	s        *Snapshot
	r        *root
	children map[string][]string
	errs     []error
	failed   map[string]bool
}

func (rs *restorer) fail(rel string, err error) {
	rs.failed[rs.r.abs(rel)] = true
	rs.errs = append(rs.errs, fmt.Errorf("restoring %s: %w", rs.r.abs(rel), err))
}

func (rs *restorer) restoreRoot() {
	dirfd, err := openDir(filepath.Dir(rs.r.real))
	if err != nil {
		rs.fail("", fmt.Errorf("opening the directory it is in: %w", err))
		return
	}
	defer unix.Close(dirfd)
	rs.reconcile(dirfd, filepath.Base(rs.r.real), "", 0)
}

func fileTypeOf(st *unix.Stat_t) fileType {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return typeRegular
	case unix.S_IFDIR:
		return typeDir
	case unix.S_IFLNK:
		return typeSymlink
	}
	return typeOther
}

// reconcile makes the entry name in dirfd (rel in the root) what the snapshot
// recorded, recursively. Errors are collected per path.
func (rs *restorer) reconcile(dirfd int, name, rel string, depth int) {
	want := rs.r.entries[rel]
	var st unix.Stat_t
	err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	exists := err == nil
	if err != nil && !errors.Is(err, unix.ENOENT) {
		rs.fail(rel, os.NewSyscallError("fstatat", err))
		return
	}
	if exists && (want == nil || fileTypeOf(&st) != want.typ) {
		if err := removeAll(dirfd, name, 0); err != nil {
			rs.fail(rel, fmt.Errorf("removing what is there now: %w", err))
			return
		}
		exists = false
	}
	if want == nil {
		return
	}
	switch want.typ {
	case typeRegular:
		if !exists || !rs.sameContent(dirfd, name, rel, &st, want) {
			if err := rs.writeFile(dirfd, name, want); err != nil {
				rs.fail(rel, err)
				return
			}
		}
	case typeSymlink:
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if !exists || err != nil || string(buf[:n]) != want.target {
			if err := rs.writeSymlink(dirfd, name, want); err != nil {
				rs.fail(rel, err)
				return
			}
		}
	case typeDir:
		if err := rs.reconcileDir(dirfd, name, rel, depth, exists, &st); err != nil {
			rs.fail(rel, err)
			return
		}
	case typeOther:
		if !exists {
			rs.fail(rel, errors.New("cannot recreate a special file"))
			return
		}
	}
	if err := fixMeta(dirfd, name, want); err != nil {
		rs.fail(rel, err)
	}
}

// reconcileDir recreates or enters the directory name and reconciles every
// name that is in it now or was at Take.
func (rs *restorer) reconcileDir(dirfd int, name, rel string, depth int, exists bool, st *unix.Stat_t) error {
	if depth >= rs.s.lim.MaxDepth {
		return errors.New("too deep")
	}
	if !exists {
		if err := unix.Mkdirat(dirfd, name, 0o700); err != nil {
			return os.NewSyscallError("mkdirat", err)
		}
	} else if st.Mode&0o700 != 0o700 {
		// The owner needs to list and change it; fixMeta sets the
		// recorded bits when its contents are done.
		if err := chmodNoFollow(dirfd, name, st.Mode&0o7777|0o700); err != nil {
			return err
		}
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return os.NewSyscallError("openat", err)
	}
	d := os.NewFile(uintptr(fd), rs.r.abs(rel))
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("reading the directory: %w", err)
	}
	names = append(names, rs.children[rel]...)
	slices.Sort(names)
	for _, n := range slices.Compact(names) {
		rs.reconcile(fd, n, filepath.Join(rel, n), depth+1)
	}
	return nil
}

// sameContent reports whether the regular file name has the content of want.
func (rs *restorer) sameContent(dirfd int, name, rel string, st *unix.Stat_t, want *entry) bool {
	if st.Size != want.size {
		return false
	}
	now := &entry{size: st.Size}
	sc := &scanner{lim: rs.s.lim}
	return sc.hash(dirfd, name, rel, st, rs.r, false, now) == nil && now.readErr == "" && now.hashed && now.sum == want.sum
}

// writeFile replaces name with a file holding the kept content of want: a
// new file in the same directory, renamed over it, so that no symlink or
// hard link in name's place is written through.
func (rs *restorer) writeFile(dirfd int, name string, want *entry) error {
	if !want.kept {
		return fmt.Errorf("%d bytes: %w", want.size, ErrTooLarge)
	}
	tmp := tempName()
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return os.NewSyscallError("creating a temporary file", err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = f.Write(want.content)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fixMeta(dirfd, tmp, want)
	}
	if err == nil {
		err = os.NewSyscallError("renameat", unix.Renameat(dirfd, tmp, dirfd, name))
	}
	if err != nil {
		unix.Unlinkat(dirfd, tmp, 0)
		return fmt.Errorf("writing the recorded content: %w", err)
	}
	return nil
}

// writeSymlink replaces name with a symlink to want.target.
func (rs *restorer) writeSymlink(dirfd int, name string, want *entry) error {
	tmp := tempName()
	err := os.NewSyscallError("symlinkat", unix.Symlinkat(want.target, dirfd, tmp))
	if err == nil {
		err = os.NewSyscallError("renameat", unix.Renameat(dirfd, tmp, dirfd, name))
	}
	if err != nil {
		unix.Unlinkat(dirfd, tmp, 0)
		return fmt.Errorf("recreating the symlink: %w", err)
	}
	return nil
}

// tempName is a fresh name for a file that Restore renames into place.
func tempName() string { return ".stockade-tripwire-" + rand.Text() }
