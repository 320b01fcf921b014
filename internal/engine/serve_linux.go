package engine

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/sandboxnet"
	"github.com/stockade-dev/stockade/internal/seccomp"
)

// serveMain is the engine's first process, root of its own user, mount
// and cgroup namespaces: it mounts cgroup2 (crun refuses a view with v1
// hierarchies), confines itself with the engine's seccomp profile and
// no_new_privs, which every process of the engine and every container
// inherits, and becomes podman's API service on the socket the launcher
// made (fd 3, socket activation). It gets no Landlock: the engine mounts,
// and Landlock refuses every mount.
func serveMain() int {
	// no_new_privs is a thread's, and the exec below is this thread's.
	runtime.LockOSThread()
	if err := unix.Mount("cgroup2", "/sys/fs/cgroup", "cgroup2", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		fmt.Fprintf(os.Stderr, "stockade engine: mounting cgroup2: %v\n", err)
		return 1
	}
	if err := ownCgroup(); err != nil {
		fmt.Fprintf(os.Stderr, "stockade engine: %v\n", err)
		return 1
	}
	// Rootless, as podman says it: root of a user namespace that is not
	// the host's, which podman works out only when it made the namespace
	// itself. Told so, it gives the Docker API's default network (a
	// bridge, which needs CAP_NET_ADMIN over the network namespace it is
	// made in, here the sandbox's, which the engine does not have) a
	// network namespace of its own joined by slirp4netns, as for a user's
	// podman.
	registryProxy := "http://" + sandboxnet.RegistryProxyAddr
	env := []string{
		"PATH=/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=" + engineHome,
		"TMPDIR=" + engineTmp,
		"XDG_RUNTIME_DIR=" + runDir,
		"_CONTAINERS_USERNS_CONFIGURED=done",
		"_CONTAINERS_ROOTLESS_UID=0",
		"CONTAINERS_CONF=" + confDir + "/containers.conf",
		"CONTAINERS_STORAGE_CONF=" + confDir + "/storage.conf",
		"CONTAINERS_REGISTRIES_CONF=" + confDir + "/registries.conf",
		// The engine's own traffic, its pulls, goes to the registry
		// proxy, which lets out only --registry-allow's hosts.
		"HTTP_PROXY=" + registryProxy, "HTTPS_PROXY=" + registryProxy,
		"http_proxy=" + registryProxy, "https_proxy=" + registryProxy,
		"LISTEN_FDS=1",
		"LISTEN_PID=" + strconv.Itoa(os.Getpid()),
	}
	os.MkdirAll(engineTmp, 0o700)
	os.MkdirAll(runDir, 0o700)
	if err := confine(); err != nil {
		fmt.Fprintf(os.Stderr, "stockade engine: %v\n", err)
		return 1
	}
	argv := []string{"podman", "--runtime", "crun", "--cgroup-manager", "cgroupfs", "--events-backend", "file", "system", "service", "--time", "0"}
	err := syscall.Exec("/usr/bin/podman", argv, env)
	fmt.Fprintf(os.Stderr, "stockade engine: starting podman: %v\n", err)
	return 1
}

// CgroupPrefix starts the name of the cgroup the engine makes for itself
// (ownCgroup); the supervisor removes what is left of it (CleanCgroups).
const CgroupPrefix = "stockade-engine-"

// ownCgroup moves the engine into a cgroup of its own and roots a new
// cgroup namespace there, before podman starts. The engine's cgroup
// namespace is rooted where the sandbox is in the unified hierarchy: where
// stockade makes no v2 group (a hybrid layout, whose v2 hierarchy has no
// controllers), that is the supervisor's own cgroup, which the user's
// other processes share. podman, on start, moves every process of the root
// of its view into a child "init": it moved processes outside the sandbox,
// the user's shell among them. Where the engine may not make a cgroup there
// (the user's cgroup is not delegated), podman may not move anything
// either: the engine goes on where it is.
func ownCgroup() error {
	var b [8]byte
	if _, err := unix.Getrandom(b[:], 0); err != nil {
		return fmt.Errorf("naming the engine's cgroup: %w", err)
	}
	leaf := "/sys/fs/cgroup/" + CgroupPrefix + hex.EncodeToString(b[:])
	if err := unix.Mkdir(leaf, 0o755); err != nil {
		if err == unix.EACCES || err == unix.EPERM || err == unix.EROFS {
			return nil
		}
		return fmt.Errorf("making the engine's cgroup: %w", err)
	}
	if err := os.WriteFile(leaf+"/cgroup.procs", []byte("0"), 0); err != nil {
		unix.Rmdir(leaf)
		if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
			return nil
		}
		return fmt.Errorf("moving the engine into its cgroup: %w", err)
	}
	if err := unix.Unshare(unix.CLONE_NEWCGROUP); err != nil {
		return fmt.Errorf("rooting the engine's cgroup namespace: %w", os.NewSyscallError("unshare", err))
	}
	if err := unix.Unmount("/sys/fs/cgroup", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("remounting cgroup2: %w", err)
	}
	if err := unix.Mount("cgroup2", "/sys/fs/cgroup", "cgroup2", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("remounting cgroup2: %w", err)
	}
	return nil
}

// confine installs the engine's seccomp profile (seccomp.Engine) on every
// thread, with no_new_privs: setuid and file-capability programs in the
// engine's view gain nothing.
func confine() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("setting no_new_privs: %w", os.NewSyscallError("prctl", err))
	}
	arch, err := seccomp.NativeArch()
	if err != nil {
		return err
	}
	prog, err := seccomp.Compile(seccomp.Engine(), arch)
	if err != nil {
		return err
	}
	return seccomp.Install(prog)
}
