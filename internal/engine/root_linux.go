package engine

import (
	"encoding/json"
	"fmt"
	"io"
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
// read-only binds) but the fresh ones, the generated configuration (see
// writeConf), then pivot_root into it and the root made read-only.
//
// The storage is the project's, when store is a detached mount of it
// (Engine.UseStore), moved onto the storage's path here, in the engine's
// mount namespace alone: the sandbox's view never holds it. Else a tmpfs.
func buildRoot(l launch, events, api, store *os.File) error {
	uid, gid := l.UID, l.GID
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
		if f.path == storage && store != nil {
			if err := mountStore(filepath.Join(newRoot, storage), store); err != nil {
				return err
			}
			continue
		}
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
	if err := writeConf(l, events, api); err != nil {
		return err
	}
	if err := confineProc(); err != nil {
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

// writeConf fills the engine's configuration directory, which the launcher
// owns (an id the engine's namespace does not map): podman's and the
// storage's configuration, the hooks, the session's facts for them, a copy
// of the stockade binary they run (the host's is not in the sandbox's
// view, and a file of another mount namespace cannot be bound here), and
// the socket on which the createRuntime hook reports to the supervisor,
// the engine's root's alone.
func writeConf(l launch, events, api *os.File) error {
	dir := filepath.Join(newRoot, confDir)
	facts, err := json.Marshal(l.Facts)
	if err != nil {
		return fmt.Errorf("writing the hooks' facts: %w", err)
	}
	files := map[string]string{
		"containers.conf":         containersConf(),
		"storage.conf":            storageConf(),
		"registries.conf":         registriesConf(l.Registries),
		filepath.Base(resolvConf): resolvConfText(),
		"facts.json":              string(facts),
	}
	for _, d := range []string{hooksDir, serviceDir} {
		if err := os.Mkdir(filepath.Join(newRoot, d), 0o755); err != nil {
			return err
		}
	}
	for name, data := range hooks() {
		files[filepath.Join(filepath.Base(hooksDir), name)] = data
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			return fmt.Errorf("writing the engine's configuration: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(newRoot, slirpWrapper), []byte(slirpScript()), 0o755); err != nil {
		return fmt.Errorf("writing the engine's configuration: %w", err)
	}
	if err := bindResolvConf(); err != nil {
		return err
	}
	if err := copySelf(filepath.Join(newRoot, binary)); err != nil {
		return err
	}
	if err := os.Link(filepath.Join(newRoot, binary), filepath.Join(newRoot, runtimePath)); err != nil {
		return fmt.Errorf("linking the engine's runtime: %w", err)
	}
	// The engine's root (the user's id in the sandbox) may connect to the
	// events socket, and the launcher by its group (apiFilter's
	// refusals); the sockets' directory is read-only to the engine.
	// Podman's own socket is the launcher's.
	if err := bindSocket(events, EventsSocket, l.UID, os.Getgid(), 0o660); err != nil {
		return fmt.Errorf("making the hooks' events socket: %w", err)
	}
	if err := bindSocket(api, podmanSocket, os.Getuid(), os.Getgid(), 0o600); err != nil {
		return fmt.Errorf("making podman's socket: %w", err)
	}
	return nil
}

// bindSocket binds the unbound socket f at name in the engine's root,
// owned by uid and gid with mode perm, and listens on it.
func bindSocket(f *os.File, name string, uid, gid int, perm os.FileMode) error {
	sock := filepath.Join(newRoot, name)
	if err := unix.Bind(int(f.Fd()), &unix.SockaddrUnix{Name: sock}); err != nil {
		return os.NewSyscallError("bind", err)
	}
	if err := os.Chown(sock, uid, gid); err != nil {
		return err
	}
	if err := os.Chmod(sock, perm); err != nil {
		return err
	}
	if err := unix.Listen(int(f.Fd()), 64); err != nil {
		return os.NewSyscallError("listen", err)
	}
	return nil
}

// copySelf copies the running binary (the supervisor's, which nsenter ran
// from a descriptor) to dst, read-only and executable.
func copySelf(dst string) error {
	src, err := os.Open("/proc/self/exe")
	if err != nil {
		return fmt.Errorf("copying stockade into the engine's root: %w", err)
	}
	defer src.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o555)
	if err != nil {
		return fmt.Errorf("copying stockade into the engine's root: %w", err)
	}
	if _, err := io.Copy(out, src); err != nil {
		out.Close()
		return fmt.Errorf("copying stockade into the engine's root: %w", err)
	}
	return out.Close()
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

// mountStore moves the detached mount store onto dst. Init cloned it
// nosuid and nodev; the engine's mount namespace, made with a user
// namespace less privileged than the launcher's, gets the flags locked:
// not even the engine's root can clear them.
func mountStore(dst string, store *os.File) error {
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return err
	}
	if err := unix.MoveMount(int(store.Fd()), "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("mounting the project's storage for the engine: %w", os.NewSyscallError("move_mount", err))
	}
	return nil
}

// procReadOnly are the engine's /proc trees made read-only, as the
// sandbox's are, and procMasked its files made an empty file. The engine's
// root holds every capability of its namespace, and under a root
// supervisor it is host uid 0, which the kernel's check of a sysctl
// write asks for and nothing else: a write primitive of the engine's
// (conmon's log path, before the filter refused it) set the host's
// kernel.core_pattern, whose pipe runs a program as the host's root.
var (
	procReadOnly = []string{"sys", "irq", "bus"}
	procMasked   = []string{"sysrq-trigger"}
)

// procWhole is where a whole /proc stays, unmasked, covered by an empty
// read-only tmpfs that the engine cannot unmount (the launcher's mounts
// are locked in the engine's namespace): the kernel lets a new proc be
// mounted in a user namespace only where one is fully visible in its
// mount table, reachable or not, and every container's /proc is such a
// mount (mount_too_revealing). Permissions would not keep the engine's
// root out: under a root supervisor the launcher's id, 0, is mapped in
// the engine's namespace, whose root passes any mode.
const procWhole = confDir + "/proc-whole"

// confineProc makes the engine's /proc read-only where the sandbox's is,
// with a whole one kept out of the engine's reach (procWhole).
func confineProc() error {
	proc := filepath.Join(newRoot, "/proc")
	hidden := filepath.Join(newRoot, procWhole)
	if err := os.MkdirAll(filepath.Join(hidden, "proc"), 0o700); err != nil {
		return err
	}
	if err := unix.Mount("proc", filepath.Join(hidden, "proc"), "proc", unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return fmt.Errorf("mounting the engine's whole /proc: %w", err)
	}
	ro := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC)
	for _, d := range procReadOnly {
		p := filepath.Join(proc, d)
		if _, err := os.Stat(p); err != nil {
			continue // this kernel has none
		}
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("binding the engine's /proc/%s: %w", d, err)
		}
		if err := unix.Mount("", p, "", ro, ""); err != nil {
			return fmt.Errorf("making the engine's /proc/%s read-only: %w", d, err)
		}
	}
	// /proc/sys/net stays writable: its sysctls are the reader's network
	// namespace's (netavark sets ip_forward in the engine's, where a
	// Docker API container's network is made), never the host's.
	net := filepath.Join(proc, "sys", "net")
	if _, err := os.Stat(net); err == nil {
		if err := unix.Mount(filepath.Join(hidden, "proc", "sys", "net"), net, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("binding the engine's /proc/sys/net: %w", err)
		}
	}
	// Covered: a tmpfs over the directory that holds it, read-only.
	if err := unix.Mount("tmpfs", hidden, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0,size=4k,nr_inodes=1"); err != nil {
		return fmt.Errorf("covering the engine's whole /proc: %w", err)
	}
	empty := filepath.Join(newRoot, confDir, "empty")
	if err := os.WriteFile(empty, nil, 0o444); err != nil {
		return err
	}
	for _, f := range procMasked {
		p := filepath.Join(proc, f)
		if _, err := os.Stat(p); err != nil {
			continue
		}
		if err := unix.Mount(empty, p, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("masking the engine's /proc/%s: %w", f, err)
		}
		if err := unix.Mount("", p, "", ro, ""); err != nil {
			return fmt.Errorf("masking the engine's /proc/%s: %w", f, err)
		}
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
