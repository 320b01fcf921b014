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
	sISUID = 0o4000
	sISGID = 0o2000

	// include/uapi/asm-generic/fcntl.h (amd64 and arm64 alike): the open
	// flags that create a file, and so read the mode argument.
	oCreat   = 0o100
	oTmpfile = 0o20000000 // __O_TMPFILE
)

// Default returns the baseline profile for an agent: allow everything except
// the calls below, which fail with EPERM. Each call returns a fresh copy.
//
// It was compared call by call with Docker's default profile and clampdown's
// workload profile: what either refuses is denied here too, or listed in
// Kept with the reason an agent's toolchains need it (see kept.go).
func Default() Profile {
	return Profile{DefaultAction: Allow, Rules: defaultRules(), Kept: keptAllowed()}
}

// Sandbox returns the profile of the sandbox's own processes: Default and
// setuidRules. A container keeps Default (setuidRules explains why).
func Sandbox() Profile {
	p := Default()
	p.Rules = append(p.Rules, setuidRules()...)
	return p
}

// setuidRules deny making a file setuid or setgid: chmod with either bit,
// a file created with either in its mode, and openat2, whose mode seccomp
// cannot read (ENOSYS, as for clone3: callers fall back to openat).
//
// Inside, no_new_privs makes such a bit inert; the file is what matters,
// in the workdir or another tree of the host's, where the host's mount
// honours it: a setuid binary the command left there ran as the user, or
// as root under a root supervisor (uid 0 owns its files and chmod needs no
// capability), for whoever on the host could reach it. Containers keep
// the bits (dpkg sets them installing sudo or ssh; a container's own root
// is the engine's storage, closed to other users).
func setuidRules() []Rule {
	const why = "a setuid or setgid file would run as its owner for whoever on the host runs it"
	bits := func(i int) ArgMatch { return ArgMatch{Index: i, Width: Word32, Op: MaskedAny, Value: sISUID | sISGID} }
	creates := func(i int) ArgMatch {
		return ArgMatch{Index: i, Width: Word32, Op: MaskedAny, Value: oCreat | oTmpfile}
	}
	return []Rule{
		{Names: []string{"chmod", "fchmod", "creat"}, Args: []ArgMatch{bits(1)}, Action: EPERM, Reason: why},
		{Names: []string{"fchmodat", "fchmodat2"}, Args: []ArgMatch{bits(2)}, Action: EPERM, Reason: why},
		{Names: []string{"mknod"}, Args: []ArgMatch{bits(1)}, Action: EPERM, Reason: why},
		{Names: []string{"mknodat"}, Args: []ArgMatch{bits(2)}, Action: EPERM, Reason: why},
		{Names: []string{"open"}, Args: []ArgMatch{creates(1), bits(2)}, Action: EPERM, Reason: why},
		{Names: []string{"openat"}, Args: []ArgMatch{creates(2), bits(3)}, Action: EPERM, Reason: why},
		{Names: []string{"openat2"}, Action: Errno(linuxENOSYS),
			Reason: "its mode is out of seccomp's reach (a setuid file); callers fall back to openat"},
	}
}

func defaultRules() []Rule {
	rules := []Rule{
		{Names: []string{"mount", "umount2", "move_mount", "open_tree", "open_tree_attr", "fsopen",
			"fsconfig", "fsmount", "fspick", "mount_setattr", "pivot_root", "chroot"},
			Action: EPERM, Reason: "would change the filesystem view the sandbox built"},
		{Names: []string{"listmount", "statmount", "listns"},
			Action: EPERM, Reason: "enumerates mounts or namespaces"},
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
		// kcmp tells whether two processes share kernel objects, and
		// process_madvise acts on another process's memory; Docker allows
		// both only with CAP_SYS_PTRACE.
		{Names: []string{"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp", "process_madvise"},
			Action: EPERM, Reason: "reads, compares or controls another process"},
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
		// LDT entries are x86 segment descriptors: only 16-bit emulators
		// (Wine, DOSEMU) set them, and they keep turning up in kernel bugs
		// (the kernel can be built without the call at all).
		{Names: []string{"modify_ldt"},
			Action: EPERM, Reason: "x86 segment descriptors: emulator-only, recurring kernel bugs"},
		// CVE-2020-29374 (get_user_pages and copy-on-write) was shown with
		// vmsplice. splice and tee stay (see kept.go).
		{Names: []string{"vmsplice"},
			Action: EPERM, Reason: "maps the caller's pages into a pipe: nothing an agent runs needs it"},
		{Names: []string{"remap_file_pages"},
			Action: EPERM, Reason: "deprecated since Linux 3.16 and only emulated; nothing current calls it"},
		{Names: []string{"memfd_secret"},
			Action: EPERM, Reason: "memory removed from the kernel's direct map: no toolchain uses it"},
		// NUMA placement. Docker allows the policy calls only with
		// CAP_SYS_NICE and the page migrations never; libnuma, hwloc and the
		// JVM's -XX:+UseNUMA take the refusal for "no NUMA" and carry on.
		{Names: []string{"mbind", "set_mempolicy", "get_mempolicy", "set_mempolicy_home_node",
			"migrate_pages", "move_pages"},
			Action: EPERM, Reason: "NUMA placement and page migration: nothing an agent tunes"},
		// CVE-2017-11176: a use-after-free in mq_notify, exploited from an
		// unprivileged process. No toolchain an agent runs uses POSIX message
		// queues (SysV IPC, which test suites do use, stays; see kept.go).
		{Names: []string{"mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr"},
			Action: EPERM, Reason: "POSIX message queues: unused by toolchains, mq_notify use-after-free class"},
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
