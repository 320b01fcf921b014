//go:build linux

package sandbox

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/caps"
	"github.com/stockade-dev/stockade/internal/landlock"
	"github.com/stockade-dev/stockade/internal/mount"
	"github.com/stockade-dev/stockade/internal/netns"
)

// initMain is PID 1 of the sandbox.
func initMain() int {
	unix.CloseOnExec(syncFD)
	// Die with the supervisor even if it is SIGKILLed. Set again here
	// because the clone-time setting is tied to the thread that forked us.
	unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0)
	var spec Spec
	if err := readSpec(&spec); err != nil {
		return fail(stepError("spec", fmt.Errorf("reading spec: %w", err), ExitSetup))
	}
	// The spec arrives only after the supervisor has moved us into the
	// sandbox's cgroup: a cgroup namespace made now is rooted there.
	if err := unix.Unshare(unix.CLONE_NEWCGROUP); err != nil {
		return fail(stepError("cgroup namespace", os.NewSyscallError("unshare", err), ExitSetup))
	}
	pid, err := setupAndStart(spec)
	if err != nil {
		return fail(stepError("init", err, ExitSetup))
	}
	restrictSelf()
	return reap(pid)
}

func fail(e *StepError) int {
	report(syncFD, e)
	return e.Code
}

// setupAndStart builds the sandbox and starts the exec stage; it returns the
// command's PID once the exec stage has successfully called execve.
func setupAndStart(spec Spec) (int, error) {
	// Keep a handle on our own binary: after pivot_root its path is gone, and
	// re-executing through the descriptor needs no path at all.
	self, err := os.Open("/proc/self/exe")
	if err != nil {
		return 0, stepError("init", err, ExitSetup)
	}
	defer self.Close()
	if err := unix.Sethostname([]byte(spec.Hostname)); err != nil {
		return 0, stepError("hostname", os.NewSyscallError("sethostname", err), ExitSetup)
	}
	if err := netns.LoopbackUp(); err != nil {
		return 0, stepError("network", err, ExitSetup)
	}
	if err := mount.Setup(spec.Plan, initStagingBase); err != nil {
		return 0, stepError("mount", err, ExitSetup)
	}
	return startExec(self, spec.Exec)
}

func startExec(self *os.File, spec ExecSpec) (int, error) {
	specR, specW, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		specR.Close()
		specW.Close()
		return 0, err
	}
	defer statusR.Close()
	attr := &os.ProcAttr{
		// The binary rides along as fd 5 and is executed through it; it is
		// marked close-on-exec by the exec stage like every fd above 2.
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr, specR, statusW, self},
		Env:   []string{},
		Sys:   &syscall.SysProcAttr{Setsid: true, Setctty: spec.TTY, Ctty: 0},
	}
	p, err := os.StartProcess("/proc/self/fd/5", []string{"stockade", execArg}, attr)
	specR.Close()
	statusW.Close()
	if err != nil {
		specW.Close()
		return 0, stepError("exec", fmt.Errorf("starting exec stage: %w", err), ExitSetup)
	}
	go func() {
		json.NewEncoder(specW).Encode(spec)
		specW.Close()
	}()
	b, _ := io.ReadAll(statusR)
	if len(b) > 0 {
		var e StepError
		if json.Unmarshal(b, &e) != nil {
			e = StepError{Step: "exec", Msg: string(b), Code: ExitSetup}
		}
		var ws unix.WaitStatus
		unix.Wait4(p.Pid, &ws, 0, nil)
		return 0, &e
	}
	return p.Pid, nil
}

// restrictSelf shrinks what init itself could do if anything ever reached
// it: no file access, no capabilities, no core dumps or ptrace attach.
// Signal scoping is left off: it would stop init from forwarding signals to
// the command, which lives in a Landlock domain of its own.
func restrictSelf() {
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	syscall.AllThreadsSyscall(syscall.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0)
	landlock.RestrictAll()
	caps.DropAll()
}

// reap forwards signals to the command, reaps every child, and returns the
// command's exit status once it is gone. When init returns, the kernel kills
// whatever is left in the PID namespace.
func reap(cmd int) int {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2, unix.SIGWINCH, unix.SIGCHLD)
	supervisor := make(chan struct{})
	go func() {
		// The sync socket reads EOF when the supervisor goes away.
		buf := make([]byte, 1)
		for {
			if _, err := unix.Read(syncFD, buf); err != nil && err == unix.EINTR {
				continue
			}
			close(supervisor)
			return
		}
	}()
	for {
		// Reap before waiting: the command may have exited before Notify.
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
			if pid == cmd {
				return statusCode(ws)
			}
		}
		select {
		case <-supervisor:
			return ExitSetup
		case s := <-sigs:
			if s != unix.SIGCHLD {
				unix.Kill(cmd, s.(syscall.Signal))
			}
		}
	}
}

func statusCode(ws unix.WaitStatus) int {
	if ws.Signaled() {
		return ExitSignalBase + int(ws.Signal())
	}
	return ws.ExitStatus()
}
