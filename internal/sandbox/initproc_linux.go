//go:build linux

package sandbox

import (
	"errors"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// initProc is init as the supervisor holds it: a pid that only the
// supervisor reaps, and a pidfd to signal it by, so that a signal sent
// while init is being reaped never reaches a process that reused its pid.
//
// os.FindProcess would hold the same, but the first call in a process
// probes the kernel's pidfd support by forking a child and waiting for it:
// a tenth of a millisecond on the start of every sandbox, on the path
// between init's clone and its first mount.
type initProc struct {
	pid  int
	mu   sync.Mutex
	fd   int  // the pidfd, -1 where pidfd_open is refused (kill(2) then)
	gone bool // reaped: nothing may be signalled by pid any more
}

func newInitProc(pid int) *initProc {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		fd = -1
	}
	return &initProc{pid: pid, fd: fd}
}

// Signal sends sig to init, unless it has been reaped.
func (p *initProc) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gone {
		return os.ErrProcessDone
	}
	if p.fd >= 0 {
		return os.NewSyscallError("pidfd_send_signal", unix.PidfdSendSignal(p.fd, sig, nil, 0))
	}
	return os.NewSyscallError("kill", unix.Kill(p.pid, sig))
}

// Kill sends SIGKILL.
func (p *initProc) Kill() error { return p.Signal(unix.SIGKILL) }

// Wait reaps init. Nothing else in the process waits for it: Go's own
// waits name their child, and the supervisor never waits for any child.
//
// It first waits for init to exit without reaping it (WNOWAIT): init is a
// zombie then, whose pid no other process can have, and only once Signal
// can no longer be called (gone, under the lock) is it reaped. So even
// without a pidfd (kill(2) by pid), no signal can reach a process that
// reused init's pid. The lock is not held across the wait: a signal must
// still get through while it blocks.
func (p *initProc) Wait() (unix.WaitStatus, error) {
	var info unix.Siginfo
	err := retryEINTR(func() error {
		return unix.Waitid(unix.P_PID, p.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
	})
	p.mu.Lock()
	p.gone = true
	if p.fd >= 0 {
		unix.Close(p.fd)
		p.fd = -1
	}
	p.mu.Unlock()
	if err != nil {
		return 0, os.NewSyscallError("waitid", err)
	}
	var ws unix.WaitStatus
	if err := retryEINTR(func() error {
		_, err := unix.Wait4(p.pid, &ws, 0, nil)
		return err
	}); err != nil {
		return ws, os.NewSyscallError("wait4", err)
	}
	return ws, nil
}

func retryEINTR(f func() error) error {
	for {
		if err := f(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
