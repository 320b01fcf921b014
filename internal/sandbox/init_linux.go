//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/landlock"
	"github.com/stockade-dev/stockade/internal/mount"
	"github.com/stockade-dev/stockade/internal/netns"
)

func init() {
	// Capabilities are per-thread, and the command is forked from the thread
	// that dropped them: init's main goroutine stays on the main thread.
	if len(os.Args) > 1 && os.Args[1] == initArg {
		runtime.LockOSThread()
	}
}

// initMain is PID 1 of the sandbox.
func initMain() int {
	unix.CloseOnExec(syncFD)
	// Die with the supervisor even if it is SIGKILLed. Set again here
	// because the clone-time setting is tied to the thread that forked us.
	unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0)
	// Register before the command exists, so no SIGCHLD or forwarded signal
	// is lost; signals that arrive before the command starts are dropped.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwarded...)
	signal.Notify(sigs, unix.SIGCHLD)
	var spec Spec
	if err := readSpec(&spec); err != nil {
		return fail(stepError("spec", fmt.Errorf("reading spec: %w", err), ExitSetup))
	}
	if err := setup(spec); err != nil {
		return fail(stepError("init", err, ExitSetup))
	}
	pid, err := confineAndStart(spec.Exec)
	if err != nil {
		return fail(stepError("exec", err, ExitSetup))
	}
	// Init needs no file from here on: a nested Landlock layer takes the
	// command's filesystem rights away from init itself.
	landlock.RestrictAll()
	code := reap(pid, sigs)
	quiesce()
	return code
}

// quiesce kills every other process of the sandbox and reaps them all, then
// tells the supervisor: after that nothing inside can act any more, so the
// supervisor may start removing placeholders while the kernel tears the
// namespaces down. Only init remains, and it does not fork.
func quiesce() {
	unix.Kill(-1, unix.SIGKILL)
	for {
		var ws unix.WaitStatus
		if _, err := unix.Wait4(-1, &ws, 0, nil); err == unix.ECHILD {
			break
		} else if err != nil && err != unix.EINTR {
			return
		}
	}
	unix.Write(syncFD, []byte{msgQuiet})
}

// forwarded are the signals init passes on to the command.
var forwarded = []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2, unix.SIGWINCH}

func fail(e *StepError) int {
	report(syncFD, e)
	return e.Code
}

// setup builds the sandbox's network and filesystem and enters its cgroup
// namespace: DESIGN §3 steps 1 and 2.
func setup(spec Spec) error {
	if err := unix.Sethostname([]byte(spec.Hostname)); err != nil {
		return stepError("hostname", os.NewSyscallError("sethostname", err), ExitSetup)
	}
	if err := netns.LoopbackUp(); err != nil {
		return stepError("network", err, ExitSetup)
	}
	if err := mount.Setup(spec.Plan, initStagingBase); err != nil {
		return stepError("mount", err, ExitSetup)
	}
	if err := waitPlaced(); err != nil {
		return stepError("cgroup", err, ExitSetup)
	}
	// Now in the sandbox's cgroup: a cgroup namespace made now is rooted there.
	if err := unix.Unshare(unix.CLONE_NEWCGROUP); err != nil {
		return stepError("cgroup namespace", os.NewSyscallError("unshare", err), ExitSetup)
	}
	return nil
}

// waitPlaced blocks until the supervisor says init is in its cgroup.
func waitPlaced() error {
	var b [1]byte
	for {
		n, err := unix.Read(syncFD, b[:])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return os.NewSyscallError("read", err)
		case n != 1 || b[0] != msgPlaced:
			return fmt.Errorf("supervisor went away before placing the sandbox in its cgroup")
		}
		return nil
	}
}

// reap forwards signals to the command, reaps every child, and returns the
// command's exit status once it is gone. When init returns, the kernel kills
// whatever is left in the PID namespace.
func reap(cmd int, sigs chan os.Signal) int {
	supervisor := make(chan struct{})
	go func() {
		// The sync socket reads EOF when the supervisor goes away.
		buf := make([]byte, 1)
		for {
			if _, err := unix.Read(syncFD, buf); err == unix.EINTR {
				continue
			}
			close(supervisor)
			return
		}
	}()
	for {
		// Reap before waiting: the command may have exited already.
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
