//go:build linux

package sandbox

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/caps"
	"github.com/stockade-dev/stockade/internal/landlock"
	"github.com/stockade-dev/stockade/internal/mount"
	"github.com/stockade-dev/stockade/internal/seccomp"
)

// program is everything init does, prepared by the supervisor as plain
// memory before the clone: C strings, syscall argument structs, message
// headers, all in one arena. Init is a fork of the supervisor that never
// returns to the Go runtime (see child_linux.go); it reads this, and writes
// only into the scratch fields at the end, never a pointer.
type program struct {
	fds [4]int32 // stdin, stdout, stderr, sync in the supervisor; 0-3 in init
	// tasks are the supervisor's descriptors of cgroup v1 tasks files
	// (Options.Placer), ntasks of them, to each of which init writes
	// digitZero, moving itself, before anything else.
	tasks     [maxTasks]int32
	ntasks    int
	digitZero [1]byte
	coreOff   unix.Rlimit
	coreOn    unix.Rlimit
	args      unsafe.Pointer // the supervisor's argv and environment, wiped in init
	argsLen   uintptr
	name      *byte
	hostname  []byte
	procSelf  *byte // "/proc/self", where idFiles are
	idFiles   []idFile
	userDir   *byte    // userCounterDir, where limits are
	limits    []idFile // /proc/sys/user counters and their values (counters_linux.go)
	ifreq     [40]byte // struct ifreq for lo

	listeners []listener
	listenMsg *message
	// capture: init sends, after the listeners, a netlink socket of
	// each protocol of capture (captureProtos), made in the sandbox's
	// network namespace while init holds its capabilities there; the
	// supervisor sends the capture rules and route on them beside init's
	// mounts (Sandbox.capture). captureOff is a word of the shared page
	// where init leaves the errno of a socket it could not make.
	capture    bool
	captureOff *[2]uint16

	steps []rawStep
	// readyAt is the first step of a mount over a placeholder (or
	// len(steps)): init waits there for the supervisor's word that the
	// placeholders exist, and makes every mount before it meanwhile.
	readyAt int

	// feedMsg carries the Feed file's descriptor (mount.CallKeep), nil
	// without one.
	feedMsg *message
	// storeMsg carries the detached mount of Plan.Store
	// (mount.CallKeepTree), nil without one.
	storeMsg *message

	tty    bool
	engine bool // Spec.Engine: say msgBuilt once the view is built
	ptmx   *byte
	ptyMsg *message

	cwd    *byte
	nproc  *unix.Rlimit
	rules  []rawRule
	attr   landlock.RulesetAttr
	nested landlock.RulesetAttr
	last   int // last capability
	capHdr unix.CapUserHeader
	capSet [2]unix.CapUserData
	filter unix.SockFprog
	sigset uint64 // what init takes through its signalfd
	// resetSigs are the signals the supervisor handles, whose handlers
	// the command's child resets to sigDefault before its execve.
	resetSigs  uint64
	sigDefault [4]uintptr // struct sigaction for SIG_DFL
	noSignals  uint64

	argv  []*byte // nil-terminated
	envv  []*byte
	cands []*byte // where the command may be, in PATH order

	// progress is a byte of a page init shares with the supervisor: the
	// step init has reached (reach), which names the step if init dies
	// without a report.
	progress *uint8
	// dieAt, when not 0, has init die at step dieAt-1 without a report:
	// by a SIGSEGV when dieBySignal, else by exiting (a test's hook:
	// testDeath).
	dieAt       uint8
	dieBySignal bool
	nowhere     *byte // nil: what init faults on to die by SIGSEGV

	stack uintptr    // the top of init's stack, in the arena
	tls   [2]uintptr // init's thread pointer points here (see cloneInit)

	// Scratch, written by init in its own copy.
	st      unix.Stat_t
	how     unix.OpenHow
	lastFD  int // the highest descriptor a mount step opened (closeStepFDs)
	kept    int // the descriptor mount.CallKeep opened, until it is sent; 0: none
	tree    int // the descriptor mount.CallKeepTree opened, until it is sent; 0: none
	beneath landlock.PathBeneathAttr
	report  [16]byte
	buf     [128]byte
	one     int32
	zero    int32
	result  [2]int32 // exec failure: candidate, errno (written by the vforked child)
	status  int32
	poll    [2]unix.PollFd
	slave   int
}

type idFile struct {
	path *byte
	data []byte
}

type listener struct {
	typ    uintptr
	family uintptr
	addr   unix.RawSockaddrInet4
	addr6  unix.RawSockaddrInet6
	stream bool
}

// What of the capture setup failed, in program.captureOff.
const (
	captureRules = 1
	captureRoute = 2
)

// captureSockets is how many netlink sockets init sends after the
// listeners for the capture: capture.ProtoNetfilter's, for the rules, then
// capture.ProtoRoute's, for the route.
const captureSockets = 2

// message is a one-byte message with room for n descriptors.
type message struct {
	hdr     unix.Msghdr
	iov     unix.Iovec
	typ     byte
	control []byte
	dataOff int
}

func newMessage(a *arena, typ byte, n int) *message {
	m := take[message](a)
	m.typ = typ
	rights := unix.UnixRights(make([]int, n)...)
	m.control = takeSlice[byte](a, len(rights))
	copy(m.control, rights)
	m.dataOff = unix.CmsgLen(0)
	m.iov.Base = &m.typ
	m.iov.SetLen(1)
	m.hdr.Iov = &m.iov
	m.hdr.Iovlen = 1
	m.hdr.Control = &m.control[0]
	m.hdr.SetControllen(len(m.control))
	return m
}

type rawStep struct {
	call    mount.Call
	ok      uint64
	skip    int
	path    *byte
	source  *byte
	fstype  *byte
	data    *byte
	dataLen int
	flags   uintptr
	mode    uint32
	attr    unix.MountAttr
	strict  bool
	check   uint8
	dir     *byte // Strict: the directory of path, and its last component
	name    *byte
	dev     uint64 // mount.Step Dev and Ino
	ino     uint64
}

type rawRule struct {
	path   *byte
	access uint64
}

// Steps of init, for its error reports.
const (
	stepInit uint8 = iota
	stepMaps
	stepCounters
	stepHostname
	stepNetwork
	stepMount
	stepTerminal
	stepPlaced
	stepCgroupNS
	stepChdir
	stepPids
	stepNNP
	stepLandlock
	stepCaps
	stepSeccomp
	stepExec
)

var stepNames = [...]string{
	stepInit: "init", stepMaps: "user namespace", stepCounters: "user limits", stepHostname: "hostname", stepNetwork: "network", stepMount: "mount",
	stepTerminal: "terminal", stepPlaced: "cgroup", stepCgroupNS: "cgroup namespace",
	stepChdir: "chdir", stepPids: "pids limit", stepNNP: "no_new_privs", stepLandlock: "landlock",
	stepCaps: "caps", stepSeccomp: "seccomp", stepExec: "exec",
}

// stepName is step's name, or "init" for one init does not have.
func stepName(step uint8) string {
	if int(step) < len(stepNames) {
		return stepNames[step]
	}
	return "init"
}

// build prepares the program for spec. Its errors are the supervisor's:
// nothing has been started yet.
func build(spec Spec, steps []mount.Step, fds [4]int) (*program, *arena, error) {
	x := spec.Exec
	if len(x.Argv) == 0 {
		return nil, nil, &StepError{Step: "exec", Msg: "no command", Code: ExitSetup}
	}
	for _, ss := range [][]string{x.Argv, x.Env} {
		for _, s := range ss {
			if strings.IndexByte(s, 0) >= 0 {
				return nil, nil, fmt.Errorf("the command line or environment holds a NUL byte: %q", s)
			}
		}
	}
	host, err := hostFacts()
	if err != nil {
		return nil, nil, err
	}
	cands := candidates(x.Argv[0], x.Env)
	rs := landlock.Compile(x.Landlock, host.abi)
	a, err := newArena(arenaSize(spec, steps, rs, cands, len(host.filter)))
	if err != nil {
		return nil, nil, err
	}
	p := take[program](a)
	p.one, p.slave = 1, -1
	p.progress = &a.shared[0]
	p.dieAt, p.dieBySignal = testDeath.at, testDeath.bySignal
	for i, fd := range fds {
		p.fds[i] = int32(fd)
	}
	if err := unix.Getrlimit(unix.RLIMIT_CORE, &p.coreOn); err != nil {
		a.free()
		return nil, nil, os.NewSyscallError("getrlimit", err)
	}
	p.coreOff = unix.Rlimit{Cur: 0, Max: p.coreOn.Max}
	p.args, p.argsLen = argvOnce()
	p.name = a.cstr("stockade-init")
	p.hostname = a.bytes(spec.Hostname)
	uid, gid := os.Getuid(), os.Getgid()
	maps := []struct{ file, data string }{
		{"uid_map", fmt.Sprintf("%d %d 1\n", uid, uid)},
		{"setgroups", "deny"},
		{"gid_map", fmt.Sprintf("%d %d 1\n", gid, gid)},
	}
	if spec.Engine {
		maps = nil
	}
	p.procSelf = a.cstr("/proc/self")
	p.idFiles = takeSlice[idFile](a, len(maps))
	for i, f := range maps {
		p.idFiles[i] = idFile{path: a.cstr(f.file), data: a.bytes(f.data)}
	}
	p.userDir = a.cstr(userCounterDir)
	p.limits = takeSlice[idFile](a, len(host.counters))
	for i, l := range host.counters {
		v := l.value
		if spec.Engine {
			v = l.engine
		}
		p.limits[i] = idFile{path: a.cstr(strings.TrimPrefix(l.path, userCounterDir)), data: a.bytes(strconv.FormatInt(v, 10))}
	}
	copy(p.ifreq[:], "lo")

	if spec.Listen {
		p.listeners = takeSlice[listener](a, listenerCount(spec))
		for i, l := range Listeners[:listenerCount(spec)] {
			ap, err := netip.ParseAddrPort(l.Addr)
			if err != nil {
				a.free()
				return nil, nil, fmt.Errorf("listen address %q is not an ip:port", l.Addr)
			}
			rl := &p.listeners[i]
			rl.typ, rl.stream = unix.SOCK_STREAM, true
			if l.Network == "udp" {
				rl.typ, rl.stream = unix.SOCK_DGRAM, false
			}
			// The capture listener on loopback alone where the kernel has
			// no IPv6, and with a container engine, which gets no capture
			// rules: on [::] its containers would reach it through the
			// pods' address on lo (sandboxnet.PodHost).
			if ap.Addr().Is6() && (!host.ipv6 || spec.Engine) {
				ap = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), ap.Port())
			}
			port := [2]byte{byte(ap.Port() >> 8), byte(ap.Port())} // network order
			if ap.Addr().Is4() {
				rl.family = unix.AF_INET
				rl.addr.Family = unix.AF_INET
				rl.addr.Addr = ap.Addr().As4()
				*(*[2]byte)(unsafe.Pointer(&rl.addr.Port)) = port
			} else {
				rl.family = unix.AF_INET6
				rl.addr6.Family = unix.AF_INET6
				rl.addr6.Addr = ap.Addr().As16()
				*(*[2]byte)(unsafe.Pointer(&rl.addr6.Port)) = port
			}
		}
		// No capture with a container engine: its containers' slirp4netns
		// connects from this network namespace, and a container's direct
		// connection would be captured and decided by the agent's rules,
		// not the pods' (docs/egress.md, Transparent capture). The pods'
		// proxies are the containers' only way out, as before.
		p.capture = !spec.Engine
		p.captureOff = (*[2]uint16)(unsafe.Pointer(&a.shared[4]))
		n := len(p.listeners)
		if p.capture {
			n += captureSockets
		}
		p.listenMsg = newMessage(a, msgListeners, n)
	}

	p.steps = takeSlice[rawStep](a, len(steps))
	p.readyAt = readyAt(spec.Plan, steps)
	for i, s := range steps {
		r := &p.steps[i]
		r.call, r.ok, r.skip, r.flags, r.mode = s.Call, s.Ok, s.Skip, s.Flags, s.Mode
		r.attr.Attr_set = s.Attr
		r.path = a.cstr(s.Path)
		if s.Source != "" {
			r.source = a.cstr(s.Source)
		}
		if s.FSType != "" {
			r.fstype = a.cstr(s.FSType)
		}
		if s.Data != "" {
			r.data, r.dataLen = a.cstr(s.Data), len(s.Data)
		}
		r.strict, r.check = s.Strict, s.Check
		r.dev, r.ino = s.Dev, s.Ino
		if s.Strict {
			r.dir, r.name = a.cstr(path.Dir(s.Path)), a.cstr(path.Base(s.Path))
		}
	}

	if _, ok := spec.Plan.Feed(); ok {
		p.feedMsg = newMessage(a, msgFeed, 1)
	}
	if spec.Plan.Store != "" {
		p.storeMsg = newMessage(a, msgStore, 1)
	}

	p.tty = x.TTY
	p.engine = spec.Engine
	p.ptmx = a.cstr("/dev/ptmx")
	if p.tty {
		p.ptyMsg = newMessage(a, msgPTY, 1)
	}

	p.cwd = a.cstr(x.Cwd)
	if x.MaxProcs > 0 {
		p.nproc = take[unix.Rlimit](a)
		*p.nproc = unix.Rlimit{Cur: uint64(x.MaxProcs), Max: uint64(x.MaxProcs)}
	}
	p.attr = landlock.RulesetAttr{HandledFS: rs.HandledFS, Scoped: rs.Scoped}
	p.rules = takeSlice[rawRule](a, len(rs.Rules))
	for i, r := range rs.Rules {
		p.rules[i] = rawRule{path: a.cstr(r.Path), access: r.Access}
	}
	n := landlock.Nested(host.abi)
	p.nested = landlock.RulesetAttr{HandledFS: n.HandledFS, Scoped: n.Scoped}
	p.last = host.lastCap
	p.capHdr = unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	filter := takeSlice[seccomp.Instruction](a, len(host.filter))
	copy(filter, host.filter)
	p.filter = unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	for _, s := range append([]syscall.Signal{unix.SIGCHLD}, forwarded...) {
		p.sigset |= 1 << (uint(s) - 1)
	}

	p.resetSigs = handledSignals()

	p.argv = a.cstrs(x.Argv)
	p.envv = a.cstrs(x.Env)
	p.cands = takeSlice[*byte](a, len(cands))
	for i, c := range cands {
		p.cands[i] = a.cstr(c)
	}
	stack := takeSlice[byte](a, initStack)
	p.stack = uintptr(unsafe.Pointer(&stack[len(stack)-16])) &^ 15
	return p, a, nil
}

// readyAt is the index of the first step of a mount over a placeholder,
// or len(steps) when there is none.
func readyAt(plan mount.Plan, steps []mount.Step) int {
	for i, s := range steps {
		if s.Mount >= 0 && plan.Mounts[s.Mount].Held {
			return i
		}
	}
	return len(steps)
}

// initStack is the size of init's own stack (amd64), in the arena; init
// and the command's vforked child need well under 4 KiB of it.
const initStack = 16 << 10

// arena is one private mapping that holds a program and everything it
// points to, so that init can be cloned without the rest of the
// supervisor's memory (see startInit). It is not Go memory: pointers in it
// point into it (or its shared page) only, and it is unmapped once init is
// gone.
//
// shared is one page that init and the supervisor share (MAP_SHARED): init
// writes there how far it got (program.progress), the supervisor reads it
// when init dies without a report. The command's execve leaves it behind.
type arena struct {
	buf    []byte
	off    uintptr
	shared []byte
}

func newArena(size int) (*arena, error) {
	size = (size + 4095) &^ 4095
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("mapping init's memory: %w", os.NewSyscallError("mmap", err))
	}
	shared, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
	if err != nil {
		unix.Munmap(b)
		return nil, fmt.Errorf("mapping init's memory: %w", os.NewSyscallError("mmap", err))
	}
	return &arena{buf: b, shared: shared}, nil
}

// free unmaps the arena; init must be gone.
func (a *arena) free() {
	if a != nil && a.buf != nil {
		unix.Munmap(a.buf)
		unix.Munmap(a.shared)
		a.buf, a.shared = nil, nil
	}
}

// socketOff is what the first capture socket init could not make was for
// (captureRules, captureRoute) and its errno, or 0 and 0; init has sent
// its listeners, so it is done with them.
func (a *arena) socketOff() (int, syscall.Errno) {
	what := int(binary.NativeEndian.Uint16(a.shared[4:]))
	if what == 0 {
		return 0, 0
	}
	return what, syscall.Errno(binary.NativeEndian.Uint16(a.shared[6:]))
}

// captureOff is why the capture could not be set up: what failed of it
// (captureRules, captureRoute) and the kernel's errno; nil for neither.
func captureOff(what int, errno syscall.Errno) error {
	switch what {
	case captureRules:
		return fmt.Errorf("adding the nftables capture rules: %w; the kernel needs nf_tables with nat and redirect (CONFIG_NFT_NAT, CONFIG_NFT_REDIR, or the nft_nat and nft_redir modules loaded)", errno)
	case captureRoute:
		return fmt.Errorf("adding the route through lo: %w", errno)
	}
	return nil
}

// reached is the step init had reached when it last wrote its progress.
func (a *arena) reached() uint8 { return a.shared[0] }

// testDeath has every init this process starts die at a step (at-1; 0:
// never) without a report, the way a crash would: for the tests of the
// supervisor's side of a dead init.
var testDeath struct {
	at       uint8
	bySignal bool
}

// testCaptureRules, when set, changes the capture rules init sends: for the
// tests of a kernel that refuses them.
var testCaptureRules func(rules []byte) []byte

// bounds are the arena's first and last address.
func (a *arena) bounds() (uintptr, uintptr) {
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(a.buf)))
	return lo, lo + uintptr(len(a.buf))
}

// arenaSize is an upper bound for a program's arena.
func arenaSize(spec Spec, steps []mount.Step, rs landlock.Ruleset, cands []string, filter int) int {
	n := 16<<10 + initStack + 8*filter + int(unsafe.Sizeof(program{})) + len(counters)*(int(unsafe.Sizeof(idFile{}))+64)
	strs := func(ss ...string) {
		for _, s := range ss {
			n += len(s) + 16
		}
	}
	for _, s := range steps {
		n += int(unsafe.Sizeof(rawStep{}))
		strs(s.Path, s.Source, s.FSType, s.Data, s.Path)
	}
	for _, r := range rs.Rules {
		n += int(unsafe.Sizeof(rawRule{}))
		strs(r.Path)
	}
	strs(spec.Exec.Argv...)
	strs(spec.Exec.Env...)
	strs(cands...)
	strs(spec.Hostname, spec.Exec.Cwd)
	if spec.Listen {
		n += 2048 // the capture messages: about 700 bytes
	}
	return n
}

// alloc returns size zeroed bytes aligned to align. Running out is a bug in
// arenaSize.
func (a *arena) alloc(size, align uintptr) unsafe.Pointer {
	base := uintptr(unsafe.Pointer(unsafe.SliceData(a.buf)))
	off := (base+a.off+align-1)&^(align-1) - base
	if off+size > uintptr(len(a.buf)) {
		panic(fmt.Sprintf("sandbox: init's arena of %d bytes is too small", len(a.buf)))
	}
	a.off = off + size
	return unsafe.Pointer(&a.buf[off])
}

func take[T any](a *arena) *T {
	var zero T
	return (*T)(a.alloc(unsafe.Sizeof(zero), unsafe.Alignof(zero)))
}

func takeSlice[T any](a *arena, n int) []T {
	if n == 0 {
		return nil
	}
	var zero T
	return unsafe.Slice((*T)(a.alloc(unsafe.Sizeof(zero)*uintptr(n), unsafe.Alignof(zero))), n)
}

// bytes copies s into the arena, with a NUL after it.
func (a *arena) bytes(s string) []byte {
	b := takeSlice[byte](a, len(s)+1)
	copy(b, s)
	return b[:len(s)]
}

func (a *arena) cstr(s string) *byte {
	b := takeSlice[byte](a, len(s)+1)
	copy(b, s)
	return &b[0]
}

// cstrs is a nil-terminated array of C strings.
func (a *arena) cstrs(ss []string) []*byte {
	out := takeSlice[*byte](a, len(ss)+1)
	for i, s := range ss {
		out[i] = a.cstr(s)
	}
	return out
}

// handledSignals are the signals with a handler of this process's own.
func handledSignals() uint64 {
	var set uint64
	for sig := uintptr(1); sig <= 64; sig++ {
		var old [4]uintptr // struct sigaction: handler, flags, restorer, mask
		if _, _, e := syscall.RawSyscall6(unix.SYS_RT_SIGACTION, sig, 0, uintptr(unsafe.Pointer(&old)), 8, 0, 0); e == 0 && old[0] > 1 {
			set |= 1 << (sig - 1) // neither SIG_DFL (0) nor SIG_IGN (1)
		}
	}
	return set
}

// facts is what every sandbox of this process shares: the kernel's
// Landlock ABI and last capability, and the compiled seccomp filter (never
// written to: each init reads its own copy).
type facts struct {
	abi      int
	lastCap  int
	filter   []seccomp.Instruction
	counters []counterLimit
	ipv6     bool // the kernel has IPv6: the capture listener and rules have an IPv6 half
}

var hostFacts = sync.OnceValues(func() (facts, error) {
	f := facts{abi: landlock.ABI(), lastCap: caps.LastCap()}
	_, err := os.Stat("/proc/sys/net/ipv6")
	f.ipv6 = err == nil
	if err := landlock.CheckABI(f.abi); err != nil {
		return f, err
	}
	arch, err := seccomp.NativeArch()
	if err != nil {
		return f, err
	}
	if f.filter, err = seccomp.SandboxFilter(arch); err != nil {
		return f, err
	}
	f.counters, err = sandboxCounters()
	return f, err
})

// Warm works out what every sandbox shares, and registers the signals
// the supervisor forwards, in the background, so that both are ready when
// the first sandbox starts.
func Warm() {
	WarmFacts()
	go RegisterSignals()
}

// WarmFacts is Warm without the signals, for a caller with more pressing
// work for the background, which calls RegisterSignals after it. The
// first registration starts the runtime's signal thread and goes there
// and back once per signal: for a millisecond or two the hand-offs keep
// the second CPU from any other goroutine (a foreground run's cgroup,
// which the start waits for, began 1.6 ms after it was asked for).
func WarmFacts() { go hostFacts() }

// RegisterSignals registers the signals the supervisor forwards (once;
// Start does it too, before init exists).
func RegisterSignals() { forwardSignals() }

// candidates are the paths execve tries for name, as execvp(3) would with
// the sandbox's PATH (not the supervisor's).
func candidates(name string, env []string) []string {
	if strings.Contains(name, "/") {
		return []string{name}
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	var out []string
	for _, dir := range strings.Split(path, ":") {
		if dir == "" {
			dir = "."
		}
		out = append(out, dir+"/"+name)
	}
	return out
}

var argvOnce = sync.OnceValues(argvArea)

// argvArea is where the kernel keeps this process's command line and
// environment: init overwrites its copy of both (its /proc/1/cmdline then
// reads stockade-init, and no variable of the supervisor's, a key among
// them, stays in init's memory). The bounds come from /proc/self/stat and
// must hold the strings of os.Args where execve left them.
func argvArea() (unsafe.Pointer, uintptr) {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil || len(os.Args) == 0 {
		return nil, 0
	}
	start := unsafe.Pointer(unsafe.StringData(os.Args[0]))
	if n := argvLen(stat, uintptr(start)); n > 0 {
		return start, n
	}
	return nil, 0
}

// argvLen is the length of the command line and environment from stat,
// the text of /proc/self/stat, if they start at argv0; else 0.
func argvLen(stat []byte, argv0 uintptr) uintptr {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	// Fields from the third on; arg_start is the 48th, env_end the 51st.
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 49 {
		return 0
	}
	argStart, err1 := strconv.ParseUint(f[45], 10, 64)
	envEnd, err2 := strconv.ParseUint(f[48], 10, 64)
	if err1 != nil || err2 != nil || uintptr(argStart) != argv0 || envEnd <= argStart {
		return 0
	}
	return uintptr(envEnd - argStart)
}

// stepError turns init's report into the error the user sees.
func (p *program) stepError(spec Spec, steps []mount.Step, step uint8, idx int, errno syscall.Errno) *StepError {
	e := &StepError{Code: ExitSetup, Step: stepName(step)}
	if errno != 0 {
		e.Errno = unix.ErrnoName(errno)
	}
	sysErr := func(call string) string { return fmt.Sprintf("%s: %v", call, errno) }
	switch step {
	case stepMaps:
		file := [...]string{"uid_map", "setgroups", "gid_map"}[min(max(idx, 0), 2)]
		e.Msg = fmt.Sprintf("writing /proc/self/%s: %v; run 'stockade doctor' for the fix", file, errno)
	case stepCounters:
		host, _ := hostFacts()
		if idx >= 0 && idx < len(host.counters) {
			e.Path = host.counters[idx].path
		}
		e.Msg = counterError(host.counters, idx, errno)
	case stepHostname:
		e.Msg = sysErr("sethostname")
	case stepNetwork:
		switch {
		case idx < len(Listeners):
			l := Listeners[idx]
			e.Msg = fmt.Sprintf("creating the %s listener on %s/%s: %v", l.Name, l.Addr, l.Network, errno)
		case idx == idxLoopback:
			e.Msg = "bringing lo up: " + sysErr("ioctl")
		default: // idxSendListeners
			e.Msg = "sending the listeners: " + sysErr("sendmsg")
		}
	case stepMount:
		if m, ok := spec.Plan.Feed(); ok && idx == len(steps) {
			e.Path = m.Target
			e.Msg = fmt.Sprintf("sending the descriptor of %s (%s): %s", m.Target, m.Why, sysErr("sendmsg"))
			break
		}
		if spec.Plan.Store != "" && idx == len(steps)+1 {
			e.Path = spec.Plan.Store
			e.Msg = fmt.Sprintf("sending the container engine's storage %s: %s", spec.Plan.Store, sysErr("sendmsg"))
			break
		}
		if idx < 0 || idx >= len(steps) {
			e.Msg = sysErr("mount")
			break
		}
		s := steps[idx]
		if s.Mount < 0 {
			e.Msg = fmt.Sprintf("%s: %s", s.What, sysErr(s.Call.String()))
			if s.Call == mount.CallKeepTree && errno == unix.ESTALE {
				e.Msg += "; the directory was replaced after stockade locked it (renamed away, another put in its place): run again"
			}
			break
		}
		m := spec.Plan.Mounts[s.Mount]
		e.Path = m.Target
		e.Msg = fmt.Sprintf("%s %s (%s): %s", m.Kind, m.Target, m.Why, sysErr(s.Call.String()))
		switch {
		case !m.Strict:
		case errno == unix.ELOOP:
			e.Msg += "; a symlink was put on the path after stockade planned it (by another session of this project?), and stockade never mounts through one: run again, and remove the link if it is still there"
		case errno == unix.ESTALE:
			e.Msg += "; the path was replaced after stockade planned it (by another session of this project?): run again"
		case errno == unix.EMLINK:
			e.Msg += "; the protected file has another name (a hard link) the sandbox could write through: remove the other name"
		case errno == unix.EACCES:
			e.Msg += "; the sandbox cannot reach a directory on the way (another user's, which the sandbox's user namespace does not map): start stockade in a directory of your own, or as that user"
		}
	case stepTerminal:
		e.Msg = "opening the terminal: " + sysErr([]string{"open /dev/ptmx", "unlockpt", "ioctl TIOCGPTPEER", "sendmsg"}[min(idx, 3)])
	case stepInit:
		if idx >= idxTasks && idx < idxTasks+maxTasks {
			e.Msg = "placing itself in the sandbox's cgroup: " + sysErr("write tasks")
		} else {
			e.Msg = fmt.Sprintf("setting up the sandbox: %v", errno)
		}
	case stepPlaced:
		e.Msg = "supervisor went away before placing the sandbox in its cgroup"
	case stepCgroupNS:
		e.Msg = sysErr("unshare")
	case stepChdir:
		e.Path = spec.Exec.Cwd
		e.Msg = fmt.Sprintf("chdir %s: %v", spec.Exec.Cwd, errno)
	case stepPids:
		e.Msg = sysErr("setrlimit")
	case stepNNP:
		e.Msg = sysErr("prctl")
	case stepLandlock:
		host, _ := hostFacts()
		if rules := landlock.Compile(spec.Exec.Landlock, host.abi).Rules; idx >= 0 && idx < len(rules) {
			e.Path = rules[idx].Path
			e.Msg = fmt.Sprintf("landlock rule for %s: %v", e.Path, errno)
		} else {
			e.Msg = "enforcing the landlock ruleset: " + sysErr("landlock")
		}
	case stepCaps:
		e.Msg = "dropping capabilities: " + sysErr("prctl/capset")
	case stepSeccomp:
		e.Msg = "installing the seccomp filter: " + sysErr("seccomp")
	case stepExec:
		return execError(spec.Exec, idx, errno)
	default:
		e.Msg = fmt.Sprintf("setting up the sandbox: %v", errno)
	}
	return e
}

// forwarded are the signals init passes on to the command.
var forwarded = []syscall.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2, unix.SIGWINCH}

// idxLoopback marks a network report about lo itself; idxSendListeners
// one about sending the listeners (not an index of Listeners: how many
// there are depends on the spec).
const (
	idxLoopback      = 0xfffe
	idxSendListeners = 0xfffd
)

// idxTasks marks an init report about placing itself in its cgroup (the
// write to tasks file idx-idxTasks).
const idxTasks = 0x100

// maxTasks is how many cgroup v1 hierarchies init places itself in: one
// per controller a limit uses (memory, cpu, pids).
const maxTasks = 3

// placeIn has init write "0" to each tasks file of fds, moving itself into
// the cgroup, as its first act: a thread that moves itself takes no global
// lock, where moving another task write-locks cgroup_threadgroup_rwsem and
// waits for an RCU grace period, and the namespaces the clone makes are
// charged to the supervisor's group, as they were made for it (charging
// them to a fresh memory cgroup cost a start a third of a millisecond).
// Init reports a failed write and dies. placeIn says whether init was
// given fds; with more than it takes, it is given none, and OnStart places
// it the slow way.
func (p *program) placeIn(fds []int) bool {
	if len(fds) == 0 || len(fds) > maxTasks {
		return false
	}
	for i, fd := range fds {
		p.tasks[i] = int32(fd)
	}
	p.ntasks = len(fds)
	p.digitZero[0] = '0'
	return true
}

// execError explains why the command did not start: not found at any
// candidate (127), or found and refused (126).
func execError(x ExecSpec, idx int, errno syscall.Errno) *StepError {
	name := x.Argv[0]
	cands := candidates(name, x.Env)
	if idx < 0 || idx >= len(cands) {
		return &StepError{Step: "exec", Path: name, Errno: unix.ErrnoName(errno), Msg: fmt.Sprintf("starting %s: %v", name, errno), Code: ExitNotExec}
	}
	path := cands[idx]
	if errno == unix.ENOENT || errno == unix.ENOTDIR {
		if strings.Contains(name, "/") {
			return &StepError{Step: "exec", Path: name, Errno: "ENOENT", Msg: fmt.Sprintf("command %s not found in the sandbox", name), Code: ExitNotFound}
		}
		pathVar := ""
		for _, kv := range x.Env {
			if v, ok := strings.CutPrefix(kv, "PATH="); ok {
				pathVar = v
			}
		}
		return &StepError{Step: "exec", Path: name, Errno: "ENOENT", Code: ExitNotFound,
			Msg: fmt.Sprintf("command %q not found in the sandbox's PATH (%s); mount its directory with --ro", name, pathVar)}
	}
	return &StepError{Step: "exec", Path: path, Errno: unix.ErrnoName(errno), Msg: fmt.Sprintf("executing %s: %v", path, errno), Code: ExitNotExec}
}
