//go:build linux

package sandbox

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/caps"
	"github.com/stockade-dev/stockade/internal/capture"
	"github.com/stockade-dev/stockade/internal/landlock"
	"github.com/stockade-dev/stockade/internal/mount"
)

// Init's contract. Init is a fork of the supervisor, not a new process
// image: the clone returns in the child with one thread and the program the
// supervisor prepared (on amd64, where dropMemory allows, with little else
// of the supervisor's memory: see init_linux_amd64.go), and that thread
// must never enter the Go runtime again. The payoff is that a sandbox costs
// one Go process start, not two. So every function reachable from init's
// entry (initEntry on amd64; on arm64 the child's return from the clone in
// startInit, into program.initMain) lives by these rules, the way
// syscall.forkAndExecInChild does between fork and exec:
//
//   - //go:nosplit: no stack-growth check, since init's stack is not one
//     the runtime knows (on amd64 it is in the arena);
//   - //go:norace: no call into the race detector's runtime, in a -race
//     build (which also leaves out checkptr's checks);
//   - no package-level variable, read or written, of this package or
//     another: on amd64 init's copy of the binary's data and BSS is gone;
//   - no allocation: no make, new, append, copy, no slice or map literal,
//     no &T{}, no string concatenation or conversion, no interface value;
//   - no closure, method value, defer, go statement, channel, map, type
//     assertion or panic;
//   - no call into the runtime or another package: only these functions,
//     syscall.RawSyscall6, the builtins len, cap, min and max, unsafe's
//     Add, Sizeof, Offsetof and Alignof, and the assembly glue of the
//     init_unsafe files (every linkname and assembly declaration of the
//     package is there).
//
// A call into anything else finds no usable g, or one whose stack is not
// the one init runs on, and crashes init at once (the supervisor then
// reports the step init had reached: program.reach) instead of corrupting
// it. TestInitContract walks the code from the
// entries and enforces the rules; TestInitCallsNoRuntime disassembles
// stockade, as shipped and built with -race, and finds no call into the
// runtime in init but a bounds check's panic.
//
// Init starts with every signal blocked (runtime_BeforeFork blocks them
// around the clone) and keeps them blocked: it takes the ones it forwards,
// and SIGCHLD, from a signalfd. Blocked signals are queued even for the
// init of a PID namespace, which would otherwise drop them.

// atFDCWD is AT_FDCWD as a system call argument.
const atFDCWD = ^uintptr(99) // -100

//go:nosplit
//go:norace
func sys(trap, a1, a2, a3, a4, a5, a6 uintptr) (uintptr, syscall.Errno) {
	r, _, e := syscall.RawSyscall6(trap, a1, a2, a3, a4, a5, a6)
	return r, e
}

//go:nosplit
//go:norace
func ptr[T any](v *T) uintptr { return uintptr(unsafe.Pointer(v)) }

// fail reports a failed step to the supervisor and exits.
//
//go:nosplit
//go:norace
func (p *program) fail(step uint8, idx int, errno syscall.Errno, code int) {
	p.report[0] = 'E'
	p.report[1] = step
	p.report[2] = byte(idx)
	p.report[3] = byte(idx >> 8)
	p.report[4] = byte(errno)
	p.report[5] = byte(errno >> 8)
	p.report[6] = byte(code)
	sys(unix.SYS_WRITE, 3, ptr(&p.report[0]), uintptr(len(p.report)), 0, 0, 0)
	sys(unix.SYS_EXIT_GROUP, uintptr(code), 0, 0, 0, 0, 0)
}

// await reads the supervisor's next message and exits unless it is want.
//
//go:nosplit
//go:norace
func (p *program) await(want byte, step uint8) {
	for {
		n, e := sys(unix.SYS_READ, 3, ptr(&p.buf[0]), 1, 0, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 || n != 1 || p.buf[0] != want {
			p.fail(step, 0, e, ExitSetup)
		}
		return
	}
}

//go:nosplit
//go:norace
func (p *program) send(m *message) syscall.Errno {
	for {
		_, e := sys(unix.SYS_SENDMSG, 3, ptr(&m.hdr), 0, 0, 0, 0)
		if e != unix.EINTR {
			return e
		}
	}
}

// initMain is PID 1 of the sandbox: the enforcement order of docs/sandbox.md,
// then the command.
//
//go:nosplit
//go:norace
func (p *program) initMain() {
	p.reach(stepInit)
	// Into the cgroup first (placeIn), with the supervisor's descriptors,
	// which the moves below may replace: a failure is reported once the
	// sync socket is in place.
	failed, errno := -1, syscall.Errno(0)
	for i := 0; i < p.ntasks; i++ {
		if _, e := sys(unix.SYS_WRITE, uintptr(p.tasks[i]), ptr(&p.digitZero[0]), 1, 0, 0, 0); e != 0 {
			failed, errno = i, e
			break
		}
	}
	// No core dump of the supervisor's memory, even before dumpable is off.
	sys(unix.SYS_PRLIMIT64, 0, unix.RLIMIT_CORE, ptr(&p.coreOff), 0, 0, 0)
	sys(unix.SYS_SETSID, 0, 0, 0, 0, 0, 0)
	sys(unix.SYS_PRCTL, unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0, 0)
	// stdio and the sync socket to 0-3; everything else of the
	// supervisor's goes.
	for i := range p.fds {
		flags := uintptr(0)
		if i == 3 {
			flags = unix.O_CLOEXEC
		}
		if _, e := sys(unix.SYS_DUP3, uintptr(p.fds[i]), uintptr(i), flags, 0, 0, 0); e != 0 {
			sys(unix.SYS_EXIT_GROUP, ExitSetup, 0, 0, 0, 0, 0)
		}
	}
	sys(unix.SYS_CLOSE_RANGE, 4, ^uintptr(0), 0, 0, 0, 0)
	if failed >= 0 {
		p.fail(stepInit, idxTasks+failed, errno, ExitSetup)
	}
	p.rename()
	p.reach(stepHostname)
	if _, e := sys(unix.SYS_SETHOSTNAME, ptr(&p.hostname[0]), uintptr(len(p.hostname)), 0, 0, 0, 0); e != 0 {
		p.fail(stepHostname, 0, e, ExitSetup)
	}
	p.reach(stepNetwork)
	p.loopbackUp()
	if len(p.listeners) > 0 {
		p.listen()
	}
	p.reach(stepMaps)
	if len(p.idFiles) == 0 {
		// Spec.Engine: the supervisor writes them while init
		// is still dumpable.
		p.await(msgMapped, stepMaps)
	} else {
		p.mapIDs()
	}
	p.reach(stepCounters)
	p.lowerCounters()
	if _, e := sys(unix.SYS_PRCTL, unix.PR_SET_DUMPABLE, 0, 0, 0, 0, 0); e != 0 {
		p.fail(stepInit, 1, e, ExitSetup)
	}
	sys(unix.SYS_PRLIMIT64, 0, unix.RLIMIT_CORE, ptr(&p.coreOn), 0, 0, 0)
	p.reach(stepMount)
	p.mount()
	if p.tty {
		p.reach(stepTerminal)
		p.openPTY()
	}
	if p.engine {
		// The container engine joins the view from outside: it must
		// not before the view is whole.
		p.report[0] = msgBuilt
		if _, e := sys(unix.SYS_WRITE, 3, ptr(&p.report[0]), 1, 0, 0, 0); e != 0 {
			p.fail(stepPlaced, 0, e, ExitSetup)
		}
	}
	p.reach(stepPlaced)
	p.await(msgPlaced, stepPlaced)
	// Now in the sandbox's cgroup: a cgroup namespace made now is rooted there.
	p.reach(stepCgroupNS)
	if _, e := sys(unix.SYS_UNSHARE, unix.CLONE_NEWCGROUP, 0, 0, 0, 0, 0); e != 0 {
		p.fail(stepCgroupNS, 0, e, ExitSetup)
	}
	p.confine()
	p.reach(stepExec)
	cmd := p.start()
	p.supervise(cmd)
}

// reach records in the page init shares with the supervisor that init has
// reached step: if init dies without a report (a crash), the supervisor
// names the step in its error.
//
//go:nosplit
//go:norace
func (p *program) reach(step uint8) {
	*p.progress = step
	if p.dieAt == step+1 {
		p.die()
	}
}

// die ends init without a report, as a crash would: by a SIGSEGV, with
// the default action (the kernel unblocks a fault's signal, and kills
// even PID 1 when the action is the default), or by exiting. Only tests
// ask for it (testDeath).
//
//go:nosplit
//go:norace
func (p *program) die() {
	if p.dieBySignal {
		sys(unix.SYS_RT_SIGACTION, uintptr(unix.SIGSEGV), ptr(&p.sigDefault), 0, 8, 0, 0)
		*p.nowhere = 1
	}
	sys(unix.SYS_EXIT_GROUP, ExitSetup, 0, 0, 0, 0, 0)
}

// mapIDs maps the supervisor's uid and gid to themselves in the new user
// namespace: a process may write its own maps when they map only its own
// ids (user_namespaces(7)), so the supervisor need not wait for it.
//
//go:nosplit
//go:norace
func (p *program) mapIDs() { p.writeFiles(p.procSelf, p.idFiles, stepMaps) }

// lowerCounters sets the sandbox's own limits of the per-user counters
// (counters_linux.go), while init holds CAP_SYS_RESOURCE in its user
// namespace and /proc/sys is the host's, writable: after the mounts it is
// read-only. The kernel charges every count to the user's namespace too, so
// these bound what the sandbox can take of the user's quota.
//
//go:nosplit
//go:norace
func (p *program) lowerCounters() { p.writeFiles(p.userDir, p.limits, stepCounters) }

// writeFiles writes each file's data, one write each, and reports the
// first that fails as step. The files are names in dir, opened once: a
// lookup in /proc/sys compares every sysctl dentry of that name, one per
// user namespace alive, and a dozen lookups of the whole path were a tenth
// of init's time.
//
//go:nosplit
//go:norace
func (p *program) writeFiles(dir *byte, files []idFile, step uint8) {
	if len(files) == 0 {
		return
	}
	dirfd, e := sys(unix.SYS_OPENAT, atFDCWD, ptr(dir), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0, 0, 0)
	if e != 0 {
		p.fail(step, 0, e, ExitSetup)
	}
	for i := range files {
		f := &files[i]
		fd, e := sys(unix.SYS_OPENAT, dirfd, ptr(f.path), unix.O_WRONLY|unix.O_CLOEXEC, 0, 0, 0)
		if e == 0 {
			_, e = sys(unix.SYS_WRITE, fd, ptr(&f.data[0]), uintptr(len(f.data)), 0, 0, 0)
			sys(unix.SYS_CLOSE, fd, 0, 0, 0, 0, 0)
		}
		if e != 0 {
			p.fail(step, i, e, ExitSetup)
		}
	}
	sys(unix.SYS_CLOSE, dirfd, 0, 0, 0, 0, 0)
}

// rename makes PID 1 show as stockade-init, not as the supervisor's
// command line.
//
//go:nosplit
//go:norace
func (p *program) rename() {
	sys(unix.SYS_PRCTL, unix.PR_SET_NAME, ptr(p.name), 0, 0, 0, 0)
	if p.args == nil {
		return
	}
	const name = "stockade-init"
	for i := uintptr(0); i < p.argsLen; i++ {
		c := byte(0)
		if i < uintptr(len(name)) {
			c = name[i]
		}
		*(*byte)(unsafe.Add(p.args, i)) = c
	}
}

//go:nosplit
//go:norace
func (p *program) loopbackUp() {
	fd, e := sys(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0, 0, 0, 0)
	if e == 0 {
		if _, e = sys(unix.SYS_IOCTL, fd, unix.SIOCGIFFLAGS, ptr(&p.ifreq[0]), 0, 0, 0); e == 0 {
			flags := (*uint16)(unsafe.Pointer(&p.ifreq[unix.IFNAMSIZ]))
			*flags |= unix.IFF_UP | unix.IFF_RUNNING
			_, e = sys(unix.SYS_IOCTL, fd, unix.SIOCSIFFLAGS, ptr(&p.ifreq[0]), 0, 0, 0)
		}
		sys(unix.SYS_CLOSE, fd, 0, 0, 0, 0, 0)
	}
	if e != 0 {
		p.fail(stepNetwork, idxLoopback, e, ExitSetup)
	}
}

// listen creates the Listeners on lo and sends them to the supervisor; init
// keeps none of them.
//
//go:nosplit
//go:norace
func (p *program) listen() {
	m := p.listenMsg
	for i := range p.listeners {
		l := &p.listeners[i]
		fd, e := sys(unix.SYS_SOCKET, l.family, l.typ|unix.SOCK_CLOEXEC, 0, 0, 0, 0)
		if e != 0 {
			p.fail(stepNetwork, i, e, ExitSetup)
		}
		sys(unix.SYS_SETSOCKOPT, fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, ptr(&p.one), 4, 0)
		sa, salen := ptr(&l.addr), uintptr(unix.SizeofSockaddrInet4)
		if l.family == unix.AF_INET6 {
			sa, salen = ptr(&l.addr6), unix.SizeofSockaddrInet6
		}
		if l.family == unix.AF_INET6 {
			// Dual-stack whatever net.ipv6.bindv6only says: the
			// IPv4 capture rule redirects to it too.
			sys(unix.SYS_SETSOCKOPT, fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, ptr(&p.zero), 4, 0)
		}
		if _, e := sys(unix.SYS_BIND, fd, sa, salen, 0, 0, 0); e != 0 {
			p.fail(stepNetwork, i, e, ExitSetup)
		}
		if l.stream {
			if _, e := sys(unix.SYS_LISTEN, fd, 512, 0, 0, 0, 0); e != 0 {
				p.fail(stepNetwork, i, e, ExitSetup)
			}
		}
		*(*int32)(unsafe.Pointer(&m.control[m.dataOff+4*i])) = int32(fd)
	}
	n := len(p.listeners)
	if p.capture {
		// The capture's netlink sockets (none with a container engine:
		// see Spec.Engine in program.go), made here, where init may
		// change the namespace's rules and routes; the supervisor sends
		// on them (Sandbox.capture). One the kernel refuses leaves the
		// sandbox without capture, not without a start: its slot holds a
		// copy of the first listener, and what it was for and the errno
		// are in the shared page.
		for j := 0; j < captureSockets; j++ {
			proto := uintptr(capture.ProtoNetfilter)
			if j == 1 {
				proto = capture.ProtoRoute
			}
			fd, e := sys(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto, 0, 0, 0)
			if e != 0 {
				if p.captureOff[0] == 0 {
					// What the socket was for: the rules, then the route.
					p.captureOff[0], p.captureOff[1] = uint16(captureRules+j), uint16(e)
				}
				first := uintptr(*(*int32)(unsafe.Pointer(&m.control[m.dataOff])))
				if fd, e = sys(unix.SYS_FCNTL, first, unix.F_DUPFD_CLOEXEC, 0, 0, 0, 0); e != 0 {
					p.fail(stepNetwork, idxSendListeners, e, ExitSetup)
				}
			}
			*(*int32)(unsafe.Pointer(&m.control[m.dataOff+4*(n+j)])) = int32(fd)
		}
		n += captureSockets
	}
	if e := p.send(m); e != 0 {
		p.fail(stepNetwork, idxSendListeners, e, ExitSetup)
	}
	for i := 0; i < n; i++ {
		sys(unix.SYS_CLOSE, uintptr(*(*int32)(unsafe.Pointer(&m.control[m.dataOff+4*i]))), 0, 0, 0, 0, 0)
	}
}

// mount runs the mount steps: the new root, then pivot_root into it.
//
//go:nosplit
//go:norace
func (p *program) mount() {
	ready := false
	for i := 0; i < len(p.steps); i++ {
		if !ready && i >= p.readyAt {
			// The supervisor has made the placeholders the rest needs.
			p.await(msgReady, stepInit)
			ready = true
		}
		s := &p.steps[i]
		e := p.step(s)
		switch {
		case e == 0:
			i += s.skip
		case uintptr(e) < 64 && s.ok&(1<<uintptr(e)) != 0:
		default:
			p.fail(stepMount, i, e, ExitSetup)
		}
		if p.lastFD > fdsBeforeClose {
			p.closeStepFDs()
		}
	}
	if !ready {
		p.await(msgReady, stepInit)
	}
	if p.feedMsg != nil {
		p.sendFeed()
	}
	if p.storeMsg != nil {
		p.sendStore()
	}
	p.closeStepFDs()
}

// The descriptors the mount steps open (O_PATH, open_tree) are not closed
// one by one, a system call each, but all at once: when many are open, and
// after the last step. Init holds none above 3 but these while it mounts,
// and the Feed file's (CallKeep), which it sends after.
const fdsBeforeClose = 512

// The descriptor CallKeep opened is left open until it is sent (when it
// is 4, the first close_range is empty and fails, closing nothing).
//
//go:nosplit
//go:norace
func (p *program) closeStepFDs() {
	a, b := p.kept, p.tree
	if b > 0 && (a <= 0 || b < a) {
		a, b = b, a
	}
	from := uintptr(4)
	for _, k := range [2]int{a, b} {
		if k > 0 {
			sys(unix.SYS_CLOSE_RANGE, from, uintptr(k-1), 0, 0, 0, 0)
			from = uintptr(k + 1)
		}
	}
	sys(unix.SYS_CLOSE_RANGE, from, ^uintptr(0), 0, 0, 0, 0)
	p.lastFD = 0
}

// sendFeed sends the Feed file's descriptor to the supervisor, once the
// view is built, and leaves init's copy to the close_range after it: the
// supervisor holds the only writer from then on. Its file is in a tmpfs
// the staging root held, detached with it, so the sandbox has no path to
// it but the read-only bind.
//
//go:nosplit
//go:norace
func (p *program) sendFeed() {
	if p.kept <= 0 {
		p.fail(stepMount, len(p.steps), unix.EBADF, ExitSetup)
	}
	m := p.feedMsg
	*(*int32)(unsafe.Pointer(&m.control[m.dataOff])) = int32(p.kept)
	if e := p.send(m); e != 0 {
		p.fail(stepMount, len(p.steps), e, ExitSetup)
	}
	p.kept = 0
}

// sendStore sends the detached mount of the plan's Store
// (mount.CallKeepTree) to the supervisor, as sendFeed sends the Feed file.
//
//go:nosplit
//go:norace
func (p *program) sendStore() {
	if p.tree <= 0 {
		p.fail(stepMount, len(p.steps)+1, unix.EBADF, ExitSetup)
	}
	m := p.storeMsg
	*(*int32)(unsafe.Pointer(&m.control[m.dataOff])) = int32(p.tree)
	if e := p.send(m); e != 0 {
		p.fail(stepMount, len(p.steps)+1, e, ExitSetup)
	}
	p.tree = 0
}

//go:nosplit
//go:norace
func (p *program) opened(fd uintptr) {
	if int(fd) > p.lastFD {
		p.lastFD = int(fd)
	}
}

//go:nosplit
//go:norace
func (p *program) step(s *rawStep) syscall.Errno {
	path := ptr(s.path)
	switch s.call {
	case mount.CallMount:
		_, e := sys(unix.SYS_MOUNT, ptr(s.source), path, ptr(s.fstype), s.flags, ptr(s.data), 0)
		return e
	case mount.CallSetattr:
		_, e := sys(unix.SYS_MOUNT_SETATTR, atFDCWD, path, s.flags, ptr(&s.attr), unsafe.Sizeof(s.attr), 0)
		return e
	case mount.CallBindAt:
		return p.bindAt(s)
	case mount.CallKeepTree:
		return p.keepTree(s)
	case mount.CallMaskAt:
		tree, e := sys(unix.SYS_OPEN_TREE, atFDCWD, ptr(s.source), unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC, 0, 0, 0)
		if e != 0 {
			return e
		}
		p.opened(tree)
		return p.moveOnto(tree, s)
	}
	if s.strict {
		return p.stepStrict(s)
	}
	switch s.call {
	case mount.CallMkdir:
		_, e := sys(unix.SYS_MKDIRAT, atFDCWD, path, uintptr(s.mode), 0, 0, 0)
		return e
	case mount.CallTouch:
		fd, e := sys(unix.SYS_OPENAT, atFDCWD, path, unix.O_WRONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o644, 0, 0)
		if e == 0 {
			sys(unix.SYS_CLOSE, fd, 0, 0, 0, 0, 0)
		}
		return e
	case mount.CallWrite:
		fd, e := sys(unix.SYS_OPENAT, atFDCWD, path, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, uintptr(s.mode), 0, 0)
		if e != 0 {
			return e
		}
		for off := 0; off < s.dataLen && e == 0; {
			var n uintptr
			n, e = sys(unix.SYS_WRITE, fd, ptr(s.data)+uintptr(off), uintptr(s.dataLen-off), 0, 0, 0)
			off += int(n)
		}
		sys(unix.SYS_CLOSE, fd, 0, 0, 0, 0, 0)
		return e
	case mount.CallKeep:
		// The staging tmpfs is init's own and fresh: O_EXCL and
		// O_NOFOLLOW only say so.
		fd, e := sys(unix.SYS_OPENAT, atFDCWD, path, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uintptr(s.mode), 0, 0)
		if e == 0 {
			p.kept = int(fd)
		}
		return e
	case mount.CallSymlink:
		_, e := sys(unix.SYS_SYMLINKAT, ptr(s.source), atFDCWD, path, 0, 0, 0)
		return e
	case mount.CallChmod:
		_, e := sys(unix.SYS_FCHMODAT, atFDCWD, path, uintptr(s.mode), 0, 0, 0)
		return e
	case mount.CallLstat:
		_, e := sys(sysFstatat, atFDCWD, path, ptr(&p.st), unix.AT_SYMLINK_NOFOLLOW, 0, 0)
		return e
	case mount.CallPivot:
		_, e := sys(unix.SYS_PIVOT_ROOT, path, ptr(s.source), 0, 0, 0, 0)
		return e
	case mount.CallChdir:
		_, e := sys(unix.SYS_CHDIR, path, 0, 0, 0, 0, 0)
		return e
	case mount.CallUmount:
		_, e := sys(unix.SYS_UMOUNT2, path, unix.MNT_DETACH, 0, 0, 0, 0)
		return e
	}
	return unix.EINVAL
}

// strictResolve: no symlink in any component, magic links included. The
// plan holds canonical paths, so a symlink met here was planted after the
// plan was made, in a tree the sandbox can write, and the step fails.
const strictResolve = unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// openStrict opens path (absolute) with flags and strictResolve.
//
//go:nosplit
//go:norace
func (p *program) openStrict(path *byte, flags uint64) (uintptr, syscall.Errno) {
	p.how.Flags = flags | unix.O_CLOEXEC
	p.how.Mode = 0
	p.how.Resolve = strictResolve
	for {
		fd, e := sys(unix.SYS_OPENAT2, atFDCWD, ptr(path), ptr(&p.how), unsafe.Sizeof(p.how), 0, 0)
		if e != unix.EAGAIN && e != unix.EINTR {
			return fd, e
		}
	}
}

// stepStrict runs a Strict mkdir, touch or lstat: on the last component of
// the path, in its directory opened with strictResolve.
//
//go:nosplit
//go:norace
func (p *program) stepStrict(s *rawStep) syscall.Errno {
	dir, e := p.openStrict(s.dir, unix.O_PATH|unix.O_DIRECTORY)
	if e != 0 {
		return e
	}
	p.opened(dir)
	switch s.call {
	case mount.CallMkdir:
		_, e = sys(unix.SYS_MKDIRAT, dir, ptr(s.name), uintptr(s.mode), 0, 0, 0)
	case mount.CallTouch:
		var fd uintptr
		fd, e = sys(unix.SYS_OPENAT, dir, ptr(s.name), unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o644, 0, 0)
		if e == 0 {
			sys(unix.SYS_CLOSE, fd, 0, 0, 0, 0, 0)
		}
	case mount.CallLstat:
		_, e = sys(sysFstatat, dir, ptr(s.name), ptr(&p.st), unix.AT_SYMLINK_NOFOLLOW, 0, 0)
	default:
		e = unix.EINVAL
	}
	return e
}

// bindAt carries out a CallBindAt: the source opened strictly (a symlink
// as its last component is taken itself), checked, cloned with its
// attributes set while detached, and moved onto the target.
//
//go:nosplit
//go:norace
func (p *program) bindAt(s *rawStep) syscall.Errno {
	// A protected path bound onto itself (CheckSame) is opened once, in
	// the new root, and cloned from there: the source is the target
	// itself by construction.
	path := s.source
	if s.check&mount.CheckSame != 0 {
		path = s.path
	}
	src, e := p.openStrict(path, unix.O_PATH|unix.O_NOFOLLOW)
	if e != 0 {
		return e
	}
	p.opened(src)
	// The source must be what the plan saw: a directory, a symlink, or
	// neither. A symlink opened with O_NOFOLLOW is the link itself, so a
	// link swapped in for a directory would otherwise be bound in its
	// place.
	if _, e = sys(unix.SYS_FSTAT, src, ptr(&p.st), 0, 0, 0, 0); e == 0 {
		typ := p.st.Mode & unix.S_IFMT
		switch {
		case s.mode == mount.WantOther && (typ == unix.S_IFDIR || typ == unix.S_IFLNK),
			s.mode != mount.WantOther && s.mode != 0 && typ != s.mode:
			e = unix.ESTALE
		case s.check&mount.CheckOneLink != 0 && typ == unix.S_IFREG && p.st.Nlink > 1:
			e = unix.EMLINK
		}
	}
	if e != 0 {
		return e
	}
	flags := uintptr(unix.AT_EMPTY_PATH | unix.OPEN_TREE_CLONE | unix.OPEN_TREE_CLOEXEC)
	if s.flags&unix.AT_RECURSIVE != 0 {
		flags |= unix.AT_RECURSIVE
	}
	tree, e := sys(unix.SYS_OPEN_TREE, src, ptr(&p.zero), flags, 0, 0, 0)
	if e != 0 {
		return e
	}
	p.opened(tree)
	_, e = sys(unix.SYS_MOUNT_SETATTR, tree, ptr(&p.zero), unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, ptr(&s.attr), unsafe.Sizeof(s.attr), 0)
	if e != 0 {
		return e
	}
	if s.check&mount.CheckSame != 0 {
		_, e = sys(unix.SYS_MOVE_MOUNT, tree, ptr(&p.zero), src, ptr(&p.zero), unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH, 0)
		return e
	}
	return p.moveOnto(tree, s)
}

// keepTree carries out a CallKeepTree: the source opened strictly, a
// directory, cloned with its attributes set while detached, and kept for
// sendStore. The clone is never mounted in this namespace.
//
//go:nosplit
//go:norace
func (p *program) keepTree(s *rawStep) syscall.Errno {
	src, e := p.openStrict(s.source, unix.O_PATH|unix.O_NOFOLLOW|unix.O_DIRECTORY)
	if e != 0 {
		return e
	}
	p.opened(src)
	// The directory the supervisor locked, not one put in its place.
	if s.ino != 0 {
		if _, e = sys(unix.SYS_FSTAT, src, ptr(&p.st), 0, 0, 0, 0); e != 0 {
			return e
		}
		if p.st.Dev != s.dev || p.st.Ino != s.ino {
			return unix.ESTALE
		}
	}
	flags := uintptr(unix.AT_EMPTY_PATH | unix.OPEN_TREE_CLONE | unix.OPEN_TREE_CLOEXEC | unix.AT_RECURSIVE)
	tree, e := sys(unix.SYS_OPEN_TREE, src, ptr(&p.zero), flags, 0, 0, 0)
	if e != 0 {
		return e
	}
	// Not opened(): closeStepFDs spares it until it is sent.
	p.tree = int(tree)
	_, e = sys(unix.SYS_MOUNT_SETATTR, tree, ptr(&p.zero), unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, ptr(&s.attr), unsafe.Sizeof(s.attr), 0)
	return e
}

// moveOnto moves the detached mount tree onto the step's path, opened
// strictly.
//
//go:nosplit
//go:norace
func (p *program) moveOnto(tree uintptr, s *rawStep) syscall.Errno {
	dst, e := p.openStrict(s.path, unix.O_PATH|unix.O_NOFOLLOW)
	if e != 0 {
		return e
	}
	p.opened(dst)
	_, e = sys(unix.SYS_MOVE_MOUNT, tree, ptr(&p.zero), dst, ptr(&p.zero), unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH, 0)
	return e
}

// openPTY opens a pseudo-terminal in the sandbox's own devpts and sends its
// master to the supervisor; the slave becomes the command's stdio. The
// user's terminal never enters the sandbox.
//
//go:nosplit
//go:norace
func (p *program) openPTY() {
	master, e := sys(unix.SYS_OPENAT, atFDCWD, ptr(p.ptmx), unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0, 0, 0)
	if e != 0 {
		p.fail(stepTerminal, 0, e, ExitSetup)
	}
	if _, e := sys(unix.SYS_IOCTL, master, unix.TIOCSPTLCK, ptr(&p.zero), 0, 0, 0); e != 0 {
		p.fail(stepTerminal, 1, e, ExitSetup)
	}
	// TIOCGPTPEER opens the slave through the master, not by path: nothing
	// can swap the device node in between.
	slave, e := sys(unix.SYS_IOCTL, master, unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0, 0, 0)
	if e != 0 {
		p.fail(stepTerminal, 2, e, ExitSetup)
	}
	m := p.ptyMsg
	*(*int32)(unsafe.Pointer(&m.control[m.dataOff])) = int32(master)
	if e := p.send(m); e != 0 {
		p.fail(stepTerminal, 3, e, ExitSetup)
	}
	sys(unix.SYS_CLOSE, master, 0, 0, 0, 0, 0)
	p.slave = int(slave)
}

// confine applies steps 6 to 10 of the enforcement order (docs/sandbox.md) to init itself; the command
// inherits them all across fork and execve, and PID 1 is never more
// powerful than what it supervises.
//
//go:nosplit
//go:norace
func (p *program) confine() {
	p.reach(stepChdir)
	if _, e := sys(unix.SYS_CHDIR, ptr(p.cwd), 0, 0, 0, 0, 0); e != 0 {
		p.fail(stepChdir, 0, e, ExitSetup)
	}
	if p.nproc != nil {
		p.reach(stepPids)
		if _, e := sys(unix.SYS_PRLIMIT64, 0, unix.RLIMIT_NPROC, ptr(p.nproc), 0, 0, 0); e != 0 {
			p.fail(stepPids, 0, e, ExitSetup)
		}
	}
	// 4. no_new_privs: Landlock and seccomp need it, and it makes setuid
	// bits and file capabilities inert from here on.
	p.reach(stepNNP)
	if _, e := sys(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0); e != 0 {
		p.fail(stepNNP, 0, e, ExitSetup)
	}
	// 5. Landlock.
	p.reach(stepLandlock)
	p.landlock()
	// 6. File descriptors: init holds only 0-3 (the sync socket is
	// close-on-exec) and, with a terminal, the pty slave (close-on-exec;
	// the command gets it as 0-2).
	// 7. Capabilities: lock the secure bits, empty the bounding set and
	// every capability set.
	p.reach(stepCaps)
	if _, e := sys(unix.SYS_PRCTL, unix.PR_SET_SECUREBITS, caps.SecureBits, 0, 0, 0, 0); e != 0 {
		p.fail(stepCaps, 0, e, ExitSetup)
	}
	for c := 0; c <= p.last; c++ {
		if _, e := sys(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0, 0); e != 0 && e != unix.EINVAL {
			p.fail(stepCaps, 1, e, ExitSetup)
		}
	}
	if _, e := sys(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0, 0); e != 0 && e != unix.EINVAL {
		p.fail(stepCaps, 2, e, ExitSetup)
	}
	if _, e := sys(unix.SYS_CAPSET, ptr(&p.capHdr), ptr(&p.capSet[0]), 0, 0, 0, 0); e != 0 {
		p.fail(stepCaps, 3, e, ExitSetup)
	}
	// 8. seccomp, last. Init has one thread: no TSYNC needed.
	p.reach(stepSeccomp)
	if _, e := sys(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, ptr(&p.filter), 0, 0, 0); e != 0 {
		p.fail(stepSeccomp, 0, e, ExitSetup)
	}
}

//go:nosplit
//go:norace
func (p *program) landlock() {
	rs, e := sys(unix.SYS_LANDLOCK_CREATE_RULESET, ptr(&p.attr), landlock.RulesetAttrSize, 0, 0, 0, 0)
	if e != 0 {
		p.fail(stepLandlock, -1, e, ExitSetup)
	}
	for i := range p.rules {
		r := &p.rules[i]
		fd, e := sys(unix.SYS_OPENAT, atFDCWD, ptr(r.path), unix.O_PATH|unix.O_CLOEXEC, 0, 0, 0)
		if e != 0 {
			p.fail(stepLandlock, i, e, ExitSetup)
		}
		if _, e := sys(unix.SYS_FSTAT, fd, ptr(&p.st), 0, 0, 0, 0); e != 0 {
			p.fail(stepLandlock, i, e, ExitSetup)
		}
		p.beneath.Allowed = r.access
		p.beneath.Fd = int32(fd)
		if p.st.Mode&unix.S_IFMT != unix.S_IFDIR {
			p.beneath.Allowed &= landlock.AccessFile
		}
		if p.beneath.Allowed != 0 {
			if _, e := sys(unix.SYS_LANDLOCK_ADD_RULE, rs, landlock.RulePathBeneath, ptr(&p.beneath), 0, 0, 0); e != 0 {
				p.fail(stepLandlock, i, e, ExitSetup)
			}
		}
		sys(unix.SYS_CLOSE, fd, 0, 0, 0, 0, 0)
	}
	if _, e := sys(unix.SYS_LANDLOCK_RESTRICT_SELF, rs, 0, 0, 0, 0, 0); e != 0 {
		p.fail(stepLandlock, -1, e, ExitSetup)
	}
	sys(unix.SYS_CLOSE, rs, 0, 0, 0, 0, 0)
}

// start executes the command in a child and returns its pid once its
// execve has worked; if it has not, init reports why and exits.
//
//go:nosplit
//go:norace
func (p *program) start() uintptr {
	sfd, e := sys(unix.SYS_SIGNALFD4, ^uintptr(0), ptr(&p.sigset), 8, unix.SFD_CLOEXEC, 0, 0)
	if e != 0 {
		p.fail(stepInit, 2, e, ExitSetup)
	}
	p.poll[0] = unix.PollFd{Fd: int32(sfd), Events: unix.POLLIN}
	p.poll[1] = unix.PollFd{Fd: 3, Events: unix.POLLIN}
	p.result = [2]int32{}
	pid := p.spawn()
	if p.result[1] != 0 {
		code := ExitNotExec
		if p.result[1] == int32(unix.ENOENT) || p.result[1] == int32(unix.ENOTDIR) {
			code = ExitNotFound
		}
		if pid != 0 {
			sys(unix.SYS_WAIT4, pid, 0, 0, 0, 0, 0)
		}
		p.fail(stepExec, int(p.result[0]), syscall.Errno(p.result[1]), code)
	}
	// Init needs no file from here on: a nested Landlock layer takes the
	// command's filesystem rights away from init itself, before it reports
	// the start, so that the supervisor sees init in its final state (no
	// ruleset descriptor open any more).
	if rs, e := sys(unix.SYS_LANDLOCK_CREATE_RULESET, ptr(&p.nested), landlock.RulesetAttrSize, 0, 0, 0, 0); e == 0 {
		sys(unix.SYS_LANDLOCK_RESTRICT_SELF, rs, 0, 0, 0, 0, 0)
		sys(unix.SYS_CLOSE, rs, 0, 0, 0, 0, 0)
	}
	p.buf[0] = msgStarted
	sys(unix.SYS_WRITE, 3, ptr(&p.buf[0]), 1, 0, 0, 0)
	return pid
}

// spawn starts the command with vfork: the child shares init's memory
// until its execve, so nothing is copied and nothing torn down, and it
// leaves its failure in p.result, where init reads it once it resumes.
// Init does nothing here after the vfork but return: the child has run on
// this very stack.
//
//go:nosplit
//go:noinline
//go:norace
func (p *program) spawn() uintptr {
	pid, e := vfork()
	if e != 0 {
		p.result = [2]int32{-1, int32(e)}
		return 0
	}
	if pid == 0 {
		p.command()
	}
	return pid
}

// command is the vforked child that becomes the command: its own session,
// the terminal as its stdio, default signal handling, then execve along the
// candidates as execvp(3) does. On failure it leaves the candidate and the
// errno in p.result, which init shares until then.
//
//go:nosplit
//go:norace
func (p *program) command() {
	// Default handlers where the supervisor had its own, and nothing
	// blocked: what execve would leave of the supervisor's, and what
	// runtime_AfterForkInChild would do (which needs the Go runtime's
	// memory, gone from init).
	for sig := uintptr(1); sig <= 64; sig++ {
		if p.resetSigs&(1<<(sig-1)) != 0 {
			sys(unix.SYS_RT_SIGACTION, sig, ptr(&p.sigDefault), 0, 8, 0, 0)
		}
	}
	sys(unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, ptr(&p.noSignals), 0, 8, 0, 0)
	sys(unix.SYS_SETSID, 0, 0, 0, 0, 0, 0)
	if p.slave >= 0 {
		sys(unix.SYS_IOCTL, uintptr(p.slave), unix.TIOCSCTTY, 0, 0, 0, 0)
		for fd := uintptr(0); fd < 3; fd++ {
			sys(unix.SYS_DUP3, uintptr(p.slave), fd, 0, 0, 0, 0)
		}
	}
	denied := -1
	for i := range p.cands {
		_, e := sys(unix.SYS_EXECVE, ptr(p.cands[i]), ptr(&p.argv[0]), ptr(&p.envv[0]), 0, 0, 0)
		switch e {
		case unix.ENOENT, unix.ENOTDIR:
			continue
		case unix.EACCES:
			if denied < 0 {
				denied = i
			}
			continue
		}
		p.result = [2]int32{int32(i), int32(e)}
		sys(unix.SYS_EXIT_GROUP, ExitNotExec, 0, 0, 0, 0, 0)
	}
	p.result = [2]int32{0, int32(unix.ENOENT)}
	if denied >= 0 {
		p.result = [2]int32{int32(denied), int32(unix.EACCES)}
	}
	sys(unix.SYS_EXIT_GROUP, ExitNotFound, 0, 0, 0, 0, 0)
}

// supervise forwards signals to the command and reaps every child until the
// command is gone; then it kills and reaps the rest, says so, and exits
// with the command's status. The kernel kills whatever is left in the PID
// namespace with PID 1.
//
//go:nosplit
//go:norace
func (p *program) supervise(cmd uintptr) {
	code := ExitSetup
	for {
		// Reap before waiting: the command may have exited already.
		done := false
		for {
			pid, e := sys(unix.SYS_WAIT4, ^uintptr(0), ptr(&p.status), unix.WNOHANG, 0, 0, 0)
			if e != 0 || pid == 0 {
				break
			}
			if pid == cmd {
				code = exitCode(p.status)
				done = true
			}
		}
		if done {
			break
		}
		if _, e := sys(unix.SYS_PPOLL, ptr(&p.poll[0]), 2, 0, 0, 0, 0); e != 0 {
			continue
		}
		if p.poll[1].Revents != 0 {
			// The supervisor sends nothing after "placed": this is its end.
			break
		}
		if p.poll[0].Revents != 0 {
			if n, _ := sys(unix.SYS_READ, uintptr(p.poll[0].Fd), ptr(&p.buf[0]), uintptr(len(p.buf)), 0, 0, 0); n == uintptr(len(p.buf)) {
				sig := *(*uint32)(unsafe.Pointer(&p.buf[0]))
				if sig != uint32(unix.SIGCHLD) {
					sys(unix.SYS_KILL, cmd, uintptr(sig), 0, 0, 0, 0)
				}
			}
		}
	}
	// Quiesce: after this nothing inside can act, so the supervisor may
	// start its cleanup while the kernel tears the namespaces down.
	sys(unix.SYS_KILL, ^uintptr(0), uintptr(unix.SIGKILL), 0, 0, 0, 0)
	for {
		if _, e := sys(unix.SYS_WAIT4, ^uintptr(0), 0, 0, 0, 0, 0); e == unix.ECHILD || (e != 0 && e != unix.EINTR) {
			break
		}
	}
	p.buf[0], p.buf[1] = msgQuiet, byte(code)
	sys(unix.SYS_WRITE, 3, ptr(&p.buf[0]), 2, 0, 0, 0)
	sys(unix.SYS_EXIT_GROUP, uintptr(code), 0, 0, 0, 0, 0)
}

//go:nosplit
//go:norace
func exitCode(status int32) int {
	if sig := status & 0x7f; sig != 0 && sig != 0x7f {
		return ExitSignalBase + int(sig)
	}
	return int(status>>8) & 0xff
}
