package escape

// kernelRows: the kernel attack surface that seccomp closes (docs/sandbox.md,
// "seccomp"). Denials are EPERM, except clone3, which answers ENOSYS so that libcs fall
// back to clone(2), whose flags the filter can inspect; and foreign-ABI syscalls, which
// kill the process.
var kernelRows = []row{
	// New namespaces: a new user namespace gives back every capability inside it,
	// the entry point of most unprivileged kernel exploits.
	{name: "unshare_user", args: probe("unshare", "user"), want: "DENIED EPERM"},
	{name: "unshare_mount", args: probe("unshare", "mount"), want: "DENIED EPERM"},
	{name: "unshare_net", args: probe("unshare", "net"), want: "DENIED EPERM"},
	{name: "unshare_pid", args: probe("unshare", "pid"), want: "DENIED EPERM"},
	{name: "unshare_ipc", args: probe("unshare", "ipc"), want: "DENIED EPERM"},
	{name: "unshare_uts", args: probe("unshare", "uts"), want: "DENIED EPERM"},
	{name: "unshare_cgroup", args: probe("unshare", "cgroup"), want: "DENIED EPERM"},
	{name: "unshare_time", args: probe("unshare", "time"), want: "DENIED EPERM"},
	{name: "clone_newuser", args: probe("clone", "user"), want: "DENIED EPERM"},
	{name: "clone_newns", args: probe("clone", "mount"), want: "DENIED EPERM"},
	{name: "clone3_newuser", args: probe("clone3", "user"), want: "DENIED ENOSYS"},
	{name: "unshare_command", args: sh("unshare -Ur true >/dev/null 2>&1 && echo OK || echo DENIED"), want: "DENIED"},
	{name: "setns_own_mount_ns", args: probe("setns", "/proc/self/ns/mnt"), want: "DENIED EPERM"},
	{name: "setns_own_user_ns", args: probe("setns", "/proc/self/ns/user"), want: "DENIED EPERM"},
	// Init's namespaces: /proc/1 is not there, as in procRows.
	{name: "setns_init_mount_ns", args: probe("setns", "/proc/1/ns/mnt"), want: "DENIED ENOENT"},
	// The mount family, old and new API: the view must stay as built.
	{name: "mount_tmpfs", args: probe("mount-tmpfs", "/tmp"), want: "DENIED EPERM"},
	{name: "mount_proc", args: probe("mount-proc", "/tmp"), want: "DENIED EPERM"},
	// CVE-2022-0492: a cgroup v1 mount with a release_agent runs a host program.
	{name: "mount_cgroup_v1", args: probe("mount-cgroup", "/tmp"), want: "DENIED EPERM"},
	{name: "bind_mount", args: probe("bind", "/tmp", "{work}"), want: "DENIED EPERM"},
	{name: "remount_usr_rw", args: probe("remount-rw", "/usr"), want: "DENIED EPERM"},
	{name: "make_root_shared", args: probe("make-shared", "/"), want: "DENIED EPERM"},
	{name: "umount_usr", args: probe("umount", "/usr"), want: "DENIED EPERM"},
	{name: "fsopen_tmpfs", args: probe("fsopen", "tmpfs"), want: "DENIED EPERM"},
	{name: "open_tree_clone", args: probe("open-tree", "/usr"), want: "DENIED EPERM"},
	{name: "mount_setattr_usr_rw", args: probe("mount-setattr", "/usr"), want: "DENIED EPERM"},
	{name: "pivot_root", args: probe("pivot-root", "/tmp", "/tmp"), want: "DENIED EPERM"},
	{name: "chroot", args: probe("chroot", "/tmp"), want: "DENIED EPERM"},
	// "Shocker" (Docker, 2014): open_by_handle_at reaches inodes outside the view.
	{name: "open_by_handle_at", args: probe("open-by-handle", "/etc/passwd"), want: "DENIED EPERM"},
	// Kernel subsystems with a long record of exploitable bugs.
	{name: "bpf", args: probe("bpf"), want: "DENIED EPERM"},
	{name: "io_uring_setup", args: probe("io-uring"), want: "DENIED EPERM"},
	{name: "userfaultfd", args: probe("userfaultfd"), want: "DENIED EPERM"},
	{name: "dev_userfaultfd", args: probe("read", "/dev/userfaultfd"), want: "DENIED ENOENT"},
	{name: "perf_event_open", args: probe("perf-event-open"), want: "DENIED EPERM"},
	{name: "keyctl", args: probe("keyctl"), want: "DENIED EPERM"},
	{name: "add_key", args: probe("add-key"), want: "DENIED EPERM"},
	{name: "request_key", args: probe("request-key"), want: "DENIED EPERM"},
	{name: "fanotify_init", args: probe("fanotify"), want: "DENIED EPERM"},
	// Replacing or extending the kernel.
	{name: "kexec_load", args: probe("kexec-load"), want: "DENIED EPERM"},
	{name: "kexec_file_load", args: probe("kexec-file-load"), want: "DENIED EPERM"},
	{name: "init_module", args: probe("init-module"), want: "DENIED EPERM"},
	{name: "finit_module", args: probe("finit-module"), want: "DENIED EPERM"},
	{name: "delete_module", args: probe("delete-module"), want: "DENIED EPERM"},
	// personality: READ_IMPLIES_EXEC and ADDR_NO_RANDOMIZE weaken exploit
	// mitigations. The kernel reads the argument as 32 bits: high bits must not
	// slip a forbidden value past a 64-bit comparison in the filter.
	{name: "personality_read_implies_exec", args: probe("personality", "0x0400000"), want: "DENIED EPERM"},
	{name: "personality_addr_no_randomize", args: probe("personality", "0x0040000"), want: "DENIED EPERM"},
	{name: "personality_high_bits", args: probe("personality-hibits", "0x0400000"), want: "DENIED EPERM"},
	// CVE-2017-5226 (bubblewrap) and kin: TIOCSTI pushes keystrokes into the
	// terminal, to be run by the user's shell after the agent exits. The probe's
	// controlling tty is a fresh pty, so only the sandbox can refuse.
	{name: "tiocsti", args: probe("tiocsti"), want: "DENIED EPERM"},
	{name: "tiocsti_high_bits", args: probe("tiocsti-hibits"), want: "DENIED EPERM"},
	{name: "tioclinux", args: probe("tioclinux"), want: "DENIED EPERM"},
	// Hardware, logs, power, time, accounting.
	{name: "iopl", args: probe("iopl"), want: "DENIED EPERM"},
	{name: "ioperm", args: probe("ioperm"), want: "DENIED EPERM"},
	{name: "syslog_read", args: probe("syslog"), want: "DENIED EPERM"},
	{name: "reboot", args: probe("reboot"), want: "DENIED EPERM"},
	{name: "swapon", args: probe("swapon"), want: "DENIED EPERM"},
	{name: "acct", args: probe("acct"), want: "DENIED EPERM"},
	{name: "settimeofday", args: probe("settimeofday"), want: "DENIED EPERM"},
	{name: "clock_settime", args: probe("clock-settime"), want: "DENIED EPERM"},
	{name: "sethostname", args: probe("sethostname"), want: "DENIED EPERM"},
	{name: "quotactl", args: probe("quotactl"), want: "DENIED EPERM"},
	{name: "vhangup", args: probe("vhangup"), want: "DENIED EPERM"},
	// The x32 ABI reaches the same syscalls under other numbers: a filter that only
	// knows the x86_64 numbers would be bypassed, so it kills.
	{name: "x32_syscall", args: probe("x32-syscall"), want: "DENIED SIGSYS"},
}
