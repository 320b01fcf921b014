package engine

import (
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// serveMain is the engine's first process, root of its own user, mount
// and cgroup namespaces: it mounts cgroup2 (crun refuses a view with v1
// hierarchies) and becomes podman's API service on the socket the
// launcher made (fd 3, socket activation).
func serveMain() int {
	if err := unix.Mount("cgroup2", "/sys/fs/cgroup", "cgroup2", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		fmt.Fprintf(os.Stderr, "stockade engine: mounting cgroup2: %v\n", err)
		return 1
	}
	env := []string{
		"PATH=/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/run/engine",
		"TMPDIR=/run/engine/tmp",
		"CONTAINERS_CONF=" + confDir + "/containers.conf",
		"CONTAINERS_STORAGE_CONF=" + confDir + "/storage.conf",
		"LISTEN_FDS=1",
		"LISTEN_PID=" + strconv.Itoa(os.Getpid()),
	}
	os.MkdirAll("/run/engine/tmp", 0o700)
	argv := []string{"podman", "--runtime", "crun", "--cgroup-manager", "cgroupfs", "--events-backend", "file", "system", "service", "--time", "0"}
	err := syscall.Exec("/usr/bin/podman", argv, env)
	fmt.Fprintf(os.Stderr, "stockade engine: starting podman: %v\n", err)
	return 1
}
