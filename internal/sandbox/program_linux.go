//go:build linux

package sandbox

import (
	"fmt"
	"net/netip"
	"os"
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
// headers. Init is a fork of the supervisor that never returns to the Go
// runtime (see child_linux.go); it reads this, and writes only into the
// scratch fields at the end, never a pointer.
type program struct {
	fds      [4]int32 // stdin, stdout, stderr, sync in the supervisor; 0-3 in init
	coreOff  unix.Rlimit
	coreOn   unix.Rlimit
	args     unsafe.Pointer // the supervisor's argv area, renamed in init
	argsLen  uintptr
	name     *byte
	hostname []byte
	idFiles  []idFile
	ifreq    [40]byte // struct ifreq for lo

	listeners []listener
	listenMsg *message

	steps []rawStep

	tty    bool
	ptmx   *byte
	ptyMsg *message

	cwd    *byte
	nproc  *unix.Rlimit
	rules  []rawRule
	ruleAt []string // the rules' paths, for errors
	attr   landlock.RulesetAttr
	nested landlock.RulesetAttr
	last   int // last capability
	capHdr unix.CapUserHeader
	capSet [2]unix.CapUserData
	filter unix.SockFprog
	sigset uint64 // what init takes through its signalfd

	argv  []*byte // nil-terminated
	envv  []*byte
	cands []*byte // where the command may be, in PATH order

	keep []any // what the pointers above point into

	// Scratch, written by init in its own copy.
	st      unix.Stat_t
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
	addr   unix.RawSockaddrInet4
	stream bool
}

// message is a one-byte message with room for n descriptors.
type message struct {
	hdr     unix.Msghdr
	iov     unix.Iovec
	typ     byte
	control []byte
	dataOff int
}

func newMessage(typ byte, n int) *message {
	m := &message{typ: typ, control: unix.UnixRights(make([]int, n)...), dataOff: unix.CmsgLen(0)}
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
	dirSrc  *byte // CallMask: the empty directory
}

type rawRule struct {
	path   *byte
	access uint64
}

// Steps of init, for its error reports.
const (
	stepInit uint8 = iota
	stepMaps
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
	stepInit: "init", stepMaps: "user namespace", stepHostname: "hostname", stepNetwork: "network", stepMount: "mount",
	stepTerminal: "terminal", stepPlaced: "cgroup", stepCgroupNS: "cgroup namespace",
	stepChdir: "chdir", stepPids: "pids limit", stepNNP: "no_new_privs", stepLandlock: "landlock",
	stepCaps: "caps", stepSeccomp: "seccomp", stepExec: "exec",
}

// build prepares the program for spec. Its errors are the supervisor's:
// nothing has been started yet.
func build(spec Spec, steps []mount.Step, fds [4]int) (*program, error) {
	p := &program{one: 1, slave: -1}
	for i, fd := range fds {
		p.fds[i] = int32(fd)
	}
	cstr := func(s string) *byte {
		b, err := syscall.BytePtrFromString(s)
		if err != nil {
			b, _ = syscall.BytePtrFromString("") // a NUL inside: planning refuses those
		}
		return b
	}
	if err := unix.Getrlimit(unix.RLIMIT_CORE, &p.coreOn); err != nil {
		return nil, os.NewSyscallError("getrlimit", err)
	}
	p.coreOff = unix.Rlimit{Cur: 0, Max: p.coreOn.Max}
	p.args, p.argsLen = argvArea()
	p.name = cstr("stockade-init")
	p.hostname = []byte(spec.Hostname)
	uid, gid := os.Getuid(), os.Getgid()
	for _, f := range []struct{ file, data string }{
		{"uid_map", fmt.Sprintf("%d %d 1\n", uid, uid)},
		{"setgroups", "deny"},
		{"gid_map", fmt.Sprintf("%d %d 1\n", gid, gid)},
	} {
		p.idFiles = append(p.idFiles, idFile{path: cstr("/proc/self/" + f.file), data: []byte(f.data)})
	}
	copy(p.ifreq[:], "lo")

	if spec.Listen {
		for _, l := range Listeners {
			ap, err := netip.ParseAddrPort(l.Addr)
			if err != nil || !ap.Addr().Is4() {
				return nil, fmt.Errorf("listen address %q is not an IPv4 ip:port", l.Addr)
			}
			rl := listener{typ: unix.SOCK_STREAM, stream: true}
			if l.Network == "udp" {
				rl.typ, rl.stream = unix.SOCK_DGRAM, false
			}
			rl.addr.Family = unix.AF_INET
			rl.addr.Addr = ap.Addr().As4()
			port := ap.Port()
			*(*[2]byte)(unsafe.Pointer(&rl.addr.Port)) = [2]byte{byte(port >> 8), byte(port)} // network order
			p.listeners = append(p.listeners, rl)
		}
		p.listenMsg = newMessage(msgListeners, len(p.listeners))
	}

	for _, s := range steps {
		r := rawStep{call: s.Call, ok: s.Ok, skip: s.Skip, flags: s.Flags, mode: s.Mode}
		r.attr.Attr_set = s.Attr
		r.path = cstr(s.Path)
		if s.Source != "" {
			r.source = cstr(s.Source)
		}
		if s.FSType != "" {
			r.fstype = cstr(s.FSType)
		}
		switch {
		case s.Call == mount.CallWrite:
			b := []byte(s.Data + "\x00")
			r.data, r.dataLen = &b[0], len(s.Data)
		case s.Data != "":
			r.data = cstr(s.Data)
		}
		p.steps = append(p.steps, r)
	}

	p.tty = spec.Exec.TTY
	p.ptmx = cstr("/dev/ptmx")
	if p.tty {
		p.ptyMsg = newMessage(msgPTY, 1)
	}

	x := spec.Exec
	p.cwd = cstr(x.Cwd)
	if x.MaxProcs > 0 {
		p.nproc = &unix.Rlimit{Cur: uint64(x.MaxProcs), Max: uint64(x.MaxProcs)}
	}
	host, err := hostFacts()
	if err != nil {
		return nil, err
	}
	abi := host.abi
	rs := landlock.Compile(x.Landlock, abi)
	p.attr = landlock.RulesetAttr{HandledFS: rs.HandledFS, Scoped: rs.Scoped}
	for _, r := range rs.Rules {
		p.rules = append(p.rules, rawRule{path: cstr(r.Path), access: r.Access})
		p.ruleAt = append(p.ruleAt, r.Path)
	}
	n := landlock.Nested(abi)
	p.nested = landlock.RulesetAttr{HandledFS: n.HandledFS, Scoped: n.Scoped}
	p.last = host.lastCap
	p.capHdr = unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	p.filter = unix.SockFprog{Len: uint16(len(host.filter)), Filter: &host.filter[0]}
	p.keep = append(p.keep, host.filter)
	for _, s := range append([]syscall.Signal{unix.SIGCHLD}, forwarded...) {
		p.sigset |= 1 << (uint(s) - 1)
	}

	if len(x.Argv) == 0 {
		return nil, &StepError{Step: "exec", Msg: "no command", Code: ExitSetup}
	}
	var err2 error
	if p.argv, err2 = cstrs(x.Argv); err2 != nil {
		return nil, fmt.Errorf("command line: %w", err2)
	}
	if p.envv, err2 = cstrs(x.Env); err2 != nil {
		return nil, fmt.Errorf("environment: %w", err2)
	}
	for _, c := range candidates(x.Argv[0], x.Env) {
		p.cands = append(p.cands, cstr(c))
	}
	return p, nil
}

// facts is what every sandbox of this process shares: the kernel's
// Landlock ABI and last capability, and the compiled seccomp filter (never
// written to: each init reads its own copy).
type facts struct {
	abi     int
	lastCap int
	filter  []seccomp.Instruction
}

var hostFacts = sync.OnceValues(func() (facts, error) {
	f := facts{abi: landlock.ABI(), lastCap: caps.LastCap()}
	if err := landlock.CheckABI(f.abi); err != nil {
		return f, err
	}
	arch, err := seccomp.NativeArch()
	if err != nil {
		return f, err
	}
	f.filter, err = seccomp.Compile(seccomp.Default(), arch)
	return f, err
})

// Warm works out what every sandbox shares in the background, so that it
// is ready when the first sandbox starts.
func Warm() { go hostFacts() }

// cstrs is a nil-terminated array of C strings.
func cstrs(ss []string) ([]*byte, error) {
	out, err := syscall.SlicePtrFromStrings(ss)
	if err != nil {
		return nil, err
	}
	return append(out, nil), nil
}

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

// argvArea is where the kernel shows this process's command line: the
// strings of os.Args, when they still lie end to end as execve left them.
func argvArea() (unsafe.Pointer, uintptr) {
	if len(os.Args) == 0 || len(os.Args[0]) == 0 {
		return nil, 0
	}
	start := unsafe.Pointer(unsafe.StringData(os.Args[0]))
	n := uintptr(0)
	for _, a := range os.Args {
		if len(a) == 0 || unsafe.Pointer(unsafe.StringData(a)) != unsafe.Add(start, n) {
			return nil, 0
		}
		n += uintptr(len(a)) + 1
	}
	return start, n - 1
}

// stepError turns init's report into the error the user sees.
func (p *program) stepError(spec Spec, steps []mount.Step, step uint8, idx int, errno syscall.Errno) *StepError {
	e := &StepError{Code: ExitSetup}
	if int(step) < len(stepNames) {
		e.Step = stepNames[step]
	} else {
		e.Step = "init"
	}
	if errno != 0 {
		e.Errno = unix.ErrnoName(errno)
	}
	sysErr := func(call string) string { return fmt.Sprintf("%s: %v", call, errno) }
	switch step {
	case stepMaps:
		file := [...]string{"uid_map", "setgroups", "gid_map"}[min(max(idx, 0), 2)]
		e.Msg = fmt.Sprintf("writing /proc/self/%s: %v; run 'stockade doctor' for the fix", file, errno)
	case stepHostname:
		e.Msg = sysErr("sethostname")
	case stepNetwork:
		switch {
		case idx < len(Listeners):
			l := Listeners[idx]
			e.Msg = fmt.Sprintf("creating the %s listener on %s/%s: %v", l.Name, l.Addr, l.Network, errno)
		case idx == idxLoopback:
			e.Msg = "bringing lo up: " + sysErr("ioctl")
		default:
			e.Msg = "sending the listeners: " + sysErr("sendmsg")
		}
	case stepMount:
		if idx < 0 || idx >= len(steps) {
			e.Msg = sysErr("mount")
			break
		}
		s := steps[idx]
		if s.Mount < 0 {
			e.Msg = fmt.Sprintf("%s: %s", s.What, sysErr(s.Call.String()))
			break
		}
		m := spec.Plan.Mounts[s.Mount]
		e.Path = m.Target
		e.Msg = fmt.Sprintf("%s %s (%s): %s", m.Kind, m.Target, m.Why, sysErr(s.Call.String()))
	case stepTerminal:
		e.Msg = "opening the terminal: " + sysErr([]string{"open /dev/ptmx", "unlockpt", "ioctl TIOCGPTPEER", "sendmsg"}[min(idx, 3)])
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
		if idx >= 0 && idx < len(p.rules) {
			e.Path = p.ruleAt[idx]
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

// idxLoopback marks a network report about lo itself.
const idxLoopback = 0xfffe

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
