//go:build linux

package seal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/caps"
	"github.com/stockade-dev/stockade/internal/landlock"
	"github.com/stockade-dev/stockade/internal/seccomp"
)

// Run confines the calling process as the policy says and executes the
// command in its place. It returns only on failure, with an *Error.
//
// Every step acts on one OS thread, locked to this goroutine, and execve
// runs on that same thread: no_new_privs, the Landlock domain, the
// capability sets and a seccomp filter installed without TSYNC belong to a
// thread, and execve ends every other thread of the process before the new
// image runs, which inherits exactly what that thread holds. The other
// threads of the Go runtime stay unconfined until then; they run only the
// runtime's own code. Installing the filter on them (TSYNC) would be worse:
// under an allowlist they would be killed for the runtime's futex and
// nanosleep calls in the moment before execve.
func Run(o Options) error {
	if err := checkIDs(); err != nil {
		return err
	}
	data := o.Policy
	if len(data) == 0 {
		var err error
		if data, err = readPolicy(o.PolicyFile); err != nil {
			return err
		}
	}
	p, err := Parse(data)
	if err != nil {
		return &Error{ExitPolicy, err}
	}
	arch, err := seccomp.NativeArch()
	if err != nil {
		return &Error{ExitSeccomp, err}
	}
	filter, err := p.Filter(arch)
	if err != nil {
		return &Error{ExitSeccomp, err}
	}
	path, err := lookPath(o.Args[0], o.Env)
	if err != nil {
		return &Error{ExitExec, err}
	}
	argv0, argv, envv, err := execArgs(path, o.Args, o.Env)
	if err != nil {
		return &Error{ExitExec, err}
	}

	runtime.LockOSThread() // never unlocked: the thread ends in execve or in exit
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fail(ExitPermission, "setting no_new_privs: %w", os.NewSyscallError("prctl", err))
	}
	abi := landlock.ABI()
	if err := landlock.CheckABI(abi); err != nil {
		return &Error{ExitLandlock, err}
	}
	rs, err := p.Ruleset(abi)
	if err != nil {
		return &Error{ExitLandlock, err}
	}
	if err := landlock.RestrictThread(rs); err != nil {
		return &Error{ExitLandlock, err}
	}
	if err := closeInherited(); err != nil {
		return &Error{ExitPermission, err}
	}
	if !o.KeepCaps {
		if err := caps.DropThread(); err != nil {
			return &Error{ExitCaps, err}
		}
	}
	errno := filterAndExec(filter, argv0, argv, envv)
	if errno.filter {
		return fail(ExitSeccomp, "installing the seccomp filter: %w", os.NewSyscallError("seccomp", errno.err))
	}
	return fail(ExitExec, "executing %s: %w", path, os.NewSyscallError("execve", errno.err))
}

type execErrno struct {
	filter bool // the filter failed, not execve
	err    syscall.Errno
}

// filterAndExec installs filter on the calling thread and executes argv0
// right after, with two raw system calls and nothing in between: once the
// filter is on, any other call this thread made (the scheduler's futex, a
// stack growth's mmap) could be one the allowlist kills for. It allocates
// nothing and cannot grow its stack. The only other call the thread may
// make meanwhile is rt_sigreturn, after a signal handler, and
// seccomp.Allowlist always allows it. Being nosplit, the function is no
// safe point for the runtime's asynchronous preemption either: a SIGURG
// arriving here finds nothing to preempt and returns at once.
//
//go:nosplit
func filterAndExec(filter []seccomp.Instruction, argv0 *byte, argv, envv []*byte) execErrno {
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	_, _, e := syscall.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog)))
	if e != 0 {
		return execErrno{true, e}
	}
	_, _, e = syscall.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(argv0)),
		uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&envv[0])))
	return execErrno{false, e}
}

// checkIDs refuses a seal that runs set-user-ID or set-group-ID: its policy
// would come from a user it gives another identity to.
func checkIDs() error {
	ru, eu, su := unix.Getresuid()
	rg, eg, sg := unix.Getresgid()
	if ru != eu || eu != su || rg != eg || eg != sg {
		return fail(ExitSetuid, "seal is running set-user-ID or set-group-ID (real and effective ids differ); remove the setuid/setgid bit from the binary")
	}
	return nil
}

// readPolicy reads the policy from path, or from descriptor 3. A file that
// a user other than its owner (or root) can write is refused: whoever can
// write it chooses the sandbox.
func readPolicy(path string) ([]byte, error) {
	if path == "" {
		if _, err := unix.FcntlInt(3, unix.F_GETFD, 0); err != nil {
			return nil, fail(ExitPolicy, "no policy: pass --policy-file FILE, or the policy JSON on descriptor 3")
		}
		f := os.NewFile(3, "fd 3")
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, MaxPolicy+1))
		if err != nil {
			return nil, fail(ExitPolicy, "reading the policy from descriptor 3: %w", err)
		}
		return b, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fail(ExitPolicy, "reading the policy: %w", err)
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, fail(ExitPolicy, "reading the policy: %w", os.NewSyscallError("fstat", err))
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return nil, fail(ExitPolicy, "the policy %s is not a regular file", path)
	case st.Mode&0o022 != 0:
		return nil, fail(ExitPermission, "the policy %s is writable by group or others (mode %#o); chmod go-w %s", path, st.Mode&0o7777, path)
	case st.Uid != 0 && int(st.Uid) != os.Geteuid():
		return nil, fail(ExitPermission, "the policy %s belongs to uid %d, neither you nor root; chown it or copy it", path, st.Uid)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxPolicy+1))
	if err != nil {
		return nil, fail(ExitPolicy, "reading the policy %s: %w", path, err)
	}
	return b, nil
}

// lookPath finds the command as execvp would, in env's PATH.
func lookPath(name string, env []string) (string, error) {
	path := ""
	for _, kv := range env {
		if len(kv) > 5 && kv[:5] == "PATH=" {
			path = kv[5:]
		}
	}
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	old := os.Getenv("PATH")
	os.Setenv("PATH", path)
	defer os.Setenv("PATH", old)
	p, err := exec.LookPath(name)
	if errors.Is(err, exec.ErrDot) {
		err = nil
	}
	if err != nil {
		return "", fmt.Errorf("finding %s: %w", name, err)
	}
	return p, nil
}

// execArgs makes execve's arguments ahead of time, so that nothing is
// allocated once the filter is on.
func execArgs(path string, args, env []string) (*byte, []*byte, []*byte, error) {
	argv0, err := syscall.BytePtrFromString(path)
	if err != nil {
		return nil, nil, nil, err
	}
	argv, err := syscall.SlicePtrFromStrings(args)
	if err != nil {
		return nil, nil, nil, err
	}
	envv, err := syscall.SlicePtrFromStrings(env)
	if err != nil {
		return nil, nil, nil, err
	}
	return argv0, argv, envv, nil
}

// closeInherited marks every descriptor above 2 close-on-exec, so that the
// command inherits only 0, 1 and 2 (the policy on 3 and Landlock's path
// descriptors included). Closing them now instead would pull the Go
// runtime's own descriptors (its epoll instance) from under its other
// threads; close-on-exec closes them at the execve, when nothing can use
// them any more.
func closeInherited() error {
	err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	if err != unix.ENOSYS && err != unix.EINVAL {
		return fmt.Errorf("marking descriptors close-on-exec: %w", os.NewSyscallError("close_range", err))
	}
	// Before Linux 5.11: one by one.
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("listing descriptors to close: %w", err)
	}
	for _, e := range entries {
		var fd int
		if _, err := fmt.Sscan(e.Name(), &fd); err == nil && fd > 2 {
			unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC)
		}
	}
	return nil
}
