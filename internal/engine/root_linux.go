package engine

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// newRoot is where the launcher builds the engine's root: over the
// sandbox's /run, in the launcher's own mount namespace only.
const newRoot = "/run"

// fresh are the engine's own trees, not the sandbox's: what it writes
// there no process of the command's can see or race. (The sandbox's /tmp
// stays: a workdir may be below it. The engine's TMPDIR is in its /run.) /proc is a fresh
// one of the sandbox's PID namespace, without the masks of the command's:
// a mount namespace that inherits a masked /proc cannot mount another
// (the kernel refuses to reveal what the locked masks hide), and every
// container's /proc is such a mount. The containers get their own masks.
// The engine's root owns the writable ones (owner: tmpfs options uid= and
// gid= with the user's ids, its root); the rest stay the launcher's, an
// id the engine's namespace does not map, so that not even its root may
// change them.
var fresh = []struct {
	path, fstype, data string
	owner              bool
}{
	{"/proc", "proc", "", false},
	{"/run", "tmpfs", "mode=0755", true},
	{"/sys", "tmpfs", "mode=0755", false},
	{confDir, "tmpfs", "mode=0755", false},
}

// later are mounted over trees the engine shares with the sandbox.
var later = []struct {
	path, fstype, data string
	owner              bool
}{
	{"/dev/shm", "tmpfs", "mode=01777", true},
	{"/var/tmp", "tmpfs", "mode=01777", true},
	{storage, "tmpfs", "mode=0700", true},
}

// buildRoot makes the engine's root: a tmpfs with every top-level entry
// of the sandbox's root bound recursively (so with their masks and
// read-only binds) but the fresh ones, the generated configuration, then
// pivot_root into it and the root made read-only.
func buildRoot(uid, gid int, regs []Registry) error {
	entries, err := os.ReadDir("/")
	if err != nil {
		return fmt.Errorf("reading the sandbox's root: %w", err)
	}
	if err := unix.Mount("tmpfs", newRoot, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("mounting the engine's root: %w", err)
	}
	skip := map[string]bool{}
	for _, f := range fresh {
		skip[f.path] = true
	}
	for _, e := range entries {
		src := "/" + e.Name()
		if skip[src] {
			continue
		}
		if err := bindEntry(src, filepath.Join(newRoot, e.Name())); err != nil {
			return err
		}
	}
	for _, f := range append(fresh, later...) {
		data := f.data
		if f.owner {
			data += fmt.Sprintf(",uid=%d,gid=%d", uid, gid)
		}
		if err := mountFresh(filepath.Join(newRoot, f.path), f.fstype, data); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(newRoot, "/sys/fs/cgroup"), 0o755); err != nil {
		return err
	}
	for _, f := range []struct {
		name, data string
		mode       os.FileMode
	}{
		{"containers.conf", containersConf(), 0o644},
		{"storage.conf", storageConf(), 0o644},
		{"registries.conf", registriesConf(regs), 0o644},
		{filepath.Base(resolvConf), resolvConfText(), 0o644},
		{filepath.Base(slirpWrapper), slirpScript(), 0o755},
	} {
		if err := os.WriteFile(filepath.Join(newRoot, confDir, f.name), []byte(f.data), f.mode); err != nil {
			return fmt.Errorf("writing the engine's configuration: %w", err)
		}
	}
	if err := bindResolvConf(); err != nil {
		return err
	}
	if err := os.Mkdir(filepath.Join(newRoot, hooksDir), 0o755); err != nil {
		return err
	}
	// The configuration is read-only to the engine: in its namespace the
	// kernel locks the flag, so not even its root can remount it.
	if err := unix.Mount("", filepath.Join(newRoot, confDir), "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return fmt.Errorf("making the engine's configuration read-only: %w", err)
	}
	if err := os.Chdir(newRoot); err != nil {
		return err
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return os.NewSyscallError("pivot_root", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching the sandbox's root from the engine's: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return err
	}
	if err := unix.Mount("", "/", "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return fmt.Errorf("making the engine's root read-only: %w", err)
	}
	return nil
}

func bindEntry(src, dst string) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		t, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(t, dst)
	case fi.IsDir():
		err = os.Mkdir(dst, 0o755)
	default:
		err = os.WriteFile(dst, nil, 0o644)
	}
	if err != nil {
		return err
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("binding %s into the engine's root: %w", src, err)
	}
	return nil
}

func mountFresh(dst, fstype, data string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	if err := unix.Mount(fstype, dst, fstype, unix.MS_NOSUID|unix.MS_NODEV, data); err != nil {
		return fmt.Errorf("mounting %s at %s for the engine: %w", fstype, dst, err)
	}
	return nil
}

// bindResolvConf binds the engine's resolv.conf over the one of the view it
// shares with the sandbox, at the path /etc/resolv.conf leads to in the
// engine's root (a link into /run leads into the engine's own /run, where
// the file is made). The engine's root is the launcher's alone: nothing
// else runs in this mount namespace yet.
func bindResolvConf() error {
	src := filepath.Join(newRoot, resolvConf)
	p := "/etc/resolv.conf"
	for range 8 {
		fi, err := os.Lstat(filepath.Join(newRoot, p))
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			break
		}
		t, err := os.Readlink(filepath.Join(newRoot, p))
		if err != nil {
			return err
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(p), t)
		}
		p = filepath.Clean(t)
	}
	dst := filepath.Join(newRoot, p)
	if _, err := os.Lstat(dst); err != nil {
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("making the engine's %s: %w", p, err)
		}
		if err := os.WriteFile(dst, nil, 0o644); err != nil {
			return fmt.Errorf("making the engine's %s: %w", p, err)
		}
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("binding the engine's resolv.conf at %s: %w", p, err)
	}
	return nil
}
