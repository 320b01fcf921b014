package seccomp

// Kernel constants the default profile compares arguments with. They are the
// same on amd64 and arm64 (both use the generic values) and are spelled out
// so that the profile is identical on every build OS; a Linux test checks each
// one against x/sys/unix.
const (
	// include/uapi/linux/sched.h. CLONE_NEWTIME shares its bit with the exit
	// signal byte of clone(2); no valid signal sets it, so denying it there
	// costs nothing.
	cloneNewTime   = 0x00000080
	cloneNewNS     = 0x00020000
	cloneNewCgroup = 0x02000000
	cloneNewUTS    = 0x04000000
	cloneNewIPC    = 0x08000000
	cloneNewUser   = 0x10000000
	cloneNewPID    = 0x20000000
	cloneNewNet    = 0x40000000
	cloneNewAny    = cloneNewTime | cloneNewNS | cloneNewCgroup | cloneNewUTS |
		cloneNewIPC | cloneNewUser | cloneNewPID | cloneNewNet

	// include/linux/socket.h, include/linux/net.h, include/uapi/linux/in.h.
	afINET       = 2
	afINET6      = 10
	afPacket     = 17
	afVSOCK      = 40
	sockRaw      = 3
	sockPacket   = 10
	sockTypeMask = 0xf // strips SOCK_NONBLOCK and SOCK_CLOEXEC
	ipprotoMPTCP = 262
	msgOOB       = 0x1

	// include/uapi/asm-generic/ioctls.h and sockios.h.
	tiocSTI    = 0x5412
	tiocLinux  = 0x541c
	tiocSetD   = 0x5423
	siocAtMark = 0x8905

	// include/uapi/linux/personality.h: PER_LINUX, and the value that only
	// queries the current persona.
	perLinux     = 0
	personaQuery = 0xffffffff

	// include/uapi/linux/prctl.h.
	prSetDumpable = 4
	prSetPtracer  = 0x59616d61

	// include/uapi/linux/stat.h.
	sIFMT  = 0o170000
	sIFCHR = 0o020000
	sIFBLK = 0o060000
)

// Default returns the baseline profile for an agent: allow everything except
// the calls below, which fail with EPERM. Each call returns a fresh copy.
//
// It follows the "workload" profile of the systems stockade learns from, minus
// calls that ordinary developer tools make: splice/tee/vmsplice (Go's io.Copy),
// memfd_create (JITs, Chromium), pidfd_open (Go's os/exec), execveat, SysV IPC
// and POSIX message queues (databases, test suites), and MAP_GROWSDOWN (a
// filter on mmap would take the hottest call off the kernel's allow cache).
func Default() Profile {
	return Profile{DefaultAction: Allow, Rules: defaultRules()}
}

func defaultRules() []Rule {
	rules := []Rule{
		{Names: []string{"mount", "umount2", "move_mount", "open_tree", "open_tree_attr", "fsopen",
			"fsconfig", "fsmount", "fspick", "mount_setattr", "pivot_root", "chroot"},
			Action: EPERM, Reason: "would change the filesystem view the sandbox built"},
		{Names: []string{"listmount", "statmount"},
			Action: EPERM, Reason: "enumerates mounts"},
		{Names: []string{"setns"},
			Action: EPERM, Reason: "would enter another namespace"},
		{Names: []string{"unshare", "clone"},
			Args:   []ArgMatch{{Index: 0, Width: Word64, Op: MaskedAny, Value: cloneNewAny}},
			Action: EPERM, Reason: "a new namespace (user namespaces above all) opens kernel attack surface"},
		// clone3 passes its flags in a struct, which seccomp cannot read, so
		// it is denied outright. ENOSYS rather than EPERM is the one deliberate
		// exception to "denials return EPERM": glibc (2.34+) and other runtimes
		// take ENOSYS to mean "old kernel" and fall back to clone(2), whose
		// flags the rule above can see; EPERM would make them fail instead.
		{Names: []string{"clone3"},
			Action: Errno(linuxENOSYS), Reason: "flags are out of seccomp's reach; callers fall back to clone"},
		{Names: []string{"bpf", "perf_event_open", "io_uring_setup", "io_uring_enter", "io_uring_register", "userfaultfd"},
			Action: EPERM, Reason: "kernel exploit primitive"},
		{Names: []string{"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd"},
			Action: EPERM, Reason: "reads or controls another process"},
		{Names: []string{"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
			"reboot", "swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "syslog", "vhangup",
			"sethostname", "setdomainname", "lookup_dcookie", "nfsservctl", "uselib", "ustat", "sysfs"},
			Action: EPERM, Reason: "administers the whole system"},
		{Names: []string{"iopl", "ioperm"},
			Action: EPERM, Reason: "direct hardware port access"},
		{Names: []string{"keyctl", "add_key", "request_key"},
			Action: EPERM, Reason: "the kernel keyring is not namespaced"},
		{Names: []string{"settimeofday", "clock_settime", "clock_adjtime", "adjtimex"},
			Action: EPERM, Reason: "sets the system clock"},
		// open_by_handle_at opened any inode of the host's filesystem from a
		// container in the 2014 "shocker" escape.
		{Names: []string{"name_to_handle_at", "open_by_handle_at"},
			Action: EPERM, Reason: "file handles bypass path-based confinement"},
		{Names: []string{"fanotify_init"},
			Action: EPERM, Reason: "watches and intercepts file access system-wide"},
		{Names: []string{"personality"},
			Args: []ArgMatch{
				{Index: 0, Width: Word32, Op: NotEqual, Value: perLinux},
				{Index: 0, Width: Word32, Op: NotEqual, Value: personaQuery},
			},
			Action: EPERM, Reason: "other personas weaken ASLR or NX (READ_IMPLIES_EXEC)"},
		{Names: []string{"prctl"},
			Args:   []ArgMatch{{Index: 0, Width: Word32, Op: Equal, Value: prSetPtracer}},
			Action: EPERM, Reason: "would let another process ptrace this one past Yama"},
		{Names: []string{"prctl"},
			Args: []ArgMatch{
				{Index: 0, Width: Word32, Op: Equal, Value: prSetDumpable},
				{Index: 1, Width: Word64, Op: NotEqual, Value: 0},
			},
			Action: EPERM, Reason: "would re-enable core dumps and /proc access a process gave up"},
	}
	rules = append(rules, deviceRules()...)
	rules = append(rules, ioctlRules()...)
	return append(rules, socketRules()...)
}

// deviceRules deny creating device nodes; FIFOs, sockets and regular files
// stay allowed (build tools make FIFOs).
func deviceRules() []Rule {
	var rules []Rule
	for _, call := range []struct {
		name string
		mode int // index of the mode argument
	}{{"mknod", 1}, {"mknodat", 2}} {
		for _, kind := range []uint64{sIFCHR, sIFBLK} {
			rules = append(rules, Rule{Names: []string{call.name},
				Args:   []ArgMatch{{Index: call.mode, Width: Word32, Op: MaskedEqual, Mask: sIFMT, Value: kind}},
				Action: EPERM, Reason: "a device node would reach hardware or kernel memory"})
		}
	}
	return rules
}

// ioctlRules deny terminal injection and the out-of-band socket mark. The
// command is an unsigned int, so only its low 32 bits are compared: the kernel
// ignores the high half, and so must the filter.
func ioctlRules() []Rule {
	var rules []Rule
	for _, c := range []struct {
		cmd    uint64
		reason string
	}{
		{tiocSTI, "TIOCSTI types into the terminal of the user who started the agent"},
		{tiocLinux, "TIOCLINUX reads and injects on the Linux console"},
		{tiocSetD, "TIOCSETD loads rarely used line disciplines (kernel attack surface)"},
		{siocAtMark, "SIOCATMARK belongs to the out-of-band data path denied below"},
	} {
		rules = append(rules, Rule{Names: []string{"ioctl"},
			Args:   []ArgMatch{{Index: 1, Width: Word32, Op: Equal, Value: c.cmd}},
			Action: EPERM, Reason: c.reason})
	}
	return rules
}

// socketRules deny the sockets that would go around the egress proxy or reach
// rarely used protocol code, and MSG_OOB (a recurring source of AF_UNIX
// use-after-free bugs). AF_NETLINK (16) and everything below stays allowed.
func socketRules() []Rule {
	domain := func(op Op, v uint64) ArgMatch { return ArgMatch{Index: 0, Width: Word32, Op: op, Value: v} }
	sockType := func(t uint64) ArgMatch {
		return ArgMatch{Index: 1, Width: Word32, Op: MaskedEqual, Mask: sockTypeMask, Value: t}
	}
	oob := func(index int) ArgMatch { return ArgMatch{Index: index, Width: Word32, Op: MaskedAny, Value: msgOOB} }
	return []Rule{
		{Names: []string{"socket", "socketpair"}, Args: []ArgMatch{domain(GreaterEqual, afPacket)},
			Action: EPERM, Reason: "families from AF_PACKET up bypass the proxy or are rarely used kernel code"},
		// Already covered by the rule above; kept so that relaxing that floor
		// can never reopen a path to the host's hypervisor.
		{Names: []string{"socket"}, Args: []ArgMatch{domain(Equal, afVSOCK)},
			Action: EPERM, Reason: "AF_VSOCK reaches the host outside the network namespace"},
		{Names: []string{"socket"}, Args: []ArgMatch{domain(Equal, afINET), sockType(sockRaw)},
			Action: EPERM, Reason: "raw IP sockets forge packets around the proxy"},
		{Names: []string{"socket"}, Args: []ArgMatch{domain(Equal, afINET6), sockType(sockRaw)},
			Action: EPERM, Reason: "raw IP sockets forge packets around the proxy"},
		// The kernel silently turns (AF_INET, SOCK_PACKET) into AF_PACKET
		// (__sock_create in net/socket.c), so the family rule alone would miss it.
		{Names: []string{"socket"}, Args: []ArgMatch{domain(Equal, afINET), sockType(sockPacket)},
			Action: EPERM, Reason: "obsolete alias of AF_PACKET"},
		{Names: []string{"socket"}, Args: []ArgMatch{{Index: 2, Width: Word32, Op: Equal, Value: ipprotoMPTCP}},
			Action: EPERM, Reason: "Landlock TCP rules do not cover MPTCP"},
		{Names: []string{"sendto", "recvfrom", "sendmmsg", "recvmmsg"}, Args: []ArgMatch{oob(3)},
			Action: EPERM, Reason: "MSG_OOB: out-of-band data (AF_UNIX use-after-free class)"},
		{Names: []string{"sendmsg", "recvmsg"}, Args: []ArgMatch{oob(2)},
			Action: EPERM, Reason: "MSG_OOB: out-of-band data (AF_UNIX use-after-free class)"},
	}
}
