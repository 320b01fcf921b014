//go:build linux

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// cloneFlags are the namespaces of every sandbox but the cgroup one, which
// init enters itself once the supervisor has placed it in its cgroup, so that
// the namespace's root is the sandbox's own group.
const cloneFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID |
	unix.CLONE_NEWNET | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS

// initCaps are the capabilities init keeps across its execve when the user
// is not root: only what building the sandbox needs, and only inside the new
// user namespace. Init drops them all before the command starts.
var initCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_NET_BIND_SERVICE, unix.CAP_SETPCAP}

// ErrNoUserNS means the kernel refused to create a user namespace.
var ErrNoUserNS = errors.New("cannot create a user namespace")

// Sandbox is a started sandbox init, waiting for its spec or running.
type Sandbox struct {
	cmd   *exec.Cmd
	opt   Options
	specW *os.File
	sync  *os.File
	msg   chan *StepError
	sigs  chan os.Signal
	read  sync.Once
}

// Start clones init into new namespaces. It needs nothing from the spec, so
// the caller can plan the sandbox while init's runtime starts up, and then
// Send it. Until Send, init waits.
func Start(opt Options) (*Sandbox, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the stockade binary: %w", err)
	}
	// Descriptors this process inherited without close-on-exec would
	// otherwise ride along into init: mark them all, so only what is
	// passed below crosses over.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return nil, fmt.Errorf("marking descriptors close-on-exec: %w", os.NewSyscallError("close_range", err))
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer specR.Close()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		specW.Close()
		return nil, os.NewSyscallError("socketpair", err)
	}
	syncChild := os.NewFile(uintptr(fds[1]), "sync-child")
	defer syncChild.Close()
	s := &Sandbox{opt: opt, specW: specW, sync: os.NewFile(uintptr(fds[0]), "sync"), msg: make(chan *StepError, 1)}

	uid, gid := os.Getuid(), os.Getgid()
	s.cmd = &exec.Cmd{
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
		s.cmd.SysProcAttr.AmbientCaps = initCaps
	}
	// Forward signals from now on: one that arrives while the sandbox is
	// being built reaches init, which drops it, rather than killing us and
	// leaving placeholders behind.
	s.sigs = make(chan os.Signal, 8)
	signal.Notify(s.sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2)
	if err := s.cmd.Start(); err != nil {
		signal.Stop(s.sigs)
		specW.Close()
		s.sync.Close()
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EACCES) {
			return nil, fmt.Errorf("%w (%v); run 'stockade doctor' for the fix", ErrNoUserNS, err)
		}
		return nil, fmt.Errorf("starting sandbox init: %w", err)
	}
	go func() {
		for sig := range s.sigs {
			s.cmd.Process.Signal(sig)
		}
	}()
	return s, nil
}

// readSync reads init's messages until EOF: msgQuiet, or a StepError.
func (s *Sandbox) readSync() {
	buf := make([]byte, 64<<10)
	var stepErr *StepError
	for {
		n, err := s.sync.Read(buf)
		if errors.Is(err, unix.ECONNRESET) {
			// Init exited with our "placed" unread: the kernel reports
			// that once, before the messages init sent last. Read on.
			continue
		}
		if err != nil || n == 0 {
			s.msg <- stepErr
			return
		}
		if n == 1 && buf[0] == msgQuiet {
			if s.opt.OnQuiet != nil {
				s.opt.OnQuiet()
			}
			continue
		}
		if n == 1 && buf[0] == msgStarted {
			if s.opt.OnCommand != nil {
				s.opt.OnCommand()
			}
			continue
		}
		e := &StepError{}
		if json.Unmarshal(buf[:n], e) != nil {
			e = &StepError{Step: "init", Msg: string(buf[:n]), Code: ExitSetup}
		}
		stepErr = e
	}
}

// Send hands init its spec, runs OnStart, and lets init start the command.
// Init builds the filesystem view while the supervisor places it in its
// cgroup (on cgroup v1 a move can wait ~10 ms for an RCU grace period).
func (s *Sandbox) Send(spec Spec) error {
	b, err := json.Marshal(spec)
	if err != nil {
		return fmt.Errorf("encoding the sandbox spec: %w", err)
	}
	sent := make(chan error, 1)
	go func() {
		_, err := s.specW.Write(b)
		s.specW.Close()
		sent <- err
	}()
	if s.opt.OnStart != nil {
		if err := s.opt.OnStart(s.cmd.Process.Pid); err != nil {
			return err
		}
	}
	if spec.Listen {
		files, err := s.receive(msgListeners, len(Listeners))
		if err != nil {
			return err
		}
		if s.opt.OnListeners == nil {
			for _, f := range files {
				f.Close()
			}
		} else if err := s.opt.OnListeners(files); err != nil {
			return err
		}
	}
	if spec.Exec.TTY {
		files, err := s.receive(msgPTY, 1)
		if err != nil {
			return err
		}
		master := files[0]
		if s.opt.OnPTY != nil {
			if err := s.opt.OnPTY(master); err != nil {
				master.Close()
				return err
			}
		} else {
			master.Close()
		}
	}
	s.read.Do(func() { go s.readSync() })
	if _, err := s.sync.Write([]byte{msgPlaced}); err != nil {
		return fmt.Errorf("starting sandbox init: %w", err)
	}
	if err := <-sent; err != nil {
		return fmt.Errorf("sending spec to sandbox init: %w", err)
	}
	return nil
}

// receive reads init's message typ and the n descriptors it carries, or the
// StepError init sent instead.
func (s *Sandbox) receive(typ byte, n int) ([]*os.File, error) {
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(4*n))
	m, oobn, _, _, err := unix.Recvmsg(int(s.sync.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("receiving descriptors from sandbox init: %w", os.NewSyscallError("recvmsg", err))
	}
	if m == 1 && buf[0] == typ {
		cmsgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err == nil && len(cmsgs) == 1 {
			if fds, err := unix.ParseUnixRights(&cmsgs[0]); err == nil && len(fds) == n {
				files := make([]*os.File, n)
				for i, fd := range fds {
					files[i] = os.NewFile(uintptr(fd), fmt.Sprintf("sandbox-%c%d", typ, i))
				}
				return files, nil
			}
		}
		return nil, errors.New("receiving descriptors from sandbox init: they did not come with the message")
	}
	if m == 0 {
		return nil, errors.New("sandbox init exited before sending its descriptors")
	}
	e := &StepError{}
	if json.Unmarshal(buf[:m], e) != nil {
		e = &StepError{Step: "init", Msg: string(buf[:m]), Code: ExitSetup}
	}
	return nil, e
}

// Kill stops a sandbox that will not get (or did not take) its spec.
func (s *Sandbox) Kill() {
	s.cmd.Process.Kill()
	s.Wait()
}

// Abort stops a sandbox after err and returns the status to exit with and
// the error to show: init's own StepError when it sent one (it failed
// first, and err is only the echo of that, such as a broken pipe), else err.
func (s *Sandbox) Abort(err error) (int, error) {
	s.cmd.Process.Kill()
	if _, werr := s.Wait(); werr != nil {
		var se *StepError
		if errors.As(werr, &se) {
			return se.Code, se
		}
	}
	return ExitSetup, err
}

// Wait waits for init and returns the command's exit status. A failure to
// set up the sandbox is returned as an error (a *StepError when it happened
// inside), with the status the caller should exit with.
func (s *Sandbox) Wait() (int, error) {
	defer s.sync.Close()
	defer signal.Stop(s.sigs)
	s.specW.Close()
	s.read.Do(func() { go s.readSync() })
	werr := s.cmd.Wait()
	code := s.cmd.ProcessState.ExitCode()
	if ws, ok := s.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = ExitSignalBase + int(ws.Signal())
	}
	if e := <-s.msg; e != nil {
		return e.Code, e
	}
	if code < 0 && werr != nil {
		return ExitSetup, fmt.Errorf("waiting for sandbox init: %w", werr)
	}
	return code, nil
}

// Run starts spec and waits for it: Start, Send and Wait in one.
func Run(spec Spec, opt Options) (int, error) {
	s, err := Start(opt)
	if err != nil {
		return ExitSetup, err
	}
	if err := s.Send(spec); err != nil {
		return s.Abort(err)
	}
	return s.Wait()
}
