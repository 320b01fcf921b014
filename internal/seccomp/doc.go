// Package seccomp keeps the agent away from the parts of the kernel a coding
// agent never needs: the system calls that would undo the rest of the sandbox
// or that keep turning up in kernel exploits.
//
// A policy is data. A Profile is a list of rules, each giving an Action to
// some system calls, optionally only when their arguments match:
//
//	{Names: []string{"mount", "pivot_root"}, Action: EPERM}
//	{Names: []string{"ioctl"}, Args: []ArgMatch{{Index: 1, Width: Word32, Op: Equal, Value: 0x5412}}, Action: EPERM}
//
// Compile turns a Profile into a classic BPF program for one architecture,
// and Install loads it into the kernel (the sandbox's init loads the same
// program with a raw system call instead: see Install):
//
//	arch, err := seccomp.NativeArch()
//	prog, err := seccomp.Compile(seccomp.Default(), arch)
//	unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) // Install needs it
//	err = seccomp.Install(prog)                      // then execve
//
// Allowlist builds the other kind of profile, the one stockade seal installs
// for a policy with defaultDeny: exactly the named calls run, and every
// other call kills the process. The number tables hold every call of each
// architecture, so any name can be listed; a name no architecture has is
// ErrUnknownSyscall.
//
// # What Default denies
//
// Default allows everything else and answers a denied call with EPERM, so a
// tool sees an ordinary "operation not permitted" and can report it:
//   - the filesystem view: mount and the new mount API, pivot_root, chroot,
//     listmount/statmount, listns;
//   - namespaces: setns, and unshare/clone with any CLONE_NEW* flag. clone3
//     fails with ENOSYS instead, because its flags sit in memory the filter
//     cannot read, and ENOSYS makes libc fall back to clone;
//   - kernel exploit primitives: bpf, perf_event_open, io_uring, userfaultfd,
//     vmsplice, modify_ldt, remap_file_pages, memfd_secret;
//   - other processes: ptrace, process_vm_readv/writev, pidfd_getfd, kcmp,
//     process_madvise, prctl(PR_SET_PTRACER), prctl(PR_SET_DUMPABLE, non-zero);
//   - NUMA placement and page migration: mbind, set/get_mempolicy,
//     set_mempolicy_home_node, migrate_pages, move_pages;
//   - POSIX message queues (mq_*);
//   - system administration: modules, kexec, reboot, swap, acct, quotas,
//     clocks, hostname, syslog, keyrings, file handles, fanotify, port I/O;
//   - device nodes (mknod of character and block devices; FIFOs are fine),
//     personalities other than PER_LINUX;
//   - ioctls: TIOCSTI, TIOCLINUX, TIOCSETD, SIOCATMARK, the notification-pipe
//     ioctls, and filesystem and block administration (every command of
//     btrfs, device-mapper, loop, block devices, f2fs, nilfs2, bcachefs,
//     reiserfs, FUSE and XFS; ext4 administration, fscrypt, fsverity and
//     FS_IOC_FIEMAP), but FICLONE, FICLONERANGE, FS_IOC_FSGETXATTR and
//     FS_IOC_FSSETXATTR, which ordinary tools use;
//   - sockets that go around the egress proxy: families from AF_PACKET (17)
//     up, AF_VSOCK, raw IPv4/IPv6, IPPROTO_MPTCP; and MSG_OOB on every send
//     and receive call.
//
// Default was compared call by call with Docker's default profile and
// clampdown's workload profile; what either refuses and Default allows is in
// Profile.Kept with the reason (SysV IPC, splice, memfd_create, pidfd_open,
// execveat, seccomp, ...), and a test keeps the comparison complete.
//
// Every program first checks the architecture: a call made through another
// ABI (i386 int 0x80 on x86_64, aarch32 on arm64, x32) would be numbered
// differently and slip past the rules, so it kills the process.
//
// # Limits
//
// seccomp sees only the six argument registers. It cannot follow a pointer
// (a path, a sockaddr, clone3's struct), and reading what one points to from
// outside would race with the process changing it (TOCTOU), so paths are
// Landlock's job and addresses the network namespace's. Integer arguments
// are compared at the width the kernel reads them (Word32 ignores the high
// half, as the kernel does). The filter cannot be removed once installed and
// applies to every descendant; a denied call may break a tool that has no
// fallback, which is why Default leaves alone calls that ordinary developer
// tools make (see Profile.Kept).
package seccomp
