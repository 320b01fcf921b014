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
	stdio, err := setup(spec)
	if err != nil {
		return fail(stepError("init", err, ExitSetup))
	}
	pid, err := confineAndStart(spec.Exec, stdio)
	if err != nil {
		return fail(stepError("exec", err, ExitSetup))
	}
	unix.Write(syncFD, []byte{msgStarted})
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

// setup builds the sandbox's network and filesystem, opens the command's
// terminal when it has one, and enters its cgroup namespace: DESIGN §3 steps
// 1 and 2. It returns the command's stdio descriptors.
func setup(spec Spec) ([]uintptr, error) {
	if err := unix.Sethostname([]byte(spec.Hostname)); err != nil {
		return nil, stepError("hostname", os.NewSyscallError("sethostname", err), ExitSetup)
	}
	if err := netns.LoopbackUp(); err != nil {
		return nil, stepError("network", err, ExitSetup)
	}
	if spec.Listen {
		if err := sendListeners(); err != nil {
			return nil, stepError("network", err, ExitSetup)
		}
	}
	if err := mount.Setup(spec.Plan, initStagingBase); err != nil {
		return nil, stepError("mount", err, ExitSetup)
	}
	stdio := []uintptr{0, 1, 2}
	if spec.Exec.TTY {
		slave, err := openPTY()
		if err != nil {
			return nil, stepError("terminal", err, ExitSetup)
		}
		stdio = []uintptr{uintptr(slave), uintptr(slave), uintptr(slave)}
	}
	if err := waitPlaced(); err != nil {
		return nil, stepError("cgroup", err, ExitSetup)
	}
	// Now in the sandbox's cgroup: a cgroup namespace made now is rooted there.
	if err := unix.Unshare(unix.CLONE_NEWCGROUP); err != nil {
		return nil, stepError("cgroup namespace", os.NewSyscallError("unshare", err), ExitSetup)
	}
	return stdio, nil
}

// sendListeners creates the Listeners in the sandbox's network namespace and
// sends them to the supervisor; init keeps none of them.
func sendListeners() error {
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for _, l := range Listeners {
		fd, err := netns.Listen(l.Network, l.Addr)
		if err != nil {
			return fmt.Errorf("creating the %s listener on %s/%s: %w", l.Name, l.Addr, l.Network, err)
		}
		fds = append(fds, fd)
	}
	if err := unix.Sendmsg(syncFD, []byte{msgListeners}, unix.UnixRights(fds...), nil, 0); err != nil {
		return os.NewSyscallError("sendmsg", err)
	}
	return nil
}

// openPTY opens a pseudo-terminal in the sandbox's own devpts, sends its
// master to the supervisor and returns the slave. Inside, the command's
// terminal is then /dev/pts/0 of a device that exists there; the user's
// terminal never enters the sandbox.
func openPTY() (int, error) {
	master, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, os.NewSyscallError("open /dev/ptmx", err)
	}
	defer unix.Close(master)
	if err := unix.IoctlSetPointerInt(master, unix.TIOCSPTLCK, 0); err != nil {
		return -1, os.NewSyscallError("unlockpt", err)
	}
	// TIOCGPTPEER opens the slave through the master, not by path: nothing
	// can swap the device node in between.
	r, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(master), unix.TIOCGPTPEER, uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
	if errno != 0 {
		return -1, os.NewSyscallError("ioctl TIOCGPTPEER", errno)
	}
	slave := int(r)
	if err := unix.Sendmsg(syncFD, []byte{msgPTY}, unix.UnixRights(master), nil, 0); err != nil {
		unix.Close(slave)
		return -1, os.NewSyscallError("sendmsg", err)
	}
	return slave, nil
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
