package seccomp

import (
	"fmt"
	"strings"
	"testing"
)

// Numbers of calls Default does not name, used by rows that must be allowed.
// Checked against unix.SYS_* with the tables in the sysnum tests.
var extraNumbers = map[Arch]map[string]uint32{
	AMD64: {"read": 0, "write": 1, "mmap": 9, "getpid": 39, "execve": 59, "futex": 202, "openat": 257,
		"splice": 275, "tee": 276, "memfd_create": 319, "pidfd_open": 434, "execveat": 322, "shmget": 29,
		"fanotify_mark": 301, "seccomp": 317},
	ARM64: {"read": 63, "write": 64, "mmap": 222, "getpid": 172, "execve": 221, "futex": 98, "openat": 56,
		"splice": 76, "tee": 77, "memfd_create": 279, "pidfd_open": 434, "execveat": 281, "shmget": 194,
		"fanotify_mark": 263, "seccomp": 277},
}

const (
	auditI386 = 0x40000003 // AUDIT_ARCH_I386: int 0x80 on an x86_64 kernel
	auditARM  = 0x40000028 // AUDIT_ARCH_ARM: aarch32 compat on arm64
	hi1       = 1 << 32    // a set bit in the half the kernel drops from int arguments
)

var (
	bothArches = []Arch{AMD64, ARM64}
	amd64Only  = []Arch{AMD64}
	enosys     = Errno(linuxENOSYS)
)

// row is one {system call, arch, args} -> expected action case. A row names
// its call, or gives a raw number (nr) when name is empty; audit overrides the
// arch value the kernel would report.
type row struct {
	name   string
	args   []uint64
	arches []Arch
	want   Action
	nr     uint32
	audit  uint32
}

func call(name string, want Action, args ...uint64) row {
	return row{name: name, args: args, arches: bothArches, want: want}
}

func (r row) on(arches ...Arch) row { r.arches = arches; return r }

// every expands to one row per name with no arguments.
func every(want Action, arches []Arch, names ...string) []row {
	var rows []row
	for _, n := range names {
		rows = append(rows, row{name: n, arches: arches, want: want})
	}
	return rows
}

func defaultRows() []row {
	const (
		threadFlags = 0x3d0f00 // glibc pthread_create
		goThread    = 0x50f00  // Go runtime newosproc
		vforkFlags  = 0x4111   // CLONE_VM|CLONE_VFORK|SIGCHLD (posix_spawn)
		sigchld     = 0x11     // fork
		sockStream  = 1
		sockDgram   = 2
		flagsNBCX   = 0x80800 // SOCK_NONBLOCK|SOCK_CLOEXEC
		afUnix      = 1
		afNetlink   = 16
		atFdcwd     = 0xffffff9c // AT_FDCWD (-100) as the kernel's 32-bit int
	)
	rows := []row{
		call("getpid", Allow), call("read", Allow, 0, 0, 4096), call("write", Allow, 1),
		call("openat", Allow), call("execve", Allow), call("futex", Allow), call("mmap", Allow),

		// Architecture check.
		{name: "getpid", arches: amd64Only, audit: auditI386, want: KillProcess},
		{name: "getpid", arches: []Arch{ARM64}, audit: auditARM, want: KillProcess},
		{name: "getpid", arches: amd64Only, audit: 0xc00000b7, want: KillProcess},
		{name: "getpid", arches: []Arch{ARM64}, audit: 0xc000003e, want: KillProcess},
		{nr: 0x40000000 | 39, arches: amd64Only, want: KillProcess},  // x32 getpid
		{nr: 0x40000000 | 165, arches: amd64Only, want: KillProcess}, // x32 mount
		{nr: 0xffffffff, arches: amd64Only, want: Allow},             // nr -1: the kernel returns ENOSYS
		{nr: 0x3fffffff, arches: bothArches, want: Allow},            // unknown: the kernel returns ENOSYS
		{nr: 0x40000000 | 172, arches: []Arch{ARM64}, want: Allow},   // no x32 on arm64

		// Namespaces.
		call("clone", EPERM, cloneNewUser), call("clone", EPERM, cloneNewNS|sigchld),
		call("clone", EPERM, cloneNewPID), call("clone", EPERM, cloneNewNet),
		call("clone", EPERM, cloneNewUTS), call("clone", EPERM, cloneNewIPC),
		call("clone", EPERM, cloneNewCgroup), call("clone", EPERM, hi1|cloneNewUser),
		call("clone", EPERM, threadFlags|cloneNewUser),
		call("clone", Allow, threadFlags), call("clone", Allow, goThread), call("clone", Allow, vforkFlags),
		call("clone", Allow, sigchld), call("clone", Allow, hi1|sigchld),
		call("unshare", EPERM, cloneNewUser), call("unshare", EPERM, cloneNewTime),
		call("unshare", EPERM, cloneNewNet|0x600), call("unshare", Allow, 0x600), // CLONE_FS|CLONE_FILES
		call("clone3", enosys), call("setns", EPERM, 3, cloneNewNet), call("setns", EPERM),

		// Sockets.
		call("socket", Allow, afINET, sockStream), call("socket", Allow, afINET6, sockStream|flagsNBCX),
		call("socket", Allow, afINET, sockDgram, 1), // ICMP "ping" socket
		call("socket", Allow, afUnix, sockStream), call("socket", Allow, afNetlink, sockRaw, 0),
		call("socket", Allow, afNetlink, sockDgram, 9), call("socket", Allow, hi1|afINET, sockStream),
		call("socket", Allow, afINET, hi1|sockStream),
		call("socket", EPERM, afINET, sockRaw, 1), call("socket", EPERM, afINET, sockRaw|flagsNBCX, 6),
		call("socket", EPERM, afINET6, sockRaw, 58), call("socket", EPERM, afINET, sockPacket),
		call("socket", EPERM, afINET, sockStream, ipprotoMPTCP),
		call("socket", EPERM, afINET6, sockStream|flagsNBCX, ipprotoMPTCP),
		call("socket", EPERM, afINET, sockStream, hi1|ipprotoMPTCP),
		call("socket", EPERM, afPacket, sockRaw, 0x0300), call("socket", EPERM, afPacket, sockDgram),
		call("socket", EPERM, afVSOCK, sockStream), call("socket", EPERM, 31, sockStream), // AF_BLUETOOTH
		call("socket", EPERM, 38, 5), call("socket", EPERM, hi1|afPacket, sockRaw), // AF_ALG
		call("socket", EPERM, 0xffffffff, sockStream), // -1 compares as unsigned
		call("socketpair", Allow, afUnix, sockStream), call("socketpair", EPERM, afPacket, sockDgram),
		call("socketpair", EPERM, afVSOCK, sockStream),
		call("sendto", EPERM, 3, 0, 1, msgOOB), call("sendto", EPERM, 3, 0, 1, hi1|msgOOB),
		call("sendto", Allow, 3, 0, 1, 0x4040), call("sendto", Allow, 3, 0, msgOOB, 0), // MSG_DONTWAIT|MSG_NOSIGNAL; OOB bit in len
		call("recvfrom", EPERM, 3, 0, 1, msgOOB|0x2), call("recvfrom", Allow, 3, 0, 1, 0x2), // MSG_PEEK
		call("sendmsg", EPERM, 3, 0, msgOOB), call("sendmsg", Allow, 3, 0, 0x4000),
		call("recvmsg", EPERM, 3, 0, msgOOB), call("recvmsg", Allow, 3, 0, 0),
		call("sendmmsg", EPERM, 3, 0, 2, msgOOB), call("recvmmsg", EPERM, 3, 0, 2, msgOOB),
		call("sendmmsg", Allow, 3, 0, 2, 0),

		// ioctl: command in arg 1, 32 bits.
		call("ioctl", EPERM, 0, tiocSTI), call("ioctl", EPERM, 0, hi1|tiocSTI),
		call("ioctl", EPERM, 5, tiocLinux), call("ioctl", EPERM, 5, tiocSetD), call("ioctl", EPERM, 5, siocAtMark),
		call("ioctl", Allow, 0, 0x5401), call("ioctl", Allow, 0, 0x5414), call("ioctl", Allow, 0, 0x541b), // TCGETS TIOCSWINSZ FIONREAD
		call("ioctl", Allow, tiocSTI, 0x5401), // the fd number does not matter
		call("ioctl", EPERM, 3, watchQueueSetSize), call("ioctl", EPERM, 3, watchQueueSetFilter),
		call("ioctl", Allow, 3, 0x5762), call("ioctl", Allow, 3, 0x80045701), // 'W' 0x62; WDIOC_GETSTATUS
	}
	rows = append(rows, fsIoctlRows()...)
	rows = append(rows, []row{

		// personality: only PER_LINUX and the query.
		call("personality", Allow, perLinux), call("personality", Allow, personaQuery),
		call("personality", Allow, hi1),                                             // the kernel sees 0
		call("personality", EPERM, 0x400000), call("personality", EPERM, 0x0040000), // READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE
		call("personality", EPERM, 8), call("personality", EPERM, hi1|0x400000), // PER_LINUX32

		// prctl.
		call("prctl", EPERM, prSetPtracer, 0), call("prctl", EPERM, prSetPtracer, 0xffffffffffffffff),
		call("prctl", EPERM, hi1|prSetPtracer, 1), call("prctl", EPERM, prSetDumpable, 1),
		call("prctl", EPERM, prSetDumpable, hi1),                        // arg2 is unsigned long: both halves count
		call("prctl", Allow, prSetDumpable, 0), call("prctl", Allow, 3), // PR_GET_DUMPABLE
		call("prctl", Allow, 15, 1), call("prctl", Allow, 38, 1), // PR_SET_NAME, PR_SET_NO_NEW_PRIVS

		// Device nodes.
		call("mknodat", EPERM, atFdcwd, 0, sIFCHR|0o666, 0x103), call("mknodat", EPERM, atFdcwd, 0, sIFBLK|0o600),
		call("mknodat", EPERM, atFdcwd, 0, hi1|sIFCHR), call("mknodat", Allow, atFdcwd, 0, 0o010644), // S_IFIFO
		call("mknodat", Allow, atFdcwd, 0, 0o100644), call("mknodat", Allow, atFdcwd, 0, 0o140755), // S_IFREG S_IFSOCK
		call("mknodat", Allow, atFdcwd, 0, 0o644),
		call("mknod", EPERM, 0, sIFCHR|0o666).on(AMD64), call("mknod", EPERM, 0, sIFBLK).on(AMD64),
		call("mknod", Allow, 0, 0o010600).on(AMD64),
	}...)
	rows = append(rows, every(EPERM, bothArches, "mount", "umount2", "move_mount", "open_tree", "open_tree_attr",
		"fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "listmount", "statmount", "pivot_root",
		"chroot", "bpf", "perf_event_open", "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd",
		"io_uring_setup", "io_uring_enter", "io_uring_register", "userfaultfd", "kexec_load", "kexec_file_load",
		"init_module", "finit_module", "delete_module", "keyctl", "add_key", "request_key", "settimeofday",
		"clock_settime", "clock_adjtime", "adjtimex", "reboot", "swapon", "swapoff", "acct", "quotactl",
		"quotactl_fd", "lookup_dcookie", "name_to_handle_at", "open_by_handle_at", "vhangup", "syslog",
		"nfsservctl", "fanotify_init", "sethostname", "setdomainname", "kcmp", "process_madvise", "listns",
		"remap_file_pages", "memfd_secret", "vmsplice", "mbind", "set_mempolicy", "get_mempolicy",
		"set_mempolicy_home_node", "migrate_pages", "move_pages", "mq_open", "mq_unlink", "mq_timedsend",
		"mq_timedreceive", "mq_notify", "mq_getsetattr")...)
	rows = append(rows, every(EPERM, amd64Only, "iopl", "ioperm", "uselib", "ustat", "sysfs", "modify_ldt")...)
	// Some of the calls kept.go keeps, beside the denied ones.
	return append(rows, every(Allow, bothArches, "splice", "tee", "memfd_create", "pidfd_open", "execveat",
		"shmget", "fanotify_mark", "seccomp")...)
}

// fsIoctlRows are the filesystem and block administration ioctls: each type
// byte denied whole, the borrowed generic commands allowed, and both sides of
// every edge of a number range.
func fsIoctlRows() []row {
	const (
		fsIocGetFlags  = 0x80086601
		fsIocSetFlags  = 0x40086602
		fsIocFiemap    = 0xc020660b
		fiDedupeRange  = 0xc0189436
		btrfsFSInfo    = 0x8400941f
		btrfsSnapV2    = 0x50009417
		dmVersion      = 0xc138fd00
		loopSetFd      = 0x4c00
		loopCtlGetFree = 0x4c82
		blkGetSize64   = 0x80081272
		blkDiscard     = 0x1277
		fiFreeze       = 0xc0045877
		fsIocGetFSMap  = 0xc0c0583b
		goingDown      = 0x8004587d // XFS_IOC_GOINGDOWN, EXT4_IOC_SHUTDOWN, F2FS_IOC_SHUTDOWN
		fuseDevClone   = 0x8004e500
		setEncPolicy   = 0x800c6613
		addEncKey      = 0xc0506617
		getEncNonce    = 0x8010661b
		enableVerity   = 0x40806685
		measureVerity  = 0xc0046686
		procmapQuery   = 0xc0686611 // PROCMAP_QUERY: 'f' 17 with a size
		fsIocGetVers   = 0x80087601 // FS_IOC_GETVERSION, type 'v'
		fsIocGetUUID   = 0x80111500 // FS_IOC_GETFSUUID, type 0x15
	)
	ioctl := func(want Action, cmds ...uint64) []row {
		var rows []row
		for _, c := range cmds {
			rows = append(rows, call("ioctl", want, 3, c), call("ioctl", want, 3, hi1|c))
		}
		return rows
	}
	var rows []row
	for _, group := range [][]row{
		ioctl(EPERM, btrfsFSInfo, btrfsSnapV2, fiDedupeRange, 0x9400, 0x94ff, 0xc0009431, // last: FS_IOC_GETFSLABEL's number with another size
			dmVersion, 0xfd12, loopSetFd, loopCtlGetFree, 0x4cff, blkGetSize64, blkDiscard, 0x125d,
			0xf501, 0x40086e80, 0xbc01, 0xcd01, fuseDevClone,
			fiFreeze, fsIocGetFSMap, goingDown, 0x801c581e, // XFS_IOC_DIOINFO
			0x40086607, 0x40286608, 0x6609, fsIocFiemap, 0x660c, 0xc028660f, 0x40086610, ext4SwapBoot, 0x6612,
			setEncPolicy, 0x40106614, addEncKey, 0xc0406619, getEncNonce, 0x6628, 0x4008662c,
			0x6684, enableVerity, measureVerity, 0xc0286687,
			0x40049408, 0x4004940a, 0x4020940c, 0x4020940e, 0x801c5820, 0x401c581f), // the exceptions are exact
		ioctl(Allow, fiClone, fiCloneRange, fsIocFSGetXattr, fsIocFSSetXattr, fsIocGetFlags, fsIocSetFlags,
			procmapQuery, 0x6606, 0x6630, 0x6683, 0x6688, fsIocGetVers, fsIocGetUUID,
			0x9300, 0x95ff, 0xfc00, 0xfe00, 0x4b00, 0x4d00, 0x1100, 0x1300, 0x5700, 0x5900), // neighbouring types
	} {
		rows = append(rows, group...)
	}
	return rows
}

func TestDefaultProfile(t *testing.T) {
	runRows(t, Default(), defaultRows())
}

// TestSandboxProfile: the sandbox's profile is the default one, every row
// of it, and refuses a setuid or setgid file besides; Default (containers')
// leaves those bits alone.
func TestSandboxProfile(t *testing.T) {
	const (
		atFdcwd  = 0xffffff9c
		oRdonly  = 0
		oWronly  = 1
		oCreatRW = oCreat | 2
		tmpfile  = oTmpfile | 0o200000 // O_TMPFILE includes O_DIRECTORY
	)
	setuid := []row{
		call("fchmodat", EPERM, atFdcwd, 0, 0o4755), call("fchmodat", EPERM, atFdcwd, 0, 0o2755),
		call("fchmodat", EPERM, atFdcwd, 0, hi1|0o6755), call("fchmodat2", EPERM, atFdcwd, 0, 0o4711, 0x100),
		call("fchmod", EPERM, 3, 0o4755), call("fchmod", EPERM, 3, 0o2711),
		call("chmod", EPERM, 0, 0o4755).on(AMD64), call("creat", EPERM, 0, 0o4755).on(AMD64),
		call("mknodat", EPERM, atFdcwd, 0, 0o104755), call("mknod", EPERM, 0, 0o102755).on(AMD64),
		call("openat", EPERM, atFdcwd, 0, oCreatRW, 0o4755), call("openat", EPERM, atFdcwd, 0, tmpfile|2, 0o2755),
		call("open", EPERM, 0, oCreatRW, 0o6700).on(AMD64),
		call("openat2", enosys),
		// Everything else stays: the sticky bit, plain modes, an open
		// that creates nothing (its mode argument is whatever the
		// register held).
		call("fchmodat", Allow, atFdcwd, 0, 0o1777), call("fchmodat", Allow, atFdcwd, 0, 0o755),
		call("fchmod", Allow, 3, 0o644), call("chmod", Allow, 0, 0o700).on(AMD64),
		call("openat", Allow, atFdcwd, 0, oCreatRW, 0o755), call("openat", Allow, atFdcwd, 0, oRdonly, 0o4755),
		call("openat", Allow, atFdcwd, 0, oWronly, 0o6000), call("open", Allow, 0, oRdonly, 0o4755).on(AMD64),
		call("mknodat", Allow, atFdcwd, 0, 0o010644),
	}
	runRows(t, Sandbox(), append(defaultRows(), setuid...))
	var inDefault []row
	for _, r := range setuid {
		if r.name != "openat2" {
			r.want = Allow
			inDefault = append(inDefault, r)
		}
	}
	runRows(t, Default(), append(inDefault, call("openat2", Allow)))
}

func runRows(t *testing.T, p Profile, rows []row) {
	t.Helper()
	progs := make(map[Arch][]Instruction)
	for _, arch := range Arches() {
		prog, err := Compile(p, arch)
		if err != nil {
			t.Fatalf("Compile(%v): %v", arch, err)
		}
		progs[arch] = prog
	}
	for _, r := range rows {
		for _, arch := range r.arches {
			d, err := r.data(arch)
			if err != nil {
				t.Fatal(err)
			}
			got, err := run(progs[arch], d)
			if err != nil {
				t.Errorf("%s: running filter: %v", r.describe(arch), err)
			} else if got != r.want {
				t.Errorf("%s = %v, want %v", r.describe(arch), got, r.want)
			}
		}
	}
}

func (r row) data(arch Arch) (seccompData, error) {
	info := arches[arch]
	d := seccompData{nr: int32(r.nr), arch: info.auditArch}
	if r.audit != 0 {
		d.arch = r.audit
	}
	if r.name != "" {
		nr, ok := info.lookup(r.name)
		if !ok {
			nr, ok = extraNumbers[arch][r.name]
		}
		if !ok {
			return d, fmt.Errorf("test row: no number for %s on %v", r.name, arch)
		}
		d.nr = int32(nr)
	}
	copy(d.args[:], r.args)
	return d, nil
}

func (r row) describe(arch Arch) string {
	name := r.name
	if name == "" {
		name = fmt.Sprintf("nr %#x", r.nr)
	}
	if r.audit != 0 {
		name += fmt.Sprintf(" (audit arch %#x)", r.audit)
	}
	args := make([]string, len(r.args))
	for i, a := range r.args {
		args[i] = fmt.Sprintf("%#x", a)
	}
	return fmt.Sprintf("%v: %s(%s)", arch, name, strings.Join(args, ", "))
}

// TestFilterCost bounds the instructions the filter runs for the calls that
// keep running it: those whose verdict depends on their arguments. (The
// kernel caches the allow of every other call after its first use.) Before
// they were placed first, a recvfrom ran 76.
func TestFilterCost(t *testing.T) {
	tests := []struct {
		r   row
		max int
	}{
		{call("ioctl", Allow, 1, 0x5401), 64}, // TCGETS, past every ioctl rule
		{call("ioctl", EPERM, 1, tiocSTI), 16},
		{call("recvfrom", Allow, 3, 0, 1, 0), 24},
		{call("sendto", Allow, 3, 0, 1, 0x4000), 24},
		{call("recvmsg", Allow, 3, 0, 0), 24},
		{call("socket", Allow, afINET, 1), 32},
		{call("clone", Allow, 0x3d0f00), 16},
		{call("prctl", Allow, 15), 16},
	}
	for _, arch := range Arches() {
		prog, err := Compile(Default(), arch)
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range tests {
			d, err := tt.r.data(arch)
			if err != nil {
				t.Fatal(err)
			}
			got, steps, err := runCounting(prog, d)
			switch {
			case err != nil || got != tt.r.want:
				t.Errorf("%s = %v, %v; want %v", tt.r.describe(arch), got, err, tt.r.want)
			case steps > tt.max:
				t.Errorf("%s runs %d instructions, want at most %d", tt.r.describe(arch), steps, tt.max)
			}
		}
	}
}

// TestSearchCost bounds the instructions the filter runs for a call whose
// verdict does not depend on its arguments: the kernel runs the filter for
// every system call number when it is loaded, to cache those verdicts, and
// a chain of comparisons in profile order made that 97 instructions for
// each call the profile does not name (0.1 ms of the sandbox's start).
func TestSearchCost(t *testing.T) {
	for _, arch := range Arches() {
		prog, err := Compile(Default(), arch)
		if err != nil {
			t.Fatal(err)
		}
		conditional := map[uint32]bool{}
		maxNr := uint32(0)
		for _, nr := range arches[arch].numbers() {
			maxNr = max(maxNr, nr)
		}
		for _, rule := range Default().Rules {
			for _, name := range rule.Names {
				if nr, ok := arches[arch].lookup(name); ok && len(rule.Args) > 0 {
					conditional[nr] = true
				}
			}
		}
		for nr := uint32(0); nr <= maxNr+8; nr++ {
			if conditional[nr] {
				continue
			}
			r := row{nr: nr, arches: []Arch{arch}}
			d, err := r.data(arch)
			if err != nil {
				t.Fatal(err)
			}
			if _, steps, err := runCounting(prog, d); err != nil || steps > 16 {
				t.Errorf("%s runs %d instructions (%v), want at most 16", r.describe(arch), steps, err)
			}
		}
	}
}

// TestDefaultUnconditional checks every rule without arguments, on every
// arch that has the call, so a new rule is tested even before it gets a row.
func TestDefaultUnconditional(t *testing.T) {
	var rows []row
	for _, rule := range Default().Rules {
		if len(rule.Args) > 0 {
			continue
		}
		for _, name := range rule.Names {
			for _, arch := range Arches() {
				if _, ok := arches[arch].lookup(name); ok {
					rows = append(rows, row{name: name, arches: []Arch{arch}, want: rule.Action})
				}
			}
		}
	}
	runRows(t, Default(), rows)
}

func TestCompileRejects(t *testing.T) {
	if _, err := Compile(Default(), Arch(99)); err == nil {
		t.Error("Compile for an unknown arch succeeded")
	}
	bad := Profile{DefaultAction: Allow, Rules: []Rule{{Names: []string{"nosuchcall"}, Action: EPERM}}}
	if _, err := Compile(bad, AMD64); err == nil {
		t.Error("Compile of an invalid profile succeeded")
	}
	var huge []Rule
	for i := range maxInstructions {
		huge = append(huge, Rule{Names: []string{"ioctl"}, Action: EPERM,
			Args: []ArgMatch{{Index: 1, Width: Word32, Op: Equal, Value: uint64(i)}}})
	}
	if _, err := Compile(Profile{DefaultAction: Allow, Rules: huge}, AMD64); err == nil {
		t.Error("Compile of a program over BPF_MAXINSNS succeeded")
	}
}

// BenchmarkCompileDefault is the work every stockade start does once (in the
// background, see sandbox.Warm).
func BenchmarkCompileDefault(b *testing.B) {
	for b.Loop() {
		if _, err := Compile(Default(), AMD64); err != nil {
			b.Fatal(err)
		}
	}
}
