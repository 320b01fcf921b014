package ocihook

// The policy as data: what a container may have at most, and what it must
// have at least.

// DefaultCaps is the default capability set of podman and Docker: a
// container's sets are cut down to it, never widened to it.
var DefaultCaps = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL",
	"CAP_NET_BIND_SERVICE", "CAP_SETFCAP", "CAP_SETGID", "CAP_SETPCAP",
	"CAP_SETUID", "CAP_SYS_CHROOT",
}

// MaskedPaths are hidden in every container (an empty file or directory is
// mounted over them): kernel memory, keys, timers and firmware, and what
// the sandbox's own /proc masks (mount.ProcMasks: symbol addresses, modules,
// slab and page information an exploit starts from), so that a container
// sees no more of the kernel than the command does (TestBatteryInContainer:
// read_kallsyms). A path this kernel does not have is skipped by the runtime.
var MaskedPaths = []string{
	"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
	"/proc/sched_debug", "/proc/scsi", "/proc/timer_list", "/proc/timer_stats",
	"/sys/devices/virtual/powercap", "/sys/firmware",
	"/proc/kallsyms", "/proc/key-users", "/proc/modules", "/proc/devices", "/proc/diskstats",
	"/proc/partitions", "/proc/version", "/proc/config.gz", "/proc/kpagecount", "/proc/kpageflags",
	"/proc/kpagecgroup", "/proc/vmallocinfo", "/proc/slabinfo", "/proc/driver",
}

// ReadonlyPaths are read-only in every container: the kernel's knobs.
var ReadonlyPaths = []string{
	"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
}

// DefaultDevices are the only device nodes a container may list; the
// runtime creates them in every container anyway.
var DefaultDevices = []Device{
	{Path: "/dev/null", Type: "c", Major: 1, Minor: 3},
	{Path: "/dev/zero", Type: "c", Major: 1, Minor: 5},
	{Path: "/dev/full", Type: "c", Major: 1, Minor: 7},
	{Path: "/dev/random", Type: "c", Major: 1, Minor: 8},
	{Path: "/dev/urandom", Type: "c", Major: 1, Minor: 9},
	{Path: "/dev/tty", Type: "c", Major: 5, Minor: 0},
	{Path: "/dev/console", Type: "c", Major: 5, Minor: 1},
	{Path: "/dev/ptmx", Type: "c", Major: 5, Minor: 2},
}

// PrivateNamespaces must each be new for the container, or a path that
// names none of the engine's.
var PrivateNamespaces = []string{"pid", "ipc", "uts", "mount", "network", "user"}

// MountTypes are the filesystem types a container may mount besides binds,
// with where: /proc and /sys are the kernel's views of the container itself.
var MountTypes = map[string]string{
	"proc":    "/proc",
	"sysfs":   "/sys",
	"cgroup":  "/sys/fs/cgroup",
	"cgroup2": "/sys/fs/cgroup",
	"tmpfs":   "",
	"devpts":  "/dev/pts",
	"mqueue":  "/dev/mqueue",
}

// ReadonlyTypes are the filesystem types a container mounts read-only
// only: the kernel's views of devices and cgroups.
var ReadonlyTypes = map[string]bool{"sysfs": true, "cgroup": true, "cgroup2": true}

// ProcOptions are the /proc mount's options: no process of another user
// is visible (hidepid=2), and nothing on it runs.
var ProcOptions = []string{"nosuid", "noexec", "nodev", "hidepid=2"}
