//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/caps"
	"github.com/stockade-dev/stockade/internal/landlock"
	"github.com/stockade-dev/stockade/internal/seccomp"
)

func init() {
	// Capabilities, no_new_privs and the final execve are per-thread: the
	// exec stage must do all of them on one thread, the main one.
	if len(os.Args) > 1 && os.Args[1] == execArg {
		runtime.LockOSThread()
	}
}

// execMain is the exec stage: it confines itself in the order of DESIGN §3
// and becomes the command. It never returns on success.
func execMain() int {
	unix.CloseOnExec(syncFD)
	var spec ExecSpec
	if err := readSpec(&spec); err != nil {
		report(syncFD, stepError("spec", fmt.Errorf("reading exec spec: %w", err), ExitSetup))
		return ExitSetup
	}
	if err := confineAndExec(spec); err != nil {
		e := stepError("exec", err, ExitSetup)
		report(syncFD, e)
		return e.Code
	}
	return 0 // unreachable: execve succeeded
}

func confineAndExec(spec ExecSpec) error {
	if len(spec.Argv) == 0 {
		return &StepError{Step: "exec", Msg: "no command", Code: ExitSetup}
	}
	if err := os.Chdir(spec.Cwd); err != nil {
		return stepError("chdir", err, ExitSetup)
	}
	path, err := lookPath(spec.Argv[0], spec.Env)
	if err != nil {
		return &StepError{Step: "exec", Path: spec.Argv[0], Msg: err.Error(), Code: ExitNotFound}
	}
	prog, err := compileSeccomp()
	if err != nil {
		return stepError("seccomp", err, ExitSetup)
	}
	// 4. no_new_privs, on every thread: Landlock and seccomp both need it,
	// and it makes setuid bits and file capabilities inert from here on.
	if _, _, e := syscall.AllThreadsSyscall(syscall.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0); e != 0 {
		return stepError("no_new_privs", os.NewSyscallError("prctl", e), ExitSetup)
	}
	// 5. Landlock.
	if err := landlock.Restrict(spec.Landlock); err != nil {
		return stepError("landlock", err, ExitSetup)
	}
	// 6. No descriptor but 0-2 survives the execve. Marking them close-on-exec
	// rather than closing keeps the Go runtime's own descriptors valid until then.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return stepError("close_fds", os.NewSyscallError("close_range", err), ExitSetup)
	}
	// 7. Capabilities.
	if err := caps.DropAll(); err != nil {
		return stepError("caps", err, ExitSetup)
	}
	// 8. seccomp, last, so that nothing above needs a syscall it denies.
	if err := seccomp.Install(prog); err != nil {
		return stepError("seccomp", err, ExitSetup)
	}
	// 9. Become the command.
	err = unix.Exec(path, spec.Argv, spec.Env)
	code := ExitNotExec
	if errors.Is(err, unix.ENOENT) {
		code = ExitNotFound
	}
	return &StepError{Step: "exec", Path: path, Errno: unix.ErrnoName(errnoOf(err)), Msg: fmt.Sprintf("executing %s: %v", path, err), Code: code}
}

func compileSeccomp() ([]unix.SockFilter, error) {
	arch, err := seccomp.NativeArch()
	if err != nil {
		return nil, err
	}
	return seccomp.Compile(seccomp.Default(), arch)
}

func errnoOf(err error) syscall.Errno {
	var e syscall.Errno
	errors.As(err, &e)
	return e
}

// lookPath resolves name against the sandbox's PATH, not the exec stage's.
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
