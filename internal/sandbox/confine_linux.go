//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/caps"
	"github.com/stockade-dev/stockade/internal/landlock"
	"github.com/stockade-dev/stockade/internal/seccomp"
)

// confineAndStart applies DESIGN §3 steps 4 to 8 to init itself, on every
// thread, and then forks and executes the command, which inherits all of
// them: no_new_privs, the Landlock domain, the empty capability sets and the
// seccomp filter are all kept across fork and execve. Doing it in init
// rather than in a separate exec stage saves a whole process start, and
// leaves PID 1 no more powerful than the command it supervises.
//
// It must run on init's main (locked) thread: capabilities are per-thread,
// and the command is forked from this one.
func confineAndStart(spec ExecSpec, stdio []uintptr) (int, error) {
	if len(spec.Argv) == 0 {
		return 0, &StepError{Step: "exec", Msg: "no command", Code: ExitSetup}
	}
	if err := os.Chdir(spec.Cwd); err != nil {
		return 0, stepError("chdir", err, ExitSetup)
	}
	path, err := lookPath(spec.Argv[0], spec.Env)
	if err != nil {
		return 0, &StepError{Step: "exec", Path: spec.Argv[0], Msg: err.Error(), Code: ExitNotFound}
	}
	arch, err := seccomp.NativeArch()
	if err != nil {
		return 0, stepError("seccomp", err, ExitSetup)
	}
	prog, err := seccomp.Compile(seccomp.Default(), arch)
	if err != nil {
		return 0, stepError("seccomp", err, ExitSetup)
	}
	if spec.MaxProcs > 0 {
		lim := &unix.Rlimit{Cur: uint64(spec.MaxProcs), Max: uint64(spec.MaxProcs)}
		if err := unix.Setrlimit(unix.RLIMIT_NPROC, lim); err != nil {
			return 0, stepError("pids limit", os.NewSyscallError("setrlimit", err), ExitSetup)
		}
	}
	// No core dumps and no ptrace attach to PID 1 (the filter below also
	// refuses to turn dumpable back on).
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return 0, stepError("dumpable", os.NewSyscallError("prctl", err), ExitSetup)
	}
	// 4. no_new_privs on every thread: Landlock and seccomp both need it,
	// and it makes setuid bits and file capabilities inert from here on.
	if _, _, e := syscall.AllThreadsSyscall(syscall.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0); e != 0 {
		return 0, stepError("no_new_privs", os.NewSyscallError("prctl", e), ExitSetup)
	}
	// 5. Landlock, on every thread.
	if err := landlock.Restrict(spec.Landlock); err != nil {
		return 0, stepError("landlock", err, ExitSetup)
	}
	// 6. File descriptors: ForkExec below hands the command its stdio as 0,
	// 1 and 2;
	// every other descriptor init holds, including any it inherited, is
	// marked close-on-exec (closing them would pull the Go runtime's own
	// descriptors from under it).
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return 0, stepError("close_fds", os.NewSyscallError("close_range", err), ExitSetup)
	}
	// 7. Capabilities: the bounding set and secure bits on this thread (the
	// only one that forks), the capability sets on every thread.
	if err := caps.DropAll(); err != nil {
		return 0, stepError("caps", err, ExitSetup)
	}
	// 8. seccomp, last, on every thread (TSYNC).
	if err := seccomp.Install(prog); err != nil {
		return 0, stepError("seccomp", err, ExitSetup)
	}
	// 9. The command.
	pid, err := syscall.ForkExec(path, spec.Argv, &syscall.ProcAttr{
		Dir:   spec.Cwd,
		Env:   spec.Env,
		Files: stdio,
		Sys:   &syscall.SysProcAttr{Setsid: true, Setctty: spec.TTY, Ctty: 0},
	})
	if err != nil {
		code := ExitNotExec
		if errors.Is(err, unix.ENOENT) {
			code = ExitNotFound
		}
		return 0, &StepError{Step: "exec", Path: path, Errno: unix.ErrnoName(errnoOf(err)), Msg: fmt.Sprintf("executing %s: %v", path, err), Code: code}
	}
	return pid, nil
}

func errnoOf(err error) syscall.Errno {
	var e syscall.Errno
	errors.As(err, &e)
	return e
}

// lookPath resolves name against the sandbox's PATH, not init's.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		if _, err := os.Stat(name); err != nil {
			return "", fmt.Errorf("command %s not found in the sandbox", name)
		}
		return name, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range strings.Split(path, ":") {
		if dir == "" {
			dir = "."
		}
		p := dir + "/" + name
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("command %q not found in the sandbox's PATH (%s); mount its directory with --ro", name, path)
}
