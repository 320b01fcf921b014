//go:build linux

package mount

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Setup carries out plan in the caller's mount namespace, which must be a new
// one owned by the caller's user namespace, and pivots into the new root. base
// is an existing directory to stage in (it is covered by a tmpfs, so nothing is
// written to the host there); cwd is where the caller ends up.
//
// The sequence follows bubblewrap's: a first pivot_root into a staging tmpfs
// keeps the host tree reachable as /oldroot while the new root is built at
// /newroot; a second pivot_root(".", ".") then makes /newroot the root and the
// staging tree is detached. Nothing of the host is reachable afterwards except
// through the mounts of the plan.
func Setup(plan Plan, base string) error {
	// Private first: nothing we mount may propagate back to the host.
	if err := mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making / private: %w", err)
	}
	if err := mount("tmpfs", base, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("mounting staging tmpfs on %s: %w", base, err)
	}
	for _, d := range []string{"oldroot", "newroot"} {
		if err := os.Mkdir(filepath.Join(base, d), 0o755); err != nil {
			return fmt.Errorf("creating staging dir: %w", err)
		}
	}
	if err := os.Mkdir(filepath.Join(base, "empty-dir"), 0o555); err != nil {
		return fmt.Errorf("creating mask dir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(base, "empty-file"), nil, 0o444); err != nil {
		return fmt.Errorf("creating mask file: %w", err)
	}
	if err := pivotRoot(base, filepath.Join(base, "oldroot")); err != nil {
		return fmt.Errorf("pivoting into staging root: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return err
	}
	if err := mount("tmpfs", "/newroot", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("mounting new root: %w", err)
	}
	for _, m := range plan.Mounts {
		if err := apply(m); err != nil {
			return fmt.Errorf("%s %s (%s): %w", m.Kind, m.Target, m.Why, err)
		}
	}
	if err := setattr("/newroot", unix.MOUNT_ATTR_RDONLY, false); err != nil {
		return fmt.Errorf("making the new root read-only: %w", err)
	}
	if err := unix.Unmount("/oldroot", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching the host root: %w", os.NewSyscallError("umount2", err))
	}
	if err := os.Chdir("/newroot"); err != nil {
		return err
	}
	if err := pivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivoting into the new root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching the staging root: %w", os.NewSyscallError("umount2", err))
	}
	return os.Chdir("/")
}

func apply(m Mount) error {
	dst := "/newroot" + m.Target
	src := "/oldroot" + m.Source
	if m.Data == "sandbox" {
		src = "/newroot" + m.Source
	}
	switch m.Kind {
	case Bind:
		if _, err := os.Stat(src); err != nil {
			return err
		}
		if err := ensure(dst, m.IsDir); err != nil {
			return err
		}
		if err := mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return err
		}
		attr := uint64(unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV)
		if m.ReadOnly {
			attr |= unix.MOUNT_ATTR_RDONLY
		}
		return setattr(dst, attr, true)
	case Device:
		if err := ensure(dst, false); err != nil {
			return err
		}
		if err := mount(src, dst, "", unix.MS_BIND, ""); err != nil {
			return err
		}
		return setattr(dst, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC, false)
	case Tmpfs:
		if err := ensure(dst, true); err != nil {
			return err
		}
		flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV)
		if m.Target == "/dev" {
			flags = unix.MS_NOSUID | unix.MS_NOEXEC
		}
		return mount("tmpfs", dst, "tmpfs", flags, m.Data)
	case Proc:
		if err := ensure(dst, true); err != nil {
			return err
		}
		flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC)
		// hidepid is best effort: the PID namespace already hides the host.
		if err := mount("proc", dst, "proc", flags, "hidepid=invisible"); err == nil {
			return nil
		}
		return mount("proc", dst, "proc", flags, "")
	case Devpts:
		if err := ensure(dst, true); err != nil {
			return err
		}
		return mount("devpts", dst, "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620")
	case Symlink:
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.Symlink(m.Source, dst)
	case Dir:
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return err
		}
		return os.Chmod(dst, os.FileMode(m.Mode&0o777)|modeBits(m.Mode))
	case File:
		// /etc/resolv.conf is often a symlink into /run; the file goes
		// where the link leads inside the new root.
		dst = resolveIn("/newroot", m.Target)
		if err := ensure(dst, false); err != nil {
			return err
		}
		src := fmt.Sprintf("/file-%d", len(m.Target)+len(m.Data))
		if err := os.WriteFile(src, []byte(m.Data), 0o444); err != nil {
			return err
		}
		if err := mount(src, dst, "", unix.MS_BIND, ""); err != nil {
			return err
		}
		return setattr(dst, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC, false)
	case Empty:
		fi, err := os.Lstat(dst)
		if err != nil {
			if m.Data == "optional" && errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		src := "/empty-file"
		if fi.IsDir() {
			src = "/empty-dir"
		}
		if err := mount(src, dst, "", unix.MS_BIND, ""); err != nil {
			return err
		}
		return setattr(dst, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC, false)
	}
	return fmt.Errorf("unknown mount kind %q", m.Kind)
}

// resolveIn follows symlinks at p as if root were "/", for at most 8 links.
func resolveIn(root, p string) string {
	for range 8 {
		fi, err := os.Lstat(root + p)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			break
		}
		link, err := os.Readlink(root + p)
		if err != nil {
			break
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(p), link)
		}
		p = filepath.Clean(link)
	}
	return root + p
}

func modeBits(m uint32) os.FileMode {
	var fm os.FileMode
	if m&0o1000 != 0 {
		fm |= os.ModeSticky
	}
	return fm
}

// ensure creates a mount point: a directory, or an empty file.
func ensure(p string, dir bool) error {
	if dir {
		return os.MkdirAll(p, 0o755)
	}
	if _, err := os.Lstat(p); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

func mount(src, dst, fstype string, flags uintptr, data string) error {
	return os.NewSyscallError("mount", unix.Mount(src, dst, fstype, flags, data))
}

// setattr adds mount attributes; recursive applies them to every submount too,
// which a plain remount cannot do.
func setattr(p string, attr uint64, recursive bool) error {
	flags := 0
	if recursive {
		flags = unix.AT_RECURSIVE
	}
	err := unix.MountSetattr(unix.AT_FDCWD, p, uint(flags), &unix.MountAttr{Attr_set: attr})
	return os.NewSyscallError("mount_setattr", err)
}

func pivotRoot(newroot, put string) error {
	return os.NewSyscallError("pivot_root", unix.PivotRoot(newroot, put))
}
