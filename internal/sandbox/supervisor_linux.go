//go:build linux

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// Options are the host-side settings of one sandbox run.
type Options struct {
	Stdin, Stdout, Stderr *os.File
	// OnStart runs after init exists and before it reads its spec; the
	// cgroup placement happens here, so that nothing runs outside the limits.
	OnStart func(pid int) error
}

// cloneFlags are the namespaces of every sandbox but the cgroup one, which
// init enters itself once the supervisor has placed it in its cgroup, so that
// the namespace's root is the sandbox's own group.
const cloneFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID |
	unix.CLONE_NEWNET | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS

// initCaps are the capabilities init keeps across its execve when the user
// is not root: only what building the sandbox needs, and only inside the new
// user namespace. Init drops them all before the command starts.
var initCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP}

// ErrNoUserNS means the kernel refused to create a user namespace.
var ErrNoUserNS = errors.New("cannot create a user namespace")

// Run starts spec and waits for it; it returns the command's exit status. A
// failure to set up the sandbox is returned as an error (a *StepError when it
// happened inside), with the status the caller should exit with.
func Run(spec Spec, opt Options) (int, error) {
	self, err := os.Executable()
	if err != nil {
		return ExitSetup, fmt.Errorf("finding the stockade binary: %w", err)
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return ExitSetup, err
	}
	defer specW.Close()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		specR.Close()
		return ExitSetup, os.NewSyscallError("socketpair", err)
	}
	syncParent := os.NewFile(uintptr(fds[0]), "sync")
	syncChild := os.NewFile(uintptr(fds[1]), "sync-child")
	defer syncParent.Close()

	uid, gid := os.Getuid(), os.Getgid()
	cmd := &exec.Cmd{
		Path:       self,
		Args:       []string{"stockade", initArg},
		Env:        []string{},
		Stdin:      opt.Stdin,
		Stdout:     opt.Stdout,
		Stderr:     opt.Stderr,
		ExtraFiles: []*os.File{specR, syncChild},
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags:                 cloneFlags,
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
			GidMappingsEnableSetgroups: false,
			Setsid:                     true,
			Pdeathsig:                  unix.SIGKILL,
		},
	}
	if uid != 0 {
		cmd.SysProcAttr.AmbientCaps = initCaps
	}
	err = cmd.Start()
	specR.Close()
	syncChild.Close()
	if err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EACCES) {
			return ExitSetup, fmt.Errorf("%w (%v); run 'stockade doctor' for the fix", ErrNoUserNS, err)
		}
		return ExitSetup, fmt.Errorf("starting sandbox init: %w", err)
	}
	if opt.OnStart != nil {
		if err := opt.OnStart(cmd.Process.Pid); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			return ExitSetup, err
		}
	}
	if err := json.NewEncoder(specW).Encode(spec); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return ExitSetup, fmt.Errorf("sending spec to sandbox init: %w", err)
	}
	specW.Close()

	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2)
	defer signal.Stop(sigs)
	go func() {
		for s := range sigs {
			cmd.Process.Signal(s)
		}
	}()

	msg := make(chan *StepError, 1)
	go func() {
		buf := make([]byte, 64<<10)
		n, err := syncParent.Read(buf)
		if err != nil || n == 0 {
			msg <- nil
			return
		}
		var e StepError
		if json.Unmarshal(buf[:n], &e) != nil {
			e = StepError{Step: "init", Msg: string(buf[:n]), Code: ExitSetup}
		}
		msg <- &e
	}()
	werr := cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = ExitSignalBase + int(ws.Signal())
	}
	if e := <-msg; e != nil {
		return e.Code, e
	}
	if code < 0 && werr != nil {
		return ExitSetup, fmt.Errorf("waiting for sandbox init: %w", werr)
	}
	return code, nil
}
