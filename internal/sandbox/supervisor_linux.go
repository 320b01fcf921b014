//go:build linux

package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/capture"
	"github.com/stockade-dev/stockade/internal/mount"
	"github.com/stockade-dev/stockade/internal/sandboxnet"
)

// cloneFlags are the namespaces of every sandbox but the cgroup one, which
// init enters itself once the supervisor has placed it in its cgroup, so that
// the namespace's root is the sandbox's own group.
const cloneFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID |
	unix.CLONE_NEWNET | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS

// ErrNoUserNS means the kernel refused to create a user namespace.
var ErrNoUserNS = errors.New("cannot create a user namespace")

// Sandbox is a running sandbox init.
type Sandbox struct {
	proc    *initProc
	opt     Options
	spec    Spec
	steps   []mount.Step
	prog    *program
	arena   *arena
	sync    *os.File
	msg     chan *StepError
	quiet   bool // init said "quiet", with the command's exit status:
	code    int  // read by Wait only after readSync is done
	started bool // init said "started" (read the same way)
	read    sync.Once
	// killed: the supervisor killed init (Kill, Abort), so a death by
	// SIGKILL before "started" is its own doing, not init's crash.
	killed atomic.Bool
}

// Start clones init into new namespaces, lets it build the sandbox of spec
// and start the command, and returns once the command is starting. On an
// error nothing of the sandbox is left; a *StepError carries the exit
// status to use.
func Start(spec Spec, opt Options) (*Sandbox, error) {
	steps := mount.Steps(spec.Plan, stagingBase)
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socketpair", err)
	}
	s := &Sandbox{opt: opt, spec: spec, steps: steps, sync: os.NewFile(uintptr(fds[0]), "sync"), msg: make(chan *StepError, 1)}
	// Init's stdio and its end of the socket, as fresh descriptors above
	// 0-3 so that init can move them into place in any order.
	var moved [4]int
	for i := range moved {
		moved[i] = -1
	}
	defer func() {
		for _, fd := range moved {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
	}()
	stdio := []*os.File{opt.Stdin, opt.Stdout, opt.Stderr}
	for i, f := range stdio {
		if f == nil {
			if f, err = os.OpenFile(os.DevNull, os.O_RDWR, 0); err != nil {
				unix.Close(fds[1])
				s.sync.Close()
				return nil, err
			}
			defer f.Close()
		}
		if moved[i], err = unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 10); err != nil {
			unix.Close(fds[1])
			s.sync.Close()
			return nil, os.NewSyscallError("fcntl", err)
		}
	}
	moved[3], err = unix.FcntlInt(uintptr(fds[1]), unix.F_DUPFD_CLOEXEC, 10)
	unix.Close(fds[1])
	if err != nil {
		s.sync.Close()
		return nil, os.NewSyscallError("fcntl", err)
	}
	if s.prog, s.arena, err = build(spec, steps, moved); err != nil {
		s.sync.Close()
		return nil, err
	}
	// Relay signals from now on: one that arrives once init exists reaches
	// it, and the command once it runs, rather than killing us half-way.
	forwardSignals()
	var tasks []int
	if opt.Placer != nil {
		tasks = opt.Placer.TaskFiles()
	}
	given := s.prog.placeIn(tasks)
	pid, errno := startInit(s.prog, s.arena, cloneFlags)
	if opt.Placer != nil {
		opt.Placer.InitPlaced(given && errno == 0)
	}
	// Init has its copies; with ours closed, its end of the socket closes
	// when it dies, and every read of ours returns, however far setup got.
	for i, fd := range moved {
		unix.Close(fd)
		moved[i] = -1
	}
	if errno != 0 {
		s.sync.Close()
		s.arena.free()
		err := os.NewSyscallError("clone", errno)
		switch errno {
		case unix.EPERM, unix.EINVAL, unix.ENOSPC, unix.EACCES, unix.EUSERS:
			return nil, fmt.Errorf("%w (%v); run 'stockade doctor' for the fix", ErrNoUserNS, err)
		}
		return nil, fmt.Errorf("starting sandbox init: %w", err)
	}
	s.proc = newInitProc(pid)
	forwardTo.Store(s.proc)
	if err := s.setup(pid); err != nil {
		_, err := s.Abort(err)
		return nil, err
	}
	return s, nil
}

// forwardTo is the init the signals a user sends stockade go to.
var forwardTo atomic.Pointer[initProc]

// forwardSignals catches the signals a user sends to stop or poke the
// command and passes each to the init of the running sandbox: one that
// arrives while a sandbox is being built reaches init, which passes it to
// the command once it runs, rather than killing stockade half-way with
// placeholders left behind. With no sandbox running, the signal does what
// SignalsWhenIdle says, by default what it would have done uncaught.
// (Registered once per process, not per sandbox: signal.Notify and
// signal.Stop each cost a round trip per signal to the runtime's signal
// thread.)
var forwardSignals = sync.OnceFunc(func() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2)
	go func() {
		for sig := range sigs {
			if p := forwardTo.Load(); p != nil {
				p.Signal(sig.(syscall.Signal))
				continue
			}
			idle := DefaultIdle
			if f := whenIdle.Load(); f != nil {
				idle = *f
			}
			idle(sig)
		}
	}()
})

// whenIdle is what a relayed signal does while no sandbox runs.
var whenIdle atomic.Pointer[func(os.Signal)]

// SignalsWhenIdle makes a relayed signal that arrives while no sandbox
// runs call f instead of DefaultIdle, which would end a process that
// takes the signal itself and cancel its own registration of it (a
// session's supervisor, between runs).
func SignalsWhenIdle(f func(os.Signal)) { whenIdle.Store(&f) }

// DefaultIdle is what a relayed signal does while no sandbox runs, by
// default: what it would have done uncaught.
func DefaultIdle(sig os.Signal) {
	signal.Reset(sig)
	unix.Kill(os.Getpid(), sig.(syscall.Signal))
}

// setup is the supervisor's side of init's start: the id maps, the cgroup,
// the descriptors init sends, then "placed".
func (s *Sandbox) setup(pid int) error {
	if s.spec.Engine {
		if s.opt.MapIDs == nil {
			return errors.New("starting sandbox init: the spec asks for id maps and no MapIDs writes them")
		}
		if err := s.opt.MapIDs(pid); err != nil {
			return err
		}
		if _, err := s.sync.Write([]byte{msgMapped}); err != nil {
			return fmt.Errorf("starting sandbox init: %w", err)
		}
	}
	if s.opt.BeforeMounts != nil {
		if err := s.opt.BeforeMounts(); err != nil {
			return err
		}
	}
	if _, err := s.sync.Write([]byte{msgReady}); err != nil {
		return fmt.Errorf("starting sandbox init: %w", err)
	}
	if s.opt.OnStart != nil {
		if err := s.opt.OnStart(pid); err != nil {
			return err
		}
	}
	var captured <-chan error
	defer func() {
		// A setup that stops before reading it still waits for the
		// capture to be done with its sockets.
		if captured != nil {
			<-captured
		}
	}()
	if s.spec.Listen {
		n := listenerCount(s.spec)
		if s.prog.capture {
			n += captureSockets
		}
		files, err := s.receive(msgListeners, n)
		if err != nil {
			return err
		}
		if s.prog.capture {
			captured = s.capture(files[len(files)-captureSockets:])
			files = files[:len(files)-captureSockets]
		}
		if s.opt.OnListeners == nil {
			for _, f := range files {
				f.Close()
			}
		} else if err := s.opt.OnListeners(files); err != nil {
			return err
		}
	}
	if _, ok := s.spec.Plan.Feed(); ok {
		files, err := s.receive(msgFeed, 1)
		if err != nil {
			return err
		}
		if s.opt.OnFeed == nil {
			files[0].Close()
		} else if err := s.opt.OnFeed(files[0]); err != nil {
			return err
		}
	}
	if s.spec.Plan.Store != "" {
		files, err := s.receive(msgStore, 1)
		if err != nil {
			return err
		}
		if s.opt.OnStore == nil {
			files[0].Close()
		} else if err := s.opt.OnStore(files[0]); err != nil {
			return err
		}
	}
	if s.spec.Exec.TTY {
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
	if s.spec.Engine {
		if err := s.built(); err != nil {
			return err
		}
	}
	if captured != nil {
		// The capture is set up, or is not and the run goes on
		// without it, before the command can connect anywhere.
		err := <-captured
		captured = nil
		if err != nil && s.opt.OnCaptureOff != nil {
			s.opt.OnCaptureOff(err)
		}
	}
	if s.opt.BeforeCommand != nil {
		if err := s.opt.BeforeCommand(); err != nil {
			return err
		}
	}
	if _, err := s.sync.Write([]byte{msgPlaced}); err != nil {
		return fmt.Errorf("starting sandbox init: %w", err)
	}
	return nil
}

// capture sends the capture rules, then the route (package capture), on
// the netlink sockets init made in the sandbox's network namespace and sent
// with its listeners, while init goes on building the view: the kernel's
// work on the rules (a table, its chains, and the NAT and connection
// tracking a redirect needs in a new namespace) is a good part of a
// millisecond that init no longer waits for. The kernel lets the
// supervisor change them: a socket opened by a process that had
// CAP_NET_ADMIN there, written by the owner of the namespace's user
// namespace, which has every capability in it. The rules go first: a route
// to everything through lo without them would only turn ENETUNREACH into
// ECONNREFUSED. Nothing in the sandbox runs before the result is read
// (setup, before "placed"); the sockets are closed either way, and none
// ever reaches the command. The channel gives why the capture is off, or
// nil.
func (s *Sandbox) capture(socks []*os.File) <-chan error {
	done := make(chan error, 1)
	if what, errno := s.arena.socketOff(); errno != 0 {
		closeAll(socks)
		done <- captureOff(what, errno)
		return done
	}
	go func() {
		f, _ := hostFacts() // ready: build read it
		m := capture.Build(sandboxnet.CapturePort, f.ipv6)
		if testCaptureRules != nil {
			m.Rules = testCaptureRules(m.Rules)
		}
		var err error
		if e := netlinkDo(socks[0], m.Rules); e != 0 {
			err = captureOff(captureRules, e)
		} else if e := netlinkDo(socks[1], m.Route); e != 0 {
			err = captureOff(captureRoute, e)
		}
		// Closed before the result is given: whoever reads it finds
		// no descriptor of the sandbox's left open.
		closeAll(socks)
		done <- err
	}()
	return done
}

// netlinkDo sends msg on the netlink socket f and returns the error the
// kernel answered, if any: the kernel processes a request before sendto
// returns, and answers only a failure (the messages ask no
// acknowledgement), so a read that would block says it worked.
func netlinkDo(f *os.File, msg []byte) syscall.Errno {
	fd := int(f.Fd())
	if err := unix.Sendto(fd, msg, 0, nil); err != nil {
		var e syscall.Errno
		if errors.As(err, &e) {
			return e
		}
		return unix.EIO
	}
	var buf [64]byte
	// struct nlmsghdr (16 bytes), then struct nlmsgerr's error.
	if n, _, err := unix.Recvfrom(fd, buf[:], unix.MSG_DONTWAIT); err == nil && n >= 20 &&
		binary.NativeEndian.Uint16(buf[4:]) == unix.NLMSG_ERROR {
		return syscall.Errno(-int32(binary.NativeEndian.Uint32(buf[16:])))
	}
	return 0
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// readSync reads init's messages until EOF: "started", "quiet", or a
// failure report; without a container engine it stops at "quiet", after
// which init sends nothing and only exits. Wait calls it, on its own
// goroutine: a message wakes the thread blocked in read(2) directly, with
// no hand-off between goroutines, at the command's start and at its end.
func (s *Sandbox) readSync() {
	buf := make([]byte, 64)
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
		switch {
		case n == 1 && (buf[0] == msgListeners || buf[0] == msgFeed || buf[0] == msgStore || buf[0] == msgPTY):
			// Descriptors sent for a setup that stopped before it took
			// them (a hook failed): no report, and read without their
			// control message, they are closed.
		case n == 2 && buf[0] == msgQuiet:
			s.quiet, s.code = true, int(buf[1])
			// With a container engine, "quiet" is not: init's kill(-1)
			// cannot reach the engine's processes (Landlock scopes its
			// signals to its own domain), so they may still write the
			// sandbox's files until the kernel tears the pid namespace
			// down; Wait calls OnQuiet once it has reaped init.
			if !s.spec.Engine {
				if s.opt.OnQuiet != nil {
					s.opt.OnQuiet()
				}
				s.msg <- stepErr
				return
			}
		case n == 1 && buf[0] == msgStarted:
			s.started = true
			if s.opt.OnCommand != nil {
				s.opt.OnCommand()
			}
		default:
			stepErr = s.decode(buf[:n])
		}
	}
}

// decode turns init's failure report (see program.fail) into a StepError.
func (s *Sandbox) decode(b []byte) *StepError {
	if len(b) != len(s.prog.report) || b[0] != 'E' {
		return &StepError{Step: "init", Msg: fmt.Sprintf("unexpected message from sandbox init: %q", b), Code: ExitSetup}
	}
	idx := int(b[2]) | int(b[3])<<8
	if idx == 0xffff {
		idx = -1
	}
	errno := syscall.Errno(int(b[4]) | int(b[5])<<8)
	e := s.prog.stepError(s.spec, s.steps, b[1], idx, errno)
	e.Code = int(b[6])
	return e
}

// receive reads init's message typ and the n descriptors it carries, or the
// failure init reported instead.
func (s *Sandbox) receive(typ byte, n int) ([]*os.File, error) {
	buf := make([]byte, 64)
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
	return nil, s.decode(buf[:m])
}

// built waits for init to say that the view is built, or for the failure
// it reported instead.
func (s *Sandbox) built() error {
	buf := make([]byte, 64)
	m, err := s.sync.Read(buf)
	if m == 1 && buf[0] == msgBuilt {
		return nil
	}
	if m == 0 || err != nil {
		return errors.New("sandbox init exited before building the view")
	}
	return s.decode(buf[:m])
}

// Kill stops the sandbox.
func (s *Sandbox) Kill() {
	s.kill()
	s.Wait()
}

// kill kills init, and notes that a death by SIGKILL is ours.
func (s *Sandbox) kill() {
	s.killed.Store(true)
	s.proc.Kill()
}

// Abort stops a sandbox after err and returns the status to exit with and
// the error to show: err when it is init's report, which setup read
// itself (init exits after it, before the kill, and Wait, which never saw
// the report, would call that a death without one); else init's own
// StepError when Wait reads one (init failed first, and err is only the
// echo of that, such as a broken pipe); else err.
func (s *Sandbox) Abort(err error) (int, error) {
	s.kill()
	_, werr := s.Wait()
	var se *StepError
	if errors.As(err, &se) {
		return se.Code, se
	}
	if errors.As(werr, &se) {
		return se.Code, se
	}
	return ExitSetup, err
}

// Wait waits for init and returns the command's exit status. A failure to
// set up the sandbox is returned as an error (a *StepError when it happened
// inside), with the status the caller should exit with.
func (s *Sandbox) Wait() (int, error) {
	defer s.sync.Close()
	defer forwardTo.CompareAndSwap(s.proc, nil)
	s.read.Do(s.readSync)
	e := <-s.msg // init said "quiet", or closed the socket: it is exiting
	if e == nil && s.quiet && !s.spec.Engine {
		// Every other process of the sandbox is gone and init only exits
		// now; the kernel's teardown of its namespaces (a few hundred
		// microseconds to several milliseconds) need not hold us up.
		// (Not with a container engine: its processes are gone only once
		// init is reaped, when the kernel has killed every process of the
		// pid namespace; the checks after the run must not start before.)
		go func() {
			s.proc.Wait()
			s.arena.free()
		}()
		return s.code, nil
	}
	ws, werr := s.proc.Wait()
	reached := s.arena.reached()
	s.arena.free()
	if e != nil {
		return e.Code, e
	}
	if s.quiet {
		// A container engine's sandbox: everything in it is gone now.
		if s.opt.OnQuiet != nil {
			s.opt.OnQuiet()
		}
		return s.code, nil
	}
	if werr != nil {
		return ExitSetup, fmt.Errorf("waiting for sandbox init: %w", werr)
	}
	// Init dies of our SIGKILL when we kill it (its socket may close, and
	// our write fail, before it is a zombie we could have seen).
	ours := s.killed.Load() && ws.Signaled() && ws.Signal() == unix.SIGKILL
	if !s.started && !ours {
		return ExitSetup, died(reached, syscall.WaitStatus(ws))
	}
	code := ws.ExitStatus()
	if ws.Signaled() {
		code = ExitSignalBase + int(ws.Signal())
	}
	return code, nil
}

// died is the error for an init that died before it started the command
// and without a report: never the command's status, since the command
// never ran.
func died(reached uint8, ws syscall.WaitStatus) *StepError {
	how := fmt.Sprintf("exited with status %d", ws.ExitStatus())
	if ws.Signaled() {
		how = fmt.Sprintf("was killed by signal %s (%v)", unix.SignalName(ws.Signal()), ws.Signal())
	}
	return &StepError{Step: stepName(reached), Code: ExitSetup,
		Msg: "init " + how + " before it started the command, with no report: a bug in stockade; please report it with the output of 'stockade doctor' and how stockade was built"}
}

// Run starts spec and waits for it.
func Run(spec Spec, opt Options) (int, error) {
	s, err := Start(spec, opt)
	if err != nil {
		var se *StepError
		if errors.As(err, &se) {
			return se.Code, err
		}
		return ExitSetup, err
	}
	return s.Wait()
}
